"""The team's own runs (a scenario's ``measurements: FILE``): read, converted like the published runs,
compared with the model (``python -m workbook calibrate --runs FILE``) and turned into an explicit
adjustment of the measured chip's efficiency.

The file is a CSV, one row per measured run (columns in ``COLUMNS``; docs/how-to/own-runs.md).
Each row becomes one reference run per figure it gives (``to_runs``), in the definitions of
``calibrate.runs`` (MFU for training; output tokens/s per chip, TPOT and TTFT for serving), so the
same ``calibration_table`` compares them with the model.

The adjustment (``adjust``) gives the team's runs precedence over the published ones near them:
- near = same accelerator, same kind (training or serving), same compute precision, a model
  within a factor ``NEAR_PARAMS_RATIO`` of the scenario's active parameters, and LoRA runs
  (``lora_rank`` given: predicted as LoRA fine-tunes of a base stored at their ``precision``) only
  for a LoRA workload; other runs are listed, never used;
- the chip gets a scope of its own in the ``Efficiency`` (``Efficiency.replace`` of every value of its
  family copied under the chip's id, so that no other chip of the family moves), and its fitted
  parameter is scaled by the median ratio of the near runs, at a fixed point (the multi-chip model
  is not linear in it): training ``matmul_ceiling ← matmul_ceiling · median(observed MFU /
  predicted MFU)``; serving ``decode_memory_efficiency ← · median(observed / predicted output
  tokens/s, predicted / observed TPOT)`` and ``prefill_matmul_ceiling ← · median(predicted /
  observed TTFT)`` (the chip's prefill ceiling starts at its family's, else its inference ceiling); repeated until the median ratio is within ``TOLERANCE`` of 1 (at most
  ``PASSES``), each value capped at 1 (a fraction of the datasheet figure);
- the chip's band: the published band narrowed by the runs that agree, half-widths in log space
  ``w = max(w_published / sqrt(1 + n), z90 · s)``, with n near runs, s the standard deviation of
  their log(observed/predicted) after the adjustment (0 for one run) and z90 = 1.2816 (P10/P90 of
  a normal): n consistent runs shrink it like the standard error of a mean, runs that disagree
  widen it again. The same for the band of a freely searched training layout (``band_p10_mfu_free``,
  ``calibrate.bands``), which ``estimate`` shows when nothing of the layout is pinned.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pandas as pd

from .. import catalog, hf, inputs, paths, terms
from ..errors import InputError
from ..model.efficiency import FREE_METRIC, Efficiency, default
from ..scenario import Scenario, hf_architecture
from . import runs as published

TRAINING = ("seq_len", "global_batch_tokens", "tokens_per_s")
SERVING = ("input_tokens", "output_tokens", "concurrency", "output_tokens_per_s", "tpot_ms", "ttft_ms")
REQUIRED = ("accelerator", "chips", "model", "precision")
LAYOUT = ("tp", "pp", "dp", "ep", "cp", "zero", "micro_batch", "recompute")
OPTIONAL = ("run", "kind", "kv_precision", "lora_rank", "source", "as_of", "notes") + LAYOUT
COLUMNS = REQUIRED + TRAINING + SERVING + OPTIONAL
NEAR_PARAMS_RATIO = 4.0
TOLERANCE = 0.01
PASSES = 5
Z90 = 1.2816  # standard normal quantile of P90
SERVING_METRICS = {"output_tokens_per_s": ("output_tokens_per_s_per_chip", "output_tokens_per_s_total"),
                   "tpot_ms": ("tpot_ms", "tpot_ms"), "ttft_ms": ("ttft_ms", "ttft_ms")}
# the parameter each metric moves, and whether a higher observed figure means a higher parameter
MOVES = {"mfu": ("matmul_ceiling", True), "output_tokens_per_s_per_chip": ("decode_memory_efficiency", True),
         "tpot_ms": ("decode_memory_efficiency", False), "ttft_ms": ("prefill_matmul_ceiling", False)}


# --- reading ----------------------------------------------------------------------------------------

# Upper bounds of each number (the scenario file's sanity limits: far above any real run, so that no
# row asks the model for impossible sizes; not sourced facts): column -> (maximum, integer)
BOUNDS = {"chips": (1_000_000, True), "seq_len": (10_000_000, True), "input_tokens": (10_000_000, True),
          "output_tokens": (10_000_000, True), "concurrency": (10_000_000, True), "lora_rank": (65_536, True),
          **{k: (65_536, True) for k in ("tp", "pp", "dp", "ep", "cp", "micro_batch")},
          "global_batch_tokens": (1e15, False), "tokens_per_s": (1e15, False), "output_tokens_per_s": (1e15, False),
          "tpot_ms": (1e9, False), "ttft_ms": (1e9, False)}
MAX_BYTES = 1_000_000      # a measurements CSV is a few rows; anything bigger is not one
MAX_RUNS = 1_000           # each run is predicted by the model (about 15 ms each)


def _number(v, where: str, col: str):
    hi, integer = BOUNDS[col]
    return inputs.number(v, where, 0, hi, integer)


def read_measurements(path: str | Path, label: str | None = None, model_paths: bool = True) -> pd.DataFrame:
    """The team's runs, validated: one line per problem naming file, row and column. The file is read
    through ``inputs`` (a regular UTF-8 file of at most ``MAX_BYTES``, ``MAX_RUNS`` rows, none ragged);
    every number is range-checked (``BOUNDS``). ``model_paths=False`` (an upload): the ``model``
    column names catalog models only, never a file on this machine."""
    rel = label or paths.rel(path)
    header, records = inputs.read_csv(path, "a measurements CSV (one row per run)", MAX_BYTES, MAX_RUNS,
                                      comment="#", label=rel)
    unknown = [c for c in header if c not in COLUMNS]
    missing = [c for c in REQUIRED if c not in header]
    if unknown or missing:
        what = [f"unknown column {inputs.excerpt(c)}{catalog._suggest(c[:60], COLUMNS)}" for c in unknown[:10]] + \
            [f"missing column {c!r}" for c in missing]
        raise InputError("", [f"{rel}: {w}" for w in what])
    if not records:
        raise InputError(f"{rel}: no runs (expected one row per measured run)")
    problems, rows = [], []
    folder = Path(path).parent if model_paths else None
    for i, (line, rec) in enumerate(records):
        try:
            rows.append(_row(rec, f"{rel}: row {line}", folder, i))
        except InputError as e:
            problems += e.problems
        if len(problems) >= 30:
            break
    if problems:
        raise InputError("", problems[:30])
    return pd.DataFrame(rows)


def _row(r: dict, where: str, folder: Path | None, i: int) -> dict:
    """One measured run, typed, with its kind and its profile's architecture string."""
    out = {c: (r.get(c, "").strip() or None) for c in COLUMNS}
    out["run"] = out["run"] or f"own-{i + 1}"
    try:
        out["accelerator"] = catalog.resolve("accelerators", str(out["accelerator"] or ""))
    except InputError as e:
        raise InputError(f"{where}: accelerator: {e}") from None
    if out["precision"] not in terms.PRECISIONS:
        raise InputError(f"{where}: precision: expected one of {', '.join(terms.PRECISIONS)}, "
                         f"got {inputs.excerpt(out['precision'])}")
    for c in BOUNDS:
        out[c] = _number(out[c], f"{where}: {c}", c)
    kind = out["kind"] or ("training" if out["tokens_per_s"] else "inference")
    if kind not in ("training", "inference"):
        raise InputError(f"{where}: kind: expected training or inference, got {inputs.excerpt(kind)}")
    need = ("seq_len", "global_batch_tokens", "tokens_per_s") if kind == "training" else ("input_tokens", "output_tokens", "concurrency")
    for c in ("chips",) + need:
        if out[c] is None:
            raise InputError(f"{where}: {c}: expected a positive number for {'a training' if kind == 'training' else 'a serving'} run")
    if kind == "inference" and out["lora_rank"] is not None:
        raise InputError(f"{where}: lora_rank: only a training (fine-tuning) run has LoRA adapters, this is a serving run")
    if kind == "inference" and not any(out[m] for m in SERVING_METRICS):
        raise InputError(f"{where}: output_tokens_per_s: a serving run needs output_tokens_per_s, tpot_ms or ttft_ms")
    out["kind"] = kind
    out.update(_model(str(out["model"] or ""), where, folder))
    return out


