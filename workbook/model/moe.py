"""Mixture-of-experts terms of the training step: capacity factor, the routed experts' grouped
matmuls, the token dispatcher's permutation and the expert-parallel all-to-all.

``model.training`` calls one function of this module per term (``expert_extra_flops_per_token``,
``permute_s``, ``expert_parallel_comm_s``, ``host_s``) and otherwise knows nothing of experts beyond
the weights it places on chips; ``band_scope`` picks the MoE uncertainty band and ``training_band``
a training estimate's band (freely searched or pinned layout, dense or MoE). Every function
returns 0 (or 1, for factors) for a dense model.

Sources: Lepikhin et al. 2020 "GShard" (expert capacity, all-to-all dispatch and combine);
Megatron-Core MoE (NVIDIA/Megatron-LM, ``megatron/core/transformer/moe``: the token dispatcher's
permutation and the alltoall dispatcher); "How to Scale Your Model" (scaling-book) ch. 12 (all-to-all
inside a node and across nodes).
"""
from __future__ import annotations

import math

import numpy as np

from .. import terms
from ..scenario import Parallelism, Workload
from . import comm
from .efficiency import FREE_METRIC, Efficiency, band, width_factor, width_scale
from .profile import Profile

ACTIVATION_BYTES = 2.0  # 16-bit activations exchanged by the dispatcher (Megatron-Core's alltoall dispatcher sends bf16)


def moe_capacity_factor(w: Workload) -> float:
    """Tokens each expert computes and receives over its even share of the routed tokens: the
    scenario's ``moe_capacity_factor`` with token dropping (capacity-padded experts, GShard,
    Lepikhin et al. 2020 §2.2), 1.0 for dropless routing with balanced experts (the published
    Megatron-Bridge MoE benchmarks force-balance the routing and drop no token)."""
    return float(w.moe_capacity_factor or 1.0)


def expert_width_ratio(p: Profile, eff: Efficiency, acc, precision: str) -> float:
    """Speed of the routed experts' grouped matmuls relative to the layer's other matmuls:
    width_factor(f) / width_factor(h) with f the expert's ``moe_ffn_hidden``. The element-wise work
    around an expert (its gated activation over f, the permuted copies of the token over h) per
    matmul FLOP grows like 1/f where a dense layer's grows like 1/h (``efficiency.width_factor``),
    so fine-grained experts (Qwen3-30B-A3B: f = 768 at h = 2048) lose more of the chip than the
    layer's other matmuls. At most 1: an expert wider than the model (Mixtral: f = 14,336 at
    h = 4,096) is not taken to outrun the layer's dense matmuls, since a grouped matmul splits the
    tokens over the experts. 1 for dense models and a fixed efficiency."""
    if not p.is_moe or eff.constant is not None:
        return 1.0
    h0 = width_scale(eff, acc, precision)
    return float(min(1.0, width_factor(p.moe_ffn_hidden, h0) / width_factor(p.hidden, h0)))


def moe_permute_bytes_per_token(p: Profile) -> float:
    """HBM bytes per token, MoE layer and pass (forward, backward, recomputed forward) of the token
    dispatcher's permutation: each pass permutes the token's ``experts_per_token`` copies into
    expert order and un-permutes the outputs, a read and a write of k·h 16-bit values each
    (Megatron-Core ``moe_utils.permute``/``unpermute``, NVIDIA/Megatron-LM @e61c384
    megatron/core/transformer/moe/moe_utils.py). 0 for dense models."""
    return 2.0 * 2.0 * p.experts_per_token * p.hidden * ACTIVATION_BYTES if p.is_moe else 0.0


def expert_extra_flops_per_token(p: Profile, w: Workload, expert_layer_params: float, eff: Efficiency, acc,
                                 fwd_share: float) -> float:
    """FLOPs per token and layer to add to the layer's count so that, run at the layer's rate, they
    take as long as the routed experts' extra time: the experts' FLOPs (2·k/E of the layer's expert
    weights per token forward, the workload's forward share giving the backward) times
    (``moe_capacity_factor`` / ``expert_width_ratio`` − 1). 0 for dense models."""
    if not p.is_moe:
        return 0.0
    expert_flops = 2.0 * expert_layer_params * p.experts_per_token / p.experts / fwd_share
    expert_time = moe_capacity_factor(w) / expert_width_ratio(p, eff, acc, w.precision)  # per FLOP, vs the rest
    return expert_flops * (expert_time - 1.0)


def permute_s(p: Profile, layers, tokens_per_chip, acc):
    """Seconds of one pass (forward, backward or recomputed forward) of the token permutation over
    ``layers`` MoE layers: ``moe_permute_bytes_per_token`` at the datasheet HBM bandwidth."""
    return layers * moe_permute_bytes_per_token(p) * tokens_per_chip / float(acc["memory_bytes_per_s"])


