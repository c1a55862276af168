"""The calibration table per kind of case: the kinds of run issue 15 ("Fidelity round 2") names as
far off, each tagged from the reference runs' own columns, with the model's error on them.

``tag_cases`` marks every used run of ``data/reference_runs.csv`` with the cases it belongs to, by
rule, never by run id:

- ``free layout search``: a training run that prints its layout (``parallelism`` holds tp, pp, dp,
  cp, ep or zero): what the search is compared with (``calibrate.layouts.free_vs_published``). Its
  pinned errors come from the calibration table; ``case_summary`` adds a second row with the same
  runs searched freely (nothing pinned, as ``estimate`` does);
- ``ZeRO-3/FSDP``: a training run with ``zero=3`` in its layout, or FSDP in ``framework``;
- ``MoE training``: a training run of a mixture-of-experts model (``profile.is_moe``);
- ``Blackwell``: any run on an ``nvidia-blackwell`` chip (``data/accelerators.csv`` family);
- ``generic models``: a run of a non-transformer model (the ``generic_*`` metrics);
- ``multi-pod TPU (DCN)``: a TPU training run on more chips than one ICI domain
  (``fast_domain_chips``: 4,096 for TPU v4, 256 for v5e and v6e, 8,960 for v5p), so the data-parallel
  traffic crosses the data-centre network;
- ``low-batch latency``: a TTFT or TPOT run with at most ``LOW_BATCH_MAX`` sequences in flight
  (``batch``), where no batching amortises the weights.

``case_summary`` reports per case: runs, held-out runs, median absolute error (all and held out),
median signed error, P10-P90 band coverage (all and held out) and the held-out runs' median band
width. The pinned rows carry the band of a pinned-layout prediction; ``FREE_ROW`` the band an
``estimate`` shows for a free search (``free_bands``: ``moe.training_band`` with nothing pinned, fitted
on the fit runs searched freely, ``calibrate.bands.conformal_band``). ``cases_markdown`` is the docs'
table between ``<!-- cases-table -->`` and ``<!-- /cases-table -->``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import catalog
from ..model import moe
from ..model.efficiency import Efficiency, default
from . import generic
from .layouts import free_vs_published
from .runs import calibration_table, key_values, reference_runs, run_profile

# "batch 1-ish": the low-batch latency runs (FasterTransformer, vLLM at concurrency 1 and 4, Neuron b1)
LOW_BATCH_MAX = 4
LAYOUT_PIN_KEYS = ("tp", "pp", "dp", "cp", "ep", "zero")
FREE_ROW = "free layout search (searched freely)"
CASES = ("free layout search", "ZeRO-3/FSDP", "MoE training", "Blackwell", "generic models", "multi-pod TPU (DCN)",
         "low-batch latency")


def _layout(text, run: str) -> dict:
    """``tp=8;pp=12;zero=1`` as a dict of strings ({} when blank), read as the calibration reads it."""
    if not isinstance(text, str):
        return {}
    return dict(key_values(text, f"reference_runs.csv: run {run}: parallelism"))


def _is_moe(row) -> bool:
    if generic.is_generic_shape(row.get("architecture")):
        return False
    return bool(run_profile(row).is_moe)


def _num(v, default=np.nan) -> float:
    return default if v is None or pd.isna(v) else float(v)


def tag_cases(runs: pd.DataFrame) -> pd.DataFrame:
    """``run`` and one boolean column per name of ``CASES``: which cases each run belongs to (the
    rules of the module docstring). ``runs`` has the columns of ``reference_runs()``."""
    recs = catalog.accelerator_records()
    rows = []
    for _, r in runs.iterrows():
        acc = recs[catalog.resolve("accelerators", r["accelerator"])]
        training = r["kind"] == "training" and r["metric"] not in generic.METRICS
        lay = _layout(r.get("parallelism"), r["run"])
        framework = str(r.get("framework") or "")
        chips = _num(r.get("chips"), 0.0)
        batch = _num(r.get("batch"))
        rows.append({
            "run": r["run"],
            "free layout search": training and any(k in lay for k in LAYOUT_PIN_KEYS),
            "ZeRO-3/FSDP": training and (lay.get("zero") == "3" or "FSDP" in framework.upper()),
            "MoE training": training and _is_moe(r),
            "Blackwell": acc["family"] == "nvidia-blackwell",
            "generic models": r["metric"] in generic.METRICS,
            "multi-pod TPU (DCN)": training and acc["kind"] == "tpu" and chips > _num(acc.get("fast_domain_chips"), np.inf),
            "low-batch latency": r["metric"] in ("ttft_ms", "tpot_ms") and batch <= LOW_BATCH_MAX,
        })
    return pd.DataFrame(rows, columns=["run", *CASES])


def _row(case: str, err: pd.Series, split: pd.Series, in_band: pd.Series, width: pd.Series) -> dict:
    ho = split == "holdout"
    a = err.abs()
    return {"case": case, "n": int(len(err)), "n_holdout": int(ho.sum()),
            "median_abs_error": float(a.median()) if len(a) else np.nan,
            "median_abs_error_holdout": float(a[ho].median()) if ho.any() else np.nan,
            "median_signed_error": float(err.median()) if len(err) else np.nan,
            "band_coverage": float(in_band.mean()) if len(in_band) else np.nan,
            "band_coverage_holdout": float(in_band[ho].mean()) if ho.any() else np.nan,
            "median_band_width_holdout": float(width[ho].median()) if ho.any() else np.nan}


def free_bands(free: pd.DataFrame, runs: pd.DataFrame, eff: Efficiency | None = None) -> pd.DataFrame:
    """``free`` (``layouts.free_vs_published``) with the band an estimate shows for each run searched
    freely (``moe.training_band`` with nothing pinned: the free-search band, ``calibrate.bands``):
    ``free_low``, ``free_high`` (MFU) and ``free_in_band`` (published MFU inside)."""
    eff = default(eff)
    r = runs.set_index("run", drop=False)
    lo_hi = np.array([moe.training_band(run_profile(r.loc[run]), catalog.accelerator_record(r.loc[run, "accelerator"])["family"], eff)
                      for run in free["run"]], dtype=float).reshape(-1, 2)
    out = free.copy()
    out["free_low"], out["free_high"] = free["free_mfu"].to_numpy() * lo_hi[:, 0], free["free_mfu"].to_numpy() * lo_hi[:, 1]
    out["free_in_band"] = (out["published_mfu"] >= out["free_low"]) & (out["published_mfu"] <= out["free_high"])
    return out


def _free_row(table: pd.DataFrame, free: pd.DataFrame, runs: pd.DataFrame, eff: Efficiency | None) -> dict:
    """The free-layout case with each run searched freely: its error and whether the published value
    falls in the band an estimate shows for a free search (``free_bands``)."""
    f = free_bands(free[free["run"].isin(table["run"])], runs, eff)
    return _row(FREE_ROW, f["free_error"], f["split"], f["free_in_band"], f["free_high"] / f["free_low"])


def case_summary(table: pd.DataFrame | None = None, runs: pd.DataFrame | None = None,
                 free: pd.DataFrame | None = None, eff: Efficiency | None = None) -> pd.DataFrame:
    """Per case of ``CASES`` (and ``FREE_ROW`` after the free-layout case): ``n``, ``n_holdout``,
    ``median_abs_error``, ``median_abs_error_holdout``, ``median_signed_error``, ``band_coverage``,
    ``band_coverage_holdout`` and ``median_band_width_holdout`` (P90/P10) of the calibration table's
    predictions (default: the shipped runs; ``free``: ``layouts.free_vs_published()``, computed when
    not given; its band from ``eff``, default data/efficiency.csv)."""
    t = calibration_table() if table is None else table
    runs = reference_runs() if runs is None else runs
    tags = tag_cases(runs[runs["run"].isin(t["run"])]).set_index("run")
    t = t[t["run"].isin(tags.index)]
    out = []
    for case in CASES:
        sel = t[tags.loc[t["run"], case].to_numpy()]
        out.append(_row(case, sel["error"], sel["split"], sel["in_band"], sel["high"] / sel["low"]))
        if case == "free layout search":
            f = free_vs_published(runs) if free is None else free
            out.append(_free_row(sel, f, runs, eff))
    return pd.DataFrame(out)


def _pct(v) -> str:
    return "-" if pd.isna(v) else f"{v:.0%}"


def _width(v) -> str:
    return "-" if pd.isna(v) else f"{v:.2f}x"


def _signed(v) -> str:
    return "-" if pd.isna(v) else f"{v:+.0%}"


def cases_markdown(summary: pd.DataFrame | None = None) -> str:
    """``case_summary`` as GitHub markdown (the cases table of docs/explanation/calibration.md)."""
    s = case_summary() if summary is None else summary
    lines = ["| case | runs | held-out runs | median abs. error | median abs. error (held out) | median signed error "
             "| inside the P10-P90 band | inside the band (held out) | median band width (held out) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for _, r in s.iterrows():
        lines.append(f"| {r['case']} | {r['n']} | {r['n_holdout']} | {_pct(r['median_abs_error'])} | "
                     f"{_pct(r['median_abs_error_holdout'])} | {_signed(r['median_signed_error'])} | "
                     f"{_pct(r['band_coverage'])} | {_pct(r['band_coverage_holdout'])} | {_width(r['median_band_width_holdout'])} |")
    return "\n".join(lines)


def cases_text(summary: pd.DataFrame | None = None) -> str:
    """``case_summary`` as the plain table ``python -m workbook calibrate`` prints."""
    s = (case_summary() if summary is None else summary).copy()
    for c in ("median_abs_error", "median_abs_error_holdout", "band_coverage", "band_coverage_holdout"):
        s[c] = s[c].map(_pct)
    s["median_signed_error"] = s["median_signed_error"].map(_signed)
    s["median_band_width_holdout"] = s["median_band_width_holdout"].map(_width)
    return s.to_string(index=False)
