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
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import terms
from . import comm, queueing
from ..errors import InputError
from ..scenario import Workload
from .efficiency import Efficiency, band, compute_efficiency, default, peak, roofline_time_s, scope_of
from .profile import (Profile, bytes_per_value, decode_flops_per_token, decode_weight_bytes_read, kv_cache_bytes_per_token,
                      prefill_flops_per_token, weight_bytes)

# decode batches the deployment search tries: every batch to 64, then geometric steps to 65,536
BATCH_GRID = np.unique(np.r_[np.arange(1, 65), np.round(np.geomspace(64, 65536, 120))]).astype(float)
# batches shown on the tensor-parallel curve (the chosen batch of each tp is added to them)
TP_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
ACTIVATION_BYTES = 2.0  # 16-bit activations in the tensor-parallel all-reduces


@dataclass(frozen=True)
class Layout:
    """How one model replica is split: ``tp`` chips of tensor parallelism inside a node, ``pp``
    pipeline stages (across nodes) and, for a mixture of experts, ``ep`` chips the routed experts are
    spread over (ep > tp: attention runs tensor-parallel in groups of tp chips, data-parallel over
    ep/tp groups, the deployment of DeepSeek-V3's report §3.4). A replica has max(tp, ep)·pp chips.
    ``net_bytes_per_s`` (per chip per direction) and ``net_latency_s`` price what crosses nodes
    (pipeline hand-offs, expert all-to-alls beyond a node); passed per offer, default the
    accelerator's ``inter_node_bytes_per_s``."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    net_bytes_per_s: float = math.nan
    net_latency_s: float = 0.0

    @property
    def width(self) -> int:
        return max(self.tp, self.ep)

    @property
    def chips(self) -> int:
        return self.width * self.pp

    @property
    def groups(self) -> int:
        """Attention groups of a stage (data-parallel attention when the experts span more chips)."""
        return max(1, self.ep // self.tp)


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


def _node(acc) -> int:
    return int(acc.get("chips_per_node") or 1)


def _crossing_bytes_per_s(acc, lay: Layout, chips: int) -> float:
    """Bandwidth per chip between the nodes of ``chips`` chips: the fast link when they share one fast
    domain (a TPU slice, a Trainium UltraServer), else the layout's network."""
    dom = acc.get("fast_domain_chips")
    if chips <= _node(acc) or (not pd.isna(dom) and chips <= int(dom)):
        return float(acc["intra_node_bytes_per_s"])
    return lay.net_bytes_per_s


def ep_alltoall_s(p: Profile, acc, tokens, lay: Layout, latency_s):
    """Expert parallelism's dispatch and combine all-to-alls per MoE layer (GShard, Lepikhin et al.
    2020; DeepSeek-V3 §3.4): each chip sends its tokens/ep tokens' hidden vectors to k experts, of
    which a fraction (ep−1)/ep live elsewhere: 2·L·(latency + tokens/ep·k·h·2 bytes·(ep−1)/ep / bandwidth),
    over the network when the experts span nodes. Zero for ep = 1."""
    if lay.ep <= 1:
        return 0.0 * np.asarray(tokens, dtype=float)
    bw = _crossing_bytes_per_s(acc, lay, lay.ep)
    lat = latency_s + (lay.net_latency_s if lay.ep > _node(acc) else 0.0)
    data = np.asarray(tokens, dtype=float) / lay.ep * p.experts_per_token * p.hidden * ACTIVATION_BYTES * (lay.ep - 1) / lay.ep
    return 2.0 * p.layers * (lat + (data / bw if bw == bw else np.inf))


def pp_handoff_s(p: Profile, acc, tokens, lay: Layout):
    """Pipeline parallelism's (pp − 1) stage hand-offs for one pass: each of a stage's tp chips sends
    its 1/tp share of the tokens' activations (tokens·h·2 bytes) to the next stage over the network
    (GPipe, Huang et al. 2019; Megatron-LM's p2p send/recv), plus the network latency."""
    if lay.pp <= 1:
        return 0.0 * np.asarray(tokens, dtype=float)
    bw = _crossing_bytes_per_s(acc, lay, lay.chips)
    data = np.asarray(tokens, dtype=float) * p.hidden * ACTIVATION_BYTES / lay.tp
    return (lay.pp - 1) * (lay.net_latency_s + (data / bw if bw == bw else np.inf))


