"""Tidy frames for notebooks and the app: what the workload needs, its memory, the roofline, the
formulas behind each figure, scaling curves and step breakdowns.

Every figure here comes from the model modules (``profile``, ``training``, ``serving``,
``estimate``); this module only shapes their results into tables for people and charts.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import catalog, terms
from ..errors import InputError
from ..scenario import Parallelism, Scenario, Workload
from . import comm, search, serving, training
from . import profile as prof
from .efficiency import Efficiency, candidate_precision, default, matmul_precision, peak
from .memo import Memo, hashable, record_key
from .pick import _py
from .estimate import candidate_accelerators, training_tokens
from .profile import (Profile, activation_bytes, attention_flops_per_token, bytes_per_value,
                      decode_arithmetic_intensity, decode_flops_per_token, kv_cache_bytes_per_token,
                      prefill_arithmetic_intensity, prefill_flops_per_token, train_flops_per_token,
                      training_state_bytes_per_param, weight_bytes, workload_profile)


# --- the workload and the chips --------------------------------------------------------------------

def workload_summary(s: Scenario) -> pd.DataFrame:
    """What the workload needs, one quantity per row with its unit and formula (notebook 01)."""
    w = s.workload
    p = workload_profile(w)
    rows = [("parameters (total)", p.params_total, "weights", "every weight, embeddings included"),
            ("parameters active per token", p.params_active, "weights", "MoE: routed experts used + shared"),
            ("matmul weights per token (N)", p.params_matmul_active, "weights", "active minus the input embedding lookup")]
    if p.generic:
        rows += [("training FLOPs per sample", p.train_flops_per_sample, "FLOP", "given (generic workload)"),
                 ("inference FLOPs per sample", p.infer_flops_per_sample, "FLOP", "given (generic workload)")]
    elif w.task != "inference":
        rows += [("training FLOPs per token", float(train_flops_per_token(p, w.seq_len)), "FLOP",
                  f"6N + 12·L·H·Q·S at S = {w.seq_len} (PaLM App. B)"),
                 ("attention share of training FLOPs", float(3 * attention_flops_per_token(p, w.seq_len, causal=False)
                                                             / train_flops_per_token(p, w.seq_len)), "fraction", "12·L·H·Q·S / total"),
                 ("total training FLOPs", float(train_flops_per_token(p, w.seq_len)) * training_tokens(w), "FLOP",
                  "per-token FLOPs x training tokens (6ND + attention)"),
                 ("weights + gradients + optimizer", p.params_total * training_state_bytes_per_param("bf16", w.optimizer),
                  "bytes", f"{training_state_bytes_per_param('bf16', w.optimizer):g} bytes per parameter (ZeRO §3.1, mixed-precision {w.optimizer})")]
    else:
        I, O = w.input_tokens, w.output_tokens
        rows += [("prefill FLOPs per prompt token", float(prefill_flops_per_token(p, I)), "FLOP", f"2N + causal attention over {I} tokens"),
                 ("decode FLOPs per output token", float(decode_flops_per_token(p, I + O / 2)), "FLOP",
                  f"2N + 4·L·H·Q·context at context {I + O / 2:g}"),
                 ("weights", weight_bytes(p, w.weight_precision), "bytes", f"parameters x {bytes_per_value(w.weight_precision):g} bytes ({w.weight_precision})"),
                 ("KV cache per token", kv_cache_bytes_per_token(p, w.kv_precision), "bytes",
                  f"2·L·kv_heads·head_dim x {bytes_per_value(w.kv_precision):g} bytes ({w.kv_precision})"),
                 ("KV cache per request", kv_cache_bytes_per_token(p, w.kv_precision) * (I + O), "bytes", f"per token x (I + O) = {I + O}"),
                 ("prefill arithmetic intensity", float(prefill_arithmetic_intensity(p, I, 1, w.weight_precision)), "FLOP/byte",
                  "one prompt's FLOPs over one read of the weights"),
                 ("decode intensity at batch 1", float(decode_arithmetic_intensity(p, 1, I + O / 2, w.weight_precision, w.kv_precision)),
                  "FLOP/byte", "FLOPs over weight + KV bytes read per step"),
                 ("decode intensity at batch 64", float(decode_arithmetic_intensity(p, 64, I + O / 2, w.weight_precision, w.kv_precision)),
                  "FLOP/byte", "grows with the batch until the KV cache dominates")]
    return pd.DataFrame(rows, columns=["quantity", "value", "unit", "formula"])


def memory_breakdown(s: Scenario, batch: int | None = None) -> pd.DataFrame:
    """Memory of one model copy by component (tidy: ``setting``, ``component``, ``bytes``).

    Training: weights, gradients, optimizer states (mixed-precision Adam: 2 + 2 + 12 bytes per
    parameter, ZeRO §3.1) and activations of ``batch`` sequences (default 1) for each recomputation
    setting (Korthikanti et al. 2022). Inference: weights and the KV cache of ``batch`` requests
    (default 1, 8, 64) at I + O tokens."""
    w = s.workload
    p = workload_profile(w)
    rows = []
    if w.task != "inference":
        b = batch or 1
        trainable = prof.trainable_params(p, w) if not p.generic else p.params_total * w.trainable_fraction
        weights = p.params_total * (prof.training_weight_bytes_per_param(p, w) if not p.generic else 2.0)
        for rc in ("none", "selective", "full"):
            label = f"{b} x {w.seq_len} tokens, recompute {rc}"
            rows += [(label, "weights", weights), (label, "gradients", trainable * 2.0),
                     (label, "optimizer states", trainable * prof.optimizer_bytes_per_trainable_param(w))]
            if not p.generic:
                rows.append((label, "activations", float(activation_bytes(p, w.seq_len, b, rc))))
    else:
        per_req = kv_cache_bytes_per_token(p, w.kv_precision) * ((w.input_tokens or 0) + (w.output_tokens or 0))
        for b in ([batch] if batch else [1, 8, 64]):
            label = f"batch {b}"
            rows += [(label, "weights", weight_bytes(p, w.weight_precision)), (label, "KV cache", per_req * b)]
    return pd.DataFrame(rows, columns=["setting", "component", "bytes"])


def roofline_table(accelerators: pd.DataFrame, precision: str = "bf16") -> pd.DataFrame:
    """Attainable FLOP/s per chip over a range of arithmetic intensities (tidy, for the chart)."""
    ai = np.geomspace(1, 1e4, 60)
    rows = []
    for _, a in accelerators.iterrows():
        pk = peak(a, precision)
        if math.isnan(pk):
            continue
        att = np.minimum(pk, ai * float(a["memory_bytes_per_s"]))
        rows.append((a["accelerator"], att, pk, pk / float(a["memory_bytes_per_s"])))
    if not rows:
        return pd.DataFrame()
    # one frame of every accelerator's 60 points (the rows, values and dtypes of a frame per accelerator
    # concatenated), the scalars repeated per point
    n = len(ai)
    return pd.DataFrame({"accelerator": np.repeat(np.array([r[0] for r in rows], dtype=object), n),
                         "intensity_flops_per_byte": np.tile(ai, len(rows)),
                         "attainable_flops_per_s": np.concatenate([r[1] for r in rows]),
                         "peak_flops_per_s": np.repeat(np.array([r[2] for r in rows], dtype=float), n),
                         "ridge_flops_per_byte": np.repeat(np.array([r[3] for r in rows], dtype=float), n)})


def roofline_lines(s: Scenario) -> pd.DataFrame:
    """``roofline_table`` of the scenario's candidate accelerators at its compute precision."""
    prec = terms.compute_precision(s.workload.precision)
    accs = catalog.accelerators()
    return roofline_table(accs[accs["accelerator"].isin(candidate_accelerators(s))], prec)


