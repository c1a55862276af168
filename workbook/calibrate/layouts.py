"""The layout a search chooses against the nearest published one, and free searches against the
published runs.

Every training run of ``data/reference_runs.csv`` that prints its layout (``parallelism``) is a
published layout: what a framework team chose for that model, chip and scale. ``nearest_published``
finds, for a chosen layout, the published one closest in model size, chip count and sequence
length on the same accelerator family (else the same kind of chip), so that an estimate shows what
it assumes next to what people run (``estimate`` prints it; ``estimate --json`` key
``published_layouts``). ``free_vs_published`` re-runs every such published run with nothing
pinned (the search ``estimate`` uses) and with its layout pinned (the calibration), against the
published MFU: how far the free search lands from tuned practice.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from .. import catalog
from ..model.efficiency import Efficiency, default
from ..model.estimate import training_config
from ..model.search import SOFTWARE_KEYS
from ..model.training import SWITCH_KEYS
from ..scenario import Parallelism
from ..terms import LAYOUT_KEYS
from .runs import (CALIBRATION_HEADROOM, parse_parallelism, reference_runs, run_chips, run_profile, run_workload,
                   training_prediction)

# weights of the distance between a layout and a published one: |log| of the model-size ratio, of the
# chip-count ratio and of the sequence-length ratio (model size first: it decides what must be split)
DISTANCE_WEIGHTS = (1.0, 0.5, 0.25)

def _layout_text(layout: dict) -> str:
    """``"TP8 PP16 CP2 VP4 ZeRO-1 mb1 recompute none"`` from a layout dict (keys of LAYOUT_KEYS, vpp)."""
    parts = [f"{k.upper()}{int(layout[k])}" for k in ("tp", "pp", "dp", "cp", "ep") if layout.get(k) not in (None, 1)]
    if layout.get("vpp") not in (None, 1):
        parts.append(f"VP{int(layout['vpp'])}")
    if layout.get("zero") not in (None, 0):
        parts.append(f"ZeRO-{int(layout['zero'])}")
    if layout.get("micro_batch") is not None:
        parts.append(f"mb{int(layout['micro_batch'])}")
    if layout.get("recompute"):
        parts.append(f"recompute {layout['recompute']}")
    return " ".join(parts) or "data parallel"


@functools.lru_cache(maxsize=1)
def _published_rows() -> tuple[dict, ...]:
    """Training runs that print a layout, one dict each: run, family, kind, accelerator, model, params, moe,
    chips, seq_len, layout, switches, mfu, framework, source. Built once per process from the runs as
    dicts (``to_dict``), not a pandas row per run."""
    runs = reference_runs()
    rows = []
    for r in runs[runs["kind"] == "training"].to_dict("records"):
        if not isinstance(r.get("parallelism"), str) or not r["parallelism"].strip():
            continue
        par, limits = parse_parallelism(r["parallelism"], f"reference_runs.csv: run {r['run']}: parallelism")
        pins = par.model_dump(exclude_none=True) if par else {}
        layout = {k: v for k, v in pins.items() if k in LAYOUT_KEYS} | limits
        acc = catalog.accelerator_record(r["accelerator"])
        prof = run_profile(r)
        rows.append({"run": r["run"], "family": acc["family"], "kind": acc["kind"], "accelerator": r["accelerator"],
                     "model": r["model"] if isinstance(r.get("model"), str) else "(inline shape)",
                     "params": float(prof.params_total), "moe": bool(prof.is_moe), "chips": run_chips(r), "seq_len": int(r["seq_len"]),
                     "layout": layout, "switches": {k: v for k, v in pins.items() if k in SWITCH_KEYS}, "mfu": float(r["value"]), "framework": r.get("framework"), "source": r["source"]})
    return tuple(rows)


@functools.lru_cache(maxsize=1)
def _published() -> pd.DataFrame:
    """Training runs that print a layout: run, family, kind, params, chips, seq_len, layout, mfu, source."""
    return pd.DataFrame(list(_published_rows()))


@functools.lru_cache(maxsize=1)
def _published_arrays() -> dict:
    """The columns ``nearest_published`` filters and measures on, as numpy arrays (one per process)."""
    rows = _published_rows()
    out = {k: np.array([r[k] for r in rows], dtype=object) for k in ("family", "kind")}
    out["moe"] = np.array([r["moe"] for r in rows], dtype=bool)
    for k in ("params", "chips", "seq_len"):
        out[k] = np.array([r[k] for r in rows], dtype=float)
    return out


def nearest_published(params: float, acc, chips: int, seq_len: int, moe: bool = False) -> dict | None:
    """The published layout nearest to a run of a ``params``-weight model (mixture of experts or
    not: ``moe``) on ``chips`` chips of ``acc`` at ``seq_len`` tokens, looked for among the runs of
    the same accelerator family and kind of model, then the same family, then the same kind of chip
    (gpu, tpu, asic) and kind of model, then the same kind of chip; None when none is published.
    Distance: ``DISTANCE_WEIGHTS`` · |log| of the ratios of model size, chip count and sequence length
    (the first of the nearest in file order on a tie)."""
    rows = _published_rows()
    if not rows:
        return None
    a = _published_arrays()
    for key, same_moe in (("family", True), ("family", False), ("kind", True), ("kind", False)):
        mask = a[key] == acc[key]
        if same_moe:
            mask = mask & (a["moe"] == bool(moe))
        idx = np.flatnonzero(mask)
        if len(idx):
            break
    else:
        return None
    wp, wc, ws = DISTANCE_WEIGHTS
    d = (wp * np.abs(np.log(a["params"][idx] / float(params))) + wc * np.abs(np.log(a["chips"][idx] / float(chips)))
         + ws * np.abs(np.log(a["seq_len"][idx] / float(seq_len))))
    r = rows[int(idx[np.nanargmin(d)])]
    out = {k: r[k] for k in ("run", "accelerator", "model", "chips", "seq_len", "mfu", "framework", "source")}
    out["layout"] = dict(r["layout"])
    out["layout_text"] = _layout_text(r["layout"])
    out["distance"] = float(np.nanmin(d))
    return out


def layout_comparison(option: dict, params: float, acc, seq_len: int, moe: bool = False) -> dict | None:
    """For one training option (a row of ``estimate --json`` ``options``): its chosen layout and the
    nearest published one (``nearest_published``), or None when the option has no layout."""
    if option.get("tp") is None or pd.isna(option.get("tp")) or not option.get("chips"):
        return None
    chosen = {k: option.get(k) for k in LAYOUT_KEYS if option.get(k) is not None}
    near = nearest_published(params, acc, int(option["chips"]), int(seq_len), moe)
    return {"accelerator": option["accelerator"], "chips": int(option["chips"]), "chosen": chosen,
            "chosen_text": _layout_text(chosen), "chosen_mfu": option.get("mfu"), "nearest": near}


def comparison_lines(items: list[dict]) -> list[str]:
    """The CLI's lines for ``published_layouts``: chosen layout and MFU, then the nearest published run."""
    if not items:
        return []
    lines = ["", "Chosen layout against the nearest published one (data/reference_runs.csv):"]
    for it in items:
        n = it.get("nearest")
        mfu = it.get("chosen_mfu")
        mine = f"  {it['accelerator']} x {it['chips']}: {it['chosen_text']}" + (f" (MFU {mfu:.2f})" if mfu else "")
        lines.append(mine)
        if n:
            lines.append(f"    nearest published: {n['run']} ({n['model']}, {n['chips']} x {n['accelerator']}, "
                         f"{n['seq_len']} tokens): {n['layout_text']} (MFU {n['mfu']:.2f})")
        else:
            lines.append("    nearest published: none on this kind of chip")
    return lines