def _weight_read_split(p: Profile, tokens, weight_precision: str):
    """Weight bytes one pass reads: (not routed-expert, routed-expert) parts of ``decode_weight_bytes_read``."""
    total = decode_weight_bytes_read(p, tokens, weight_precision)
    if not p.is_moe:
        return total, 0.0 * total
    frac = 1.0 - (1.0 - p.experts_per_token / p.experts) ** np.asarray(tokens, dtype=float)
    expert = p.params_expert * frac * bytes_per_value(weight_precision)
    return total - expert, expert


def _split_bytes(p: Profile, tokens, weight_precision: str, tp, lay: Layout | None):
    """Weight bytes read per chip-set: the non-expert part over tp chips, the experts over max(tp, ep)."""
    if lay is None or lay.ep <= 1:
        return decode_weight_bytes_read(p, tokens, weight_precision) / tp
    dense, expert = _weight_read_split(p, tokens, weight_precision)
    return dense / tp + expert / lay.width


def decode_step_parts(eff: Efficiency, p: Profile, acc, batch, context, tp, precision: str, weight_precision: str,
                      kv_precision: str, mem_eff=None, latency_s=None, compute_eff=None, prefill_tokens=0.0,
                      prefill_context=0.0, layout: Layout | None = None) -> dict:
    """The parts of one decode step (one token for each of ``batch`` sequences at ``context`` cached
    tokens) on a tensor-parallel group of ``tp`` chips: ``memory_s`` (active weights once + each
    sequence's KV cache over tp·HBM·mem_eff), ``compute_s`` (FLOPs over tp·peak·efficiency) and
    ``comm_s`` (the TP all-reduces). ``prefill_tokens`` of other requests' prompts (of
    ``prefill_context`` tokens) can ride along in the same step (chunked prefill, Agrawal et al. 2024
    "Sarathi-Serve"): their FLOPs add to the compute side, their weight reads are the step's own.
    With a ``layout`` of pp stages, ``batch`` is one micro-batch: the step is the sum of the pp stage
    steps (each 1/pp of the layers) plus the hand-offs, so the parts equal a tp-chip step; experts
    over ep chips read their weights and do their FLOPs over max(tp, ep) chips and add the
    all-to-alls, attention groups (ep/tp) each hold batch/groups sequences' KV cache.
    ``mem_eff``, ``latency_s`` and ``compute_eff`` override the efficiency (the calibration grid)."""
    fam = scope_of(eff, acc)
    mem_eff = eff.get("decode_memory_efficiency", fam) if mem_eff is None else mem_eff
    latency_s = eff.get("tp_collective_latency_s", fam) if latency_s is None else latency_s
    b = np.asarray(batch, dtype=float)
    tp = np.asarray(tp, dtype=float)
    pre = np.asarray(prefill_tokens, dtype=float)
    groups = 1 if layout is None else layout.groups
    width = tp if layout is None else float(layout.width)
    bytes_ = (_split_bytes(p, b + pre, weight_precision, tp, layout)
              + b / groups * np.asarray(context, dtype=float) * kv_cache_bytes_per_token(p, kv_precision) / tp)
    if compute_eff is None:
        compute_eff = compute_efficiency(eff, acc, precision, "decode", p, tp=tp)
    flops = b * decode_flops_per_token(p, context) + pre * prefill_flops_per_token(p, prefill_context)
    comm = tp_allreduce_s(p, acc, (b + pre) / groups, tp, latency_s)
    if layout is not None:
        comm = comm + ep_alltoall_s(p, acc, b + pre, layout, latency_s) + pp_handoff_s(p, acc, b + pre, layout)
    return {"memory_s": bytes_ / (float(acc["memory_bytes_per_s"]) * mem_eff),
            "compute_s": flops / (width * peak(acc, precision) * compute_eff),
            "comm_s": comm}


def decode_step_s(eff: Efficiency, p: Profile, acc, batch, context, tp, precision: str, weight_precision: str,
                  kv_precision: str, **kw):
    """Time of one decode step: roofline of ``decode_step_parts`` plus the TP all-reduces."""
    d = decode_step_parts(eff, p, acc, batch, context, tp, precision, weight_precision, kv_precision, **kw)
    return np.maximum(d["memory_s"], d["compute_s"]) + d["comm_s"]


