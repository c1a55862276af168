"""The one serving model: the decision's serving point and the scaling tab's tensor-parallel curve are
the same computation (``model.serving``), so every surface shows one number."""
import math

import pytest

import workbook as wb
from workbook import catalog, terms
from workbook.model import estimate, serving, tables
from workbook.model.efficiency import Efficiency
from workbook.model.profile import workload_profile

# transformer services: a generic model (an encoder) has no tensor-parallel curve (model.generic.serve)
SERVING = [n for n in wb.scenario_names() if wb.load_scenario(n).workload.task == "inference"
           and wb.load_scenario(n).workload.generic is None]


@pytest.mark.parametrize("name", SERVING)
def test_the_comparison_and_the_tp_curve_give_the_same_serving_point(name):
    """Notebook 02's option (``compare``) and notebook 03's chosen row at the same tensor-parallel
    size (``scenario_curves``) agree on batch, TPOT, TTFT and throughput per replica."""
    s = wb.load_scenario(name)
    options = estimate.compare(s)
    curves = tables.scenario_curves(s)
    checked = 0
    served = options[options["fits"].fillna(False).astype(bool) & options["tp"].notna()]
    # a disaggregated option is two pools, not one replica on the curve (tests/model/test_serving_disagg.py)
    served = served[served["layout"] != "disaggregated"]
    for _, opt in served.iterrows():
        row = curves[(curves["accelerator"] == opt["accelerator"]) & (curves["tp"] == int(opt["tp"])) & curves["chosen"]]
        assert len(row) == 1, (opt["accelerator"], opt["tp"])
        r = row.iloc[0]
        assert int(r["batch"]) == int(opt["batch"])
        assert r["tpot_ms"] == pytest.approx(float(opt["tpot_ms"]), rel=1e-9)
        assert r["ttft_ms"] == pytest.approx(float(opt["ttft_ms"]), rel=1e-9)
        per_replica = float(opt["output_tokens_per_s"]) / int(opt["replicas"])
        assert r["output_tokens_per_s"] == pytest.approx(per_replica, rel=1e-9)
        checked += 1
    assert checked >= 1


def test_chat_70b_on_h200_at_batch_64_has_one_time_per_token():
    """The issue's example: the two old models said 44.6 ms and 23.1 ms per token for the same point.
    Both surfaces now call ``serving_point``; the curve's batch-64 row is that point."""
    s = wb.load_scenario("chat-70b-realtime")
    p, acc, w = workload_profile(s.workload), catalog.accelerator_record("H200-SXM-141GB"), s.workload
    curve = serving.tp_curve(p, acc, w, [1])
    at64 = curve[(curve["tp"] == 1) & (curve["batch"] == 64)].iloc[0]
    direct = serving.serving_point(Efficiency.from_csv(), p, acc, 64, w.input_tokens, w.output_tokens, 1,
                                   terms.compute_precision(w.precision), w.precision, w.kv_precision)
    assert at64["tpot_ms"] == pytest.approx(float(direct["tpot_s"]) * 1e3)
    assert math.isfinite(at64["tpot_ms"])
