"""Reference runs: the published runs of ``data/reference_runs.csv`` read, converted to one definition,
predicted by the performance model, and the calibration table (error per run, per kind and family).

``python -m workbook calibrate`` prints, for every run, the published figure converted to one
definition, the model's prediction and the error, then the median absolute error per kind and per
accelerator family, on every run and on the held-out runs alone. ``--write`` refits the efficiency
parameters on the runs marked ``split = fit`` and writes ``data/efficiency.csv`` (each number with
the runs that set it).

One definition per metric (what ``value`` holds in ``reference_runs.csv``):
- training ``mfu``: model FLOPs utilization, ``(6N + 12·L·H·Q·S) · tokens/s / (chips · dense peak of
  the compute precision)``, PaLM's definition (Chowdhery et al. 2022, App. B); N = weights in
  matmuls per token (``profile.train_flops_per_token``). Published figures on other bases (tokens/s,
  sequences/s, GPU-hours, hardware TFLOP/s with recomputation) are converted by ``convert``.
- inference ``output_tokens_per_s_per_chip`` (generated tokens per second over all chips of the run),
  ``tpot_ms`` (time per output token), ``ttft_ms`` (time to first token).

The fit (``fit``) is deliberately small: for training a matmul ceiling per accelerator family, one
pooled width constant κ (the element-wise penalty h / (h + κ · ridge point), which also sets how
much FP8 gains) and a mixture-of-experts constant per platform; for inference an HBM-bandwidth
efficiency, a matmul ceiling and a per-collective latency per family. Training predictions are the
multi-chip model's (``model.training`` through ``model.estimate.training_config``, as in ``estimate``), so
the training parameters are fitted at a fixed point where that model reproduces the published MFU
(``fit_training``). Family values are medians (L1 in log space), pooled values come from a grid
search: see ``model.efficiency`` for the formulas. The per-doubling network loss of the earlier model is gone
where the communication model explains the runs; it is fitted (as ``model.training``'s
synchronisation term) only for a family whose runs hold one model and code at three or more chip
counts beyond one fast domain, and the data leave one only for TPU v5e's MaxText multi-slice runs
(the H100 GPT-3 175B series fits 0).
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd

from .. import catalog, paths
from . import generic
from ..errors import InputError
from ..model import lengths, moe, serving
from ..model.efficiency import Efficiency, band, default
from ..model.estimate import training_config
from ..model import search
from ..model.search import SOFTWARE_KEYS
from ..model.training import SWITCH_KEYS
from ..model.profile import (Profile, fine_tune_flops_per_token, model_profile, profile_from_architecture,
                             train_flops_per_token)
from ..scenario import Architecture, Parallelism, Workload

RUNS_FILE = "reference_runs"

# --- reading the runs ------------------------------------------------------------------------------


def key_values(text: str, where: str):
    """``"a=1;b=2"`` as (key, value) string pairs; InputError naming ``where`` on a malformed part."""
    for part in str(text).split(";"):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise InputError(f"{where}: expected key=value pairs separated by ';', got {part!r}")
        k, v = (x.strip() for x in part.split("=", 1))
        yield k, v


def parse_architecture(text: str, where: str = "architecture") -> Architecture:
    """An inline shape ``"layers=48;hidden=6144;..."`` (keys of ``scenario.Architecture``)."""
    data = {}
    for k, v in key_values(text, where):
        if k not in Architecture.model_fields:
            raise InputError(f"{where}: unknown key {k!r}{catalog._suggest(k, list(Architecture.model_fields))}")
        data[k] = v.lower() in ("true", "1", "yes") if k in ("gated_mlp", "tied_embeddings") else int(float(v))
    try:
        return Architecture.model_validate(data)
    except Exception as e:  # pydantic ValidationError -> one line
        raise InputError(f"{where}: {e}".splitlines()[0]) from None


def run_profile(row) -> Profile:
    """The workload profile of one reference run: its catalog model or its inline architecture."""
    model = row.get("model")
    if isinstance(model, str) and model:
        return model_profile(model)
    if generic.is_generic_shape(row.get("architecture")):
        return generic.profile(row)
    arch = row.get("architecture")
    if not isinstance(arch, str) or not arch:
        raise InputError(f"reference_runs.csv: run {row.get('run')!r}: expected a model id or an architecture")
    return _inline_profile(arch, str(row.get("run")))


@functools.lru_cache(maxsize=1024)
def _inline_profile(arch: str, run: str) -> Profile:
    """``profile_from_architecture`` of an inline shape, remembered per process on the text and the run's
    name (a Profile is frozen): the calibration table reads each run's profile twice (prediction, band)."""
    return profile_from_architecture(parse_architecture(arch, f"reference_runs.csv: run {run}: architecture"), run)