def _model(model: str, where: str, folder: Path | None) -> dict:
    """A catalog model (id or alias), or a Hugging Face config.json relative to the file (only when
    ``folder`` is given: an upload never names a file on the server, and its message never says
    whether such a file exists)."""
    try:
        return {"model": catalog.resolve("models", model), "architecture": None}
    except InputError as e:
        if folder is None:
            raise InputError(f"{where}: model: unknown model {inputs.excerpt(model)} "
                             "(an uploaded file names models of data/models.csv)") from None
        candidate = folder / model
        if not model or len(model) > 4096 or "\x00" in model or not _exists(candidate):
            raise InputError(f"{where}: model: {e}") from None
    hf_architecture(candidate, f"{where}: model")          # every bound checked, one line each
    fields = hf.load(candidate, f"{where}: model")
    return {"model": None, "architecture": ";".join(f"{k}={v}" for k, v in fields.items() if v is not None)}


def _exists(p: Path) -> bool:
    try:
        return p.exists()
    except (OSError, ValueError):
        return False


# --- as reference runs ------------------------------------------------------------------------------

def _layout(m: dict) -> str | None:
    parts = [f"{k}={m[k]}" for k in LAYOUT if m.get(k) is not None]
    return ";".join(parts) or None


def to_runs(measured: pd.DataFrame) -> pd.DataFrame:
    """One reference-run row (``calibrate.runs`` columns) per figure of each measured run."""
    fam = catalog.accelerators_by_id()["family"]
    rows = []
    for _, m in measured.iterrows():
        base = {"run": m["run"], "kind": m["kind"], "model": m["model"], "architecture": m["architecture"],
                "accelerator": m["accelerator"], "family": fam[m["accelerator"]], "chips": m["chips"],
                "precision": terms.compute_precision(m["precision"]), "split": "own", "source": m.get("source")}
        if m["kind"] == "training":
            base.update(seq_len=m["seq_len"], global_batch_seqs=m["global_batch_tokens"] / m["seq_len"],
                        lora_rank=m.get("lora_rank"), weight_precision=m["precision"],
                        parallelism=_layout(m), basis="tokens_per_s_per_chip", metric="mfu",
                        published_value=m["tokens_per_s"] / m["chips"], published_metric="tokens/s per chip")
            base["value"] = published.convert(pd.Series(base))
            rows.append(base)
            continue
        fp4 = m["precision"] == "fp4"  # NVFP4 weights (the scenario's default fp4_format) and an FP8 KV cache
        kv = m.get("kv_precision") or ("bf16" if m["precision"] in terms.WEIGHT_ONLY_PRECISIONS else "fp8" if fp4 else m["precision"])
        base.update(tp=m["tp"] or m["chips"], weight_precision="nvfp4" if fp4 else m["precision"], kv_precision=kv,
                    input_tokens=m["input_tokens"], output_tokens=m["output_tokens"], batch=m["concurrency"],
                    batching="continuous")
        for col, (metric, basis) in SERVING_METRICS.items():
            if m[col]:
                row = {**base, "metric": metric, "basis": basis, "published_value": m[col], "published_metric": col}
                rows.append({**row, "value": published.convert(pd.Series(row))})
    return pd.DataFrame(rows)