def free_prediction(row, eff: Efficiency | None = None) -> dict | None:
    """A published-layout training run searched freely, as ``estimate`` searches it: nothing of its
    layout pinned, the software it ran kept (``search.SOFTWARE_KEYS`` among its limits, the
    ``training.SWITCH_KEYS`` pins), evaluated with ``eff`` (default: data/efficiency.csv). The best
    configuration (``estimate.training_config``), or None when nothing fits memory."""
    pins, limits = parse_parallelism(row.get("parallelism"), f"reference_runs.csv: run {row.get('run')}: parallelism")
    pinned = pins.model_dump(exclude_none=True) if pins else {}
    switches = {k: v for k, v in pinned.items() if k in SWITCH_KEYS}
    software = {k: v for k, v in limits.items() if k in SOFTWARE_KEYS}
    acc = catalog.accelerator_record(row["accelerator"])
    return training_config(run_profile(row), acc, run_chips(row), run_workload(row),
                           Parallelism(**switches) if switches else None, CALIBRATION_HEADROOM, default(eff), **software)


def free_vs_published(runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every published layout's run predicted twice: with its layout pinned (``pinned_mfu``, as the
    calibration does) and searched freely (``free_mfu``: nothing pinned, the practical grid with the
    realism prior, as ``estimate`` does), against the published MFU (errors predicted/published − 1),
    with the free search's layout. The free search keeps what the run's code had
    (``search.SOFTWARE_KEYS``: no sequence parallelism or FlashAttention in 2021 Megatron-LM; the
    ``training.SWITCH_KEYS`` pins such as tensor-parallel overlap; the sharding modes and layouts its framework
    runs, ``search.FRAMEWORK_MODES`` through ``runs.run_workload``): a layout is free, the software it ran is not."""
    pub = _published()
    runs = reference_runs() if runs is None else runs
    rows = []
    for _, r in runs[runs["run"].isin(pub["run"])].iterrows():
        acc = catalog.accelerator_record(r["accelerator"])
        pinned = training_prediction(r)
        free = free_prediction(r)
        if free is None:
            continue
        value = float(r["value"])
        rows.append({"run": r["run"], "family": acc["family"], "split": r["split"], "published_mfu": value,
                     "pinned_mfu": pinned["mfu"], "pinned_error": pinned["mfu"] / value - 1.0,
                     "free_mfu": free["mfu"], "free_error": free["mfu"] / value - 1.0,
                     "published_layout": _layout_text(pub.set_index("run").loc[r["run"], "layout"]),
                     "free_layout": _layout_text({k: free[k] for k in LAYOUT_KEYS} | {"vpp": free.get("vpp")})})
    return pd.DataFrame(rows)


def median_abs(x) -> float:
    x = np.abs(np.asarray(x, dtype=float))
    return float(np.median(x)) if len(x) else math.nan
