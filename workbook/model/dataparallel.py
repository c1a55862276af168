"""Data-parallel sharding: the weight, gradient and optimizer-state shards a chip holds, and the
communication of each data-parallel scheme per step, with the compute each collective overlaps.

The four schemes (``zero`` of a layout, ``cluster.parallelism.zero``):

- ``0`` plain data parallelism (PyTorch DDP, Megatron DDP): every replica holds everything; the
  gradients are all-reduced once per step, after the last micro-batch (DDP's ``no_sync`` during
  gradient accumulation, Li et al. 2020 "PyTorch Distributed", VLDB, §3.2.4), bucketed and
  overlapped with that micro-batch's backward.
- ``1`` the distributed optimizer (Megatron-LM ``--use-distributed-optimizer``; ZeRO-1, Rajbhandari
  et al. 2020 §5.1 "P_os"): the optimizer states and the fp32 main parameters are sharded over the
  data-parallel ranks, the gradient buffer is not. The gradients are reduce-scattered ONCE per step,
  after the last micro-batch (``--overlap-grad-reduce``: bucketed, overlapped with the last
  micro-batch's backward only), and the updated parameters are all-gathered once per step
  (``--overlap-param-gather``: overlapped with the next step's first forward). Megatron Core user
  guide, "Distributed Optimizer" (docs.nvidia.com/megatron-core/developer-guide/latest/api-guide/
  dist_optimizer.html, read 2026-12-01): "distribute all 'non-overlapping' optimizer state ... [no]
  distribute model gradients, [no] distribute model parameters".
- ``2`` ZeRO-2 as DeepSpeed runs it (Rajbhandari et al. 2020 §5.2 "P_os+g"): the gradients are
  sharded too, so each micro-batch's gradients are reduce-scattered into the shard as its backward
  produces them (DeepSpeed ``overlap_comm``), m times per step; parameters all-gathered once per step.
- ``3`` ZeRO-3/FSDP (§5.3 "P_os+g+p"; Zhao et al. 2023 "PyTorch FSDP", VLDB, §3.2-3.3): parameters
  sharded too; every micro-batch all-gathers each layer's weights before its forward, again before its
  backward (the weights are freed after the forward, ``reshard_after_forward``), and reduce-scatters
  each layer's gradients, prefetched one layer ahead.

Bucketing: a collective split into buckets starts as soon as its first bucket is ready, but its last
bucket cannot overlap anything (the backward has ended, or the forward waits for it), so one bucket's
time is exposed (``overlapped_s``), and every bucket is one collective call (its latency counted).
Megatron-Core's default bucket is max(40M, 1M x dp) parameters (``DistributedDataParallelConfig.
bucket_size``, NVIDIA/Megatron-LM megatron/core/distributed/distributed_data_parallel_config.py) for
schemes 0 and 1; DeepSpeed's ZeRO-2 buckets are 5e8 elements (``reduce_bucket_size`` and
``allgather_bucket_size`` defaults, DeepSpeed configuration JSON docs); FSDP's unit is one layer.
"""
from __future__ import annotations

import math

import numpy as np

from . import comm
from . import profile as prof

ZERO_STAGES = (0, 1, 2, 3)
BUCKET_MIN_PARAMS = 40e6      # Megatron-Core default bucket: max(40,000,000, 1,000,000 x dp) parameters
BUCKET_PARAMS_PER_RANK = 1e6
DEEPSPEED_BUCKET_PARAMS = 5e8  # DeepSpeed zero_optimization.reduce_bucket_size / allgather_bucket_size default


# --- memory --------------------------------------------------------------------------------------