def calibration_table(runs: pd.DataFrame, eff: Efficiency | None = None) -> pd.DataFrame:
    """The model against the team's runs: the table of ``calibrate.runs.calibration_table``."""
    eff = default(eff)
    out = runs[["run", "kind", "family", "accelerator", "model", "chips", "precision", "published_value",
                "published_metric", "metric", "value", "split"]].copy()
    out["model"] = out["model"].fillna("(config.json)")
    out["predicted"] = [float(published.predict_run(r, eff=eff)) for _, r in runs.iterrows()]
    out["error"] = out["predicted"] / out["value"] - 1.0
    out["kind"] = out["metric"].map(published.KIND_OF_METRIC)
    return out


# --- the adjustment ---------------------------------------------------------------------------------

def _active_params(row) -> float:
    return published.run_profile(row).params_active


def near(runs: pd.DataFrame, kind: str, precision: str, params_active: float, lora: bool = False) -> np.ndarray:
    """Which of the team's runs are near a workload: same ``kind`` (training or inference), same
    compute ``precision``, a model within ``NEAR_PARAMS_RATIO`` of its ``params_active``, and LoRA
    runs (``lora_rank``) for a LoRA workload (``lora``) only, full-weight runs for the others (a
    frozen base does a third less work per token and, stored in 4 bits, dequantises it: its
    efficiency is not a full fine-tune's). The accelerator is matched per chip by ``adjust``."""
    ratio = np.array([_active_params(r) for _, r in runs.iterrows()]) / float(params_active)
    close = np.abs(np.log(ratio)) <= math.log(NEAR_PARAMS_RATIO)
    ranks = runs["lora_rank"] if "lora_rank" in runs else pd.Series(None, index=runs.index, dtype=object)
    is_lora = ranks.map(lambda r: r is not None and r == r).to_numpy(dtype=bool)
    return (runs["kind"] == kind).to_numpy() & (runs["precision"] == precision).to_numpy() & close & (is_lora == lora)