def operating_points(s: Scenario, perf_df: pd.DataFrame | None = None) -> pd.DataFrame:
    """The workload's arithmetic intensity and the FLOP/s it attains on each candidate chip
    (``roofline_time_s`` applied to one step): training step, prefill, decode at batch 1 and at the
    estimated batch. Tidy: accelerator, point, intensity_flops_per_byte, attained_flops_per_s."""
    w = s.workload
    p = workload_profile(w)
    if p.generic:
        return pd.DataFrame(columns=["accelerator", "point", "intensity_flops_per_byte", "attained_flops_per_s"])
    rows = []
    listed = set(perf_df["accelerator"]) if perf_df is not None else set()   # made once, not per accelerator
    by_acc = None
    for a in candidate_accelerators(s):
        acc = catalog.accelerator_record(a)
        cprec = matmul_precision(acc, w.precision, w.fp4_fallback)
        pk = peak(acc, cprec)
        if math.isnan(pk):
            continue
        bw = float(acc["memory_bytes_per_s"])
        pts = []
        if w.task != "inference":
            # one micro-batch sequence: weights read once per forward/backward, 6N+attention FLOPs per token
            ai = float(train_flops_per_token(p, w.seq_len)) * w.seq_len / (3.0 * weight_bytes(p, "bf16"))
            pts.append(("training step (1 sequence)", ai))
        else:
            I, O = w.input_tokens, w.output_tokens
            pts.append(("prefill (1 prompt)", float(prefill_arithmetic_intensity(p, I, 1, w.weight_precision))))
            pts.append(("decode, batch 1", float(decode_arithmetic_intensity(p, 1, I + O / 2, w.weight_precision, w.kv_precision))))
            if perf_df is not None and a in listed:
                by_acc = perf_df.set_index("accelerator") if by_acc is None else by_acc
                b = by_acc.loc[a, "batch"]
                if b is not None and not pd.isna(b):
                    pts.append(("decode, estimated batch", float(decode_arithmetic_intensity(p, float(b), I + O / 2, w.weight_precision, w.kv_precision))))
        for name, ai in pts:
            rows.append((a, name, ai, float(np.minimum(pk, ai * bw))))
    return pd.DataFrame(rows, columns=["accelerator", "point", "intensity_flops_per_byte", "attained_flops_per_s"])