def megatron_hw_flops_per_token(p: Profile, seq_len) -> float:
    """Hardware FLOPs per token counted by Megatron-LM / Megatron-DeepSpeed *with* full activation
    recomputation (a second forward pass): 96·L·h²·(1 + S/(6h) + V/(16·L·h)) per token.

    Narayanan et al. 2021 (arXiv 2104.04473) §5.1, eq. (3); the same formula with
    ``checkpoint_activations_factor = 4`` is what Megatron-DeepSpeed (BLOOM) logs as TFLOP/s."""
    L, h, V = p.layers, p.hidden, p.vocab
    return 96.0 * L * h * h * (1.0 + seq_len / (6.0 * h) + V / (16.0 * L * h))


def convert(row, acc: pd.Series | None = None) -> float:
    """The published figure of one run in the package's one definition (see module docstring).

    ``basis`` says how the publisher counted:
    - ``mfu_palm``: MFU in % with the same definition (MaxText, Megatron-LM, llm-foundry count
      6N + 12·L·H·Q·S over the dense peak of the compute precision): divided by 100, unchanged;
    - ``tokens_per_s_per_chip`` / ``seqs_per_s_total`` / ``gpu_hours_total`` (with ``train_tokens``):
      turned into tokens/s per chip, then MFU = train_flops_per_token · tokens/s / peak;
    - ``hw_tflops_per_chip_recompute``: achieved TFLOP/s counted with recomputation
      (``megatron_hw_flops_per_token``) -> tokens/s -> MFU;
    - ``output_tokens_per_s_total``: generated tokens/s of the whole run -> per chip;
    - ``tpot_ms`` / ``ttft_ms``: unchanged.
    """
    basis = row["basis"]
    v = float(row["published_value"])
    if basis in ("tpot_ms", "ttft_ms"):
        return v
    if basis == "output_tokens_per_s_total":
        return v / float(row["chips"])
    if basis == "mfu_palm":
        return v / 100.0
    if generic.is_generic(row):
        return generic.convert(row)
    p = run_profile(row)
    acc = catalog.accelerator(row["accelerator"]) if acc is None else acc
    peak = float(catalog.peak_flops_per_s(acc, row["precision"]))
    seq = float(row["seq_len"])
    if basis == "tokens_per_s_per_chip":
        tps = v
    elif basis == "seqs_per_s_total":
        tps = v * seq / float(row["chips"])
    elif basis == "gpu_hours_total":
        tps = float(row["train_tokens"]) / (v * 3600.0)
    elif basis == "hw_tflops_per_chip_recompute":
        tps = v * 1e12 / megatron_hw_flops_per_token(p, seq)
    else:
        raise InputError(f"reference_runs.csv: run {row['run']!r}: basis: unknown {basis!r}")
    return float(run_flops_per_token(row, p)) * tps / peak


def run_flops_per_token(row, p: Profile) -> float:
    """Model FLOPs per trained token of a run: 6N + attention (PaLM), or for a LoRA fine-tune (a team's
    run with ``lora_rank``) 4N + 6 per adapter weight + attention (``profile.fine_tune_flops_per_token``),
    the count of the estimate's MFU for the same workload."""
    if _n(row.get("lora_rank")) is None:
        return float(train_flops_per_token(p, float(row["seq_len"])))
    return float(fine_tune_flops_per_token(p, run_workload(row)))


