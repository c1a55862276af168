"""The one serving model: prefill, the decode step, a replica's serving point, the KV-cache budget,
the tensor-parallel curve and the deployment a scenario needs.

Every surface that shows a serving figure (the comparison, the decision, the scaling tab's
tensor-parallel curve, the calibration) computes it here, with the same calibrated ``Efficiency``.

- Decode streams weights and KV cache from HBM at ``decode_memory_efficiency[family]`` of the
  datasheet bandwidth; tensor parallelism adds two all-reduces per layer (Megatron-LM, Shoeybi et al.
  2019), each ``tp_collective_latency_s[family] + bytes / link bandwidth``; continuous batching lets
  chunked prefill share the decode step's roofline (Agrawal et al. 2024, Sarathi-Serve).
- A step takes the larger of its compute and memory time (roofline: Williams et al. 2009; "How to
  Scale Your Model" ch. 7 "Inference").
- A replica's KV-cache budget is tp·memory·(1 − headroom) − weights (vLLM's
  ``gpu_memory_utilization`` = 1 − headroom).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import terms
from ..errors import InputError
from ..scenario import Workload
from .efficiency import Efficiency, band, compute_efficiency, default, peak, roofline_time_s
from .profile import (Profile, decode_flops_per_token, decode_weight_bytes_read, kv_cache_bytes_per_token,
                      prefill_flops_per_token, weight_bytes)

# decode batches the deployment search tries: every batch to 64, then geometric steps to 65,536
BATCH_GRID = np.unique(np.r_[np.arange(1, 65), np.round(np.geomspace(64, 65536, 120))]).astype(float)
# batches shown on the tensor-parallel curve (the chosen batch of each tp is added to them)
TP_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
ACTIVATION_BYTES = 2.0  # 16-bit activations in the tensor-parallel all-reduces


def tp_allreduce_s(p: Profile, acc, tokens, tp, latency_s):
    """Time of tensor parallelism's two all-reduces per layer over ``tokens`` activations (Megatron-LM,
    Shoeybi et al. 2019): 2·L·(latency + 2·(tp−1)/tp · tokens·h·2 bytes / link bandwidth), the ring
    all-reduce volume of 'How to Scale Your Model' ch. 3. Zero for tp = 1; infinite over a link with
    no published bandwidth."""
    tp = np.asarray(tp, dtype=float)
    link = float(acc["intra_node_bytes_per_s"]) if not pd.isna(acc["intra_node_bytes_per_s"]) else math.nan
    data = 2.0 * (tp - 1.0) / tp * np.asarray(tokens, dtype=float) * p.hidden * ACTIVATION_BYTES
    t = 2.0 * p.layers * (latency_s + np.where(tp > 1, data / link if link == link else np.inf, 0.0))
    return np.where(tp > 1, t, 0.0)


def decode_step_parts(eff: Efficiency, p: Profile, acc, batch, context, tp, precision: str, weight_precision: str,
                      kv_precision: str, mem_eff=None, latency_s=None, compute_eff=None, prefill_tokens=0.0,
                      prefill_context=0.0) -> dict:
    """The parts of one decode step (one token for each of ``batch`` sequences at ``context`` cached
    tokens) on a tensor-parallel group of ``tp`` chips: ``memory_s`` (active weights once + each
    sequence's KV cache over tp·HBM·mem_eff), ``compute_s`` (FLOPs over tp·peak·efficiency) and
    ``comm_s`` (the TP all-reduces). ``prefill_tokens`` of other requests' prompts (of
    ``prefill_context`` tokens) can ride along in the same step (chunked prefill, Agrawal et al. 2024
    "Sarathi-Serve"): their FLOPs add to the compute side, their weight reads are the step's own.
    ``mem_eff``, ``latency_s`` and ``compute_eff`` override the efficiency (the calibration grid)."""
    fam = str(acc["family"])
    mem_eff = eff.get("decode_memory_efficiency", fam) if mem_eff is None else mem_eff
    latency_s = eff.get("tp_collective_latency_s", fam) if latency_s is None else latency_s
    b = np.asarray(batch, dtype=float)
    tp = np.asarray(tp, dtype=float)
    pre = np.asarray(prefill_tokens, dtype=float)
    bytes_ = (decode_weight_bytes_read(p, b + pre, weight_precision)
              + b * np.asarray(context, dtype=float) * kv_cache_bytes_per_token(p, kv_precision))
    if compute_eff is None:
        compute_eff = compute_efficiency(eff, acc, precision, "decode", p, tp=tp)
    flops = b * decode_flops_per_token(p, context) + pre * prefill_flops_per_token(p, prefill_context)
    return {"memory_s": bytes_ / (tp * float(acc["memory_bytes_per_s"]) * mem_eff),
            "compute_s": flops / (tp * peak(acc, precision) * compute_eff),
            "comm_s": tp_allreduce_s(p, acc, b + pre, tp, latency_s)}


def decode_step_s(eff: Efficiency, p: Profile, acc, batch, context, tp, precision: str, weight_precision: str,
                  kv_precision: str, **kw):
    """Time of one decode step: roofline of ``decode_step_parts`` plus the TP all-reduces."""
    d = decode_step_parts(eff, p, acc, batch, context, tp, precision, weight_precision, kv_precision, **kw)
    return np.maximum(d["memory_s"], d["compute_s"]) + d["comm_s"]


def prefill_s(eff: Efficiency, p: Profile, acc, tokens, input_tokens, tp, precision: str, weight_precision: str,
              mem_eff=None, latency_s=None, compute_eff=None):
    """Time to prefill ``tokens`` prompt tokens (prompts of ``input_tokens``) on ``tp`` chips: roofline
    of FLOPs (2N + causal attention per token) against one read of the weights, plus TP all-reduces."""
    fam = str(acc["family"])
    mem_eff = eff.get("decode_memory_efficiency", fam) if mem_eff is None else mem_eff
    latency_s = eff.get("tp_collective_latency_s", fam) if latency_s is None else latency_s
    n = np.asarray(tokens, dtype=float)
    tp = np.asarray(tp, dtype=float)
    if compute_eff is None:
        compute_eff = compute_efficiency(eff, acc, precision, "prefill", p, tp=tp)
    t_comp = n * prefill_flops_per_token(p, input_tokens) / (tp * peak(acc, precision) * compute_eff)
    t_mem = decode_weight_bytes_read(p, n, weight_precision) / (tp * float(acc["memory_bytes_per_s"]) * mem_eff)
    return np.maximum(t_comp, t_mem) + tp_allreduce_s(p, acc, n, tp, latency_s)


def kv_budget_bytes(p: Profile, acc, tp, weight_precision: str, headroom: float):
    """HBM left for the KV cache on a ``tp``-chip replica: tp·memory·(1 − headroom) − weights.

    The default headroom 0.1 equals vLLM's ``gpu_memory_utilization = 0.9`` (activations, CUDA
    graphs and fragmentation live in the rest)."""
    return np.asarray(tp, dtype=float) * float(acc["memory_bytes"]) * (1.0 - headroom) - weight_bytes(p, weight_precision)


def max_batch_fit(p: Profile, acc, tp, seq_tokens, weight_precision: str, kv_precision: str, headroom: float):
    """Largest number of sequences of ``seq_tokens`` whose KV cache fits beside the weights (0: the
    weights alone do not fit)."""
    per_seq = kv_cache_bytes_per_token(p, kv_precision) * np.maximum(np.asarray(seq_tokens, dtype=float), 1.0)
    budget = kv_budget_bytes(p, acc, tp, weight_precision, headroom)
    return np.floor(np.maximum(budget, 0.0) / per_seq)


def serving_point(eff: Efficiency, p: Profile, acc, batch, input_tokens, output_tokens, tp, precision,
                  weight_precision, kv_precision, mem_eff=None, latency_s=None, ceiling=None,
                  static: bool = False) -> dict:
    """TTFT, TPOT and output tokens/s of one replica serving ``batch`` concurrent requests, with the
    decode step's parts (``decode_memory_s``, ``decode_compute_s``, ``decode_comm_s``).

    Continuous batching with chunked prefill (vLLM, SGLang, TensorRT-LLM; Agrawal et al. 2024): each
    decode step also carries batch·I/O prompt tokens of the requests that replace finished ones, so
    their FLOPs share the step's roofline with the decode; TPOT is that step at the mean context
    I + O/2, output tokens/s = batch / TPOT, TTFT is one prompt's prefill (no queueing).
    ``static`` batching (a batch prefilled together, then decoded: Neuron, benchmark_latency): output
    tokens/s = batch·O / (prefill(batch·I) + O·TPOT), TTFT = prefill(batch·I).
    Arrays broadcast over the inputs; ``mem_eff``, ``latency_s`` and ``ceiling`` override the
    efficiency (the calibration grid)."""
    I = 0.0 if input_tokens is None else float(input_tokens)
    O = 0.0 if output_tokens is None else float(output_tokens)
    b = np.asarray(batch, dtype=float)
    ce_d = compute_efficiency(eff, acc, precision, "decode", p, tp=tp, ceiling=ceiling)
    ce_p = compute_efficiency(eff, acc, precision, "prefill", p, tp=tp, ceiling=ceiling)
    kw = dict(mem_eff=mem_eff, latency_s=latency_s)
    chunked = not (static or I == 0 or O == 0)
    parts = decode_step_parts(eff, p, acc, b, I + O / 2.0, tp, precision, weight_precision, kv_precision,
                              compute_eff=ce_d, prefill_tokens=b * I / O if chunked else 0.0,
                              prefill_context=I if chunked else 0.0, **kw)
    tpot = np.maximum(parts["memory_s"], parts["compute_s"]) + parts["comm_s"]
    if chunked:
        thr = b / tpot
    else:
        prefill_batch = prefill_s(eff, p, acc, b * I, I, tp, precision, weight_precision, compute_eff=ce_p, **kw) \
            if I > 0 else 0.0 * tpot
        thr = b * O / (prefill_batch + O * tpot) if O > 0 else b / tpot
    if I > 0:
        ttft = prefill_s(eff, p, acc, (b if static else 1.0) * I, I, tp, precision, weight_precision, compute_eff=ce_p, **kw)
    else:
        ttft = np.zeros_like(tpot)
    ones = np.ones_like(tpot)
    return {"ttft_s": ttft * ones, "tpot_s": tpot, "output_tokens_per_s": thr, "decode_memory_s": parts["memory_s"] * ones,
            "decode_compute_s": parts["compute_s"] * ones, "decode_comm_s": parts["comm_s"] * ones}


def tp_candidates(acc, chips: int | None = None) -> np.ndarray:
    """Single-node tensor-parallel degrees: powers of two up to the node size, and the node size;
    with ``chips``, only degrees that divide it."""
    node = int(acc.get("chips_per_node") or 1)
    limit = node if chips is None else min(node, chips)
    c = [2 ** k for k in range(0, 12) if 2 ** k <= limit]
    if limit not in c and (chips is None or chips % limit == 0):
        c.append(limit)
    if chips is not None:
        c = [t for t in c if chips % t == 0]
    return np.array(sorted(set(c)), dtype=float)


def _need_lengths(w: Workload) -> tuple[float, float]:
    if w.input_tokens is None or w.output_tokens is None:
        raise InputError("workload.input_tokens / output_tokens: expected prompt and answer lengths for serving")
    return float(w.input_tokens), float(w.output_tokens)


def choose_batch(eff: Efficiency, p: Profile, acc, w: Workload, tp: float, headroom: float) -> dict | None:
    """The operating point of one ``tp``-chip replica: the largest batch (of ``BATCH_GRID`` up to
    what fits memory, or up to ``concurrency`` when given) that meets ``tpot_slo_ms`` and
    ``ttft_slo_ms``, else the largest that fits. None when the weights and one sequence do not fit,
    or the replica cannot run (e.g. tensor parallelism over a link with no published bandwidth)."""
    I, O = _need_lengths(w)
    cprec = terms.compute_precision(w.precision)
    mb = float(max_batch_fit(p, acc, tp, I + O, w.precision, w.kv_precision, headroom))
    if mb < 1:
        return None
    grid = BATCH_GRID[BATCH_GRID <= mb]
    if grid[-1] != mb:
        grid = np.append(grid, mb)
    if w.concurrency is not None:
        grid = grid[grid <= w.concurrency] if (grid <= w.concurrency).any() else grid[:1]
    pt = serving_point(eff, p, acc, grid, I, O, tp, cprec, w.precision, w.kv_precision)
    ok = np.ones(grid.shape, dtype=bool)
    if w.tpot_slo_ms is not None:
        ok &= pt["tpot_s"] * 1e3 <= w.tpot_slo_ms
    if w.ttft_slo_ms is not None:
        ok &= pt["ttft_s"] * 1e3 <= w.ttft_slo_ms
    meets = bool(ok.any())
    # throughput grows with batch: the largest batch that meets the targets, else the largest that fits
    j = int(np.flatnonzero(ok)[-1]) if meets else len(grid) - 1
    thr = float(pt["output_tokens_per_s"][j])
    if not (thr > 0 and math.isfinite(thr)):
        return None
    return {"tp": int(tp), "batch": int(grid[j]), "max_batch": int(mb), "meets": meets,
            "ttft_s": float(pt["ttft_s"][j]), "tpot_s": float(pt["tpot_s"][j]), "thr": thr,
            **{k: float(pt[k][j]) for k in ("decode_memory_s", "decode_compute_s", "decode_comm_s")}}


def _replicas(w: Workload, c: dict, pinned: int | None, O: float) -> int:
    """Model copies: all the pinned chips, else the fewest that serve ``requests_per_s`` (or hold
    ``concurrency``), else one."""
    if pinned:
        return int(pinned // c["tp"])
    if w.requests_per_s is not None:
        return max(1, math.ceil(w.requests_per_s * O / c["thr"]))
    if w.concurrency is not None:
        return max(1, math.ceil(w.concurrency / c["batch"]))
    return 1


def _generic_serving(eff: Efficiency, p: Profile, acc, w: Workload, pinned: int | None) -> dict:
    """Non-transformer model: samples/s per chip = min(peak·eff / FLOPs per sample, bandwidth·eff / bytes
    per sample) (roofline), reported in ``output_tokens_per_s`` (samples/s) and ``ttft_ms`` (latency
    of one sample)."""
    if p.infer_flops_per_sample is None:
        return {"reason": "workload.generic.infer_flops_per_sample is needed for an inference estimate"}
    cprec = terms.compute_precision(w.precision)
    e = compute_efficiency(eff, acc, cprec, "prefill", p)
    t = float(roofline_time_s(p.infer_flops_per_sample, p.bytes_per_sample or 0.0, peak(acc, cprec) * e,
                              float(acc["memory_bytes_per_s"]) * eff.get("decode_memory_efficiency", str(acc["family"]))))
    per_chip = 1.0 / t
    n = pinned or 1
    replicas = n if pinned else (max(1, math.ceil(w.requests_per_s / per_chip)) if w.requests_per_s else 1)
    fits = weight_bytes(p, w.precision) <= float(acc["memory_bytes"])
    return {"fits": fits, "chips": replicas, "tp": 1, "replicas": replicas, "ttft_ms": t * 1e3,
            "output_tokens_per_s": per_chip * replicas, "reason": "" if fits else "weights do not fit one chip"}


def estimate_serving(p: Profile, acc, w: Workload, headroom: float, pinned: int | None = None,
                     max_chips: int | None = None, eff: Efficiency | None = None) -> dict:
    """Serving on one accelerator type: TTFT, TPOT, output tokens/s of the whole deployment, the
    largest batch that fits memory, replicas (model copies) and ``tp`` (chips per copy), as the
    figures of a comparison row (``terms.ESTIMATE_COLUMNS``).

    For each single-node tensor-parallel degree (``tp_candidates``) the replica runs at
    ``choose_batch``; replicas = the fewest copies that serve ``requests_per_s`` (one when no load is
    given); the degree with the fewest chips wins (ties: the lower TPOT). With ``pinned`` chips the
    deployment uses exactly those chips (the highest throughput wins). Without concurrency and
    latency targets this is the best throughput that fits memory."""
    eff = default(eff)
    if p.generic:
        return _generic_serving(eff, p, acc, w, pinned)
    I, O = _need_lengths(w)
    tps = tp_candidates(acc, pinned)
    best = None
    for tp in (tps if len(tps) else np.array([1.0])):
        c = choose_batch(eff, p, acc, w, tp, headroom)
        if c is None:
            continue
        c["replicas"] = _replicas(w, c, pinned, O)
        c["chips"] = c["replicas"] * c["tp"]
        key = (not c["meets"], c["chips"], c["tpot_s"]) if not pinned else (not c["meets"], -c["thr"] * c["replicas"])
        if best is None or key < best[0]:
            best = (key, c)
    if best is None:
        wb = weight_bytes(p, w.precision)
        need = wb / (float(acc["memory_bytes"]) * (1.0 - headroom))
        node = int(acc.get("chips_per_node") or 1)
        where = f"the pinned {pinned} chips" if pinned else f"one node ({node} chips)"
        return {"fits": False, "chips": int(math.ceil(need)),
                "reason": (f"weights ({wb / 1e9:.0f} GB) and one sequence's KV cache do not fit {where}; needs at "
                           f"least {math.ceil(need)} chips (multi-node serving is not modelled)")}
    return _serving_row(eff, p, acc, w, best[1], max_chips)


def _serving_row(eff: Efficiency, p: Profile, acc, w: Workload, c: dict, max_chips: int | None) -> dict:
    """The comparison figures of the chosen deployment ``c``, with P10/P90 bands."""
    fam = str(acc["family"])
    I, O = _need_lengths(w)
    thr = c["thr"] * c["replicas"]
    out = {"fits": True, "chips": c["chips"], "tp": c["tp"], "replicas": c["replicas"], "batch": c["batch"],
           "max_batch": c["max_batch"], "meets_slo": c["meets"], "ttft_ms": c["ttft_s"] * 1e3,
           "tpot_ms": c["tpot_s"] * 1e3, "output_tokens_per_s": thr, "reason": "",
           "memory_per_chip_bytes": (weight_bytes(p, w.precision) + c["batch"] * (I + O)
                                     * kv_cache_bytes_per_token(p, w.kv_precision)) / c["tp"],
           "calibrated": eff.is_calibrated("decode_memory_efficiency", fam)}
    for key, metric in (("output_tokens_per_s", "output_tokens_per_s_per_chip"), ("tpot_ms", "tpot_ms"),
                        ("ttft_ms", "ttft_ms")):
        lo, hi = band(eff, metric, fam)
        out[key + "_low"], out[key + "_high"] = out[key] * lo, out[key] * hi
    if not c["meets"]:
        out["reason"] = "misses the latency targets at every batch size (estimated at the largest batch that fits)"
    if max_chips and c["chips"] > max_chips:
        out["reason"] = (out["reason"] + "; " if out["reason"] else "") + f"needs {c['chips']} chips > max_chips {max_chips}"
    return out


def tp_curve(p: Profile, acc, w: Workload, tp_values=None, efficiency: Efficiency | None = None, *,
             memory_headroom: float = 0.1, batches=TP_BATCHES) -> pd.DataFrame:
    """Throughput and latency of one model replica against tensor-parallel size and decode batch, with
    the operating point of each tp marked ``chosen``: exactly the point ``estimate_serving`` evaluates
    for that tp (``choose_batch``: the scenario's concurrency, or the largest batch that meets the
    latency targets, or the largest that fits), so that the scaling tab and the decision show one
    number. Columns: accelerator, tp, batch, memory_per_chip_bytes, fits, ttft_ms, tpot_ms,
    decode_compute_ms, decode_memory_ms, decode_comm_ms, output_tokens_per_s,
    output_tokens_per_s_per_chip, meets_tpot_slo, meets_ttft_slo, meets_slo, chosen."""
    if p.generic:
        raise InputError("workload: the tensor-parallel curve needs a transformer shape (workload.model or "
                         "workload.architecture)")
    eff = default(efficiency)
    I, O = _need_lengths(w)
    cprec = terms.compute_precision(w.precision)
    tps = tp_candidates(acc) if tp_values is None else np.array(sorted({int(t) for t in tp_values}), dtype=float)
    frames = []
    for tp in tps:
        chosen = choose_batch(eff, p, acc, w, tp, memory_headroom)
        bs = np.array(sorted(set(batches) | ({chosen["batch"]} if chosen else set())), dtype=float)
        pt = serving_point(eff, p, acc, bs, I, O, tp, cprec, w.precision, w.kv_precision)
        mb = float(max_batch_fit(p, acc, tp, I + O, w.precision, w.kv_precision, memory_headroom))
        frames.append(pd.DataFrame({
            "accelerator": acc["accelerator"] if "accelerator" in acc else acc.name, "tp": int(tp),
            "batch": bs.astype(int),
            "memory_per_chip_bytes": (weight_bytes(p, w.precision) + bs * (I + O) * kv_cache_bytes_per_token(p, w.kv_precision)) / tp,
            "fits": bs <= mb, "ttft_ms": pt["ttft_s"] * 1e3, "tpot_ms": pt["tpot_s"] * 1e3,
            "decode_compute_ms": pt["decode_compute_s"] * 1e3, "decode_memory_ms": pt["decode_memory_s"] * 1e3,
            "decode_comm_ms": pt["decode_comm_s"] * 1e3, "output_tokens_per_s": pt["output_tokens_per_s"],
            "output_tokens_per_s_per_chip": pt["output_tokens_per_s"] / tp,
            "chosen": (bs == chosen["batch"]) if chosen else False}))
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(df):
        df["meets_tpot_slo"] = True if w.tpot_slo_ms is None else df["tpot_ms"] <= w.tpot_slo_ms
        df["meets_ttft_slo"] = True if w.ttft_slo_ms is None else df["ttft_ms"] <= w.ttft_slo_ms
        df["meets_slo"] = df["meets_tpot_slo"] & df["meets_ttft_slo"]
    return df