def formulas(s: Scenario) -> pd.DataFrame:
    """How each number of the comparison is computed: one row per figure with its formula, the
    inputs it takes for this scenario and where the parameters come from (notebook 02)."""
    w = s.workload
    p = workload_profile(w)
    train = w.task != "inference"
    rows = []
    if train:
        rows += [
            ("tokens_per_s", "global_batch_tokens / step_time_s",
             f"global batch {w.global_batch_tokens or 'one sequence per chip':} tokens", "scenario"),
            ("step_time_s", "compute + recomputation + exposed communication + pipeline bubble + optimizer update "
                            "(+ synchronisation across domains where calibrated) of the best parallel layout",
             "tp, pp, dp, ep, cp, zero, recompute, micro_batch columns", "model.estimate.training_config -> model.training"),
            ("compute", "6N+12LHQS FLOPs per token x tokens / (chips x peak x efficiency)",
             f"N = {p.params_matmul_active:.3g}, S = {w.seq_len}, precision {w.precision}", "profile.train_flops_per_token"),
            ("efficiency", "ceiling[family] x h / (h + kappa x peak / HBM bandwidth) x MoE factor",
             f"h = {p.hidden}; per family", "data/efficiency.csv (fitted on data/reference_runs.csv with the scaling model on)"),
            ("mfu", "model FLOPs x tokens/s / (chips x dense peak)", "PaLM definition", "Chowdhery et al. 2022 App. B"),
            ("training_days", "tokens / tokens_per_s / 86400", f"{training_tokens(w):.3g} tokens", "scenario"),
            ("chip_hours", "chips x training_days x 24", "", ""),
            ("_low / _high", "P10 / P90 of observed / predicted MFU over the calibration runs (a layout searched freely: "
                             "the runs searched freely, off-centre where the search is optimistic; a pinned layout: the runs "
                             "with their published layout pinned)", "per family (>= 14 fit runs) or pooled",
             "data/efficiency.csv band_p10_mfu_free, band_p90_mfu_free (pinned: band_p10_mfu, band_p90_mfu)")]
    elif p.generic:  # one forward pass per request (model.generic.serve)
        g = w.generic
        rows += [
            ("ttft_ms", "request latency unloaded: host time + batch time, batch time = max(batch x F / (peak x eff), "
                        "(weights + batch x bytes per sample) / (HBM x mem_eff))",
             f"F = {g.infer_flops_per_sample or float('nan'):.3g} FLOPs per request, host "
             f"{w.host_ms_per_request:g} ms", "model.generic.batch_time_s (roofline, Williams et al. 2009)"),
            ("ttft_ms_p99", "host + batch time + wait for a batch slot at P99 (M/G/c, c = replicas x batch)",
             f"{w.requests_per_s} requests/s, Poisson", "model.queueing.wait_quantile_s (Allen-Cunneen)"),
            ("output_tokens_per_s", "requests per second the deployment serves: replicas x batch / batch time", "",
             "model.generic.serve"),
            ("max_batch", "(memory x (1 - headroom) - weights) / activation bytes per sample, at most 1,024",
             f"headroom {s.constraints.min_memory_headroom:g}", "model.generic.max_batch"),
            ("replicas", "fewest one-chip copies with a stable queue that meet ttft_slo_ms at its percentile",
             f"{w.requests_per_s} requests/s", "model.generic.serve"),
            ("eff", "transformer-fitted prefill efficiency x generic_inference_scale (CALIBRATED on published "
                    "ResNet-50 inference runs only); host time, queueing and latency NOT calibrated", "",
             "data/efficiency.csv generic_inference_scale"),
            ("_low / _high", "P10 / P90 of observed / predicted samples/s per chip over the ResNet-50 runs", "pooled",
             "data/efficiency.csv band_p10_generic_samples_per_s_per_chip")]
    else:
        rows += [
            ("ttft_ms", "prefill of one prompt: max(FLOPs / (tp x peak x eff), weights / (tp x HBM x mem_eff)) + TP all-reduces",
             f"I = {w.input_tokens} tokens", "model.serving.prefill_s"),
            ("tpot_ms", "decode step: max(weights + batch x context x KV bytes over tp x HBM x mem_eff, FLOPs incl. "
                        "chunked prefill over tp x peak x eff) + 2L x (latency + bytes / link)",
             f"context I + O/2 = {w.input_tokens + w.output_tokens / 2:g}", "model.serving.decode_step_s"),
            ("output_tokens_per_s", "replicas x batch / TPOT", "batch = largest that fits and meets the targets", "model.serving.serving_point"),
            ("max_batch", "(tp x memory x (1 - headroom) - weights) / KV bytes per request",
             f"headroom {s.constraints.min_memory_headroom:g} (vLLM default 0.1)", "model.serving.max_batch_fit"),
            ("replicas", "ceil(requests_per_s x O / per-replica tokens/s)", f"{w.requests_per_s} requests/s", "scenario"),
            ("tp", "single-node tensor-parallel degree with the fewest chips for the load", "powers of 2 up to the node",
             "model.serving.estimate_serving"),
            ("mem_eff, eff, latency", "fitted per family", "", "data/efficiency.csv (fitted on data/reference_runs.csv)"),
            ("_low / _high", "P10 / P90 of observed / predicted over the calibration runs",
             "per family (>= 14 fit runs) or pooled", "data/efficiency.csv band_p10_*, band_p90_*")]
    return pd.DataFrame(rows, columns=["figure", "formula", "inputs for this scenario", "source"])