def chip_scope(eff: Efficiency, accelerator: str) -> Efficiency:
    """A copy of ``eff`` where ``accelerator`` has a scope of its own: every value of its family
    (and, where the family has none, of its kind for the matmul ceiling) copied under the chip's id."""
    acc = catalog.accelerator_record(accelerator)
    fam, kind = str(acc["family"]), str(acc["kind"])
    own = {(p, accelerator): v for (p, sc), v in eff.table.items() if sc == fam}
    if ("matmul_ceiling", accelerator) not in own:
        own[("matmul_ceiling", accelerator)] = eff.get("matmul_ceiling", kind if eff.has("matmul_ceiling", kind) else "pooled")
    for name in ("decode_memory_efficiency", "inference_matmul_ceiling", "tp_collective_latency_s"):
        own.setdefault((name, accelerator), eff.get(name, fam))
    # prefill runs at the family's prefill ceiling where it has one, else at the inference ceiling
    own.setdefault(("prefill_matmul_ceiling", accelerator), own[("inference_matmul_ceiling", accelerator)])
    return eff.replace(own)


def _log_ratios(rows: pd.DataFrame, eff: Efficiency) -> np.ndarray:
    """log(observed/predicted) per run, signed so that > 0 means the parameter should grow."""
    pred = np.array([float(published.predict_run(r, eff=eff)) for _, r in rows.iterrows()])
    up = rows["metric"].map(lambda m: MOVES[m][1]).to_numpy()
    lr = np.log(rows["value"].to_numpy(dtype=float) / pred)
    return np.where(up, lr, -lr)


def _fit_chip(eff: Efficiency, chip: str, rows: pd.DataFrame) -> tuple[Efficiency, dict]:
    """Scale each parameter the chip's near runs move until their median ratio is within
    ``TOLERANCE`` of 1 (fixed point; module docstring)."""
    start = {MOVES[m][0]: eff.get(MOVES[m][0], chip) for m in rows["metric"].unique()}
    for _ in range(PASSES):
        lr = _log_ratios(rows, eff)
        updates, done = {}, True
        for param in start:
            sel = rows["metric"].map(lambda m: MOVES[m][0] == param).to_numpy()
            step = float(np.median(lr[sel]))
            done &= abs(step) < math.log1p(TOLERANCE)
            updates[(param, chip)] = min(1.0, eff.get(param, chip) * math.exp(step))
        if done:
            break
        eff = eff.replace(updates)
    return eff, start


