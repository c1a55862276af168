"""``model.mamf._fraction`` scans the table's rows as dicts (``_rows``): the same fraction as filtering the
frame (the pandas filters it replaced, kept here as the reference) for every catalog chip and precision."""
import importlib

from workbook import catalog

mamf = importlib.import_module("workbook.model.mamf")


def _by_frame(t, accelerator, family, kind, prec):
    own = t[(t["accelerator"] == accelerator) & (t["precision"] == prec)]
    if len(own):
        return float(own["fraction"].iloc[0])
    fam = t[t["family"] == family]
    same = fam[fam["precision"] == prec]
    if len(same):
        return float(same["fraction"].median())
    if len(fam):
        return float(fam["fraction"].median())
    if kind != "gpu":
        return 1.0
    same_kind = t[(t["kind"] == kind) & (t["precision"] == "bf16")]
    return float(same_kind["fraction"].median()) if len(same_kind) else 1.0


def test_fraction_from_rows_equals_the_frame_filters():
    t = mamf.table()
    for a, r in catalog.accelerator_records().items():
        for p in ("bf16", "fp16", "fp8", "int8", "fp4", "fp32"):
            args = (str(r.get("accelerator")), str(r.get("family")), str(r.get("kind")), p)
            assert mamf._fraction.__wrapped__(*args) == _by_frame(t, *args), (a, p)