# --- scaling -----------------------------------------------------------------------------------------

_TP_CURVES = Memo(256)


def tp_curve(p: Profile, acc, w: Workload, efficiency: Efficiency | None = None, *, memory_headroom: float = 0.1,
             pinned: int | None = None, parallelism=None) -> pd.DataFrame:
    """``serving.tp_curve`` (the whole layout x batch grid of one accelerator), cached per process on the
    values it reads (the profile, the accelerator record and id, the workload, the efficiency, the headroom,
    the pinned chips and parallelism), a copy per call: notebook 03's curves and configuration and notebook
    04's interactivity curve ask for the same curves (0.1-0.3 s per serving report)."""
    eff = default(efficiency)
    name = acc["accelerator"] if "accelerator" in acc else getattr(acc, "name", None)
    key = (p, record_key(acc), name, hashable(w), eff, memory_headroom, pinned, hashable(parallelism))
    return _TP_CURVES.get(key, lambda: serving.tp_curve(p, acc, w, efficiency=eff, memory_headroom=memory_headroom,
                                                        pinned=pinned, parallelism=parallelism)).copy()


def _usable(acc: pd.Series, precision: str) -> bool:
    return not math.isnan(peak(acc, precision)) and not pd.isna(acc.get("memory_bytes_per_s"))