def expert_parallel_comm_s(p: Profile, w: Workload, g: dict, layers, tokens_per_chip, topo: comm.Topology):
    """Seconds per micro-batch of the expert-parallel all-to-alls: dispatch and combine, forward and
    backward (and the recomputed forward under full recomputation), each sending the chip's
    tokens' k copies of h 16-bit values, padded by the capacity factor (GShard, Lepikhin et al. 2020
    §2.2), over the EP group (ranks ``tp·cp`` apart) on the topology (``comm.collective_s``): the
    members inside the fast domain over its links, the rest over the network per chip, whichever is
    slower (scaling-book ch. 12). Priced at the link rates: dispatch and combine kernels reach them
    (DeepEP on H800: 153 of ~160 GB/s over NVLink in a node, 43-58 GB/s per GPU over 400 Gb/s
    InfiniBand across nodes; deepseek-ai/DeepEP README, V1 "Normal kernels" table, docs/legacy.md
    since V2 @0297fc8, read 2026-12-01). A top-k router with
    k = ``experts_per_token`` sends k copies (a token routed to two experts on one chip is counted
    twice: an upper bound for dispatchers that deduplicate them)."""
    if not p.is_moe:
        return np.zeros_like(g["tp"])
    n_ep = np.where(g["full"], 6.0, 4.0) * layers  # dispatch + combine, forward and backward
    a2a_bytes = tokens_per_chip * p.experts_per_token * float(p.hidden) * ACTIVATION_BYTES * moe_capacity_factor(w)
    return comm.collective_s("all_to_all", n_ep * a2a_bytes, g["ep"], g["tp"] * g["cp"], topo, calls=n_ep)


def host_s(p: Profile, g: dict, layers, eff: Efficiency, acc):
    """Seconds per micro-batch that the chip waits on its host in the MoE layers: ``layers`` MoE
    layers x passes (forward, backward, and the recomputed forward under full recomputation) x
    ``moe_host_s_per_layer`` (data/efficiency.csv, per platform; 0 where none is fitted).

    Dropless routing sizes every all-to-all and grouped matmul from the token counts of the router,
    so Megatron-Core's alltoall dispatcher copies them to the host and synchronises the stream in
    every MoE layer (NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py,
    ``MoEAlltoAllTokenDispatcher``: "A cuda stream synchronization is needed ... because there are
    several non-blocking DtoH data transfers"); after the sync the GPU runs only as fast as the host
    launches the layer's remaining kernels (one per local expert and stage of the grouped MLP),
    which NVIDIA's MoE report names as the host-boundedness of fine-grained MoE ("Scalable Training
    of Mixture-of-Experts Models with Megatron Core", arXiv 2603.07685, §1: "many kernel launches").
    The published runs show it directly: Qwen3-30B-A3B on 16 H100 takes 0.78 s per micro-batch and
    stage at 2 sequences and 0.80 s at 1 (Megatron-Bridge 25.11 and 26.02), a time that does not
    scale with the tokens. No source gives the time per layer, so it is fitted on the GPU MoE
    runs (``calibrate.fit``). XLA (TPU) compiles static shapes and has no such sync: 0 there."""
    if not p.is_moe or eff.constant is not None:
        return np.zeros_like(g["tp"])
    return host_passes(layers, g["full"]) * host_s_per_layer(eff, acc)


def host_passes(layers, full):
    """MoE layer passes per micro-batch that wait on the host: forward and backward of each layer,
    plus the recomputed forward under full recomputation (``full``)."""
    return np.asarray(layers, dtype=float) * (2.0 + np.asarray(full, dtype=float))


def host_s_per_layer(eff: Efficiency, acc) -> float:
    """``moe_host_s_per_layer`` of the accelerator's platform, else of its kind (``gpu``: the median
    over the GPU platforms' runs), else 0 (TPUs, Trainium: compiled static shapes, no host sync)."""
    t = eff.table
    return float(t.get(("moe_host_s_per_layer", str(acc["platform"])), t.get(("moe_host_s_per_layer", str(acc["kind"])), 0.0)))


BAND_SCOPE = "moe"


def band_scope(p: Profile, family: str, eff: Efficiency, metric: str = "mfu") -> str:
    """Scope of a training estimate's MFU band (``efficiency.band``; ``metric`` mfu, or mfu_free for a
    freely searched layout): ``moe`` for a mixture of experts once the fit has a band of MoE runs
    (``calibrate.fit``: the cross-validated residuals of every MoE fit run, whose errors are larger
    than dense runs' and would otherwise widen the dense bands of their families), else the family's."""
    return BAND_SCOPE if p.is_moe and (f"band_p10_{metric}", BAND_SCOPE) in eff.table else family


def training_band(p: Profile, family: str, eff: Efficiency, par: Parallelism | None = None) -> tuple[float, float]:
    """P10 and P90 of observed/predicted MFU for a transformer training estimate on ``family``
    (``efficiency.band``): a layout searched freely (``par`` pins none of ``terms.LAYOUT_KEYS``, as
    every ``estimate`` without ``cluster.parallelism``) gets the band of the calibration runs searched
    the same way (``mfu_free``: ``calibrate.bands.conformal_band`` of ``calibrate.layouts.free_prediction``,
    off-centre where the search is biased); a layout with any dimension pinned the band of the runs
    predicted with their published layout pinned (``mfu``); the pinned band where the fit has no free
    one (an older data/efficiency.csv)."""
    if par is None or all(getattr(par, k, None) is None for k in terms.LAYOUT_KEYS):
        lo_hi = band(eff, FREE_METRIC, band_scope(p, family, eff, FREE_METRIC))
        if not math.isnan(lo_hi[0]):
            return lo_hi
    return band(eff, "mfu", band_scope(p, family, eff))