def _band(eff: Efficiency, chip: str, family: str, metric: str, lr: np.ndarray) -> dict:
    """The chip's band for ``metric`` after the adjustment (module docstring); for MFU also the band
    of a freely searched layout (``FREE_METRIC``), narrowed the same way where the fit has one."""
    out = {}
    n = len(lr)
    spread = Z90 * float(np.std(lr, ddof=1)) if n > 1 else 0.0
    for band_metric in (metric, FREE_METRIC) if metric == "mfu" else (metric,):
        if not (eff.has(f"band_p10_{band_metric}", family) or eff.has(f"band_p10_{band_metric}", "pooled")):
            continue
        lo, hi = eff.get(f"band_p10_{band_metric}", family), eff.get(f"band_p90_{band_metric}", family)
        w_lo = max(abs(math.log(lo)) / math.sqrt(1 + n), spread)
        w_hi = max(abs(math.log(hi)) / math.sqrt(1 + n), spread)
        out[(f"band_p10_{band_metric}", chip)], out[(f"band_p90_{band_metric}", chip)] = math.exp(-w_lo), math.exp(w_hi)
    return out


def adjust(eff: Efficiency, runs: pd.DataFrame, use: np.ndarray) -> tuple[Efficiency, pd.DataFrame]:
    """``eff`` with the chips of the ``use``d runs moved to them (module docstring), and one row per
    changed parameter: chip, parameter, before, after, runs, median error before and after."""
    rows, out = runs[use], []
    for chip, g in rows.groupby("accelerator", sort=True):
        fam = str(g["family"].iloc[0])
        base = chip_scope(eff, chip)
        before = {m: np.median(np.abs(_log_ratios(g[g["metric"] == m], base))) for m in g["metric"].unique()}
        eff, start = _fit_chip(base, chip, g)
        bands = {}
        for m in g["metric"].unique():
            bands.update(_band(eff, chip, fam, m, _log_ratios(g[g["metric"] == m], eff)))
        eff = eff.replace(bands)
        for param, old in start.items():
            ms = [m for m in g["metric"].unique() if MOVES[m][0] == param]
            after = np.median(np.abs(_log_ratios(g[g["metric"].isin(ms)], eff)))
            out.append({"accelerator": chip, "parameter": param, "before": old, "after": eff.get(param, chip),
                        "runs": ", ".join(g[g["metric"].isin(ms)]["run"].unique()),
                        "median_abs_error_before": math.expm1(max(before[m] for m in ms)),
                        "median_abs_error_after": math.expm1(after)})
    return eff, pd.DataFrame(out, columns=["accelerator", "parameter", "before", "after", "runs",
                                           "median_abs_error_before", "median_abs_error_after"])


@functools.lru_cache(maxsize=32)
def _scenario_adjustment(path: str, mtime: float, kind: str, precision: str, params_active: float, eff: Efficiency,
                         lora: bool = False):
    runs = to_runs(read_measurements(path))
    use = near(runs, kind, precision, params_active, lora)
    return (*adjust(eff, runs, use), runs.assign(used=use))


def scenario_efficiency(s: Scenario, profile, eff: Efficiency | None = None):
    """The efficiency ``analysis.analyse`` uses for ``s``: ``eff`` (default data/efficiency.csv)
    adjusted to the team's runs of ``s.measurements`` near it (``profile``: the scenario's model),
    the adjustments and the runs (with ``used``); ``eff`` unchanged and None, None without
    measurements. Cached on the file's path and modification time."""
    eff = default(eff)
    if not s.measurements:
        return eff, None, None
    path = Path(s.measurements)
    mtime = path.stat().st_mtime if path.exists() else 0.0
    kind = "training" if s.is_training else "inference"
    return _scenario_adjustment(str(path), mtime, kind, terms.compute_precision(s.workload.precision),
                                float(profile.params_active), eff, bool(s.workload.lora_rank))