def scaling_curve(profile: Profile, acc: pd.Series, chip_counts, workload: Workload, efficiency: Efficiency | None = None, *,
                  comm_share_threshold: float = 0.25, parallelism: Parallelism | None = None,
                  topology_overrides: dict | None = None, overlap: training.Overlap = training.DEFAULT_OVERLAP,
                  memory_headroom: float | None = None, **limits) -> pd.DataFrame:
    """The best configuration at each chip count (``limits`` restrict the grid, see
    ``configurations``), with time to train (``workload.tokens`` /
    tokens per second), MFU, scaling efficiency (throughput per chip relative to the smallest
    count that fits) and ``network_bound``: exposed communication above ``comm_share_threshold``
    of the step (the threshold is a reader's choice, not a fact; 0.25 = a quarter of the step).
    Chip counts where nothing fits keep a row with ``fits`` False and blank figures."""
    rows = []
    counts = sorted({int(c) for c in chip_counts})
    topos = {}
    for n in counts:
        try:
            topos[n] = comm.topology(acc, n, **(topology_overrides or {}))
        except InputError as e:  # e.g. no network figure beyond one node: this count cannot be priced
            topos[n] = e
    found = _best_configs(profile, acc, [n for n in counts if not isinstance(topos[n], InputError)], workload,
                          parallelism, efficiency, overlap, memory_headroom, limits) if not topology_overrides else {}
    for n in counts:
        row = {"accelerator": training._acc_name(acc), "chips": n, "fits": False, "reason": ""}
        try:
            topo = topos[n]
            if isinstance(topo, InputError):
                raise topo
            cfg = found[n] if n in found else search.best_config(profile, acc, n, workload, parallelism, efficiency,
                                                                 topology=topo, overlap=overlap,
                                                                 memory_headroom=memory_headroom, **limits)
            if isinstance(cfg, Exception):
                raise cfg
        except InputError as e:  # e.g. no network figure beyond one node: this count cannot be priced
            row["reason"] = str(e)
            rows.append(row)
            continue
        if cfg is None:
            row["reason"] = "no configuration fits in memory"
        else:
            row.update({k: v for k, v in cfg.items() if k not in ("chips", "accelerator", "fits")}, fits=True)
        rows.append(row)
    df = pd.DataFrame(rows)
    for c in training.RESULT_COLUMNS:
        if c not in df.columns:
            df[c] = np.nan
    df["fits"] = df["fits"].astype(bool)
    ok = df["fits"]
    training_s = (workload.tokens / df["tokens_per_s"]) if workload.tokens else np.nan
    df["training_days"] = training_s / 86400.0
    df["chip_hours"] = training_s * df["chips"] / 3600.0
    first = df[ok].iloc[0] if ok.any() else None
    df["scaling_efficiency"] = (df["tokens_per_s_per_chip"] / first["tokens_per_s_per_chip"]) if first is not None else np.nan
    df["comm_share"] = df["exposed_comm_s"] / df["step_time_s"]
    df["bubble_share"] = df["bubble_s"] / df["step_time_s"]
    df["comm_share_threshold"] = comm_share_threshold
    df["network_bound"] = ok & (df["comm_share"] > comm_share_threshold)
    return df


def _best_configs(profile: Profile, acc, counts: list, workload: Workload, parallelism, efficiency, overlap,
                  memory_headroom, limits: dict) -> dict:
    """``search.best_config`` of each count (on its default topology, ``comm.topology(acc, n)``) by one batched
    search (``search.best_configs``: the same answer to the bit, ``tests/model/test_search_batch.py``), by count:
    the configuration, None, or the exception that count raised; {} (each count searched alone) when the batch
    itself fails."""
    if len(counts) < 2:
        return {}
    try:
        answers = search.best_configs(profile, acc, counts, workload, parallelism, efficiency, overlap=overlap,
                                      memory_headroom=memory_headroom, **limits)
    except InputError:
        return {}
    return dict(zip(counts, answers))


def default_chip_counts(acc: pd.Series, max_chips: int | None = None, min_chips: int | None = None,
                        profile: Profile | None = None, workload: Workload | None = None) -> list[int]:
    """Powers of two from ``min_chips`` to ``max_chips`` (default 16,384, capped by the catalog's
    ``max_cluster_chips``). Without ``min_chips`` the range starts at one node (``chips_per_node``)
    or, for a training ``workload``, at the first count where the weights, gradients and optimizer
    states fully sharded (``profile.training_state_bytes_per_param``) take at most half of each
    chip's memory, so that the baseline of the scaling efficiency is not a layout forced by memory."""
    lo = int(min_chips or max(1, int(training._num(acc.get("chips_per_node"), 1))))
    if min_chips is None and profile is not None and workload is not None and not profile.generic:
        state = float(prof.training_state_bytes_per_param("fp32" if workload.precision == "fp32" else "bf16",
                                                          workload.optimizer)) * profile.params_total
        need = int(2 ** math.ceil(math.log2(max(1.0, state / (0.5 * float(acc["memory_bytes"]))))))
        lo = max(lo, need)
    cap = training._num(acc.get("max_cluster_chips"), np.inf)
    hi = int(min(max_chips or 16384, cap))
    return powers_of_two(lo, hi)