def prefill_s(eff: Efficiency, p: Profile, acc, tokens, input_tokens, tp, precision: str, weight_precision: str,
              mem_eff=None, latency_s=None, compute_eff=None, layout: Layout | None = None):
    """Time to prefill ``tokens`` prompt tokens (prompts of ``input_tokens``) on ``tp`` chips: roofline
    of FLOPs (2N + causal attention per token) against one read of the weights, plus TP all-reduces;
    with a ``layout``, through every pipeline stage (hand-offs added) and with the experts' FLOPs and
    weights over max(tp, ep) chips plus their all-to-alls."""
    fam = scope_of(eff, acc)
    mem_eff = eff.get("decode_memory_efficiency", fam) if mem_eff is None else mem_eff
    latency_s = eff.get("tp_collective_latency_s", fam) if latency_s is None else latency_s
    n = np.asarray(tokens, dtype=float)
    tp = np.asarray(tp, dtype=float)
    if compute_eff is None:
        compute_eff = compute_efficiency(eff, acc, precision, "prefill", p, tp=tp)
    flops = n * prefill_flops_per_token(p, input_tokens)
    if layout is not None and layout.ep > 1:
        expert = n * 2.0 * p.params_expert * p.experts_per_token / p.experts
        chip_flops = (flops - expert) / tp + expert / layout.width
    else:
        chip_flops = flops / tp
    t_comp = chip_flops / (peak(acc, precision) * compute_eff)
    t_mem = _split_bytes(p, n, weight_precision, tp, layout) / (float(acc["memory_bytes_per_s"]) * mem_eff)
    comm = tp_allreduce_s(p, acc, n, tp, latency_s)
    if layout is not None:
        comm = comm + ep_alltoall_s(p, acc, n, layout, latency_s) + pp_handoff_s(p, acc, n, layout)
    return np.maximum(t_comp, t_mem) + comm


def stored_weight_bytes(p: Profile, weight_precision: str, layout: Layout | None = None) -> float:
    """Weight bytes a replica holds: every weight once, plus a copy of the non-expert weights for each
    further attention group when experts span more chips than the tensor-parallel group."""
    w = weight_bytes(p, weight_precision)
    if layout is None or layout.groups <= 1:
        return w
    dense = w - p.params_expert * bytes_per_value(weight_precision)
    return w + dense * (layout.groups - 1)


def kv_budget_bytes(p: Profile, acc, tp, weight_precision: str, headroom: float, layout: Layout | None = None):
    """HBM left for the KV cache on a replica of ``tp`` chips (or of ``layout.chips``):
    chips·memory·(1 − headroom) − the weights it holds.

    The default headroom 0.1 equals vLLM's ``gpu_memory_utilization = 0.9`` (activations, CUDA
    graphs and fragmentation live in the rest)."""
    chips = np.asarray(tp, dtype=float) if layout is None else float(layout.chips)
    return chips * float(acc["memory_bytes"]) * (1.0 - headroom) - stored_weight_bytes(p, weight_precision, layout)


def max_batch_fit(p: Profile, acc, tp, seq_tokens, weight_precision: str, kv_precision: str, headroom: float,
                  layout: Layout | None = None):
    """Largest number of sequences of ``seq_tokens`` whose KV cache fits beside the weights (0: the
    weights alone do not fit)."""
    per_seq = kv_cache_bytes_per_token(p, kv_precision) * np.maximum(np.asarray(seq_tokens, dtype=float), 1.0)
    budget = kv_budget_bytes(p, acc, tp, weight_precision, headroom, layout)
    return np.floor(np.maximum(budget, 0.0) / per_seq)