@functools.lru_cache(maxsize=None)
def _runs_cached() -> pd.DataFrame:
    df = catalog.load(RUNS_FILE).copy()
    dup = df["run"][df["run"].duplicated()]
    if len(dup):
        raise InputError(f"data/{RUNS_FILE}.csv: run: duplicate id {dup.iloc[0]!r}")
    used = df["split"] != "excluded"
    known = catalog.resolve_map("accelerators")
    names, blank = df["accelerator"].tolist(), (df["value"].isna() | df["metric"].isna()).to_numpy()
    for i in np.flatnonzero(used.to_numpy()):  # column values, not a pandas row per run
        if names[i] not in known:
            raise InputError(f"data/{RUNS_FILE}.csv: row {i + 2}: accelerator: unknown id {names[i]!r}"
                             f"{catalog._suggest(names[i], set(known.values()))}")
        if blank[i]:
            raise InputError(f"data/{RUNS_FILE}.csv: row {i + 2}: value: expected the converted figure for a used run")
    acc = catalog.accelerator_records()
    df["accelerator"] = [catalog.resolve("accelerators", a) if u else a for a, u in zip(df["accelerator"], used)]
    df["family"] = [acc[a]["family"] if u else None for a, u in zip(df["accelerator"], used)]
    return df


def reference_runs(include_excluded: bool = False) -> pd.DataFrame:
    """``data/reference_runs.csv``, validated, with each run's accelerator ``family``.

    Excluded runs (``split = excluded``: no usable throughput, a chip not in the catalog, a feature
    the profile does not model) are dropped unless ``include_excluded``."""
    df = _runs_cached()
    return df.copy() if include_excluded else df[df["split"] != "excluded"].reset_index(drop=True)


# --- predictions -----------------------------------------------------------------------------------

CALIBRATION_HEADROOM = 0.1  # vLLM's default gpu_memory_utilization = 0.9 (vLLM engine arguments)


def _n(x, default=None):
    return default if x is None or (isinstance(x, float) and np.isnan(x)) or x is pd.NA else x


def parse_parallelism(text, where: str = "parallelism") -> tuple[Parallelism | None, dict]:
    """A published layout ``"tp=8;pp=4;vpp=20;micro_batch=1;recompute=full"``: the pins of
    ``cluster.parallelism`` (tp, pp, dp, ep, cp, zero, micro_batch, recompute; the switches
    tp_comm_overlap and grad_reduce_in_fp32 as 0/1) and the grid limits that are not scenario keys
    (``vpp``: interleaved stages per chip; ``sequence_parallel``, ``flash_attention`` and
    ``distributed_optimizer``, 0 or 1: what the run's code had, ``search.SOFTWARE_KEYS``)."""
    if not isinstance(text, str) or not text.strip():
        return None, {}
    pins, limits = {}, {}
    for k, v in key_values(text, where):
        if k == "vpp":
            limits["vpp"] = int(v)
        elif k in SWITCH_KEYS:
            if v not in ("0", "1"):
                raise InputError(f"{where}: {k}: expected 0 or 1, got {v!r}")
            pins[k] = v == "1"
        elif k in SOFTWARE_KEYS:
            if v not in ("0", "1"):
                raise InputError(f"{where}: {k}: expected 0 or 1, got {v!r}")
            limits[k] = v == "1"
        elif k in Parallelism.model_fields:
            pins[k] = v if k == "recompute" else int(v)
        else:
            raise InputError(f"{where}: unknown key {k!r}{catalog._suggest(k, list(Parallelism.model_fields) + ['vpp', *SOFTWARE_KEYS])}")
    try:
        return (Parallelism.model_validate(pins) if pins else None), limits
    except Exception as e:  # pydantic ValidationError -> one line
        raise InputError(f"{where}: {e}".splitlines()[0]) from None