def powers_of_two(lo: int, hi: int) -> list[int]:
    """Chip counts 1, 2, 4, ... between ``lo`` and ``hi`` (``[lo]`` when there is none)."""
    out, c = [], 1
    while c <= hi:
        if c >= lo:
            out.append(c)
        c *= 2
    return out or [lo]


def scenario_curves(s, chip_counts=None, efficiency: Efficiency | None = None, accelerators=None) -> pd.DataFrame:
    """For a training scenario: ``scaling_curve`` for every candidate accelerator over ``chip_counts``
    (default: powers of two from one node to ``constraints.max_chips``, else ``cluster.chips``,
    else 16,384). For an inference scenario: ``serving.tp_curve`` per candidate. Accelerators the
    catalog cannot price (no peak for the precision, no network for the chip count) are skipped
    and listed in ``df.attrs['skipped']``. Training searches the practical grid
    (``search.practical_limits``), the one ``estimate.estimate_training`` and the calibration use."""
    p = prof.workload_profile(s.workload)
    frames, skipped = [], []
    par = s.cluster.parallelism if s.cluster is not None else None
    for a in accelerators or candidate_accelerators(s):
        acc = catalog.accelerator(a)
        if not _usable(acc, matmul_precision(acc, s.workload.precision, s.workload.fp4_fallback)):
            skipped.append(f"{a}: no {s.workload.precision} peak or memory bandwidth in the catalog")
            continue
        try:
            if s.workload.task == "inference":
                here = s.cluster is not None and catalog.resolve("accelerators", s.cluster.accelerator) == a
                frames.append(tp_curve(p, acc, s.workload, efficiency=efficiency,
                                       memory_headroom=s.constraints.min_memory_headroom,
                                       pinned=s.cluster.chips if here else None,
                                       parallelism=par if here else None))
            else:
                top = s.constraints.max_chips or (s.cluster.chips if s.cluster and s.cluster.chips else None)
                counts = chip_counts or default_chip_counts(acc, top, profile=p, workload=s.workload)
                frames.append(scaling_curve(p, acc, counts, s.workload, efficiency, parallelism=par,
                                            memory_headroom=s.constraints.min_memory_headroom,
                                            **search.practical_limits(acc, seq_len=s.workload.seq_len, experts=p.experts,
                                                                      framework=s.workload.training_framework)))
        except InputError as e:
            skipped.append(f"{a}: {e}")
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    df.attrs["task"] = s.workload.task
    df.attrs["skipped"] = skipped
    return df


def scenario_best(s, efficiency: Efficiency | None = None, chips: int | None = None, accelerator: str | None = None) -> dict | None:
    """The configuration the scenario would run, on ``accelerator`` (default: the cluster's, else the
    fastest of the candidates the catalog can price). Training: the best configuration at ``chips``
    (default ``cluster.chips``, else ``constraints.max_chips``, else 1,024 chips). Inference: of the
    rows ``serving.tp_curve`` chose, the one with the most output tokens/s per chip. Training
    searches the practical grid (``search.practical_limits``), as ``estimate.estimate_training`` does."""
    p = prof.workload_profile(s.workload)
    w = s.workload
    if accelerator is not None:
        names = [accelerator]
    elif s.cluster is not None and s.cluster.accelerator:
        names = [s.cluster.accelerator]
    else:
        names = [a for a in candidate_accelerators(s) if _usable(catalog.accelerator(a), candidate_precision(w.precision, w.fp4_fallback))]
    headroom = s.constraints.min_memory_headroom
    best = None
    for a in names:
        acc = catalog.accelerator(a)
        try:
            if w.task == "inference":
                df = tp_curve(p, acc, w, efficiency=efficiency, memory_headroom=headroom)
                df = df[df["chosen"]]
                if df.empty:
                    continue
                row = df.sort_values("output_tokens_per_s_per_chip", ascending=False).iloc[0]
                cfg = {**{k: _py(v) for k, v in row.to_dict().items()}, "task": "inference"}
                score = cfg["output_tokens_per_s_per_chip"]
            else:
                n = chips or (s.cluster.chips if s.cluster and s.cluster.chips else None) or s.constraints.max_chips or 1024
                par = s.cluster.parallelism if s.cluster is not None else None
                cfg = search.best_config(p, acc, n, w, par, efficiency, memory_headroom=headroom,
                                           **search.practical_limits(acc, seq_len=w.seq_len, experts=p.experts, framework=w.training_framework))
                if cfg is None:
                    continue
                cfg["task"] = w.task
                cfg["topology"] = comm.topology(acc, n).describe()
                if w.tokens:
                    cfg["training_days"] = w.tokens / cfg["tokens_per_s"] / 86400.0
                score = cfg["tokens_per_s"]
        except InputError:
            if accelerator is not None or len(names) == 1:
                raise
            continue
        if best is None or score > best[0]:
            best = (score, cfg)
    return None if best is None else best[1]