def serving_point(eff: Efficiency, p: Profile, acc, batch, input_tokens, output_tokens, tp, precision,
                  weight_precision, kv_precision, mem_eff=None, latency_s=None, ceiling=None,
                  static: bool = False, layout: Layout | None = None) -> dict:
    """TTFT, TPOT and output tokens/s of one replica serving ``batch`` concurrent requests, with the
    decode step's parts (``decode_memory_s``, ``decode_compute_s``, ``decode_comm_s``).

    Continuous batching with chunked prefill (vLLM, SGLang, TensorRT-LLM; Agrawal et al. 2024): each
    decode step also carries batch·I/O prompt tokens of the requests that replace finished ones, so
    their FLOPs share the step's roofline with the decode; TPOT is that step at the mean context
    I + O/2, output tokens/s = batch / TPOT, TTFT is one prompt's prefill (no queueing: see
    ``model.queueing``). With pp pipeline stages the batch is pp micro-batches of batch/pp in flight
    together, so TPOT is a micro-batch's trip through every stage and output tokens/s = batch / TPOT.
    ``static`` batching (a batch prefilled together, then decoded: Neuron, benchmark_latency): output
    tokens/s = batch·O / (prefill(batch·I) + O·TPOT), TTFT = prefill(batch·I).
    Arrays broadcast over the inputs; ``mem_eff``, ``latency_s`` and ``ceiling`` override the
    efficiency (the calibration grid)."""
    I = 0.0 if input_tokens is None else float(input_tokens)
    O = 0.0 if output_tokens is None else float(output_tokens)
    b = np.asarray(batch, dtype=float)
    micro = b / (1 if layout is None else layout.pp)
    ce_d = compute_efficiency(eff, acc, precision, "decode", p, tp=tp, ceiling=ceiling)
    ce_p = compute_efficiency(eff, acc, precision, "prefill", p, tp=tp, ceiling=ceiling)
    kw = dict(mem_eff=mem_eff, latency_s=latency_s, layout=layout)
    chunked = not (static or I == 0 or O == 0)
    parts = decode_step_parts(eff, p, acc, micro, I + O / 2.0, tp, precision, weight_precision, kv_precision,
                              compute_eff=ce_d, prefill_tokens=micro * I / O if chunked else 0.0,
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
    node = _node(acc)
    limit = node if chips is None else min(node, chips)
    c = [2 ** k for k in range(0, 12) if 2 ** k <= limit]
    if limit not in c and (chips is None or chips % limit == 0):
        c.append(limit)
    if chips is not None:
        c = [t for t in c if chips % t == 0]
    return np.array(sorted(set(c)), dtype=float)


def _net(acc, net_bytes_per_s=None) -> tuple[float, float]:
    """The network between nodes: per-chip bandwidth (the parameter, else the accelerator's
    ``inter_node_bytes_per_s``) and the per-message latency of data/topology.csv (0 when none)."""
    bw = net_bytes_per_s if net_bytes_per_s is not None else acc.get("inter_node_bytes_per_s")
    bw = math.nan if bw is None or pd.isna(bw) else float(bw)
    row = acc if isinstance(acc, pd.Series) else pd.Series(acc, name=acc.get("accelerator"))
    return bw, float(comm.topology(row).net_latency_s or 0.0)


def serving_layouts(p: Profile, acc, w: Workload, headroom: float, pinned: int | None = None,
                    parallelism=None, net_bytes_per_s: float | None = None) -> list[Layout]:
    """The replica layouts to try. A pinned ``parallelism`` (tp, pp, ep of ``cluster.parallelism``)
    is the only layout. Else the single-node tensor-parallel degrees (``tp_candidates``, dividing the
    ``pinned`` chips); when no single node holds the weights and one sequence, tensor parallelism over
    the node with pipeline stages across the fewest nodes that fit (and twice that), and for a
    mixture of experts the experts spread over those nodes (expert parallelism, attention
    tensor-parallel in each node)."""
    bw, lat = _net(acc, net_bytes_per_s)
    I, O = _need_lengths(w)
    if parallelism is not None and any(getattr(parallelism, k) for k in ("tp", "pp", "ep")):
        return [Layout(int(parallelism.tp or 1), int(parallelism.pp or 1), int(parallelism.ep or 1), bw, lat)]
    single = [Layout(int(t), 1, 1, bw, lat) for t in tp_candidates(acc, pinned)]
    if any(max_batch_fit(p, acc, t.tp, I + O, w.precision, w.kv_precision, headroom) >= 1 for t in single):
        return single
    node = _node(acc)
    out = []
    for make in ([lambda k: Layout(node, k, 1, bw, lat)]
                 + ([lambda k: Layout(node, 1, node * k, bw, lat)] if p.is_moe else [])):
        fit = [k for k in range(2, 257) if max_batch_fit(p, acc, node, I + O, w.precision, w.kv_precision,
                                                          headroom, make(k)) >= make(k).pp]
        for k in fit[:1] + [2 * k for k in fit[:1]]:
            lay = make(k)
            if pinned is None or pinned % lay.chips == 0:
                out.append(lay)
    return out or single


def _need_lengths(w: Workload) -> tuple[float, float]:
    if w.input_tokens is None or w.output_tokens is None:
        raise InputError("workload.input_tokens / output_tokens: expected prompt and answer lengths for serving")
    return float(w.input_tokens), float(w.output_tokens)


def _as_layout(tp, layout: Layout | None) -> Layout:
    return layout if layout is not None else Layout(int(tp))


def _grid(mb: float, w: Workload, pinned_replicas: int | None) -> np.ndarray:
    """Batches per replica to try: ``BATCH_GRID`` up to what fits; with ``concurrency`` over
    ``pinned_replicas``, exactly concurrency/replicas (rounded up)."""
    if w.concurrency is not None and pinned_replicas:
        return np.array([math.ceil(w.concurrency / pinned_replicas)], dtype=float)
    grid = BATCH_GRID[BATCH_GRID <= mb]
    return grid if len(grid) and grid[-1] == mb else np.append(grid, mb)


def _slo_percentile(w: Workload) -> float:
    return float(getattr(w, "ttft_slo_percentile", 99.0) or 99.0) / 100.0


def ttft_tails(w: Workload, ttft_s, tpot_s, batch, replicas) -> dict:
    """TTFT at the median, the 99th percentile and the SLO's percentile (``ttft_slo_percentile``)
    under ``requests_per_s`` Poisson arrivals (``queueing.ttft_quantile_s``: c = replicas·batch
    slots, service TTFT + O·TPOT); the unloaded TTFT when no load is given."""
    O = float(w.output_tokens or 0)
    if w.requests_per_s is None:
        return {"p50": ttft_s + 0.0 * np.asarray(replicas, dtype=float), "p99": ttft_s + 0.0 * np.asarray(replicas, dtype=float),
                "slo": ttft_s + 0.0 * np.asarray(replicas, dtype=float)}
    servers = np.maximum(np.asarray(replicas, dtype=float) * batch, 1.0)
    q = dict(arrivals_per_s=w.requests_per_s, service_s=ttft_s + O * tpot_s, servers=servers)
    return {"p50": queueing.ttft_quantile_s(0.5, ttft_s, tpot_s, **q),
            "p99": queueing.ttft_quantile_s(0.99, ttft_s, tpot_s, **q),
            "slo": queueing.ttft_quantile_s(_slo_percentile(w), ttft_s, tpot_s, **q)}


def choose_batch(eff: Efficiency, p: Profile, acc, w: Workload, tp: float, headroom: float,
                 layout: Layout | None = None, pinned: int | None = None) -> dict | None:
    """The operating point of one replica (``tp`` chips, or ``layout``): the largest batch (of
    ``BATCH_GRID`` up to what fits memory) that meets ``tpot_slo_ms`` and ``ttft_slo_ms`` unloaded,
    else the largest that fits; with ``pinned`` chips and ``concurrency``, concurrency/replicas.
    Then ``deployment`` sizes the replicas. None when the weights and one sequence do not fit, or
    the replica cannot run (e.g. tensor parallelism over a link with no published bandwidth); a dict
    with ``reason`` and ``fits`` False when the pinned chips cannot hold the concurrency."""
    I, O = _need_lengths(w)
    lay = _as_layout(tp, layout)
    cprec = terms.compute_precision(w.precision)
    mb = float(max_batch_fit(p, acc, lay.tp, I + O, w.precision, w.kv_precision, headroom, lay))
    if mb < 1 or (pinned and pinned < lay.chips):
        return None
    pinned_r = int(pinned // lay.chips) if pinned else None
    grid = _grid(mb, w, pinned_r)
    if grid[0] > mb:
        return {"fits": False, "tp": lay.tp, "pp": lay.pp, "ep": lay.ep, "max_batch": int(mb), "chips": pinned,
                "reason": (f"concurrency {w.concurrency} needs {int(grid[0])} sequences per replica on {pinned_r} "
                           f"replicas of {lay.chips} chips; at most {int(mb)} fit")}
    pt = serving_point(eff, p, acc, grid, I, O, lay.tp, cprec, w.precision, w.kv_precision, layout=lay)
    ok = np.ones(grid.shape, dtype=bool)
    if w.tpot_slo_ms is not None:
        ok &= pt["tpot_s"] * 1e3 <= w.tpot_slo_ms
    if w.ttft_slo_ms is not None:
        ok &= pt["ttft_s"] * 1e3 <= w.ttft_slo_ms
    meets = bool(ok.any())
    # throughput grows with batch: the largest batch that meets the targets, else the largest that fits
    j = int(np.flatnonzero(ok)[-1]) if meets else len(grid) - 1
    if w.concurrency is not None and not pinned:  # the deployment's in-flight sequences over the fewest replicas
        b = min(float(grid[j]), float(w.concurrency))
        b = float(math.ceil(w.concurrency / math.ceil(w.concurrency / b)))
        if b != grid[j]:
            grid, j = np.array([b]), 0
            pt = serving_point(eff, p, acc, grid, I, O, lay.tp, cprec, w.precision, w.kv_precision, layout=lay)
    thr = float(pt["output_tokens_per_s"][j])
    if not (thr > 0 and math.isfinite(thr)):
        return None
    return {"fits": True, "tp": lay.tp, "pp": lay.pp, "ep": lay.ep, "layout_chips": lay.chips, "batch": int(grid[j]),
            "max_batch": int(mb), "meets": meets, "ttft_s": float(pt["ttft_s"][j]), "tpot_s": float(pt["tpot_s"][j]),
            "thr": thr, **{k: float(pt[k][j]) for k in ("decode_memory_s", "decode_compute_s", "decode_comm_s")}}


def _min_replicas(w: Workload, c: dict, O: float) -> int:
    """The fewest copies that hold ``concurrency`` at the chosen batch and serve ``requests_per_s``
    with a stable queue (λ·service < replicas·batch); one when neither is given."""
    r = 1
    if w.concurrency is not None:
        r = max(r, math.ceil(w.concurrency / c["batch"]))
    if w.requests_per_s is not None:
        service = c["ttft_s"] + O * c["tpot_s"]
        r = max(r, math.ceil(w.requests_per_s * O / c["thr"]), math.floor(w.requests_per_s * service / c["batch"]) + 1)
    return r


def deployment(w: Workload, c: dict, pinned: int | None) -> dict:
    """Replicas, batch per replica and TTFT tails of the deployment around the replica point ``c``.

    ``concurrency`` is the in-flight sequences of the whole deployment: spread over the replicas
    (batch = ceil(concurrency / replicas)). Pinned chips: every replica of the pinned chips. Else the
    fewest replicas with a stable queue that meet ``ttft_slo_ms`` at ``ttft_slo_percentile``
    (searched up to 4x the fewest + 8)."""
    I, O = _need_lengths(w)
    if pinned:
        r = np.array([int(pinned // c["layout_chips"])], dtype=float)
    else:
        r0 = _min_replicas(w, c, O)
        r = np.arange(r0, 4 * r0 + 9, dtype=float) if (w.requests_per_s and w.ttft_slo_ms) else np.array([r0], dtype=float)
    b = float(c["batch"])
    tails = ttft_tails(w, c["ttft_s"], c["tpot_s"], b, r)
    ok = np.ones(r.shape, dtype=bool) if w.ttft_slo_ms is None else np.asarray(tails["slo"]) * 1e3 <= w.ttft_slo_ms
    j = int(np.flatnonzero(ok)[0]) if ok.any() else 0
    n = int(r[j])
    in_flight = min(float(w.concurrency), n * b) if w.concurrency is not None else n * b
    return {"replicas": n, "chips": n * c["layout_chips"], "ttft_p50_s": float(np.atleast_1d(tails["p50"])[j]),
            "ttft_p99_s": float(np.atleast_1d(tails["p99"])[j]),
            "ttft_slo_s": float(np.atleast_1d(tails["slo"])[j]), "meets_ttft_tail": bool(ok[j]),
            "total_thr": c["thr"] * in_flight / b}


def _generic_serving(eff: Efficiency, p: Profile, acc, w: Workload, pinned: int | None) -> dict:
    """Non-transformer model: samples/s per chip = min(peak·eff / FLOPs per sample, bandwidth·eff / bytes
    per sample) (roofline), reported in ``output_tokens_per_s`` (samples/s) and ``ttft_ms`` (latency
    of one sample)."""
    if p.infer_flops_per_sample is None:
        return {"reason": "workload.generic.infer_flops_per_sample is needed for an inference estimate"}
    cprec = terms.compute_precision(w.precision)
    e = compute_efficiency(eff, acc, cprec, "prefill", p)
    t = float(roofline_time_s(p.infer_flops_per_sample, p.bytes_per_sample or 0.0, peak(acc, cprec) * e,
                              float(acc["memory_bytes_per_s"]) * eff.get("decode_memory_efficiency", scope_of(eff, acc))))
    per_chip = 1.0 / t
    n = pinned or 1
    replicas = n if pinned else (max(1, math.ceil(w.requests_per_s / per_chip)) if w.requests_per_s else 1)
    fits = weight_bytes(p, w.precision) <= float(acc["memory_bytes"])
    return {"fits": fits, "chips": replicas, "tp": 1, "replicas": replicas, "ttft_ms": t * 1e3,
            "output_tokens_per_s": per_chip * replicas, "reason": "" if fits else "weights do not fit one chip"}


def _no_fit(p: Profile, acc, w: Workload, headroom: float, pinned, refused: list) -> dict:
    if refused:
        return {"fits": False, "chips": refused[0].get("chips"), "reason": refused[0]["reason"]}
    wb = weight_bytes(p, w.precision)
    need = wb / (float(acc["memory_bytes"]) * (1.0 - headroom))
    where = f"the pinned {pinned} chips" if pinned else "any layout tried"
    return {"fits": False, "chips": int(math.ceil(need)),
            "reason": (f"weights ({wb / 1e9:.0f} GB) and one sequence's KV cache do not fit {where}; needs at "
                       f"least {math.ceil(need)} chips")}


def estimate_serving(p: Profile, acc, w: Workload, headroom: float, pinned: int | None = None,
                     max_chips: int | None = None, eff: Efficiency | None = None, parallelism=None,
                     net_bytes_per_s: float | None = None) -> dict:
    """Serving on one accelerator type: TTFT (unloaded, and its P50/P99 under load), TPOT, output
    tokens/s of the whole deployment, the largest batch that fits memory, replicas (model copies) and
    the replica layout (``tp``, ``pp``, ``ep``), as the figures of a comparison row
    (``terms.ESTIMATE_COLUMNS``).

    For each layout of ``serving_layouts`` the replica runs at ``choose_batch`` and ``deployment``
    sizes the replicas; the layout with the fewest chips wins (ties: the lower TPOT). With ``pinned``
    chips the deployment uses exactly those chips (the highest throughput wins). Without
    concurrency and latency targets this is the best throughput that fits memory. ``net_bytes_per_s``
    replaces the accelerator's network between nodes (an offer's own network)."""
    eff = default(eff)
    if p.generic:
        return _generic_serving(eff, p, acc, w, pinned)
    best, refused = None, []
    for lay in serving_layouts(p, acc, w, headroom, pinned, parallelism, net_bytes_per_s):
        c = choose_batch(eff, p, acc, w, lay.tp, headroom, lay, pinned)
        if c is None:
            continue
        if not c["fits"]:
            refused.append(c)
            continue
        c.update(deployment(w, c, pinned))
        c["meets"] = c["meets"] and c["meets_ttft_tail"]
        key = (not c["meets"], c["chips"], c["tpot_s"]) if not pinned else (not c["meets"], -c["total_thr"])
        if best is None or key < best[0]:
            best = (key, c)
    if best is None:
        return _no_fit(p, acc, w, headroom, pinned, refused)
    return _serving_row(eff, p, acc, w, best[1], max_chips)


def _serving_row(eff: Efficiency, p: Profile, acc, w: Workload, c: dict, max_chips: int | None) -> dict:
    """The comparison figures of the chosen deployment ``c``, with P10/P90 bands."""
    fam = scope_of(eff, acc)
    I, O = _need_lengths(w)
    lay = Layout(c["tp"], c["pp"], c["ep"])
    out = {"fits": True, "chips": c["chips"], "tp": c["tp"], "pp": c["pp"], "ep": c["ep"], "replicas": c["replicas"],
           "batch": c["batch"], "max_batch": c["max_batch"], "meets_slo": c["meets"], "ttft_ms": c["ttft_s"] * 1e3,
           "ttft_ms_p50": c["ttft_p50_s"] * 1e3, "ttft_ms_p99": c["ttft_p99_s"] * 1e3,
           "ttft_ms_at_slo_percentile": c["ttft_slo_s"] * 1e3,
           "tpot_ms": c["tpot_s"] * 1e3, "output_tokens_per_s": c["total_thr"], "reason": "",
           "memory_per_chip_bytes": (stored_weight_bytes(p, w.precision, lay) + c["batch"] * (I + O)
                                     * kv_cache_bytes_per_token(p, w.kv_precision)) / lay.chips,
           "calibrated": eff.is_calibrated("decode_memory_efficiency", fam)}
    for key, metric in (("output_tokens_per_s", "output_tokens_per_s_per_chip"), ("tpot_ms", "tpot_ms"),
                        ("ttft_ms", "ttft_ms")):
        lo, hi = band(eff, metric, fam)
        out[key + "_low"], out[key + "_high"] = out[key] * lo, out[key] * hi
    if not c["meets"]:
        out["reason"] = "misses the latency targets at every batch size (estimated at the largest batch that fits)"
        if not c["meets_ttft_tail"]:
            out["reason"] = (f"misses ttft_slo_ms at P{_slo_percentile(w) * 100:g} under the request rate "
                             f"(P99 {out['ttft_ms_p99']:,.0f} ms)")
    if max_chips and c["chips"] > max_chips:
        out["reason"] = (out["reason"] + "; " if out["reason"] else "") + f"needs {c['chips']} chips > max_chips {max_chips}"
    return out


def tp_curve(p: Profile, acc, w: Workload, tp_values=None, efficiency: Efficiency | None = None, *,
             memory_headroom: float = 0.1, batches=TP_BATCHES, pinned: int | None = None, parallelism=None,
             net_bytes_per_s: float | None = None) -> pd.DataFrame:
    """Throughput and latency of one model replica against its layout (``serving_layouts``, or the
    single-node ``tp_values``) and decode batch, with the operating point of each layout marked
    ``chosen``: exactly the point ``estimate_serving`` evaluates for it (``choose_batch``), so that
    the scaling tab and the decision show one number. Columns: accelerator, tp, pp, ep, batch,
    memory_per_chip_bytes, fits, ttft_ms, tpot_ms, decode_compute_ms, decode_memory_ms,
    decode_comm_ms, output_tokens_per_s, output_tokens_per_s_per_chip, meets_tpot_slo,
    meets_ttft_slo, meets_slo, chosen."""
    if p.generic:
        raise InputError("workload: the tensor-parallel curve needs a transformer shape (workload.model or "
                         "workload.architecture)")
    eff = default(efficiency)
    I, O = _need_lengths(w)
    if tp_values is None:
        layouts = serving_layouts(p, acc, w, memory_headroom, pinned, parallelism, net_bytes_per_s)
    else:
        bw, lat = _net(acc, net_bytes_per_s)
        layouts = [Layout(int(t), 1, 1, bw, lat) for t in sorted({int(t) for t in tp_values})]
    frames = [_curve_rows(eff, p, acc, w, lay, memory_headroom, batches, pinned, I, O) for lay in layouts]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(df):
        df["meets_tpot_slo"] = True if w.tpot_slo_ms is None else df["tpot_ms"] <= w.tpot_slo_ms
        df["meets_ttft_slo"] = True if w.ttft_slo_ms is None else df["ttft_ms"] <= w.ttft_slo_ms
        df["meets_slo"] = df["meets_tpot_slo"] & df["meets_ttft_slo"]
    return df


def _curve_rows(eff, p, acc, w, lay: Layout, headroom, batches, pinned, I, O) -> pd.DataFrame:
    cprec = terms.compute_precision(w.precision)
    chosen = choose_batch(eff, p, acc, w, lay.tp, headroom, lay, pinned)
    chosen = chosen if chosen and chosen["fits"] else None
    bs = np.array(sorted(set(batches) | ({chosen["batch"]} if chosen else set())), dtype=float)
    pt = serving_point(eff, p, acc, bs, I, O, lay.tp, cprec, w.precision, w.kv_precision, layout=lay)
    mb = float(max_batch_fit(p, acc, lay.tp, I + O, w.precision, w.kv_precision, headroom, lay))
    kv = bs * (I + O) * kv_cache_bytes_per_token(p, w.kv_precision)
    return pd.DataFrame({
        "accelerator": acc["accelerator"] if "accelerator" in acc else acc.name, "tp": lay.tp, "pp": lay.pp,
        "ep": lay.ep, "batch": bs.astype(int),
        "memory_per_chip_bytes": (stored_weight_bytes(p, w.precision, lay) + kv) / lay.chips,
        "fits": bs <= mb, "ttft_ms": pt["ttft_s"] * 1e3, "tpot_ms": pt["tpot_s"] * 1e3,
        "decode_compute_ms": pt["decode_compute_s"] * 1e3, "decode_memory_ms": pt["decode_memory_s"] * 1e3,
        "decode_comm_ms": pt["decode_comm_s"] * 1e3, "output_tokens_per_s": pt["output_tokens_per_s"],
        "output_tokens_per_s_per_chip": pt["output_tokens_per_s"] / lay.chips,
        "chosen": (bs == chosen["batch"]) if chosen else False})
