"""One model replica's speed: the decode step, prefill, the KV-cache budget and the serving point
of a replica layout (tensor, pipeline and expert parallelism), with the calibrated ``Efficiency``.

- Decode streams weights and KV cache from HBM at ``decode_memory_efficiency[family]`` of the
  datasheet bandwidth; tensor parallelism adds two all-reduces per layer (Megatron-LM, Shoeybi et al.
  2019), each 2·log2(ranks) latency steps of ``tp_collective_latency_s[family]`` + bytes / link
  bandwidth (ranks: chips, or NeuronCores on AWS Neuron); continuous batching carries prompts in
  chunks of whole prompts inside decode steps of at most ``STEP_TOKENS`` tokens (Agrawal et al.
  2024, Sarathi-Serve), their matmuls at the prefill's ceiling.
- A decode step's weight matmuls take the larger of their weight reads and their FLOPs, its
  attention the larger of its KV-cache reads and its FLOPs, one after the other (roofline: Williams
  et al. 2009, per operator as in "How to Scale Your Model" ch. 7 "Inference"); a prefill the
  larger of its FLOPs and one read of the weights.
- A replica's KV-cache budget is tp·memory·(1 − headroom) − weights (vLLM's
  ``gpu_memory_utilization`` = 1 − headroom).

``model.serving`` sizes deployments from these points (and re-exports them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import comm
from .efficiency import Efficiency, compute_efficiency, peak, scope_of
from .profile import (Profile, attention_flops_per_token, bytes_per_value, decode_weight_bytes_read, kv_cache_bytes_per_token,
                      prefill_flops_per_token, weight_bytes)

ACTIVATION_BYTES = 2.0  # 16-bit activations in the tensor-parallel all-reduces

# Tensor-parallel ranks per chip where the unit of tensor parallelism is smaller than a chip: AWS
# Neuron shards a model over NeuronCores (its ``tp_degree``), 2 NeuronCore-v2 per Inferentia2 and per
# Trainium1 chip, and on Trainium2 4 logical NeuronCores per chip (8 physical NeuronCore-v3 grouped
# in pairs at the default LNC=2). Sources (read 2026-12-01): awsdocs-neuron.readthedocs-hosted.com
# .../arch/neuron-hardware/inferentia2.html ("each with two NeuronCore-v2 cores"), .../trainium.html
# ("each Trainium include 2 x NeuronCore-v2"), .../trainium2.rst ("eight NeuronCore-V3 cores") and
# .../neuron-features/logical-neuroncore-config.html; the Trn2 runs state "TP=64 logical cores
# (LNC=2) = 16 chips". Trainium3 is left at one rank per chip (its default LNC was not read).
TP_RANKS_PER_CHIP = {"aws-inferentia2": 2, "aws-trainium1": 2, "aws-trainium2": 4}


def tp_ranks_per_chip(acc) -> int:
    """Tensor-parallel ranks on one chip (``TP_RANKS_PER_CHIP``; 1 for GPUs and TPUs): a Neuron
    replica of ``tp`` chips runs at TP degree tp · this, in NeuronCores."""
    return int(TP_RANKS_PER_CHIP.get(str(acc.get("family", "")), 1))


def kv_replicas(p: Profile, acc, tp):
    """Copies of each KV head a tensor-parallel group keeps: max(1, ranks / kv_heads), ranks = tp chips
    · ``tp_ranks_per_chip``. With fewer KV heads than ranks (GQA/MQA) every rank still holds the KV
    head its query heads use, so each is replicated ranks/kv_heads times (vLLM's QKVParallelLinear:
    ``num_kv_head_replicas = tp_size / total_num_kv_heads``, vllm-project/vllm
    vllm/model_executor/layers/linear.py; Neuron's GQA ``REPLICATE_TO_TP_DEGREE``,
    aws-neuron/neuronx-distributed modules/attention/gqa.py): the cache that each step reads and that
    memory holds grows by that factor. 1 for multi-head latent attention (its latent is not per head)."""
    ranks = np.asarray(tp, dtype=float) * tp_ranks_per_chip(acc)
    if p.kv_cache_dim != 2 * p.kv_heads * p.head_dim or p.kv_heads <= 0:
        return 1.0 + 0.0 * ranks
    return np.maximum(1.0, ranks / p.kv_heads)


def kv_bytes_per_token_held(p: Profile, acc, tp, kv_precision: str):
    """KV-cache bytes one token of one sequence costs a tensor-parallel group of ``tp`` chips
    (``kv_cache_bytes_per_token`` · ``kv_replicas``)."""
    return kv_cache_bytes_per_token(p, kv_precision) * kv_replicas(p, acc, tp)


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


def collective_steps(acc, chips, kind: str = "all-reduce"):
    """Latency steps of one collective over the tensor-parallel ranks of ``chips`` chips (ranks =
    chips · ``tp_ranks_per_chip``: NeuronCores on Neuron): 2·log2(ranks) for an all-reduce (recursive
    halving reduce-scatter then recursive doubling all-gather, Rabenseifner's algorithm), log2(ranks)
    for an all-to-all (Bruck's algorithm), the short-message choices of Thakur, Rabenseifner & Gropp
    2005 ("Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1), §3-4);
    0 for one rank. Each step costs ``tp_collective_latency_s``."""
    ranks = np.maximum(np.asarray(chips, dtype=float) * tp_ranks_per_chip(acc), 1.0)
    return (2.0 if kind == "all-reduce" else 1.0) * np.log2(ranks)


def tp_allreduce_s(p: Profile, acc, tokens, tp, latency_s):
    """Time of tensor parallelism's two all-reduces per layer over ``tokens`` activations (Megatron-LM,
    Shoeybi et al. 2019): 2·L·(steps · latency + 2·(tp−1)/tp · tokens·h·2 bytes / link bandwidth),
    the ring all-reduce volume of 'How to Scale Your Model' ch. 3 and ``collective_steps`` latency
    steps of ``latency_s`` each. Zero for tp = 1; infinite over a link with no published bandwidth."""
    tp = np.asarray(tp, dtype=float)
    link = float(acc["intra_node_bytes_per_s"]) if not pd.isna(acc["intra_node_bytes_per_s"]) else math.nan
    data = 2.0 * (tp - 1.0) / tp * np.asarray(tokens, dtype=float) * p.hidden * ACTIVATION_BYTES
    lat = collective_steps(acc, tp) * latency_s
    t = 2.0 * p.layers * (lat + np.where(tp > 1, data / link if link == link else np.inf, 0.0))
    return np.where(tp > 1, t, 0.0)


def _node(acc) -> int:
    return int(acc.get("chips_per_node") or 1)


def _tp_domain(acc) -> int:
    """Chips tensor and expert parallelism may span at the intra-node link (``comm.tp_domain_chips``)."""
    return comm.tp_domain_chips(acc)


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
    over the network when the experts span nodes; latency = ``collective_steps`` (all-to-all) ·
    ``latency_s`` plus the network's own when the experts span nodes. Zero for ep = 1."""
    if lay.ep <= 1:
        return 0.0 * np.asarray(tokens, dtype=float)
    bw = _crossing_bytes_per_s(acc, lay, lay.ep)
    lat = float(collective_steps(acc, lay.ep, "all-to-all")) * latency_s + (lay.net_latency_s if lay.ep > _tp_domain(acc) else 0.0)
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
                      prefill_context=0.0, layout: Layout | None = None, prefill_compute_eff=None) -> dict:
    """The parts of one decode step (one token for each of ``batch`` sequences at ``context`` cached
    tokens) on a tensor-parallel group of ``tp`` chips: ``memory_s`` (active weights once + each
    sequence's KV cache over tp·HBM·mem_eff), ``compute_s`` (FLOPs over tp·peak·efficiency) and
    ``comm_s`` (the TP all-reduces), each split for ``step_s``: ``weight_memory_s`` and
    ``kv_memory_s``, ``linear_compute_s`` (the weight matmuls) and ``attention_compute_s``
    (QKᵀ and AV). ``prefill_tokens`` of other requests' prompts (of ``prefill_context`` tokens) can
    ride along in the same step (chunked prefill, Agrawal et al. 2024 "Sarathi-Serve", OSDI'24): they
    join the step's weight matmuls, whose weights are read once for all its tokens, and run at
    ``prefill_compute_eff`` (the prefill's ceiling: a chunk of thousands of rows is a large matmul;
    default ``compute_eff``), the decode tokens at ``compute_eff``.
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
    bw = float(acc["memory_bytes_per_s"]) * mem_eff
    w_bytes = _split_bytes(p, b + pre, weight_precision, tp, layout)
    kv_bytes = b / groups * np.asarray(context, dtype=float) * kv_bytes_per_token_held(p, acc, tp, kv_precision) / tp
    if compute_eff is None:
        compute_eff = compute_efficiency(eff, acc, precision, "decode", p, tp=tp)
    if prefill_compute_eff is None:
        prefill_compute_eff = compute_eff
    rate = width * peak(acc, precision)
    lin = 2.0 * p.params_matmul_active
    linear_s = b * lin / (rate * compute_eff) + pre * lin / (rate * prefill_compute_eff)
    attn_s = (b * attention_flops_per_token(p, context, causal=False) / (rate * compute_eff)
              + pre * attention_flops_per_token(p, prefill_context, causal=True) / (rate * prefill_compute_eff))
    comm = tp_allreduce_s(p, acc, (b + pre) / groups, tp, latency_s)
    if layout is not None:
        comm = comm + ep_alltoall_s(p, acc, b + pre, layout, latency_s) + pp_handoff_s(p, acc, b + pre, layout)
    return {"memory_s": (w_bytes + kv_bytes) / bw, "compute_s": linear_s + attn_s, "comm_s": comm,
            "weight_memory_s": w_bytes / bw, "kv_memory_s": kv_bytes / bw, "linear_compute_s": linear_s,
            "attention_compute_s": attn_s}


def step_s(parts: dict):
    """Time of one decode step from ``decode_step_parts``: the weight matmuls take the larger of their
    weight reads and their FLOPs, then attention the larger of its KV-cache reads and its FLOPs, then
    the collectives: T = max(weights / BW, linear FLOPs / rate) + max(KV / BW, attention FLOPs / rate)
    + comm ("How to Scale Your Model" ch. 7 "Inference": decode attention reads each sequence's own
    KV cache, memory-bound at any batch, in kernels of its own that do not overlap the weight
    matmuls, which turn compute-bound at a large batch; Sarathi-Serve §2 makes the same split of a
    hybrid batch into linear and attention operators)."""
    return (np.maximum(parts["weight_memory_s"], parts["linear_compute_s"])
            + np.maximum(parts["kv_memory_s"], parts["attention_compute_s"]) + parts["comm_s"])


def decode_step_s(eff: Efficiency, p: Profile, acc, batch, context, tp, precision: str, weight_precision: str,
                  kv_precision: str, **kw):
    """Time of one decode step: ``step_s`` of ``decode_step_parts``."""
    return step_s(decode_step_parts(eff, p, acc, batch, context, tp, precision, weight_precision, kv_precision, **kw))


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
    per_seq = kv_bytes_per_token_held(p, acc, tp, kv_precision) * np.maximum(np.asarray(seq_tokens, dtype=float), 1.0)
    budget = kv_budget_bytes(p, acc, tp, weight_precision, headroom, layout)
    return np.floor(np.maximum(budget, 0.0) / per_seq)


# Tokens one engine step may carry (decode tokens + prompt chunks): TensorRT-LLM's ``max_num_tokens``
# default 8192 (``BuildConfig``, NVIDIA/TensorRT-LLM tensorrt_llm/builder.py @008b2b8, read
# 2026-12-02; its in-flight batching scheduler fills a step's context requests up to that budget:
# TensorRT-LLM docs, "Tuning Max Batch Size and Max Num Tokens") and vLLM's ``max_num_batched_tokens``
# default 8192 (its OpenAI server on GPUs of >= 70 GiB other than A100; 16384 offline there, 2048
# behind the server and 8192 offline on smaller GPUs: vllm/engine/arg_utils.py, EngineArgs batch
# defaults), the per-step token budget of chunked prefill (Sarathi-Serve, Agrawal et al., OSDI'24 §4).
STEP_TOKENS = 8192.0


def _chunked_step(eff, p, acc, micro, I, O, tp, precision, weight_precision, kv_precision, ce_d, ce_p, step_tokens, kw,
                  ctx=None):
    """The mean decode step of continuous batching with chunked prefill (Sarathi-Serve, Agrawal et al.
    OSDI'24): prompts enter as fast as answers finish, P = micro·I/O prompt tokens per step on
    average, but in whole prompts: a step that admits prompts carries c = min(max(P, I),
    step_tokens − micro) of their tokens (at least one prompt, chunked at the step's token budget)
    and a fraction f = P / c of the steps does so (about micro/O answers finish per step: at a small
    batch and long answers one step in many carries a whole prompt). The mean step is
    f·T(micro, c) + (1 − f)·T(micro, 0) (``step_s``: a step with a long chunk is compute-bound, one
    without reads the weights for the decode alone; spreading a prompt thinly over every step would
    hide its FLOPs under the weight reads). Where even every step carrying a full chunk cannot admit
    prompts as fast as answers finish (micro·(1 + I/O) > step_tokens), the engine holds only
    step_tokens / (1 + I/O) sequences in decode. Returns (mean step, parts weighted the same way,
    decode batch). ``ctx``: the decode context (default I + O/2; ``lengths.slot_tokens`` when answer
    lengths vary)."""
    micro = np.minimum(np.asarray(micro, dtype=float), step_tokens / (1.0 + I / O))
    demand = micro * I / O
    chunk = np.maximum(np.minimum(np.maximum(demand, I), step_tokens - micro), 1.0)
    f = np.minimum(demand / chunk, 1.0)
    ctx = I + O / 2.0 if ctx is None else ctx
    args = (eff, p, acc, micro, ctx, tp, precision, weight_precision, kv_precision)
    with_chunk = decode_step_parts(*args, compute_eff=ce_d, prefill_tokens=chunk, prefill_context=I,
                                   prefill_compute_eff=ce_p, **kw)
    plain = decode_step_parts(*args, compute_eff=ce_d, **kw)
    some, not_all, g = f > 0, f < 1, 1.0 - f     # the weights and their masks, made once for every term

    def mix(a, b):  # f·a + (1 − f)·b, a term of weight 0 left out (an unusable link makes it inf)
        return f * np.where(some, a, 0.0) + g * np.where(not_all, b, 0.0)

    t_chunk, t_plain = step_s(with_chunk), step_s(plain)
    return {"mean": mix(t_chunk, t_plain), "parts": {k: mix(with_chunk[k], plain[k]) for k in with_chunk},
            "micro": micro, "t_chunk": t_chunk, "t_plain": t_plain, "f": f}


def prompt_wait_s(f, t_chunk, t_plain, utilization, others=np.inf, prompts_per_step=1.0):
    """Mean wait of a prompt for the steps' prompt budget, by the mean-residual argument of an M/G/1
    queue (Bertsekas & Gallager, "Data Networks", 2nd ed. 1992, §3.5, with vacations §3.5.1):
    W = R + ρ·W, so W = R / (1 − ρ). R is the rest of the step in progress, E[T²] / (2·E[T]) over
    the steps (a fraction ``f`` carry prompt tokens and last ``t_chunk``, the others, decode-only,
    the vacations, ``t_plain``; renewal theory: an arrival more likely falls in a long step), and ρ
    (``utilization``) the share of the budget the prompts use, so the prompts queued ahead
    (λ·W by Little's law) add ρ·W. The population is closed (``others`` sequences, each with at
    most one prompt waiting: the finite-source queue of Kleinrock 1975, "Queueing Systems" vol. 1
    §3.10), so the wait is at most every other prompt ahead, ``prompts_per_step`` to a step, plus the
    step in progress, which bounds it as ρ → 1."""
    f = np.asarray(f, dtype=float)
    tc, tpl = np.asarray(t_chunk, dtype=float), np.asarray(t_plain, dtype=float)
    tc_used = np.where(f > 0, tc, 0.0)   # a term of weight 0 left out (an unusable link makes it inf)
    tpl_used = np.where(f < 1, tpl, 0.0)
    mean = f * tc_used + (1.0 - f) * tpl_used
    rho = np.clip(np.asarray(utilization, dtype=float), 0.0, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        residual = np.where(mean > 0, (f * tc_used ** 2 + (1.0 - f) * tpl_used ** 2) / (2.0 * mean), 0.0)
        open_wait = residual / np.maximum(1.0 - rho, 1e-12)
        n = np.asarray(others, dtype=float)
        ahead = n / np.asarray(prompts_per_step, dtype=float) * tc_used + np.maximum(tc_used, tpl_used)
        bound = np.where(np.isfinite(n), ahead, np.inf)
    return np.minimum(open_wait, bound)


def prompts_per_step(I, free_tokens):
    """Prompts of ``I`` tokens one step's free budget (``free_tokens`` = step_tokens − sequences in
    decode) takes: whole prompts, floor(free / I), as ``_chunked_step`` admits them; a prompt longer
    than the budget takes I / free steps (chunked prefill splits it: Sarathi-Serve §4)."""
    free = np.maximum(np.asarray(free_tokens, dtype=float), 1.0)
    return np.where(I <= free, np.floor(free / max(I, 1.0)), free / max(I, 1.0))


def _loaded_ttft(eff, p, acc, micro, I, O, tp, precision, weight_precision, kv_precision, ce_d, ce_p, step_tokens, kw):
    """Time to first token of a prompt that joins ``micro`` − 1 sequences in decode (continuous
    batching; Orca, Yu et al. OSDI'22: a request enters at the next iteration): the wait for the
    steps' prompt budget (``prompt_wait_s``), then its own prompt in ceil(I / c) steps of c = min(I,
    step_tokens − others) prompt tokens beside the others' decode tokens (``_chunked_step``'s
    steps). 0 wait with no other sequence.

    The other sequences' prompts arrive as fast as their answers finish, λ = others / (O·T̄) (T̄ the
    mean step), and a prompt-carrying step of length T_chunk takes k = ``prompts_per_step`` of them,
    so the budget is busy ρ = λ·T_chunk / k of the time: with 5,000-token prompts and an 8,192-token
    budget one prompt per step (NVIDIA NIM's Llama 3.3 70B on 2 H100 at concurrency 50: ρ ≈ 0.67, a
    wait of 0.43 s beside its own 0.42-s step), with 1,024-token prompts seven. A closed-loop benchmark at concurrency N (NIM's,
    vLLM's ``--max-concurrency``) keeps N requests in flight, so the TTFT it reports holds this wait
    behind the other requests' prompts (Sarathi-Serve, Agrawal et al. OSDI'24 §2-3, and DistServe,
    Zhong et al. OSDI'24 §2.2, name prefill queueing and interference as the bulk of TTFT under
    load)."""
    others = np.maximum(np.asarray(micro, dtype=float) - 1.0, 0.0)
    o = _chunked_step(eff, p, acc, others, I, O, tp, precision, weight_precision, kv_precision, ce_d, ce_p,
                      step_tokens, kw)
    k = prompts_per_step(I, step_tokens - o["micro"])
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(o["micro"] > 0, o["micro"] / (O * o["mean"]) * np.where(o["f"] > 0, o["t_chunk"], 0.0) / k, 0.0)
    wait = np.where(o["micro"] > 0, prompt_wait_s(o["f"], o["t_chunk"], o["t_plain"], rho, o["micro"], k), 0.0)
    c = np.maximum(np.minimum(I, step_tokens - o["micro"]), 1.0)
    own = step_s(decode_step_parts(eff, p, acc, o["micro"], I + O / 2.0, tp, precision, weight_precision, kv_precision,
                                   compute_eff=ce_d, prefill_tokens=c, prefill_context=I, prefill_compute_eff=ce_p,
                                   **kw))
    return wait + np.ceil(I / c) * own


def serving_point(eff: Efficiency, p: Profile, acc, batch, input_tokens, output_tokens, tp, precision,
                  weight_precision, kv_precision, mem_eff=None, latency_s=None, ceiling=None,
                  static: bool = False, layout: Layout | None = None, prefill_ceiling=None,
                  step_tokens: float = STEP_TOKENS, decode_context=None) -> dict:
    """TTFT, TPOT and output tokens/s of one replica serving ``batch`` concurrent requests, with the
    decode step's parts (``decode_memory_s``, ``decode_compute_s``, ``decode_comm_s``).

    Continuous batching with chunked prefill (vLLM, SGLang, TensorRT-LLM; Agrawal et al. 2024): the
    steps carry, on average, batch·I/O prompt tokens of the requests that replace finished ones, in
    chunks of at most ``step_tokens`` tokens per step (``_chunked_step``); TPOT is the mean step at
    the mean context I + O/2, output tokens/s = batch / TPOT, TTFT the rest of the step in progress
    and the prompt's own steps beside the batch's decode (``_loaded_ttft``; waiting for a batch slot
    is ``model.queueing``'s). With pp pipeline stages the batch is pp micro-batches of batch/pp in flight
    together, so TPOT is a micro-batch's trip through every stage and output tokens/s = batch / TPOT.
    ``static`` batching (a batch prefilled together, then decoded: Neuron, benchmark_latency): output
    tokens/s = batch·O / (prefill(batch·I) + O·TPOT), TTFT = prefill(batch·I).
    Arrays broadcast over the inputs; ``mem_eff``, ``latency_s`` and ``ceiling`` override the
    efficiency (the calibration grid), ``prefill_ceiling`` the prefill's alone; ``decode_context``
    replaces the mean context I + O/2 of the continuous-batching decode steps (``model.lengths``:
    the slot context when answer lengths vary)."""
    I = 0.0 if input_tokens is None else float(input_tokens)
    O = 0.0 if output_tokens is None else float(output_tokens)
    b = np.asarray(batch, dtype=float)
    micro = b / (1 if layout is None else layout.pp)
    ce_d = compute_efficiency(eff, acc, precision, "decode", p, tp=tp, ceiling=ceiling)
    ce_p = compute_efficiency(eff, acc, precision, "prefill", p, tp=tp,
                              ceiling=ceiling if prefill_ceiling is None else prefill_ceiling)
    kw = dict(mem_eff=mem_eff, latency_s=latency_s, layout=layout)
    chunked = not (static or I == 0 or O == 0)
    if chunked:
        args = (eff, p, acc, micro, I, O, tp, precision, weight_precision, kv_precision, ce_d, ce_p, step_tokens, kw)
        st = _chunked_step(*args, ctx=decode_context)
        tpot, parts = st["mean"], st["parts"]
        thr = st["micro"] * (1 if layout is None else layout.pp) / tpot
        ttft = _loaded_ttft(*args)
    else:
        parts = decode_step_parts(eff, p, acc, micro, I + O / 2.0, tp, precision, weight_precision, kv_precision,
                                  compute_eff=ce_d, **kw)
        tpot = step_s(parts)
        prefill_batch = prefill_s(eff, p, acc, b * I, I, tp, precision, weight_precision, compute_eff=ce_p, **kw) \
            if I > 0 else 0.0 * tpot
        thr = b * O / (prefill_batch + O * tpot) if O > 0 else b / tpot
    if not chunked:
        ttft = prefill_s(eff, p, acc, (b if static else 1.0) * I, I, tp, precision, weight_precision, compute_eff=ce_p,
                         **kw) if I > 0 else np.zeros_like(tpot)
    ones = np.ones_like(tpot)
    return {"ttft_s": ttft * ones, "tpot_s": tpot, "output_tokens_per_s": thr, "decode_memory_s": parts["memory_s"] * ones,
            "decode_compute_s": parts["compute_s"] * ones, "decode_comm_s": parts["comm_s"] * ones}