def run_chips(row) -> int:
    """Chips of a training run; when unpublished (Llama 2 model card), one sequence of the published
    global batch per chip (1,024 A100s for Llama 2's 4M-token batches of 4,096-token sequences):
    the package's default layout, an assumption stated in data/README.md."""
    chips = _n(row.get("chips"))
    if chips is None:
        chips = _n(row.get("global_batch_seqs"))
    if chips is None:
        raise InputError(f"reference_runs.csv: run {row.get('run')!r}: chips: expected the chip count or "
                         f"global_batch_seqs of a training run")
    return int(chips)


def run_workload(row) -> Workload:
    """The training workload of a reference run: its model or inline shape, precision, sequence
    length and global batch (``global_batch_seqs``; unpublished: one sequence per chip). A team's
    LoRA run (``lora_rank``) is a fine-tuning workload with its base stored at ``weight_precision``. Its
    ``framework`` text names the ``training_framework`` (``search.framework_id``; none when unrecognised),
    so the layout search offers only the sharding modes that framework runs."""
    seqs = int(_n(row.get("global_batch_seqs"), run_chips(row)))
    seq = int(row["seq_len"])
    shape = {"model": row["model"]} if isinstance(row.get("model"), str) and row["model"] else {
        "architecture": parse_architecture(row["architecture"], f"reference_runs.csv: run {row.get('run')}: architecture")}
    lora = _n(row.get("lora_rank"))
    if lora is not None:
        shape.update(task="fine-tuning", lora_rank=int(lora), precision=_n(row.get("weight_precision"), row["precision"]))
    return Workload(**{"task": "training", "precision": row["precision"], **shape}, seq_len=seq,
                    global_batch_tokens=float(seqs * seq), tokens=1e12,
                    training_framework=search.framework_id(row.get("framework")))


def training_prediction(row, eff: Efficiency | None = None) -> dict:
    """The multi-chip model's best configuration for a training run (``estimate.training_config``, the
    code path of ``estimate``), with the run's published layout pinned (``parallelism``) and the
    rest searched, evaluated with ``eff`` (default: data/efficiency.csv). Raises InputError when no
    layout fits (the run should then be excluded)."""
    acc = catalog.accelerator_record(row["accelerator"])
    par, limits = parse_parallelism(row.get("parallelism"), f"reference_runs.csv: run {row.get('run')}: parallelism")
    cfg = training_config(run_profile(row), acc, run_chips(row), run_workload(row), par, CALIBRATION_HEADROOM,
                          default(eff), **limits)
    if cfg is None:
        raise InputError(f"reference_runs.csv: run {row.get('run')!r}: no parallel layout fits memory")
    return cfg


def run_lengths(row):
    """The answer-length distribution of a run's ``request_lengths`` (``model.lengths.DATASETS``), None
    when blank: such a run is served at its mean lengths."""
    try:
        return lengths.dataset(_n(row.get("request_lengths")))
    except ValueError as e:
        raise InputError(f"reference_runs.csv: run {row.get('run')!r}: {e}") from None


