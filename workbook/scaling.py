"""Multi-chip training and serving: memory per chip and step time of parallel configurations, a
vectorised search for the fastest one that fits, scaling curves, and tensor-parallel serving.

A configuration is TP x PP x DP x EP x CP x micro-batch x interleaving x recompute x ZeRO stage on
``chips`` chips. ``search`` builds every configuration as rows of numpy arrays and prices them all
at once (no Python loop per configuration), drops those that do not fit in memory, and sorts the
rest by step time. Ranks are laid out Megatron-style, tensor-parallel innermost, then context,
expert, data and pipeline parallel outermost (``--order tp-cp-ep-dp-pp`` in Megatron-Core), so the
communication model (``workbook.comm``) knows which groups stay inside a fast domain.

The step of the busiest pipeline stage (``step_time_s``) is the sum of
- ``compute_s``: forward and backward model FLOPs of the stage's micro-batches (PaLM's count,
  ``profile.train_flops_per_token``) at the fraction of peak that ``efficiency`` gives
  (``workbook.perf.compute_efficiency`` by default);
- ``recompute_s``: the extra forward of activation recomputation (full: the whole layer; selective:
  the attention core, Korthikanti et al. 2022 §5);
- ``exposed_comm_s``: the part of each communication not hidden behind compute, per ``Overlap``;
- ``bubble_s``: pipeline fill and drain, (pp-1)/v micro-batch times (1F1B with v interleaved stages,
  Narayanan et al. 2021 §2.2: bubble fraction (p-1)/(v·m) of the ideal time);
- ``optimizer_s``: the memory-bound optimizer update of the chip's shard;
- ``sync_s``: waiting for the slowest of the fast domains a step spans (stragglers and jitter at
  each synchronisation), γ·log2(chips / domain chips) of the rest of the step, γ per accelerator
  family from the calibration where the published runs demand one (``workbook.perf.network_loss``;
  zero elsewhere): the expected maximum of m random step times grows like log m (Dean & Barroso
  2013, "The Tail at Scale", CACM 56(2)).

Sources (per formula in the docstrings below): Narayanan et al. 2021 "Efficient Large-Scale
Language Model Training on GPU Clusters Using Megatron-LM" (PTD-P, 1F1B, interleaving, TP
communication); Shoeybi et al. 2019 "Megatron-LM" (2 all-reduces per layer forward, 2 backward);
Korthikanti et al. 2022 "Reducing Activation Recomputation in Large Transformer Models" (sequence
parallelism, activation memory, selective recomputation); Rajbhandari et al. 2020 "ZeRO" (ZeRO
stages 1-3 memory and communication); Liu et al. 2023 "Ring Attention" and Megatron-Core context
parallelism (KV exchange around the CP ring, overlapped with attention); Lepikhin et al. 2020
"GShard" (expert parallelism: all-to-all dispatch and combine); "How to Scale Your Model"
(scaling-book) ch. 5 "Training" and ch. 12 "GPUs".
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from . import catalog, comm
from . import profile as prof
from .errors import InputError
from .profile import Profile
from .scenario import Constraints, Parallelism, Workload

RECOMPUTE = ("none", "selective", "full")
ZERO_STAGES = (0, 1, 2, 3)
INTERLEAVE = (1, 2, 4)  # virtual pipeline stages per chip tried by the search
MICRO_BATCHES = (1, 2, 4, 8, 16, 32, 64)  # micro-batch sizes (sequences) tried by the search
MAX_CP = 32
ACTIVATION_BYTES = 2.0  # 16-bit activations exchanged by TP/CP/EP/PP (Korthikanti et al. 2022 assume 16-bit)

RESULT_COLUMNS = ["tp", "pp", "dp", "ep", "cp", "vpp", "zero", "recompute", "micro_batch", "microbatches",
                  "step_time_s", "compute_s", "exposed_comm_s", "bubble_s", "recompute_s", "optimizer_s", "sync_s",
                  "comm_s", "tp_comm_s", "cp_comm_s", "ep_comm_s", "pp_comm_s", "dp_comm_s",
                  "memory_per_chip_bytes", "fits", "mfu", "tokens_per_s", "tokens_per_s_per_chip",
                  "efficiency", "global_batch_seqs"]


@dataclass(frozen=True)
class Overlap:
    """Fraction of each kind of communication hidden behind compute (0 = fully exposed).

    - ``tp = 0``: Megatron-LM's tensor-parallel all-reduces sit on the critical path between the
      matmuls of a layer (Shoeybi et al. 2019 §3; Narayanan et al. 2021 §3.2). Overlapping them
      needs decomposed "collective matmuls" (Wang et al. 2023, ASPLOS) or async-TP, which a
      scenario may switch on.
    - ``pp = 0``: pipeline point-to-point sends are blocking in 1F1B (Narayanan et al. 2021 §4.1).
    - ``dp = 1``: gradient reduction is bucketed and overlapped with the backward pass (Li et al.
      2020 "PyTorch Distributed", VLDB; Megatron-Core overlap_grad_reduce), the parameter
      all-gather of ZeRO-1/2 with the next forward (overlap_param_gather); only the part longer
      than the window (one micro-batch's backward or forward) is exposed.
    - ``fsdp = 1``: ZeRO-3/FSDP prefetches the next layer's weights during the current layer
      (Zhao et al. 2023 "PyTorch FSDP" §3.3). Checked against the calibration runs pinned to
      ZeRO-3 (llm-foundry MPT, MaxText on TPU v4): any value >= 0.5 prices them the same and a
      fitted fraction is not identified (README, "How good is the performance model?"), so 1 stays.
      The ZeRO-3 runs of Narayanan et al. 2021 Table 2 (GPT-3 175B, 384-1,536 A100s, held out) are
      slower than even fsdp = 0 predicts: their step is flat at ~67 s from 768 to 1,536 GPUs, a
      collective about 3x slower than ``comm.collective_s`` prices, not a missing overlap.
    - ``cp = 1``: ring attention overlaps the KV exchange with the attention blocks (Liu et al. 2023).
    - ``ep = 0``: expert all-to-alls block the MoE layer (Lepikhin et al. 2020); overlapping them
      needs schedules such as DeepSeek-V3's DualPipe.
    """

    tp: float = 0.0
    pp: float = 0.0
    dp: float = 1.0
    fsdp: float = 1.0
    cp: float = 1.0
    ep: float = 0.0

    def __post_init__(self):
        for k, v in asdict(self).items():
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"Overlap.{k}: expected a fraction between 0 and 1, got {v}")


DEFAULT_OVERLAP = Overlap()


# --- formulas (scalars or arrays) ---------------------------------------------------------------

def pipeline_bubble_fraction(pp, microbatches, vpp=1):
    """Bubble time over ideal time for 1F1B: (p-1)/m; interleaved with v stages per chip:
    (p-1)/(v·m) (Narayanan et al. 2021 §2.2.1-2.2.2). As a share of the whole step: (p-1)/(v·m+p-1)."""
    return (np.asarray(pp, dtype=float) - 1.0) / (np.asarray(vpp, dtype=float) * np.asarray(microbatches, dtype=float))


def zero_state_bytes(params, shards, zero, weight_bytes, grad_bytes, optim_bytes, trainable=1.0):
    """Bytes per chip of weights, gradients and optimizer states for ``params`` weights held by the
    chip, sharded ``shards`` ways by ZeRO stage ``zero`` (Rajbhandari et al. 2020 Fig. 1):
    0 = nothing sharded, 1 = optimizer states, 2 = + gradients, 3 = + weights (FSDP).
    Only the ``trainable`` fraction carries gradients and optimizer states (fine-tuning)."""
    P = np.asarray(params, dtype=float)
    D = np.asarray(shards, dtype=float)
    z = np.asarray(zero)
    w = weight_bytes * P * np.where(z >= 3, 1.0 / D, 1.0)
    g = grad_bytes * trainable * P * np.where(z >= 2, 1.0 / D, 1.0)
    o = optim_bytes * trainable * P * np.where(z >= 1, 1.0 / D, 1.0)
    return w + g + o


def state_bytes_per_param(precision: str, optimizer: str) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) bytes per parameter, splitting
    ``profile.training_state_bytes_per_param``: 16-bit weights and gradients in mixed precision
    (fp32 training: 4 + 4), the rest is optimizer state with the fp32 master copy (ZeRO §3.1)."""
    total = prof.training_state_bytes_per_param("fp32" if precision == "fp32" else "bf16", optimizer)
    w = 4.0 if precision == "fp32" else 2.0
    return w, w, total - 2.0 * w


def tp_collectives_per_layer(recompute):
    """Tensor-parallel collectives per transformer layer and micro-batch, in all-reduce
    equivalents of the layer's activations (b·s·h): 2 forward (after attention and after the MLP)
    and 2 backward (Shoeybi et al. 2019 §3); with sequence parallelism each all-reduce becomes a
    reduce-scatter plus an all-gather of the same total volume (Korthikanti et al. 2022 §4.2.2).
    Full recomputation repeats the forward pair."""
    return np.where(np.asarray(recompute) == "full", 6.0, 4.0)


def activation_inflight_factor(pp, microbatches, vpp=1):
    """Micro-batches whose activations the first pipeline stage holds at once: min(m, p) in 1F1B
    (Narayanan et al. 2021 §2.2.1), times (1 + (p-1)/(p·v)) with v interleaved stages (Korthikanti
    et al. 2022 §4.2.3)."""
    pp = np.asarray(pp, dtype=float)
    v = np.asarray(vpp, dtype=float)
    base = np.minimum(np.asarray(microbatches, dtype=float), pp)
    return base * np.where(v > 1, 1.0 + (pp - 1.0) / (pp * v), 1.0)


# --- helpers ------------------------------------------------------------------------------------

def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(math.isqrt(n)) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _default_sync_loss(acc) -> float:
    """γ of the synchronisation term for ``acc`` from the calibrated model (0 without it)."""
    try:
        from .perf import network_loss
    except ImportError:
        return 0.0
    return network_loss(acc)


def _default_efficiency():
    try:
        from .perf import compute_efficiency
    except ImportError as e:
        raise ImportError("scaling needs a matmul efficiency model: pass efficiency=..., or provide "
                          "workbook.perf.compute_efficiency (the performance model)") from e
    return compute_efficiency


def _peak(acc: pd.Series, precision: str) -> float:
    peak = catalog.peak_flops_per_s(acc, precision)
    if peak is None or pd.isna(peak):
        raise InputError(f"data/accelerators.csv: {_acc_name(acc)}: peak_{precision}_flops_per_s is blank: "
                         f"no dense {precision} peak published for this accelerator (workload.precision)")
    return float(peak)


def _acc_name(acc: pd.Series) -> str:
    return acc.name if isinstance(acc.name, str) else str(acc.get("accelerator"))


def _headroom(memory_headroom) -> float:
    return Constraints().min_memory_headroom if memory_headroom is None else float(memory_headroom)


def _check_transformer(p: Profile):
    if p.generic:
        raise InputError("workload: the scaling search needs a transformer shape (workload.model or "
                         "workload.architecture); a generic model has no layers to split")


def _global_batch_seqs(w: Workload) -> int:
    if w.global_batch_tokens is None:
        raise InputError("workload.global_batch_tokens: expected the global batch in tokens for a "
                         "multi-chip training search (e.g. 4.0e+6)")
    return max(1, int(round(w.global_batch_tokens / w.seq_len)))


def _recompute_options(w: Workload, par: Parallelism | None) -> tuple:
    if par is not None and par.recompute is not None:
        return (par.recompute,)
    if w.recompute != "auto":
        return (w.recompute,)
    return RECOMPUTE


def _pin_error(field: str, value, why: str):
    raise InputError(f"cluster.parallelism.{field}: {value} is not possible here: {why}")


# --- the grid -----------------------------------------------------------------------------------

def configurations(p: Profile, chips: int, w: Workload, parallelism: Parallelism | None = None, *,
                   max_tp: int | None = None, max_pp: int | None = None, micro_batches=None, interleave=None,
                   vpp: int | None = None, min_cp_tokens: int | None = None, recompute_choices=None) -> dict:
    """Every candidate configuration for ``chips`` chips as numpy arrays of one length (the grid
    the search prices). Structural rules: tp divides the attention heads (Megatron); cp divides
    the sequence into 2·cp chunks (Megatron-Core load balancing); pp ≤ layers (stages may hold
    unequal layer counts); ep divides the experts and the data-parallel size; each data-parallel
    rank gets at least one sequence; interleaving needs m a multiple of pp (Megatron-LM).

    Limits (``practical_limits`` gives the ones ``estimate`` and the calibration use): ``max_tp``,
    ``max_pp``; ``micro_batches`` and ``interleave`` replace ``MICRO_BATCHES`` and ``INTERLEAVE``;
    ``vpp`` pins the interleaving (a published layout); ``min_cp_tokens``: context parallelism only
    when each rank keeps at least that many tokens of a sequence (a pinned ``cp`` is kept);
    ``recompute_choices`` replaces ``RECOMPUTE`` when neither the workload nor the pins fix it."""
    _check_transformer(p)
    par = parallelism or Parallelism()
    B = _global_batch_seqs(w)
    s = w.seq_len
    tp_opts = [t for t in _divisors(chips) if p.heads % t == 0 and (max_tp is None or t <= max_tp)]
    cp_opts = [1] + [c for c in _divisors(chips) if 1 < c <= MAX_CP and c & (c - 1) == 0 and s % (2 * c) == 0]
    if par.tp is not None:
        if par.tp not in [t for t in _divisors(chips) if p.heads % t == 0]:
            _pin_error("tp", par.tp, f"it must divide {chips} chips and the {p.heads} attention heads")
        tp_opts = [par.tp]
    if par.cp is not None:
        if par.cp not in cp_opts:
            _pin_error("cp", par.cp, f"it must be a power of two dividing {chips} chips with seq_len "
                       f"{s} divisible by 2·cp")
        cp_opts = [par.cp]
    elif min_cp_tokens is not None:
        cp_opts = [c for c in cp_opts if c == 1 or s / c >= min_cp_tokens]
    rows = []
    for tp in tp_opts:
        for cp in cp_opts:
            if chips % (tp * cp):
                continue
            rest = chips // (tp * cp)
            for pp in _divisors(rest):
                if pp > p.layers or (max_pp is not None and pp > max_pp and par.pp is None):
                    continue
                if par.pp is not None and pp != par.pp:
                    continue
                dp = rest // pp
                if par.dp is not None and dp != par.dp:
                    continue
                if dp > B:
                    continue
                eps = [e for e in _divisors(dp) if p.experts % e == 0] if p.is_moe else [1]
                if par.ep is not None:
                    eps = [e for e in eps if e == par.ep]
                for ep in eps:
                    rows.append((tp, cp, pp, dp, ep))
    empty = {k: np.zeros(0, dtype=int) for k in ("tp", "cp", "pp", "dp", "ep", "micro_batch", "vpp", "zero")} | {
        "recompute": np.zeros(0, dtype=object), "microbatches": np.zeros(0, dtype=int)}
    if not rows:
        pins = {k: v for k, v in par.model_dump(exclude_none=True).items() if k in ("tp", "pp", "dp", "cp", "ep")}
        if pins:
            raise InputError(f"cluster.parallelism: {pins} cannot be laid out on {chips} chips "
                             f"(tp·pp·dp·cp must equal the chip count, dp ≤ {B} sequences per batch"
                             + (f", ep must divide dp and the {p.experts} experts" if p.is_moe else "") + ")")
        return empty
    base = np.array(rows, dtype=np.int64)
    mb_grid = MICRO_BATCHES if micro_batches is None else tuple(micro_batches)
    mbs = np.array([par.micro_batch] if par.micro_batch is not None else mb_grid, dtype=np.int64)
    # base x micro-batch
    g = np.repeat(base, len(mbs), axis=0)
    mb = np.tile(mbs, len(base))
    if par.micro_batch is None:  # no micro-batch larger than a data-parallel rank's share of the batch
        keep = mb <= np.ceil(B / g[:, 3])
        g, mb = g[keep], mb[keep]
    m = np.ceil(B / (g[:, 3] * mb)).astype(np.int64)
    # x interleaving
    vs = np.array([vpp] if vpp is not None else (INTERLEAVE if interleave is None else tuple(interleave)), dtype=np.int64)
    g = np.repeat(g, len(vs), axis=0)
    mb = np.repeat(mb, len(vs))
    m = np.repeat(m, len(vs))
    v = np.tile(vs, len(g) // len(vs))
    pp = g[:, 2]
    layers_per_chunk = np.ceil(p.layers / (pp * v))
    keep = (v == 1) | ((pp > 1) & (m % pp == 0) & (layers_per_chunk >= 1) & (pp * v <= p.layers))
    g, mb, m, v = g[keep], mb[keep], m[keep], v[keep]
    # x recompute x ZeRO
    rc_opts = _recompute_options(w, par)
    if recompute_choices is not None and len(rc_opts) > 1:
        rc_opts = tuple(recompute_choices)
    rcs = np.array(rc_opts, dtype=object)
    zs = np.array([par.zero] if par.zero is not None else ZERO_STAGES, dtype=np.int64)
    n_base = len(g)
    reps = len(rcs) * len(zs)
    g = np.repeat(g, reps, axis=0)
    mb, m, v = np.repeat(mb, reps), np.repeat(m, reps), np.repeat(v, reps)
    rc = np.tile(np.repeat(rcs, len(zs)), n_base)
    z = np.tile(np.tile(zs, len(rcs)), n_base)
    keep = (z == 0) | (g[:, 3] * g[:, 1] > 1) | (par.zero is not None)  # ZeRO needs data-parallel replicas
    g, mb, m, v, rc, z = g[keep], mb[keep], m[keep], v[keep], rc[keep], z[keep]
    return {"tp": g[:, 0], "cp": g[:, 1], "pp": g[:, 2], "dp": g[:, 3], "ep": g[:, 4], "micro_batch": mb,
            "microbatches": m, "vpp": v, "recompute": rc, "zero": z}


# Limits of the practical search (``practical_limits``): what ``perf.estimate_training`` and the
# calibration search, so that the calibrated efficiency and the estimates see the same layouts.
PRACTICAL_MICRO_BATCHES = (1, 2, 4, 8)
# Tensor parallelism on a TPU torus: up to 16 chips along ICI, the largest degree in the published
# MaxText configurations (v5e/v5p 128B-1024B scripts: ici_tensor_parallelism=16).
TORUS_MAX_TP = 16
# Context parallelism only when every rank keeps >= 4,096 tokens of a sequence: Megatron-Core uses it
# for long sequences (NeMo/Megatron-Bridge Llama 3.1 405B: CP2 at 8,192 tokens); shorter chunks make
# the ring-attention blocks too small to hide the KV exchange (Liu et al. 2023 §3).
PRACTICAL_MIN_CP_TOKENS = 4096


def practical_limits(acc: pd.Series, topology: comm.Topology | None = None) -> dict:
    """Keyword limits for ``configurations`` that keep the search to layouts people run (and fast
    enough for ``perf.compare`` over the whole catalog): tensor parallelism inside one node of a
    switched or meshed fabric (``chips_per_node``: Megatron-LM keeps TP within an NVLink server,
    Narayanan et al. 2021 §3.3) or up to ``TORUS_MAX_TP`` chips on a TPU torus; micro-batches of
    1, 2, 4 or 8 sequences; context parallelism only for sequences of at least 2 x
    ``PRACTICAL_MIN_CP_TOKENS`` tokens; recomputation none or full (with FlashAttention the attention
    scores are never stored, so selective recomputation, which recomputes exactly them, saves no
    memory in ``profile.activation_bytes_per_token_per_layer`` and only adds time; a workload or pin
    that asks for it still gets it)."""
    node = int(_num(acc.get("chips_per_node"), 1))
    torus = (topology.fabric == "torus") if topology is not None else int(_num(acc.get("torus_dims"), 0)) >= 1
    return {"max_tp": max(node, TORUS_MAX_TP) if torus else node, "micro_batches": PRACTICAL_MICRO_BATCHES,
            "min_cp_tokens": PRACTICAL_MIN_CP_TOKENS, "recompute_choices": ("none", "full")}


# --- pricing the grid ---------------------------------------------------------------------------

def evaluate(profile: Profile, acc: pd.Series, chips: int, workload: Workload, grid: dict, efficiency=None, *,
             topology: comm.Topology | None = None, overlap: Overlap = DEFAULT_OVERLAP,
             memory_headroom: float | None = None, sync_loss: float | None = None) -> pd.DataFrame:
    """Memory per chip, communication, step time, MFU and throughput of every configuration in
    ``grid`` (from ``configurations``), feasible or not. See the module docstring for the terms.
    ``sync_loss`` is γ of ``sync_s`` (default: the calibrated value when ``efficiency`` is the
    calibrated one, i.e. None; 0 with an explicit efficiency)."""
    return pd.DataFrame(_price(profile, acc, chips, workload, grid, efficiency, topology=topology, overlap=overlap,
                               memory_headroom=memory_headroom, sync_loss=sync_loss))


def _price(profile: Profile, acc: pd.Series, chips: int, workload: Workload, grid: dict, efficiency=None, *,
           topology: comm.Topology | None = None, overlap: Overlap = DEFAULT_OVERLAP,
           memory_headroom: float | None = None, sync_loss: float | None = None) -> dict:
    """``evaluate`` as a dict of numpy arrays (the search's fast path)."""
    p, w = profile, workload
    _check_transformer(p)
    if sync_loss is None:
        sync_loss = _default_sync_loss(acc) if efficiency is None else 0.0
    eff_fn = efficiency or _default_efficiency()
    topo = topology or comm.topology(acc, chips)
    peak = _peak(acc, w.precision)
    hbm = float(acc["memory_bytes_per_s"])
    mem_cap = float(acc["memory_bytes"]) * (1.0 - _headroom(memory_headroom))
    B = _global_batch_seqs(w)
    s = float(w.seq_len)
    h, L, V = float(p.hidden), float(p.layers), float(p.vocab)
    e = ACTIVATION_BYTES
    frac = w.trainable_fraction

    tp = grid["tp"].astype(float)
    cp = grid["cp"].astype(float)
    pp = grid["pp"].astype(float)
    dp = grid["dp"].astype(float)
    ep = grid["ep"].astype(float)
    mb = grid["micro_batch"].astype(float)
    m = grid["microbatches"].astype(float)
    v = grid["vpp"].astype(float)
    rc = grid["recompute"]
    z = grid["zero"]
    full = rc == "full"
    sel = rc == "selective"

    # -- model shape per layer and per stage
    tied = math.isclose(p.params_matmul_active, p.params_active)
    head_params = 0.0 if tied else V * h
    body = p.params_total - p.params_embedding - head_params
    dense_layer = (body - p.params_expert) / L
    expert_layer = p.params_expert / L
    L_stage = np.ceil(L / (pp * v)) * v  # layers on the busiest stage
    emb_first = np.where(pp == 1, p.params_embedding + head_params, p.params_embedding)
    emb_last = np.where(pp == 1, p.params_embedding + head_params, p.params_embedding if tied else head_params)
    emb_max = np.maximum(emb_first, emb_last)
    P_n = (L_stage * dense_layer + emb_max) / tp  # non-expert weights on the chip
    P_e = L_stage * expert_layer / (tp * ep)  # expert weights on the chip
    D_n = dp * cp  # data-parallel replicas of non-expert weights (ZeRO shards over DP x CP)
    D_e = dp * cp / ep
    wb, gb, ob = state_bytes_per_param(w.precision, w.optimizer)

    # -- FLOPs and compute time per micro-batch on the busiest stage. FLOPs are counted as PaLM's
    # model FLOPs (full attention), the definition ``efficiency`` is calibrated on (MFU): a causal
    # kernel that skips masked blocks shows up as a higher efficiency, not as fewer FLOPs.
    head_flops = 6.0 * V * h
    layer_flops = (float(prof.train_flops_per_token(p, s)) - head_flops) / L
    attn_layer_fwd = float(prof.attention_flops_per_token(p, s, causal=False)) / L
    tok_chip = mb * s / (tp * cp)  # tokens per micro-batch per chip (sequence-parallel shards)
    eff = np.clip(np.asarray(eff_fn(acc, w.precision, "train", p, tp=grid["tp"], tokens=mb * s / cp), dtype=float)
                  * np.ones_like(tp), 1e-6, 1.0)
    rate = peak * eff
    t_fb = (L_stage * layer_flops + head_flops) * tok_chip / rate
    t_fwd, t_bwd = t_fb / 3.0, 2.0 * t_fb / 3.0
    rc_flops = np.where(full, L_stage * layer_flops / 3.0, np.where(sel, L_stage * attn_layer_fwd, 0.0))
    t_rc = rc_flops * tok_chip / rate
    t_attn = 3.0 * L_stage * attn_layer_fwd * tok_chip / rate  # attention core, forward + backward

    # -- communication per micro-batch
    act = mb * (s / cp) * h * e  # a layer's activations for one micro-batch (before SP scattering)
    n_tp = tp_collectives_per_layer(rc) * L_stage
    tp_mb = comm.collective_s("all_gather", 2.0 * n_tp * act, tp, 1.0, topo, calls=2.0 * n_tp)
    kv_heads_per_chip = np.maximum(1.0, p.kv_heads / tp)
    kv_bytes = mb * s * p.kv_cache_dim * (kv_heads_per_chip / p.kv_heads) * e  # full-sequence K and V per layer
    n_cp = np.where(full, 4.0, 3.0) * L_stage  # forward all-gather; backward all-gather + reduce-scatter
    cp_mb = comm.collective_s("all_gather", n_cp * kv_bytes, cp, tp, topo, calls=n_cp)
    if p.is_moe:
        n_ep = np.where(full, 6.0, 4.0) * L_stage  # dispatch + combine, forward and backward
        a2a_bytes = tok_chip * p.experts_per_token * h * e
        ep_mb = comm.collective_s("all_to_all", n_ep * a2a_bytes, ep, tp * cp, topo, calls=n_ep)
    else:
        ep_mb = np.zeros_like(tp)
    sends = 2.0 * v  # forward activation and backward gradient per (virtual) stage boundary
    pp_mb = np.where(pp > 1, comm.p2p_s(sends * act / tp, tp * cp * dp, topo, calls=sends), 0.0)

    # -- data parallel / ZeRO
    G_n, G_e = gb * frac * P_n, gb * frac * P_e
    W_n, W_e = wb * P_n, wb * P_e
    calls = L_stage  # one bucket per layer
    ar = comm.collective_s("all_reduce", G_n, D_n, tp, topo, calls) + comm.collective_s("all_reduce", G_e, D_e, tp * ep, topo, calls)
    rs = comm.collective_s("reduce_scatter", G_n, D_n, tp, topo, calls) + comm.collective_s("reduce_scatter", G_e, D_e, tp * ep, topo, calls)
    ag = comm.collective_s("all_gather", W_n, D_n, tp, topo, calls) + comm.collective_s("all_gather", W_e, D_e, tp * ep, topo, calls)
    o = overlap
    hidden = lambda t, window, f: np.maximum(0.0, t - f * window)  # noqa: E731
    # ZeRO-2 reduce-scatters every micro-batch; ZeRO-3 also gathers weights forward and backward
    zero_mb = np.where(z == 2, hidden(rs, t_bwd, o.dp),
                       np.where(z == 3, hidden(ag, t_fwd, o.fsdp) + hidden(ag + rs, t_bwd + t_rc, o.fsdp), 0.0))
    dp_step = np.where(z == 0, hidden(ar, t_bwd, o.dp),
                       np.where(z == 1, hidden(rs, t_bwd, o.dp) + hidden(ag, t_fwd, o.dp),
                                np.where(z == 2, hidden(ag, t_fwd, o.dp), 0.0)))
    dp_total = np.where(z == 0, ar, np.where(z == 1, rs + ag, np.where(z == 2, m * rs + ag, m * (2.0 * ag + rs))))

    # -- the step
    exposed_mb = ((1.0 - o.tp) * tp_mb + hidden(cp_mb, t_attn, o.cp) + (1.0 - o.ep) * ep_mb
                  + (1.0 - o.pp) * pp_mb + zero_mb)
    t_mb = t_fwd + t_bwd + t_rc + exposed_mb
    compute_s = m * (t_fwd + t_bwd)
    recompute_s = m * t_rc
    exposed = m * exposed_mb + dp_step
    bubble = (pp - 1.0) / v * t_mb
    opt_params = np.where(z >= 1, P_n / D_n + P_e / D_e, P_n + P_e) * frac
    optimizer_s = 2.0 * (wb + gb + ob) * opt_params / hbm  # read and write every state once (memory-bound)
    step = compute_s + recompute_s + exposed + bubble + optimizer_s
    sync_s = sync_loss * math.log2(max(chips / max(topo.domain_chips, 1), 1.0)) * step
    step = step + sync_s

    # -- memory per chip: first stage (most activations in flight) vs last stage (logits)
    act_tok = {r: float(prof.activation_bytes_per_token_per_layer(p, s, r)) for r in RECOMPUTE}
    stored = np.select([full, sel], [act_tok["full"], act_tok["selective"]], act_tok["none"]) * tok_chip
    working = np.where(full, act_tok["none"] * tok_chip, 0.0)  # the layer being recomputed
    logits = 4.0 * mb * s * V / (tp * cp)  # fp32 logits for the loss (Korthikanti et al. 2022 §4.3)
    state_first = zero_state_bytes((L_stage * dense_layer + emb_first) / tp, D_n, z, wb, gb, ob, frac) \
        + zero_state_bytes(P_e, D_e, z, wb, gb, ob, frac)
    state_last = zero_state_bytes((L_stage * dense_layer + emb_last) / tp, D_n, z, wb, gb, ob, frac) \
        + zero_state_bytes(P_e, D_e, z, wb, gb, ob, frac)
    gathered = np.where(z == 3, 2.0 * wb * (dense_layer + expert_layer / ep) / tp, 0.0)  # current + prefetched layer
    inflight = activation_inflight_factor(pp, m, v)
    mem_first = state_first + gathered + stored * L_stage * inflight + working + np.where(pp == 1, logits, 0.0)
    mem_last = state_last + gathered + stored * L_stage + working + logits
    memory = np.maximum(mem_first, mem_last)

    tokens = B * s
    model_flops = float(prof.train_flops_per_token(p, s, causal=False)) * tokens
    n = len(tp)
    out = {
        "tp": grid["tp"], "pp": grid["pp"], "dp": grid["dp"], "ep": grid["ep"], "cp": grid["cp"],
        "vpp": grid["vpp"], "zero": grid["zero"], "recompute": rc.astype(str), "micro_batch": grid["micro_batch"],
        "microbatches": grid["microbatches"],
        "step_time_s": step, "compute_s": compute_s, "exposed_comm_s": exposed, "bubble_s": bubble,
        "recompute_s": recompute_s, "optimizer_s": optimizer_s, "sync_s": sync_s,
        "comm_s": m * (tp_mb + cp_mb + ep_mb + pp_mb) + dp_total,
        "tp_comm_s": m * tp_mb, "cp_comm_s": m * cp_mb, "ep_comm_s": m * ep_mb, "pp_comm_s": m * pp_mb,
        "dp_comm_s": dp_total, "memory_per_chip_bytes": memory, "fits": memory <= mem_cap,
        "mfu": model_flops / (step * chips * peak), "tokens_per_s": tokens / step,
        "tokens_per_s_per_chip": tokens / step / chips, "efficiency": eff, "global_batch_seqs": np.full(n, B),
    }
    return out


def search(profile: Profile, acc: pd.Series, chips: int, workload: Workload, parallelism: Parallelism | None = None,
           efficiency=None, *, topology: comm.Topology | None = None, overlap: Overlap = DEFAULT_OVERLAP,
           memory_headroom: float | None = None, sync_loss: float | None = None, **limits) -> pd.DataFrame:
    """Every feasible configuration for ``chips`` chips, fastest first.

    ``profile`` is a ``workbook.profile.Profile``; ``acc`` a row of ``catalog.accelerators()``;
    ``workload`` a ``scenario.Workload`` (seq_len, global_batch_tokens, precision, recompute,
    optimizer, trainable_fraction); ``parallelism`` pins dimensions (``cluster.parallelism``);
    ``efficiency(acc, precision, work, profile, tp=..., tokens=...)`` gives the fraction of dense
    peak the matmuls reach (default ``workbook.perf.compute_efficiency``). ``topology`` replaces the
    catalog's interconnect (``comm.topology(acc, chips, ...)``), ``overlap`` the overlap fractions,
    ``memory_headroom`` the share of memory kept free (default: the scenario default
    ``constraints.min_memory_headroom``); ``limits`` (``max_tp``, ``max_pp``, ``micro_batches``,
    ``interleave``, ``vpp``, ``min_cp_tokens``) restrict the grid (``configurations``).

    Columns: tp, pp, dp, ep, cp, vpp, zero, recompute, micro_batch, microbatches, step_time_s,
    compute_s, exposed_comm_s, bubble_s, recompute_s, optimizer_s, sync_s, comm_s (all communication before
    overlap) and its parts tp_comm_s, cp_comm_s, ep_comm_s, pp_comm_s, dp_comm_s,
    memory_per_chip_bytes, fits (always True: configurations that do not fit are dropped), mfu
    (PaLM model FLOPs), tokens_per_s, tokens_per_s_per_chip, efficiency, global_batch_seqs."""
    grid = configurations(profile, chips, workload, parallelism, **limits)
    if len(grid["tp"]) == 0:
        return pd.DataFrame(columns=RESULT_COLUMNS)
    df = evaluate(profile, acc, chips, workload, grid, efficiency, topology=topology, overlap=overlap,
                  memory_headroom=memory_headroom, sync_loss=sync_loss)
    df = df[df["fits"].to_numpy() & np.isfinite(df["step_time_s"].to_numpy())]
    df = df.sort_values(["step_time_s", "memory_per_chip_bytes", "tp", "pp"], kind="stable").reset_index(drop=True)
    return df[RESULT_COLUMNS]


def _py(v):
    return v.item() if hasattr(v, "item") else v


def best_config(profile: Profile, acc: pd.Series, chips: int, workload: Workload, parallelism: Parallelism | None = None,
                efficiency=None, *, topology: comm.Topology | None = None, overlap: Overlap = DEFAULT_OVERLAP,
                memory_headroom: float | None = None, sync_loss: float | None = None, **limits) -> dict | None:
    """The fastest feasible configuration (the first row ``search`` would return, without building
    the table) as a dict of Python scalars with ``chips`` and ``accelerator`` added, or None when
    nothing fits in memory."""
    grid = configurations(profile, chips, workload, parallelism, **limits)
    if len(grid["tp"]) == 0:
        return None
    r = _price(profile, acc, chips, workload, grid, efficiency, topology=topology, overlap=overlap,
               memory_headroom=memory_headroom, sync_loss=sync_loss)
    ok = np.flatnonzero(np.asarray(r["fits"]) & np.isfinite(r["step_time_s"]))
    if len(ok) == 0:
        return None
    order = np.lexsort((r["pp"][ok], r["tp"][ok], r["memory_per_chip_bytes"][ok], r["step_time_s"][ok]))
    i = ok[order[0]]
    out = {k: _py(r[k][i]) for k in RESULT_COLUMNS}
    out["recompute"] = str(out["recompute"])
    out["fits"] = bool(out["fits"])
    out.update(chips=int(chips), accelerator=_acc_name(acc))
    return out


def compute_share(profile: Profile, acc: pd.Series, chips: int, workload: Workload,
                  parallelism: Parallelism | None = None, efficiency=None, **kwargs) -> float | None:
    """``compute_s / step_time_s`` of the best configuration (None when nothing fits): the factor by
    which the scaling model's MFU falls below the matmul efficiency it is given. An efficiency that
    was fitted to published end-to-end MFU already contains the runs' communication and bubbles;
    ``workbook.calibrate.fit_training`` fits it to observed MFU divided by this share (at a fixed
    point, since the share depends on the efficiency) so that they are not counted twice."""
    cfg = best_config(profile, acc, chips, workload, parallelism, efficiency, **kwargs)
    return None if cfg is None else cfg["compute_s"] / cfg["step_time_s"]


# --- scaling curves -----------------------------------------------------------------------------

def scaling_curve(profile: Profile, acc: pd.Series, chip_counts, workload: Workload, efficiency=None, *,
                  comm_share_threshold: float = 0.25, parallelism: Parallelism | None = None,
                  topology_overrides: dict | None = None, overlap: Overlap = DEFAULT_OVERLAP,
                  memory_headroom: float | None = None, **limits) -> pd.DataFrame:
    """The best configuration at each chip count (``limits`` restrict the grid, see
    ``configurations``), with time to train (``workload.tokens`` /
    tokens per second), MFU, scaling efficiency (throughput per chip relative to the smallest
    count that fits) and ``network_bound``: exposed communication above ``comm_share_threshold``
    of the step (the threshold is a reader's choice, not a fact; 0.25 = a quarter of the step).
    Chip counts where nothing fits keep a row with ``fits`` False and blank figures."""
    rows = []
    for n in sorted({int(c) for c in chip_counts}):
        row = {"accelerator": _acc_name(acc), "chips": n, "fits": False, "reason": ""}
        try:
            topo = comm.topology(acc, n, **(topology_overrides or {}))
            cfg = best_config(profile, acc, n, workload, parallelism, efficiency, topology=topo, overlap=overlap,
                              memory_headroom=memory_headroom, **limits)
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
    for c in RESULT_COLUMNS:
        if c not in df.columns:
            df[c] = np.nan
    df["fits"] = df["fits"].astype(bool)
    ok = df["fits"]
    df["time_to_train_s"] = (workload.tokens / df["tokens_per_s"]) if workload.tokens else np.nan
    df["time_to_train_days"] = df["time_to_train_s"] / 86400.0
    df["chip_hours"] = df["time_to_train_s"] * df["chips"] / 3600.0
    first = df[ok].iloc[0] if ok.any() else None
    df["scaling_efficiency"] = (df["tokens_per_s_per_chip"] / first["tokens_per_s_per_chip"]) if first is not None else np.nan
    df["comm_share"] = df["exposed_comm_s"] / df["step_time_s"]
    df["bubble_share"] = df["bubble_s"] / df["step_time_s"]
    df["comm_share_threshold"] = comm_share_threshold
    df["network_bound"] = ok & (df["comm_share"] > comm_share_threshold)
    return df


def default_chip_counts(acc: pd.Series, max_chips: int | None = None, min_chips: int | None = None,
                        profile: Profile | None = None, workload: Workload | None = None) -> list[int]:
    """Powers of two from ``min_chips`` to ``max_chips`` (default 16,384, capped by the catalog's
    ``max_cluster_chips``). Without ``min_chips`` the range starts at one node (``chips_per_node``)
    or, for a training ``workload``, at the first count where the weights, gradients and optimizer
    states fully sharded (``profile.training_state_bytes_per_param``) take at most half of each
    chip's memory, so that the baseline of the scaling efficiency is not a layout forced by memory."""
    lo = int(min_chips or max(1, int(_num(acc.get("chips_per_node"), 1))))
    if min_chips is None and profile is not None and workload is not None and not profile.generic:
        state = float(prof.training_state_bytes_per_param("fp32" if workload.precision == "fp32" else "bf16",
                                                          workload.optimizer)) * profile.params_total
        need = int(2 ** math.ceil(math.log2(max(1.0, state / (0.5 * float(acc["memory_bytes"]))))))
        lo = max(lo, need)
    cap = _num(acc.get("max_cluster_chips"), np.inf)
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


def _num(v, default=np.nan) -> float:
    return default if v is None or pd.isna(v) else float(v)


# --- inference: tensor-parallel serving --------------------------------------------------------

TP_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def inference_tp_curve(profile: Profile, acc: pd.Series, workload: Workload, tp_values=None, efficiency=None, *,
                       topology: comm.Topology | None = None, memory_headroom: float | None = None,
                       batches=TP_BATCHES) -> pd.DataFrame:
    """Throughput and latency of one model replica against tensor-parallel size, over decode batch
    sizes, with the row chosen per tp marked ``chosen``.

    Roofline per step (scaling-book ch. 7 "Inference"): decode reads the weights once per step
    (``profile.decode_weight_bytes_read``) and every sequence's KV cache, and does
    ``profile.decode_flops_per_token`` per sequence; time = max(FLOPs / (peak · efficiency),
    bytes / HBM bandwidth), split over tp chips (KV heads replicate beyond tp = kv_heads). Each
    layer adds 2 tensor-parallel all-reduces of batch·hidden activations (Shoeybi et al. 2019),
    priced by ``workbook.comm`` (latency-bound at small batch). Prefill of one prompt is priced the
    same way. ``chosen``: the scenario's concurrency when given, else the largest batch whose time
    per output token meets ``tpot_slo_ms`` (or the largest that fits)."""
    p, w = profile, workload
    _check_transformer(p)
    if w.input_tokens is None or w.output_tokens is None:
        raise InputError("workload.input_tokens / output_tokens: expected prompt and answer lengths for serving")
    eff_fn = efficiency or _default_efficiency()
    peak = _peak(acc, w.precision)
    hbm = float(acc["memory_bytes_per_s"])
    mem_cap = float(acc["memory_bytes"]) * (1.0 - _headroom(memory_headroom))
    if tp_values is None:  # tensor parallelism inside one fast domain (NVLink node, TPU slice, Neuron instance)
        dom = (topology or comm.topology(acc, None)).domain_chips
        tp_values = [t for t in _divisors(max(dom, 1)) if p.heads % t == 0 and t <= 64]
    tps = np.array(sorted(set(int(t) for t in tp_values)), dtype=float)
    bs = np.array(batches, dtype=float)
    T, Bt = np.meshgrid(tps, bs, indexing="ij")
    T, Bt = T.ravel(), Bt.ravel()
    topo = topology or comm.topology(acc, int(tps.max()))
    ctx_mean = w.input_tokens + w.output_tokens / 2.0
    kv_tok = float(prof.kv_cache_bytes_per_token(p, w.kv_precision))
    kv_split = np.minimum(T, p.kv_heads)
    weights = float(prof.weight_bytes(p, w.precision)) / T
    kv_mem = Bt * (w.input_tokens + w.output_tokens) * kv_tok / kv_split
    memory = weights + kv_mem
    e = ACTIVATION_BYTES
    eff_d = np.clip(np.asarray(eff_fn(acc, w.precision, "decode", p, tp=T.astype(int), tokens=Bt), dtype=float) * np.ones_like(T), 1e-6, 1.0)
    flops_d = Bt * prof.decode_flops_per_token(p, ctx_mean) / T
    bytes_d = prof.decode_weight_bytes_read(p, Bt, w.precision) / T + Bt * ctx_mean * kv_tok / kv_split
    compute_d = flops_d / (peak * eff_d)
    memory_d = bytes_d / hbm
    comm_d = comm.collective_s("all_reduce", 2.0 * p.layers * Bt * p.hidden * e, T, 1.0, topo, calls=2.0 * p.layers)
    tpot = np.maximum(compute_d, memory_d) + comm_d
    n_in = float(w.input_tokens)
    eff_p = np.clip(np.asarray(eff_fn(acc, w.precision, "prefill", p, tp=T.astype(int), tokens=np.full_like(T, n_in)),
                               dtype=float) * np.ones_like(T), 1e-6, 1.0)
    flops_p = n_in * prof.prefill_flops_per_token(p, n_in) / T
    bytes_p = prof.decode_weight_bytes_read(p, n_in, w.precision) / T
    comm_p = comm.collective_s("all_reduce", 2.0 * p.layers * n_in * p.hidden * e, T, 1.0, topo, calls=2.0 * p.layers)
    prefill = np.maximum(flops_p / (peak * eff_p), bytes_p / hbm) + comm_p
    df = pd.DataFrame({
        "accelerator": _acc_name(acc), "tp": T.astype(int), "batch": Bt.astype(int),
        "memory_per_chip_bytes": memory, "fits": memory <= mem_cap,
        "prefill_s": prefill, "tpot_s": tpot, "decode_compute_s": compute_d, "decode_memory_s": memory_d,
        "decode_comm_s": comm_d, "output_tokens_per_s": Bt / tpot, "output_tokens_per_s_per_chip": Bt / tpot / T,
    })
    df["meets_tpot_slo"] = True if w.tpot_slo_ms is None else df["tpot_s"] * 1e3 <= w.tpot_slo_ms
    df["meets_ttft_slo"] = True if w.ttft_slo_ms is None else df["prefill_s"] * 1e3 <= w.ttft_slo_ms
    df["chosen"] = False
    for t, grp in df.groupby("tp"):
        ok = grp[grp["fits"]]
        if w.concurrency is not None:
            ok = ok[ok["batch"] <= w.concurrency]
        good = ok[ok["meets_tpot_slo"]]
        pick = (good if len(good) else ok)
        if len(pick):
            df.loc[pick["batch"].idxmax(), "chosen"] = True
    return df


# --- scenario-level views (notebook 03 and the app) --------------------------------------------

def _candidates(s) -> list[str]:
    if s.cluster is not None and s.cluster.accelerator:
        ids = [s.cluster.accelerator]
        for a in s.candidates.accelerators or []:
            if a not in ids:
                ids.append(a)
        return ids
    return list(s.candidates.accelerators or catalog.accelerators()["accelerator"])


def _usable(acc: pd.Series, precision: str) -> bool:
    peak = catalog.peak_flops_per_s(acc, precision)
    return peak is not None and not pd.isna(peak) and not pd.isna(acc.get("memory_bytes_per_s"))


def scenario_curves(s, chip_counts=None, efficiency=None, accelerators=None) -> pd.DataFrame:
    """For a training scenario: ``scaling_curve`` for every candidate accelerator over ``chip_counts``
    (default: powers of two from one node to ``constraints.max_chips``, else ``cluster.chips``,
    else 16,384). For an inference scenario: ``inference_tp_curve`` per candidate. Accelerators the
    catalog cannot price (no peak for the precision, no network for the chip count) are skipped
    and listed in ``df.attrs['skipped']``. Training searches the practical grid
    (``practical_limits``), the one ``perf.estimate_training`` and the calibration use."""
    p = prof.workload_profile(s.workload)
    frames, skipped = [], []
    par = s.cluster.parallelism if s.cluster is not None else None
    for a in accelerators or _candidates(s):
        acc = catalog.accelerator(a)
        if not _usable(acc, s.workload.precision):
            skipped.append(f"{a}: no {s.workload.precision} peak or memory bandwidth in the catalog")
            continue
        try:
            if s.workload.task == "inference":
                frames.append(inference_tp_curve(p, acc, s.workload, efficiency=efficiency,
                                                 memory_headroom=s.constraints.min_memory_headroom))
            else:
                top = s.constraints.max_chips or (s.cluster.chips if s.cluster and s.cluster.chips else None)
                counts = chip_counts or default_chip_counts(acc, top, profile=p, workload=s.workload)
                frames.append(scaling_curve(p, acc, counts, s.workload, efficiency, parallelism=par,
                                            memory_headroom=s.constraints.min_memory_headroom,
                                            **practical_limits(acc)))
        except InputError as e:
            skipped.append(f"{a}: {e}")
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    df.attrs["task"] = s.workload.task
    df.attrs["skipped"] = skipped
    return df


def scenario_best(s, efficiency=None, chips: int | None = None, accelerator: str | None = None) -> dict | None:
    """The configuration the scenario would run, on ``accelerator`` (default: the cluster's, else the
    fastest of the candidates the catalog can price). Training: the best configuration at ``chips``
    (default ``cluster.chips``, else ``constraints.max_chips``, else 1,024 chips). Inference: of the
    rows ``inference_tp_curve`` chose, the one with the most output tokens/s per chip. Training
    searches the practical grid (``practical_limits``), as ``perf.estimate_training`` does."""
    p = prof.workload_profile(s.workload)
    w = s.workload
    if accelerator is not None:
        names = [accelerator]
    elif s.cluster is not None and s.cluster.accelerator:
        names = [s.cluster.accelerator]
    else:
        names = [a for a in _candidates(s) if _usable(catalog.accelerator(a), w.precision)]
    headroom = s.constraints.min_memory_headroom
    best = None
    for a in names:
        acc = catalog.accelerator(a)
        try:
            if w.task == "inference":
                df = inference_tp_curve(p, acc, w, efficiency=efficiency, memory_headroom=headroom)
                df = df[df["chosen"]]
                if df.empty:
                    continue
                row = df.sort_values("output_tokens_per_s_per_chip", ascending=False).iloc[0]
                cfg = {**{k: _py(v) for k, v in row.to_dict().items()}, "task": "inference"}
                score = cfg["output_tokens_per_s_per_chip"]
            else:
                n = chips or (s.cluster.chips if s.cluster and s.cluster.chips else None) or s.constraints.max_chips or 1024
                par = s.cluster.parallelism if s.cluster is not None else None
                cfg = best_config(p, acc, n, w, par, efficiency, memory_headroom=headroom, **practical_limits(acc))
                if cfg is None:
                    continue
                cfg["task"] = w.task
                cfg["topology"] = comm.topology(acc, n).describe()
                if w.tokens:
                    cfg["time_to_train_days"] = w.tokens / cfg["tokens_per_s"] / 86400.0
                score = cfg["tokens_per_s"]
        except InputError:
            if accelerator is not None or len(names) == 1:
                raise
            continue
        if best is None or score > best[0]:
            best = (score, cfg)
    return None if best is None else best[1]


class Explanation(str):
    """A paragraph that notebooks render as Markdown."""

    def _repr_markdown_(self) -> str:
        return str(self)


def explain(cfg: dict | None) -> Explanation:
    """The chosen configuration in words: what each dimension does and where the step time goes."""
    if cfg is None:
        return Explanation("**No configuration fits in memory** at this chip count: add chips, "
                           "shorten the sequence, or allow more sharding.")
    if cfg.get("task") == "inference":
        return Explanation(
            f"**{cfg['accelerator']}, tensor parallel {cfg['tp']}, batch {cfg['batch']}**: "
            f"{cfg['output_tokens_per_s']:,.0f} output tokens/s per replica "
            f"({cfg['output_tokens_per_s_per_chip']:,.0f} per chip), {cfg['tpot_s'] * 1e3:.1f} ms per output token, "
            f"{cfg['prefill_s'] * 1e3:.0f} ms to prefill one prompt. Decode is "
            f"{'memory-bandwidth' if cfg['decode_memory_s'] >= cfg['decode_compute_s'] else 'compute'}-bound"
            + (f"; the tensor-parallel all-reduces add {cfg['decode_comm_s'] * 1e3:.2f} ms per token." if cfg["tp"] > 1
               else "; one chip per replica, so no tensor-parallel communication."))
    st = cfg["step_time_s"]
    parts = [("compute", cfg["compute_s"]), ("exposed communication", cfg["exposed_comm_s"]),
             ("pipeline bubble", cfg["bubble_s"]), ("recomputation", cfg["recompute_s"]),
             ("optimizer update", cfg["optimizer_s"]), ("synchronisation across domains", cfg.get("sync_s", 0.0))]
    shares = ", ".join(f"{name} {v / st:.0%}" for name, v in parts if v / st >= 0.005)
    dims = []
    if cfg["tp"] > 1:
        dims.append(f"tensor parallel {cfg['tp']} (each layer's matmuls split across {cfg['tp']} chips)")
    if cfg["pp"] > 1:
        dims.append(f"pipeline parallel {cfg['pp']} (layers split into {cfg['pp']} stages"
                    + (f", {cfg['vpp']} interleaved chunks per chip)" if cfg["vpp"] > 1 else ")"))
    if cfg["cp"] > 1:
        dims.append(f"context parallel {cfg['cp']} (each sequence split across {cfg['cp']} chips)")
    if cfg["ep"] > 1:
        dims.append(f"expert parallel {cfg['ep']} (experts spread over {cfg['ep']} chips)")
    zero = {0: "", 1: " with ZeRO-1 (optimizer states sharded)", 2: " with ZeRO-2 (optimizer states and gradients sharded)",
            3: " with ZeRO-3/FSDP (weights sharded too)"}[int(cfg["zero"])]
    dims.append(f"data parallel {cfg['dp']}{zero}")
    rc = {"none": "no activation recomputation", "selective": "selective recomputation (attention core)",
          "full": "full activation recomputation"}[cfg["recompute"]]
    text = (f"**{cfg['accelerator']} x {cfg['chips']:,}: {'; '.join(dims)}; micro-batches of {cfg['micro_batch']} "
            f"sequence(s), {cfg['microbatches']} per step; {rc}.** "
            f"Step {st:.2f} s, {cfg['tokens_per_s']:,.0f} tokens/s, MFU {cfg['mfu']:.0%}, "
            f"{cfg['memory_per_chip_bytes'] / 1e9:.0f} GB per chip. The step splits into {shares}.")
    if "topology" in cfg:
        text += f" Network: {cfg['topology']}."
    if "time_to_train_days" in cfg:
        d = cfg["time_to_train_days"]
        text += (f" Training takes {d:.1f} days at this rate." if d >= 1 else
                 f" Training takes {d * 24:.1f} hours at this rate.")
    return Explanation(text)


def breakdown(df: pd.DataFrame) -> pd.DataFrame:
    """Tidy step components for a stacked bar: one row per (accelerator, chips or tp, component).

    Training rows (from ``scaling_curve``/``search``): compute, exposed communication, pipeline
    bubble, recomputation, optimizer update, in seconds per step. Inference rows (chosen rows of
    ``inference_tp_curve``): decode compute or memory time and TP communication per output token."""
    if df is None or df.empty:
        return pd.DataFrame(columns=["accelerator", "x", "component", "seconds"])
    if "tpot_s" in df.columns:
        d = df[df["chosen"]].copy()
        d["decode (roofline)"] = np.maximum(d["decode_compute_s"], d["decode_memory_s"])
        d["tensor-parallel communication"] = d["decode_comm_s"]
        comps, x = ["decode (roofline)", "tensor-parallel communication"], "tp"
    else:
        d = df[df["fits"].astype(bool)].copy() if "fits" in df else df.copy()
        names = {"compute_s": "compute", "exposed_comm_s": "exposed communication", "bubble_s": "pipeline bubble",
                 "recompute_s": "recomputation", "optimizer_s": "optimizer update",
                 "sync_s": "synchronisation across domains"}
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
    if "tpot_s" in curves.columns:
        d = curves[curves["chosen"]].copy()
        d["memory_per_chip_gb"] = d["memory_per_chip_bytes"] / 1e9
        d["tpot_ms"] = d["tpot_s"] * 1e3
        d["prefill_ms"] = d["prefill_s"] * 1e3
        return d[["accelerator", "tp", "batch", "output_tokens_per_s", "output_tokens_per_s_per_chip", "tpot_ms",
                  "prefill_ms", "memory_per_chip_gb"]].round(2).reset_index(drop=True)
    d = curves.copy()
    fits = d["fits"].astype(bool)
    cell = pd.Series("", index=d.index, dtype=object)
    for i in d.index[fits]:
        r = d.loc[i]
        dims = "·".join(f"{k.upper()}{int(r[k])}" for k in ("tp", "pp", "dp", "cp", "ep") if int(r[k]) > 1) or "1 chip"
        d_ = r.get("time_to_train_days")
        days = "" if pd.isna(d_) else (f", {d_:,.1f} d" if d_ >= 1 else f", {d_ * 24:,.1f} h")
        cell[i] = f"{dims} Z{int(r['zero'])} · MFU {r['mfu']:.0%}{days}"
    cell[~fits] = "does not fit" if "reason" not in d else np.where(
        d.loc[~fits, "reason"].astype(str).str.contains("memory"), "does not fit", "not priced")
    d["summary"] = cell
    wide = d.pivot_table(index="chips", columns="accelerator", values="summary", aggfunc="first", sort=False)
    return wide.reindex(columns=list(dict.fromkeys(d["accelerator"]))).sort_index().fillna("")


def verdict(curves: pd.DataFrame, efficiency_floor: float = 0.8) -> Explanation:
    """Where scaling stops paying, per accelerator, in words: the largest chip count whose throughput
    per chip stays above ``efficiency_floor`` of the smallest count's (a reader's threshold), the
    first count where exposed communication passes the curve's threshold share of the step, and what
    dominates the step at the largest count. Serving: how throughput per chip and latency move with
    tensor-parallel size."""
    if curves is None or curves.empty:
        return Explanation("No accelerator could be priced for this scenario.")
    lines = []
    if "tpot_s" in curves.columns:
        for a, d in curves[curves["chosen"]].groupby("accelerator", sort=False):
            d = d.sort_values("tp")
            lo, hi = d.iloc[0], d.iloc[-1]
            lines.append(f"- **{a}**: from TP{lo['tp']} to TP{hi['tp']}, time per output token goes from "
                         f"{lo['tpot_s'] * 1e3:.1f} to {hi['tpot_s'] * 1e3:.1f} ms and throughput per chip from "
                         f"{lo['output_tokens_per_s_per_chip']:,.0f} to {hi['output_tokens_per_s_per_chip']:,.0f} "
                         f"tokens/s; TP communication is {hi['decode_comm_s'] / hi['tpot_s']:.0%} of a token at TP{hi['tp']}.")
        return Explanation("\n".join(lines) or "The model does not fit at any tensor-parallel size.")
    for a, d in curves.groupby("accelerator", sort=False):
        ok = d[d["fits"]].sort_values("chips")
        if ok.empty:
            lines.append(f"- **{a}**: nothing fits at these chip counts ({d['reason'].iloc[-1]}).")
            continue
        good = ok[ok["scaling_efficiency"] >= efficiency_floor]
        last_good = int(good["chips"].max()) if len(good) else int(ok["chips"].min())
        nb = ok[ok["network_bound"]]
        last = ok.iloc[-1]
        parts = {"compute": last["compute_s"], "exposed communication": last["exposed_comm_s"],
                 "pipeline bubble": last["bubble_s"], "recomputation": last["recompute_s"],
                 "synchronisation across domains": last["sync_s"]}
        worst = max((k for k in parts if k != "compute"), key=lambda k: parts[k])
        text = (f"- **{a}**: throughput per chip stays within {1 - efficiency_floor:.0%} of {int(ok['chips'].min()):,} "
                f"chips up to **{last_good:,} chips**")
        thr = float(ok["comm_share_threshold"].iloc[0])
        text += (f"; exposed communication passes {thr:.0%} of the step from **{int(nb['chips'].min()):,} chips**"
                 if len(nb) else f"; exposed communication stays under {thr:.0%} of the step")
        text += (f". At {int(last['chips']):,} chips the step is {last['compute_s'] / last['step_time_s']:.0%} compute, "
                 f"the largest overhead being {worst} ({parts[worst] / last['step_time_s']:.0%}), MFU {last['mfu']:.0%}.")
        lines.append(text)
    return Explanation("\n".join(lines))