def breakdown(df: pd.DataFrame) -> pd.DataFrame:
    """Tidy step components for a stacked bar: one row per (accelerator, chips or tp, component).

    Training rows (from ``scaling_curve``/``search``): compute, exposed communication, pipeline
    bubble, recomputation, optimizer update, synchronisation, dequantisation of a 4-bit base, in seconds per step. Inference rows (chosen rows of
    ``serving.tp_curve``): decode compute or memory time and TP communication per output token, in seconds."""
    if df is None or df.empty:
        return pd.DataFrame(columns=["accelerator", "x", "component", "seconds"])
    if "tpot_ms" in df.columns:
        d = df[df["chosen"]].copy()
        d["decode (roofline)"] = np.maximum(d["decode_compute_ms"], d["decode_memory_ms"]) / 1e3
        d["tensor-parallel communication"] = d["decode_comm_ms"] / 1e3
        comps, x = ["decode (roofline)", "tensor-parallel communication"], "tp"
    else:
        d = df[df["fits"].astype(bool)].copy() if "fits" in df else df.copy()
        names = {"compute_s": "compute", "exposed_comm_s": "exposed communication", "bubble_s": "pipeline bubble",
                 "recompute_s": "recomputation", "optimizer_s": "optimizer update",
                 "sync_s": "synchronisation across domains", "dequant_s": "dequantisation (4-bit base)"}
        names = {k: v for k, v in names.items() if k in d}
        d = d.rename(columns=names)
        comps, x = list(names.values()), ("chips" if "chips" in d else "tp")
    if "accelerator" not in d:
        d["accelerator"] = ""
    out = d.melt(id_vars=["accelerator", x], value_vars=comps, var_name="component", value_name="seconds")
    return out.rename(columns={x: "x"}).assign(x_name=x)


def summary(curves: pd.DataFrame) -> pd.DataFrame:
    """A readable table of ``scenario_curves``. Training: chip counts by accelerators, each cell the
    best layout (dimensions above 1 and the ZeRO stage), its MFU and the days to train. Serving: the
    chosen batch per accelerator and tensor-parallel size with throughput, latency and memory."""
    if curves is None or curves.empty:
        return pd.DataFrame()
    if "tpot_ms" in curves.columns:
        d = curves[curves["chosen"]].copy()
        d["memory_per_chip_gb"] = d["memory_per_chip_bytes"] / 1e9
        return d[["accelerator", "tp", "batch", "output_tokens_per_s", "output_tokens_per_s_per_chip", "tpot_ms",
                  "ttft_ms", "memory_per_chip_gb"]].round(2).reset_index(drop=True)
    d = curves.copy()
    fits = d["fits"].astype(bool)
    cell = pd.Series("", index=d.index, dtype=object)
    ok = d[fits]     # the columns read as lists, not a row Series per chip count
    if len(ok):
        keys = ("tp", "pp", "dp", "cp", "ep")
        dims_of = zip(*(ok[k].tolist() for k in keys))
        days_of = ok["training_days"].tolist() if "training_days" in ok else [None] * len(ok)
        texts = []
        for dimv, zero, mfu, d_ in zip(dims_of, ok["zero"].tolist(), ok["mfu"].tolist(), days_of):
            dims = "·".join(f"{k.upper()}{int(v)}" for k, v in zip(keys, dimv) if int(v) > 1) or "1 chip"
            days = "" if pd.isna(d_) else (f", {d_:,.1f} d" if d_ >= 1 else f", {d_ * 24:,.1f} h")
            texts.append(f"{dims} Z{int(zero)} · MFU {mfu:.0%}{days}")
        cell.iloc[np.flatnonzero(fits.to_numpy())] = texts
    cell[~fits] = "does not fit" if "reason" not in d else np.where(
        d.loc[~fits, "reason"].astype(str).str.contains("memory"), "does not fit", "not priced")
    d["summary"] = cell
    wide = d.pivot_table(index="chips", columns="accelerator", values="summary", aggfunc="first", sort=False)
    return wide.reindex(columns=list(dict.fromkeys(d["accelerator"]))).sort_index().fillna("")



