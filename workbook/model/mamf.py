"""Measured matmul ceilings (MAMF, "maximum achievable matmul FLOPS"): the best rate a chip's own
software reaches on one large, well-shaped matrix multiplication, as a fraction of its dense
datasheet peak (``data/mamf.csv``; Stas Bekman's ml-engineering table, measured with its
``mamf-finder.py``).

No training step can run its matmuls faster than this, so ``model.efficiency`` expresses the
fitted training ceiling of a GPU family as a fraction of MAMF where one is measured
(``fraction``), and a family with few or no published runs (MI300X, B200) borrows the other
families' fraction of MAMF times its *own* measured MAMF, not their fraction of peak. A chip
without a measurement of its own family (TPUs, Trainium) gets 1: its ceiling stays a fraction of
peak; an unmeasured GPU takes the measured GPUs' median.
"""
from __future__ import annotations

import functools
import math

import pandas as pd

from .. import catalog, paths
from ..errors import InputError

FILE = "mamf"
SCHEMA = {"accelerator": catalog.Col("str", True), "precision": catalog.Col("str", True, choices=("bf16", "fp16", "fp8", "int8")),
          "mamf_flops_per_s": catalog.Col("float", True, 1e11, 1e17), "source": catalog.Col("str", True),
          "as_of": catalog.Col("date", True), "notes": catalog.Col()}
# precisions that run on the same tensor-core path as a measured one (catalog.peak_flops_per_s)
SAME_PATH = {"fp16": "bf16", "int4": "bf16"}
# The training ceiling is fitted in units of the BF16 measurement (a family's BF16 MAMF says how
# close its software gets to peak). FP8 training keeps that scale: its slower approach to the FP8
# peak is priced by model.efficiency's width term (element-wise work at twice the ridge point). The
# FP8 rows' own lower fraction (H100 70.9% against 80.3%) was tried on top (``precision_ratio``
# with "fp8" in LOW_PRECISIONS): refitted, the held-out training median went from 7.3% to 9.3%
# (Hopper 10.1% to 14.4%) with the width constant falling from 4.0 to 2.5 - the two terms price the
# same shortfall, so only one is kept. int8 training (TPU AQT), which has no width evidence of its
# own, gets its GEMM rate relative to BF16 from a measured same-code pair (``precision_ratio``).
REFERENCE_PRECISION = "bf16"
LOW_PRECISIONS = ("int8",)


@functools.lru_cache(maxsize=None)
def table() -> pd.DataFrame:
    """``data/mamf.csv`` validated (ids resolved through the accelerator catalog), read once."""
    df = catalog.read_module_table(FILE, SCHEMA)
    rel = paths.rel(paths.DATA_DIR / f"{FILE}.csv")
    known = catalog.resolve_map("accelerators")
    for i, a in enumerate(df["accelerator"]):
        if a not in known:
            raise InputError(f"{rel}: row {i + 2}: accelerator: unknown id {a!r}{catalog._suggest(a, set(known))}")
    df["accelerator"] = [catalog.resolve("accelerators", a) for a in df["accelerator"]]
    recs = catalog.accelerator_records()
    df["family"] = [recs[a]["family"] for a in df["accelerator"]]
    df["kind"] = [recs[a]["kind"] for a in df["accelerator"]]
    df["fraction"] = [v / catalog.peak_flops_per_s(recs[a], p, required=True)
                      for a, p, v in zip(df["accelerator"], df["precision"], df["mamf_flops_per_s"])]
    if (df["fraction"] > 1.0).any():
        i = int(df.index[df["fraction"] > 1.0][0])
        raise InputError(f"{rel}: row {i + 2}: mamf_flops_per_s: above the dense peak of the accelerator")
    return df


def fraction(acc, precision: str) -> float:
    """MAMF / dense peak of ``precision`` on the accelerator ``acc``: its own measurement, else the
    median of its family's at that precision (H200 BF16 = H100's: the same compute), else the
    family's measurements at other precisions (the best evidence of how close its software gets to
    peak; MI300X FP8 takes its BF16 51%), else, for a GPU, the median BF16 measurement of the GPUs
    (an unmeasured GPU, L4 or V100, is taken to reach what the measured GPUs reach), else 1 (TPUs
    and ASICs: one ASIC's compiler says nothing about another's, so Gaudi 3's measurement is not
    Trainium's). fp16 and int4 weights use the bf16 measurement."""
    return _fraction(str(acc.get("accelerator")), str(acc.get("family")), str(acc.get("kind")), SAME_PATH.get(precision, precision))


@functools.lru_cache(maxsize=None)
def _fraction(accelerator: str, family: str, kind: str, prec: str) -> float:
    rows = _rows()
    own = [r["fraction"] for r in rows if r["accelerator"] == accelerator and r["precision"] == prec]
    if own:
        return float(own[0])
    fam = [r for r in rows if r["family"] == family]
    same = [r["fraction"] for r in fam if r["precision"] == prec]
    if same:
        return _median(same)
    if fam:
        return _median([r["fraction"] for r in fam])
    if kind != "gpu":
        return 1.0
    same_kind = [r["fraction"] for r in rows if r["kind"] == kind and r["precision"] == "bf16"]
    return _median(same_kind) if same_kind else 1.0


_ROWS = catalog.PerLoad(lambda t: tuple(
    {"accelerator": a, "precision": p, "family": f, "kind": k, "fraction": float(x)}
    for a, p, f, k, x in zip(t["accelerator"], t["precision"], t["family"], t["kind"], t["fraction"])))


def _rows() -> tuple[dict, ...]:
    """``table()``'s rows as dicts (accelerator, precision, family, kind, fraction), in file order, rebuilt when the
    table is: ``_fraction`` scans a few dozen rows instead of filtering the frame for each chip and precision."""
    return _ROWS.get(table())


def _median(values: list[float]) -> float:
    """The median as pandas' ``Series.median`` gives it for these float values (numpy's, no NaN among them)."""
    return float(pd.Series(values, dtype=float).median())


def _measured(accelerator: str, family: str, prec: str) -> float | None:
    """The chip's own MAMF fraction at ``prec``, else its family's median; None when neither is measured."""
    t = table()
    own = t[(t["accelerator"] == accelerator) & (t["precision"] == prec)]
    if len(own):
        return float(own["fraction"].iloc[0])
    fam = t[(t["family"] == family) & (t["precision"] == prec)]
    return float(fam["fraction"].median()) if len(fam) else None


def precision_ratio(acc, precision: str) -> float | None:
    """A low-precision GEMM's measured fraction of its own peak over the BF16 GEMM's fraction of the BF16
    peak, on this chip or its family (``_measured`` at both precisions). 1 for the precisions outside
    ``LOW_PRECISIONS`` (fp8 included: see ``REFERENCE_PRECISION``); None for an int8 chip without both
    measurements (``model.efficiency`` then uses the ratio fitted on published same-code runs,
    ``matmul_ratio_int8``)."""
    if precision not in LOW_PRECISIONS:
        return 1.0
    a, f = str(acc.get("accelerator")), str(acc.get("family"))
    low, ref = _measured(a, f, precision), _measured(a, f, REFERENCE_PRECISION)
    return low / ref if low is not None and ref is not None else None