def state_bytes_per_param(precision: str, optimizer: str, grad_reduce_in_fp32: bool = False) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) bytes per parameter, splitting
    ``profile.training_state_bytes_per_param``: 16-bit weights and gradients in mixed precision
    (fp32 training: 4 + 4), the rest is optimizer state with the fp32 master copy (ZeRO §3.1: K = 12
    for Adam). ``grad_reduce_in_fp32``: the gradients are accumulated and reduced in fp32 (Megatron-LM
    sets ``accumulate_allreduce_grads_in_fp32`` for bf16, megatron/training/arguments.py), 4 bytes."""
    total = prof.training_state_bytes_per_param("fp32" if precision == "fp32" else "bf16", optimizer)
    w = 4.0 if precision == "fp32" else 2.0
    return w, (4.0 if grad_reduce_in_fp32 else w), total - 2.0 * w


def distributed_optimizer_bytes_per_param(param_bytes: float, grad_bytes: float, d) -> np.ndarray:
    """Bytes per parameter with Megatron's distributed optimizer (Adam) over ``d`` data-parallel
    ranks: the model parameters and gradients stay whole, the fp32 main parameters (unless the
    parameters are fp32 already), an fp32 main-gradient copy (unless the gradients are fp32 already)
    and Adam's two fp32 moments are sharded. Megatron Core user guide, "Distributed Optimizer"
    (read 2026-12-01), table of theoretical bytes per parameter: fp16 parameters and gradients
    20 -> 4 + 16/d; bf16 parameters, fp32 gradients 18 -> 6 + 12/d; fp32 parameters and gradients
    16 -> 8 + 8/d (``d = 1`` gives the non-distributed figure)."""
    sharded = 8.0 + (4.0 if param_bytes < 4 else 0.0) + (4.0 if grad_bytes < 4 else 0.0)
    return param_bytes + grad_bytes + sharded / np.asarray(d, dtype=float)


def zero_state_bytes(params, shards, zero, weight_bytes, grad_bytes, optim_bytes, trainable=1.0, factors=None):
    """Bytes per chip of weights, gradients and optimizer states for ``params`` weights held by the
    chip, sharded ``shards`` ways by ZeRO stage ``zero`` (Rajbhandari et al. 2020 Fig. 1):
    0 = nothing sharded, 1 = optimizer states (the distributed optimizer), 2 = + gradients,
    3 = + weights (FSDP). Only the ``trainable`` fraction carries gradients and optimizer states
    (fine-tuning). Stage 1 with 16-bit weights, fp32 gradients and Adam (2, 4, 12) is the Megatron
    table's 6 + 12/d (``distributed_optimizer_bytes_per_param``). ``factors``: ``zero_shard_factors(shards,
    zero)`` when the caller has them."""
    P = np.asarray(params, dtype=float)
    f3, f2, f1 = zero_shard_factors(shards, zero) if factors is None else factors
    w = weight_bytes * P * f3
    g = grad_bytes * trainable * P * f2
    o = optim_bytes * trainable * P * f1
    return w + g + o


def zero_shard_factors(shards, zero) -> tuple:
    """The shares of the weights, the gradients and the optimizer states a chip keeps under ZeRO stage
    ``zero`` over ``shards`` ranks (``zero_state_bytes``): 1/shards where the stage shards them (3, 2 and
    1 or more), else 1. Handed to ``zero_state_bytes`` (``factors``) by callers that price several
    weights over the same shards (``training.memory_per_chip_bytes``: the first and the last stage)."""
    inv = 1.0 / np.asarray(shards, dtype=float)  # one division for the three stages' shares
    z = np.asarray(zero)
    return np.where(z >= 3, inv, 1.0), np.where(z >= 2, inv, 1.0), np.where(z >= 1, inv, 1.0)


# --- overlap -------------------------------------------------------------------------------------

def overlapped_s(t, window, fraction, slowdown=0.0, buckets=np.inf):
    """The time a communication of ``t`` seconds adds to the step when up to ``fraction`` of
    ``window`` seconds of compute can hide it. Of ``buckets`` equal buckets the last cannot overlap
    (exposed, t / buckets); of the rest, what the window holds is hidden and the compute it overlaps
    runs ``slowdown`` slower (``training.Overlap.slowdown``: arXiv 2507.03114 measured the slowdown
    of the compute kernels that run while a collective runs, 18.9% on average, against the same
    kernels alone), so each hidden second adds ``slowdown`` seconds; what the window cannot hold is
    exposed. The slowdown is charged only on the overlapped compute, never on the whole step."""
    t = np.asarray(t, dtype=float)
    if type(fraction) is float and (type(buckets) is float or np.shape(buckets) == t.shape):
        # one fraction for every row (``Overlap``'s): the branch the ``np.where`` below takes for all of them
        tail = t / buckets if fraction > 0 else t
    else:
        tail = np.where(np.asarray(fraction) > 0, t / np.asarray(buckets, dtype=float), t)
    hidden = np.minimum(t - tail, fraction * np.asarray(window, dtype=float))
    return (t - hidden) + slowdown * hidden


def buckets(params, dp, zero):
    """Buckets (collective calls) of ``params`` parameters: Megatron-Core's default bucket of
    max(40M, 1M x dp) parameters for ZeRO 0 and 1, DeepSpeed's 5e8 elements for ZeRO-2 (at least one)."""
    size = np.where(np.asarray(zero) == 2, DEEPSPEED_BUCKET_PARAMS,
                    np.maximum(BUCKET_MIN_PARAMS, BUCKET_PARAMS_PER_RANK * np.asarray(dp, dtype=float)))
    return np.maximum(1.0, np.ceil(np.asarray(params, dtype=float) / size))


# --- communication -------------------------------------------------------------------------------