# --- serving: throughput per chip against interactivity, with the cost per token ------------------

INTERACTIVITY_COLUMNS = ["offer", "accelerator", "usd_per_chip_hour", "tp", "pp", "ep", "batch", "tpot_ms", "ttft_ms",
                         "tokens_per_s_per_user", "output_tokens_per_s_per_chip", "usd_per_million_tokens_full_load",
                         "meets_slo", "frontier"]


def _pareto(df: pd.DataFrame) -> pd.Series:
    """Points no other point beats on both tokens/s per user and tokens/s per chip."""
    x, y = df["tokens_per_s_per_user"].to_numpy(float), df["output_tokens_per_s_per_chip"].to_numpy(float)
    # point i against every point j at once (rows of a block of points x all points), in blocks of 1,024 rows:
    # the same comparisons as one loop per point
    beaten = np.zeros(len(x), dtype=bool)
    for a in range(0, len(x), 1024):
        xi, yi = x[a:a + 1024, None], y[a:a + 1024, None]
        beaten[a:a + 1024] = ((x >= xi) & (y >= yi) & ((x > xi) | (y > yi))).any(axis=1)
    return pd.Series(~beaten, index=df.index)


def interactivity_curve(s: Scenario, offers: pd.DataFrame, top: int = 4,
                        efficiency: Efficiency | None = None) -> pd.DataFrame:
    """The serving curve buyers compare (SemiAnalysis' InferenceX): for the best-ranked offer of each of the
    ``top`` accelerators in ``offers`` (``Analysis.offers``: rows passing the constraints, by ``rank``), every
    layout and decode batch that fits (``serving.tp_curve``, the serving model the estimate uses) as tokens/s
    per user (1000 / ``tpot_ms``) against output tokens/s per chip, with the cost per million output tokens
    at full load, ``usd_per_chip_hour`` / (3,600 x tokens/s per chip) x 1e6: the chips busy all the time, no
    idle hours, spares or queueing, so lower than the recommendation's cost at the scenario's load.
    ``frontier`` marks each offer's Pareto-optimal points. Empty for training scenarios or generic models."""
    if s.workload.task != "inference" or offers is None or offers.empty:
        return pd.DataFrame(columns=INTERACTIVITY_COLUMNS)
    p = prof.workload_profile(s.workload)
    if p.generic:
        return pd.DataFrame(columns=INTERACTIVITY_COLUMNS)
    ok = offers[offers["excluded_reason"].isna() & offers["usd_per_chip_hour"].notna()] if "excluded_reason" in offers \
        else offers[offers["usd_per_chip_hour"].notna()]
    best = ok.sort_values("rank").drop_duplicates("accelerator").head(top)
    frames = []
    for _, o in best.iterrows():
        try:
            c = tp_curve(p, catalog.accelerator(o["accelerator"]), s.workload, efficiency=efficiency,
                         memory_headroom=s.constraints.min_memory_headroom)
        except InputError:
            continue
        c = c[c["fits"] & (c["tpot_ms"] > 0)].copy()
        if c.empty:
            continue
        pay = terms.PRICING_MODELS[o["pricing_model"]].label.removeprefix("a ") if o["pricing_model"] in terms.PRICING_MODELS else o["pricing_model"]
        c["offer"] = f"{o['accelerator']} · {o['provider']} · {pay}"
        c["usd_per_chip_hour"] = float(o["usd_per_chip_hour"])
        c["tokens_per_s_per_user"] = 1000.0 / c["tpot_ms"]
        c["usd_per_million_tokens_full_load"] = c["usd_per_chip_hour"] / (3600.0 * c["output_tokens_per_s_per_chip"]) * 1e6
        c["frontier"] = _pareto(c)
        frames.append(c)
    if not frames:
        return pd.DataFrame(columns=INTERACTIVITY_COLUMNS)
    return pd.concat(frames, ignore_index=True)[INTERACTIVITY_COLUMNS]