def predict_run(row, acc: dict | None = None, mem_eff=None, latency_s=None, ceiling=None,
                eff: Efficiency | None = None, prefill_ceiling=None):
    """The model's figure for one run, in the run's ``metric`` (array when ``mem_eff``/``latency_s`` are
    arrays: the fit evaluates a grid at once).

    Training: the MFU of the best configuration of ``model.training`` (``training_prediction``:
    compute at ``efficiency.compute_efficiency`` plus communication, bubbles, recomputation and optimizer
    time), the same code as ``estimate``. Inference: ``serving.serving_point`` at the run's batch per
    replica (or, for saturated runs, the largest batch that fits memory with vLLM's default 10%
    headroom, capped by the engine's ``max_batch``), divided per chip. A run with ``request_lengths`` of
    varying answer lengths (``model.lengths``) holds the slots that fit at the mean tokens a slot
    holds (``lengths.slot_tokens``), decodes at that context, and, with its ``requests`` (an offline
    run, all queued at once), includes the batch's drain at the end
    (``lengths.offline_tokens_per_s``)."""
    eff = default(eff)
    if generic.is_generic(row):
        return generic.predict(row, eff)
    if row["kind"] == "training":
        return training_prediction(row, eff)["mfu"]
    p = run_profile(row)
    acc = catalog.accelerator_record(row["accelerator"]) if acc is None else acc
    tp = int(_n(row.get("tp"), 1))
    chips = int(_n(row.get("chips"), tp))
    replicas = max(chips // tp, 1)
    wprec = _n(row.get("weight_precision"), row["precision"])
    kvprec = _n(row.get("kv_precision"), "bf16")
    I, O = _n(row.get("input_tokens")), _n(row.get("output_tokens"))
    dist = run_lengths(row)
    if _n(row.get("batch")) is not None:
        b = float(row["batch"]) / replicas
    else:
        seq = lengths.slot_tokens(I or 0, dist) if dist is not None else (I or 0) + (O or 0)
        b = float(serving.max_batch_fit(p, acc, tp, seq, wprec, kvprec, CALIBRATION_HEADROOM))
        if _n(row.get("max_batch")) is not None:
            b = min(b, float(row["max_batch"]) / replicas)
        b = max(b, 1.0)
    requests = _n(row.get("requests"))
    if dist is not None and requests is not None and row.get("batching") != "static":
        pt = lengths.offline_tokens_per_s(eff, p, acc, b, I, dist, float(requests) / replicas, tp, row["precision"],
                                          wprec, kvprec, mem_eff=mem_eff, latency_s=latency_s, ceiling=ceiling,
                                          prefill_ceiling=prefill_ceiling)
    else:
        pt = serving.serving_point(eff, p, acc, b, I, O, tp, row["precision"], wprec, kvprec, mem_eff=mem_eff,
                                   latency_s=latency_s, ceiling=ceiling, static=row.get("batching") == "static",
                                   prefill_ceiling=prefill_ceiling,
                                   decode_context=None if dist is None else lengths.slot_tokens(I or 0, dist))
    metric = row["metric"]
    if metric == "output_tokens_per_s_per_chip":
        return pt["output_tokens_per_s"] / tp
    if metric == "tpot_ms":
        return pt["tpot_s"] * 1e3
    if metric == "ttft_ms":
        return pt["ttft_s"] * 1e3
    raise InputError(f"reference_runs.csv: run {row['run']!r}: metric: unknown {metric!r}")


# --- the calibration table ---------------------------------------------------------------------------

KIND_OF_METRIC = {"mfu": "training", "output_tokens_per_s_per_chip": "inference throughput",
                  "tpot_ms": "inference TPOT", "ttft_ms": "inference TTFT", **generic.METRICS}


def _table_cache_key() -> str:
    """Content hash of what the table of the shipped runs depends on: every data CSV (runs, catalogs,
    data/efficiency.csv), the package's Python source (the model) and the pandas/numpy versions."""
    h = hashlib.sha256(f"pandas {pd.__version__} numpy {np.__version__}\n".encode())
    for f in sorted(paths.DATA_DIR.glob("*.csv")) + sorted(paths.PACKAGE_DIR.rglob("*.py")):
        h.update(f"{f.name} {paths.file_sha256(f)}\n".encode())
    return h.hexdigest()


_TABLES: dict[str, pd.DataFrame] = {}


def calibration_table(runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per used run: published figure, the same in the one definition (``value``), the model's
    ``predicted`` figure with data/efficiency.csv, and ``error`` = predicted / value − 1; ``low``,
    ``high`` and ``in_band``: the P10-P90 band of the prediction (a training run's as it was predicted,
    ``moe.training_band``: the pinned band with its published layout pinned, else the free-search band).

    The table of the shipped runs (``runs`` None, about 0.6 s) is cached by content: in memory and as
    a pickle in ``$WORKBOOK_CACHE_DIR`` (default ``~/.cache/workbook``), keyed by ``_table_cache_key``
    (any change to a data file or to the package source gives a new key). Callers get a copy."""
    if runs is not None:
        return _calibration_table(runs)
    key = _table_cache_key()
    if key not in _TABLES:
        folder = paths.cache_dir()
        path = folder / f"calibration-{key[:32]}.pkl"
        try:
            _TABLES[key] = pd.read_pickle(path)
            try:
                os.utime(path)  # marks it used: pruning keeps the most recently used tables
            except OSError:
                pass
        except Exception:  # missing, unreadable or from another pandas: compute it
            _TABLES[key] = _calibration_table(reference_runs())
            try:
                paths.write_atomic(path, pickle.dumps(_TABLES[key], protocol=pickle.HIGHEST_PROTOCOL))
                prune_table_cache(folder)
            except OSError:  # read-only home: the in-memory cache still holds
                pass
    return _TABLES[key].copy()


KEEP_TABLES = 8   # cached calibration tables kept per cache folder (each is ~100 kB; one per source state)


def prune_table_cache(folder: Path, keep: int = KEEP_TABLES) -> list[Path]:
    """Delete all but the ``keep`` most recently used ``calibration-*.pkl`` of ``folder`` (a read or a
    write marks a table used). Every edit of the package or a data file writes a new table, so without
    this the folder grows by one file per source state. Returns the files removed; a file that
    vanished meanwhile (another process pruning) is skipped."""
    return paths.keep_newest(folder, "calibration-*.pkl", keep)


def run_rows(runs: pd.DataFrame) -> list[dict]:
    """The runs as one dict per row holding the values ``iterrows`` would give (the frame's values row by
    row: the same objects, ``pd.NA`` included), without a pandas Series per row: ``predict_run`` and the
    band read a run's fields by name some 20 times, each a Series lookup of about 10 µs."""
    cols = list(runs.columns)
    return [dict(zip(cols, v)) for v in runs.values]


def _calibration_table(runs: pd.DataFrame) -> pd.DataFrame:
    rows = run_rows(runs)
    pred = np.array([float(predict_run(r)) for r in rows])
    out = runs[["run", "kind", "family", "accelerator", "model", "chips", "precision", "published_value",
                "published_metric", "metric", "value", "split"]].copy()
    out["model"] = out["model"].fillna("(inline shape)")
    out["predicted"] = pred
    out["error"] = pred / out["value"] - 1.0
    out["kind"] = out["metric"].map(KIND_OF_METRIC)
    eff = default(None)
    # a training run's band follows how it was predicted: its published layout pinned, else searched freely
    lo_hi = [moe.training_band(run_profile(r), r["family"], eff, parse_parallelism(r.get("parallelism"))[0])
             if r["metric"] == "mfu" else band(eff, r["metric"], r["family"]) for r in rows]
    out["low"] = pred * np.array([b[0] for b in lo_hi])
    out["high"] = pred * np.array([b[1] for b in lo_hi])
    out["in_band"] = (out["value"] >= out["low"]) & (out["value"] <= out["high"])
    return out


def coverage_summary(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per kind, the share of held-out published values inside the estimate's P10-P90 band
    (``low`` <= value <= ``high``, the band ``efficiency.band`` gives the run's family): a P10-P90
    band should cover about 80% of runs the fit never saw. Columns ``kind``, ``n_holdout``,
    ``band_coverage_holdout``, ``median_band_width`` (high / low over the held-out runs)."""
    t = calibration_table() if table is None else table
    t = t.loc[:, ["kind", "split", "in_band", "low", "high"]]  # what it reads: the filters copy fewer columns
    h = t[t["split"] == "holdout"]
    rows = [{"kind": "(all)", "n_holdout": len(h), "band_coverage_holdout": float(h["in_band"].mean()) if len(h) else np.nan,
             "median_band_width": float((h["high"] / h["low"]).median()) if len(h) else np.nan}]
    for kind in KIND_OF_METRIC.values():
        g = h[h["kind"] == kind]
        rows.append({"kind": kind, "n_holdout": len(g), "band_coverage_holdout": float(g["in_band"].mean()) if len(g) else np.nan,
                     "median_band_width": float((g["high"] / g["low"]).median()) if len(g) else np.nan})
    return pd.DataFrame(rows)


_SUMMARIES: dict = {}


def error_summary(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Median absolute error per kind and accelerator family: on every used run and on the held-out
    runs alone (``n``, ``median_abs_error``, ``n_holdout``, ``median_abs_error_holdout``). That of the
    shipped runs (``table`` None) is computed once per cached calibration table (``_table_cache_key``,
    ``_TABLES``) and handed out as a copy: a report asks for it once per scenario."""
    if table is not None:
        return _error_summary(table)
    key = _table_cache_key()
    hit = _SUMMARIES.get(key)
    # the very table cached for the key (a test may empty the cache or replace calibration_table)
    if hit is None or hit[0] is not _TABLES.get(key) or hit[1] is not calibration_table:
        summary = _error_summary(calibration_table())
        _SUMMARIES.clear()
        hit = _SUMMARIES[key] = (_TABLES.get(key), calibration_table, summary)
    return hit[2].copy()


def _error_summary(t: pd.DataFrame) -> pd.DataFrame:
    """``error_summary`` of the calibration table ``t``."""
    # positions per group (pandas' groups and order) and numpy arrays, not a filtered copy of the table per group
    err, hold = t["error"].abs().to_numpy(), (t["split"] == "holdout").to_numpy()
    rows = []
    for by, label in ((["kind", "family"], None), ("kind", "(all)")):
        groups = t.groupby(by, sort=True).indices
        for key in sorted(groups):
            pos = groups[key]
            kind, fam = key if label is None else (key, label)
            e = err[pos]
            h = e[hold[pos]]
            rows.append({"kind": kind, "family": fam, "n": len(e), "median_abs_error": _median(e),
                         "n_holdout": len(h), "median_abs_error_holdout": _median(h) if len(h) else np.nan})
    order = list(KIND_OF_METRIC.values())
    df = pd.DataFrame(rows)
    df["_k"] = df["kind"].map(order.index)
    return df.sort_values(["_k", "family"]).drop(columns="_k").reset_index(drop=True)


def _median(values: np.ndarray) -> float:
    """pandas' median of a float column's values (NaN skipped), as ``Series.median`` gives it: the call
    pandas makes for a 1-D float array (``pandas.core.nanops.nanmedian``: ``np.nanmedian`` of the values
    that are not NaN; NaN when none is left), without a Series and pandas' dispatch per group."""
    v = values[~np.isnan(values)]
    return np.nanmedian(v) if v.size else np.nan


def summary_markdown(summary: pd.DataFrame | None = None) -> str:
    """The per-kind, per-family error table as GitHub markdown (for docs/explanation/calibration.md)."""
    s = error_summary() if summary is None else summary
    lines = ["| kind | family | runs | median abs. error | held-out runs | median abs. error (held out) |",
             "|---|---|---:|---:|---:|---:|"]
    for _, r in s.iterrows():
        ho = "-" if pd.isna(r["median_abs_error_holdout"]) else f"{r['median_abs_error_holdout']:.0%}"
        lines.append(f"| {r['kind']} | {r['family']} | {r['n']} | {r['median_abs_error']:.0%} | {r['n_holdout']} | {ho} |")
    return "\n".join(lines)




def coverage_markdown(coverage: pd.DataFrame | None = None) -> str:
    """The held-out band coverage per kind as GitHub markdown (for docs/explanation/calibration.md)."""
    c = coverage_summary() if coverage is None else coverage
    lines = ["| kind | held-out runs | inside the P10-P90 band | median band width (P90/P10) |", "|---|---:|---:|---:|"]
    for _, r in c.iterrows():
        cov = "-" if pd.isna(r["band_coverage_holdout"]) else f"{r['band_coverage_holdout']:.0%}"
        wid = "-" if pd.isna(r["median_band_width"]) else f"{r['median_band_width']:.2f}x"
        lines.append(f"| {r['kind']} | {r['n_holdout']} | {cov} | {wid} |")
    return "\n".join(lines)