def data_parallel_comm(g: dict, st: dict, c: dict, topo: comm.Topology, overlap, slowdown: float) -> dict:
    """Data-parallel communication of a layout grid (``training._grid_arrays``, ``_stage_shape``,
    ``_compute_parts``): the time added per micro-batch (``zero_mb``: ZeRO-2's reduce-scatter, ZeRO-3's
    gathers and reduce-scatter), the time added once per step (``dp_step``) and all of it before
    overlap (``dp_total``), per the schedules of the module docstring. Gradients move at the stage's
    gradient bytes (``st["gb"]``: 4 when reduced in fp32), parameters at its weight bytes; dense and
    expert weights reduce over their own data-parallel groups (``D_n`` = dp x cp, ``D_e`` = D_n / ep).
    Windows: a backward is the micro-batch's backward plus its recomputed forward, a forward its
    forward; ``overlap.dp`` (ZeRO 0-2) and ``overlap.fsdp`` (ZeRO-3) are the fractions that can hide."""
    frac, tp, ep, z, m = st["frac"], g["tp"], g["ep"], g["z"], g["m"]
    P_n, P_e, D_n, D_e = st["P_n"], st["P_e"], st["D_n"], st["D_e"]
    G_n, G_e = st["gb"] * frac * P_n, st["gb"] * frac * P_e
    W_n, W_e = st["wb"] * P_n, st["wb"] * P_e
    has_e = np.asarray(P_e) > 0  # dense models make no expert-group calls (no latency either)
    L = st["L_stage"]  # FSDP: one unit per layer

    # a dense model's expert-group term is 0 bytes in 0 calls: exactly 0 s wherever the latencies are finite, so it
    # is not evaluated (x + 0.0 == x); the same sums, half the collectives
    lat = [topo.base_latency_s, topo.hop_latency_s, topo.net_latency_s]
    if np.isfinite(topo.ll_bandwidth_fraction):
        lat += [topo.ll_base_latency_s, topo.ll_hop_latency_s, topo.ll_net_latency_s]
    dense_only = not has_e.any() and all(math.isfinite(x) for x in lat)
    nb_n = buckets(P_n, D_n, z)
    if dense_only:  # no expert calls: max(nb_n, 0.0) is nb_n (nb_n >= 1, or NaN either way)
        nb_e, L_e, nb = None, None, nb_n
    else:
        nb_e, L_e = np.where(has_e, buckets(P_e, D_e, z), 0.0), np.where(has_e, L, 0.0)
        nb = np.maximum(nb_n, nb_e)

    groups = {}  # the placement and latencies of the dense and the expert group, shared by the five collectives

    def on(which):
        if which not in groups:
            groups[which] = comm.group(D_n, tp, topo) if which == "dense" else comm.group(D_e, tp * ep, topo)
        return groups[which]

    bands = {}  # the bandwidth term of each buffer over each group (``comm.ring_band_s``): the gradients' all-reduce
    # and two reduce-scatters share one, the weights' two all-gathers another; only the calls (latency) differ

    def band(which, buf, nbytes):
        if (which, buf) not in bands:
            bands[(which, buf)] = comm.ring_band_s(nbytes, on(which), topo)
        return bands[(which, buf)]

    within = {}  # (dense's shape, the expert bytes' shape): whether the expert term would broadcast within it

    def both(kind, buf, n_bytes, e_bytes, calls_n, calls_e):
        dense = comm.collective_s(kind, n_bytes, D_n, tp, topo, calls_n, group_terms=on("dense"),
                                  ring_band=band("dense", buf, n_bytes))
        if dense_only:
            key = (np.shape(dense), np.shape(e_bytes))
            if key not in within:
                within[key] = key[0] == np.broadcast_shapes(key[0], np.shape(D_e), key[1])
            if within[key]:
                return dense + 0.0
        if calls_e is None:  # skipped above for a dense model: as the expert group's calls would be
            calls_e = np.where(has_e, buckets(P_e, D_e, z) if calls_n is nb_n else L, 0.0)
        return dense + comm.collective_s(kind, e_bytes, D_e, tp * ep, topo, calls_e, group_terms=on("expert"),
                                         ring_band=band("expert", buf, e_bytes))

    ar, rs, ag = (both(k, buf, a, b, nb_n, nb_e) for k, buf, a, b in (("all_reduce", "grad", G_n, G_e),
                                                                      ("reduce_scatter", "grad", G_n, G_e),
                                                                      ("all_gather", "weight", W_n, W_e)))
    rs3, ag3 = both("reduce_scatter", "grad", G_n, G_e, L, L_e), both("all_gather", "weight", W_n, W_e, L, L_e)
    fwd, bwd = c["t_fwd"], c["t_bwd"] + c["t_rc"]
    o, s = overlap, slowdown
    rs_bwd, ag_fwd = overlapped_s(rs, bwd, o.dp, s, nb), overlapped_s(ag, fwd, o.dp, s, nb)  # each read by two stages
    z0, z1, z2, z3 = z == 0, z == 1, z == 2, z == 3
    zero_mb = np.where(z2, rs_bwd,
                       np.where(z3, overlapped_s(ag3, fwd, o.fsdp, s, L) + overlapped_s(ag3 + rs3, bwd, o.fsdp, s, L), 0.0))
    dp_step = np.where(z0, overlapped_s(ar, bwd, o.dp, s, nb), np.where(z1, rs_bwd + ag_fwd, np.where(z2, ag_fwd, 0.0)))
    dp_total = np.where(z0, ar, np.where(z1, rs + ag, np.where(z2, m * rs + ag, m * (2.0 * ag3 + rs3))))
    return {"zero_mb": zero_mb, "dp_step": dp_step, "dp_total": dp_total}
