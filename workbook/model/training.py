"""Multi-chip training: memory per chip and step time of parallel configurations, priced as one
numpy grid (the search over the grid is ``model.search``).

A configuration is TP x PP x DP x EP x CP x micro-batch x interleaving x recompute x ZeRO stage on
``chips`` chips. ``evaluate`` prices every configuration of a grid (``search.configurations``) as
rows of numpy arrays at once (no Python loop per configuration). Ranks are laid out Megatron-style, tensor-parallel innermost, then context,
expert, data and pipeline parallel outermost (``--order tp-cp-ep-dp-pp`` in Megatron-Core), so the
communication model (``model.comm``) knows which groups stay inside a fast domain.

The step of the busiest pipeline stage (``step_time_s``) is the sum of
- ``compute_s``: forward and backward model FLOPs of the stage's micro-batches (PaLM's count,
  ``profile.train_flops_per_token``) at the fraction of peak that ``efficiency`` gives
  (``model.efficiency.compute_efficiency`` of the ``Efficiency`` given; the fitted one by default);
- ``recompute_s``: the extra forward of activation recomputation (full: the whole layer; selective:
  the attention core, Korthikanti et al. 2022 §5);
- ``exposed_comm_s``: the part of each communication not hidden behind compute, per ``Overlap``
  (data-parallel schedules and the distributed optimizer: ``model.dataparallel``);
- ``bubble_s``: pipeline fill and drain, (pp-1)/v micro-batch times (1F1B with v interleaved stages,
  Narayanan et al. 2021 §2.2: bubble fraction (p-1)/(v·m) of the ideal time);
- ``optimizer_s``: the memory-bound optimizer update of the chip's shard; ``dequant_s`` (QLoRA): the
  frozen 4-bit weights dequantised to bf16 in every (re)computed forward and backward, memory-bound;
- ``moe_host_s`` (mixture of experts on GPUs): the time the chip waits on its host in dropless MoE
  layers (``model.moe.host_s``), in every micro-batch and the pipeline bubble;
- ``sync_s``: waiting for the slowest of the fast domains a step spans (stragglers and jitter at
  each synchronisation), γ·log2(chips / domain chips) of the rest of the step, γ per accelerator
  family from the calibration where the published runs demand one (``model.efficiency.network_loss``;
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

import functools
import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from .. import catalog
from ..errors import InputError
from ..scenario import Constraints, Parallelism, Workload
from . import comm, moe
from . import profile as prof
from .dataparallel import (ZERO_STAGES, data_parallel_comm, overlapped_s, state_bytes_per_param,  # noqa: F401 (re-exported)
                           zero_shard_factors, zero_state_bytes)
from .efficiency import Efficiency, compute_efficiency, default, network_loss
from .profile import Profile

RECOMPUTE = ("none", "selective", "full")
ACTIVATION_BYTES = 2.0  # 16-bit activations exchanged by TP/CP/EP/PP (Korthikanti et al. 2022 assume 16-bit)

RESULT_COLUMNS = ["tp", "pp", "dp", "ep", "cp", "vpp", "zero", "recompute", "micro_batch", "microbatches",
                  "step_time_s", "compute_s", "exposed_comm_s", "bubble_s", "recompute_s", "optimizer_s", "sync_s", "dequant_s", "moe_host_s",
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
      all-gather of ZeRO-1/2 with the next forward (overlap_param_gather); the last bucket and the
      part longer than the window (one micro-batch's backward or forward: the last micro-batch's
      for a once-per-step collective) are exposed (``model.dataparallel``, which holds the
      schedule of each ZeRO stage and the distributed optimizer).
    - ``fsdp = 1``: ZeRO-3/FSDP prefetches the next layer's weights during the current layer
      (Zhao et al. 2023 "PyTorch FSDP" §3.3). Checked against the calibration runs pinned to
      ZeRO-3 (llm-foundry MPT, MaxText on TPU v4): any value >= 0.5 prices them the same and a
      fitted fraction is not identified (docs/explanation/calibration.md), so 1 stays.
      The ZeRO-3 runs of Narayanan et al. 2021 Table 2 (GPT-3 175B, 384-1,536 A100s, held out) are
      slower than even fsdp = 0 predicts: their step is flat at ~67 s from 768 to 1,536 GPUs, a
      collective about 3x slower than ``comm.collective_s`` prices, not a missing overlap.
    - ``cp = 1``: ring attention overlaps the KV exchange with the attention blocks (Liu et al. 2023).
    - ``ep = 0``: expert all-to-alls block the MoE layer (Lepikhin et al. 2020); overlapping them
      needs schedules such as DeepSeek-V3's DualPipe.
    - ``slowdown = 0.189``: hidden communication is not free. Compute that runs while a collective
      overlaps it is slowed by the collective's kernels (SMs, HBM and L2 shared with NCCL): 18.9% on
      average (at most 40%) over GPT and Llama training kernels on A100, H100, MI250 and MI210
      (arXiv 2507.03114, "Characterizing Compute-Communication Overlap in GPU-Accelerated
      Distributed Deep Learning", 2025, abstract: the slowdown of the compute that runs while
      communication runs, against the same compute alone, on 4 GPUs of one node). It is charged only
      on the compute a collective actually overlaps (``dataparallel.overlapped_s``: the hidden
      seconds, never the whole step). Each second of communication hidden behind
      compute adds ``slowdown`` seconds to the step, so layouts that hide much communication
      (ZeRO-3/FSDP over many replicas, context parallelism) pay for it; ``slowdown = 0`` is the
      earlier free overlap. GPUs only (``gpu_overlap_slowdown``): the study measured GPUs, where
      NCCL's kernels run on the same SMs as the matmuls; TPU and Trainium collectives are moved by
      the chips' own DMA engines over ICI/NeuronLink, and no published measurement of an overlap
      slowdown there was found, so they keep 0.
    """

    tp: float = 0.0
    pp: float = 0.0
    dp: float = 1.0
    fsdp: float = 1.0
    cp: float = 1.0
    ep: float = 0.0
    slowdown: float = 0.189

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


def tp_collectives_per_layer(recompute, full=None):
    """Tensor-parallel collectives per transformer layer and micro-batch, in all-reduce
    equivalents of the layer's activations (b·s·h): 2 forward (after attention and after the MLP)
    and 2 backward (Shoeybi et al. 2019 §3); with sequence parallelism each all-reduce becomes a
    reduce-scatter plus an all-gather of the same total volume (Korthikanti et al. 2022 §4.2.2).
    Full recomputation repeats the forward pair. ``full``: the mask ``recompute == "full"`` when the
    caller has it (``_grid_arrays``), so the recompute labels are not compared again."""
    return np.where(np.asarray(recompute) == "full" if full is None else full, 6.0, 4.0)


def activation_inflight_factor(pp, microbatches, vpp=1):
    """Micro-batches whose activations the first pipeline stage holds at once: min(m, p) in 1F1B
    (Narayanan et al. 2021 §2.2.1), times (1 + (p-1)/(p·v)) with v interleaved stages (Korthikanti
    et al. 2022 §4.2.3)."""
    pp = np.asarray(pp, dtype=float)
    v = np.asarray(vpp, dtype=float)
    base = np.minimum(np.asarray(microbatches, dtype=float), pp)
    return base * np.where(v > 1, 1.0 + (pp - 1.0) / (pp * v), 1.0)


# --- helpers ------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def _divisors(n: int) -> tuple[int, ...]:
    """The divisors of ``n`` in increasing order (remembered: the layout grids ask for the same counts)."""
    small = [d for d in range(1, int(math.isqrt(n)) + 1) if n % d == 0]
    return tuple(sorted(set(small + [n // d for d in small])))


def _peak(acc: pd.Series, precision: str) -> float:
    return catalog.peak_flops_per_s(acc, precision, required=True)


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


def _num(v, default=np.nan) -> float:
    return default if v is None or pd.isna(v) else float(v)


# --- pricing the grid ---------------------------------------------------------------------------

def evaluate(profile: Profile, acc: pd.Series, chips: int, workload: Workload, grid: dict, efficiency: Efficiency | None = None, *,
             topology: comm.Topology | None = None, overlap: Overlap = DEFAULT_OVERLAP,
             memory_headroom: float | None = None, sync_loss: float | None = None,
             parallelism: Parallelism | None = None) -> pd.DataFrame:
    """Memory per chip, communication, step time, MFU and throughput of every configuration in
    ``grid`` (from ``configurations``), feasible or not. See the module docstring for the terms.
    ``sync_loss`` is γ of ``sync_s`` (default: the efficiency's ``network_loss`` for the family; 0
    for ``Efficiency.fixed``). ``parallelism`` (the pins) carries the software switches of a
    published layout: ``tp_comm_overlap``, ``grad_reduce_in_fp32`` and ``fp8_param_gather`` (``software_options``)."""
    return pd.DataFrame(_price(profile, acc, chips, workload, grid, efficiency, topology=topology, overlap=overlap,
                               memory_headroom=memory_headroom, sync_loss=sync_loss, parallelism=parallelism))


def _grid_arrays(grid: dict) -> dict:
    """The grid's dimensions as float arrays (``rc``/``z`` kept as given), with the recompute masks (the grid's
    ``_full``/``_sel`` where ``search.configurations`` made them: the same booleans as comparing the labels)."""
    g = {k: grid[src].astype(float) for k, src in (("tp", "tp"), ("cp", "cp"), ("pp", "pp"), ("dp", "dp"), ("ep", "ep"),
                                                   ("mb", "micro_batch"), ("m", "microbatches"), ("v", "vpp"))}
    full, sel = grid.get("_full"), grid.get("_sel")  # the masks ``search.configurations`` made for a shared grid
    g.update(rc=grid["recompute"], z=grid["zero"], full=grid["recompute"] == "full" if full is None else full,
             sel=grid["recompute"] == "selective" if sel is None else sel,
             sp=bool(grid.get("sequence_parallel", True)), flash=bool(grid.get("flash_attention", True)))
    return g


def _stage_shape(p: Profile, w: Workload, g: dict, grad_reduce_in_fp32: bool = False, fp8_param_gather: bool = False) -> dict:
    """Weights of the busiest pipeline stage: layers per stage (``L_stage``), dense and expert
    weights per layer, the embedding and head on the first and last stage, the non-expert
    (``P_n``) and expert (``P_e``) weights on one chip, the ZeRO shard counts (``D_n``, ``D_e``) and
    the bytes per parameter of weights, gradients (4 with ``grad_reduce_in_fp32``) and optimizer states.
    ``fp8_param_gather`` (FP8 training only, full training): the model's weights are kept in FP8, 1 byte,
    so the distributed optimizer all-gathers them in FP8 and no 16-bit copy is held; the fp32 main
    weights stay in the optimizer states (Megatron-LM ``--fp8-param-gather``: "Keep the compute param in
    fp8 (do not use any other intermediate dtype) and perform the param all-gather in fp8",
    megatron/training/arguments.py; NeMo ``fp8_params``, Transformer Engine ``fp8_model_init``)."""
    L, h = float(p.layers), float(p.hidden)
    tied = math.isclose(p.params_matmul_active, p.params_active)
    head_params = 0.0 if tied else float(p.vocab) * h
    body = p.params_total - p.params_embedding - head_params
    st = {"dense_layer": (body - p.params_expert) / L, "expert_layer": p.params_expert / L,
          "L_stage": np.ceil(L / (g["pp"] * g["v"])) * g["v"],  # layers on the busiest stage
          "emb_first": np.where(g["pp"] == 1, p.params_embedding + head_params, p.params_embedding),
          "emb_last": np.where(g["pp"] == 1, p.params_embedding + head_params, p.params_embedding if tied else head_params)}
    emb_max = np.maximum(st["emb_first"], st["emb_last"])
    st["P_n"] = (st["L_stage"] * st["dense_layer"] + emb_max) / g["tp"]  # non-expert weights on the chip
    st["P_e"] = st["L_stage"] * st["expert_layer"] / (g["tp"] * g["ep"])  # expert weights on the chip
    st["D_n"] = g["dp"] * g["cp"]  # data-parallel replicas of non-expert weights (ZeRO shards over DP x CP)
    st["D_e"] = g["dp"] * g["cp"] / g["ep"]
    st["wb"], st["gb"], st["ob"] = state_bytes_per_param(w.precision, w.optimizer, grad_reduce_in_fp32)
    # fine-tuning: frozen weights at their stored precision, states for the trainable share only
    st["wb"], st["frac"] = prof.training_weight_bytes_per_param(p, w), prof.trainable_params(p, w) / p.params_total
    st["ob"] = prof.optimizer_bytes_per_trainable_param(w)
    if fp8_param_gather and w.precision == "fp8" and prof.frozen_share(w) <= 0.0:
        st["wb"] = 1.0
    return st


# Low-precision training keeps part of the step's matmuls in bf16: the attention core (QK^T and
# softmax·V) and the output head. MaxText's AQT int8 (``quantization: int8``) quantises the dense
# layers' dot_generals, not the attention kernel or the logits; DeepSeek-V3's FP8 framework
# (DeepSeek-AI 2024, arXiv:2412.19437 §3.3.1) likewise keeps "the embedding module, the output
# head, MoE gating modules, normalization operators, and attention operators" in BF16/FP32, as
# Transformer Engine keeps DotProductAttention in bf16 by default. FP8 is not listed: on the FP8
# GPU runs this term refitted the held-out training median from 7.3% to 8.6% (the width term of
# model.efficiency already prices FP8's bf16 share, fitted on those runs), so it stays there.
HIGH_PRECISION = {"int8": "bf16"}


def tokens_per_chip(w: Workload, g: dict):
    """Tokens of a micro-batch on one chip: the micro-batch's sequences split over the tensor-parallel
    (sequence-parallel shards) and context-parallel ranks."""
    return g["mb"] * float(w.seq_len) / (g["tp"] * g["cp"])


def _compute_parts(p: Profile, w: Workload, g: dict, st: dict, eff: Efficiency, acc, peak: float, grid: dict) -> dict:
    """FLOPs and compute time per micro-batch on the busiest stage: forward, backward, the
    recomputed forward and the attention core. FLOPs are counted as PaLM's model FLOPs (full
    attention), the definition the efficiency is calibrated on (MFU): a causal kernel that skips
    masked blocks shows up as a higher efficiency, not as fewer FLOPs. Mixture of experts: the
    routed experts' grouped matmuls and the token permutation (``model.moe``)."""
    s, L, h, V = float(w.seq_len), float(p.layers), float(p.hidden), float(p.vocab)
    head_grads = 0.0 if w.lora_rank else w.trainable_fraction  # a frozen output head has no weight gradients
    head_flops = (4.0 + 2.0 * head_grads) * V * h
    layer_flops = (float(prof.fine_tune_flops_per_token(p, w)) - head_flops) / L
    fwd_share = float(prof.train_flops_per_token(p, s) / 3.0) / float(prof.fine_tune_flops_per_token(p, w))
    attn_layer_fwd = float(prof.attention_flops_per_token(p, s, causal=False)) / L
    tok_chip = tokens_per_chip(w, g)
    tokens = g["mb"] * s / g["cp"]
    e = np.clip(np.asarray(compute_efficiency(eff, acc, w.precision, "train", p, tp=grid["tp"], tokens=tokens),
                           dtype=float) * np.ones_like(g["tp"]), 1e-6, 1.0)
    rate = peak * e
    hi = HIGH_PRECISION.get(w.precision)
    if hi is None:
        rate_hi = rate
    else:  # the attention core and the output head stay in bf16 (``HIGH_PRECISION``)
        e_hi = np.clip(np.asarray(compute_efficiency(eff, acc, hi, "train", p, tp=grid["tp"], tokens=tokens),
                                  dtype=float) * np.ones_like(g["tp"]), 1e-6, 1.0)
        rate_hi = _peak(acc, hi) * e_hi
    L_stage = st["L_stage"]
    eff_layer_flops = layer_flops + moe.expert_extra_flops_per_token(p, w, st["expert_layer"], eff, acc, fwd_share)
    attn = 3.0 * L_stage * attn_layer_fwd  # attention core per token, forward + backward
    t_fb = ((L_stage * eff_layer_flops - attn) / rate + (attn + head_flops) / rate_hi) * tok_chip
    t_perm = moe.permute_s(p, L_stage, tok_chip, acc)  # one pass
    rc_gemm = np.where(g["full"], (L_stage * eff_layer_flops - attn) / 3.0, 0.0)
    rc_attn = np.where(g["full"] | g["sel"], L_stage * attn_layer_fwd, 0.0)
    return {"efficiency": e, "tok_chip": tok_chip, "t_fwd": t_fb * fwd_share + t_perm,
            "t_bwd": t_fb * (1.0 - fwd_share) + t_perm,
            "t_rc": (rc_gemm / rate + rc_attn / rate_hi) * tok_chip + np.where(g["full"], t_perm, 0.0),
            "t_attn": attn * tok_chip / rate_hi}


def _model_parallel_comm(p: Profile, w: Workload, g: dict, st: dict, c: dict, topo: comm.Topology) -> dict:
    """Communication per micro-batch of tensor, context, expert and pipeline parallelism."""
    s, h, e = float(w.seq_len), float(p.hidden), ACTIVATION_BYTES
    tp, cp, pp, L_stage = g["tp"], g["cp"], g["pp"], st["L_stage"]
    act = g["mb"] * (s / cp) * h * e  # a layer's activations for one micro-batch (before SP scattering)
    n_tp = tp_collectives_per_layer(g["rc"], g["full"]) * L_stage
    out = {"tp_mb": comm.collective_s("all_gather", 2.0 * n_tp * act, tp, 1.0, topo, calls=2.0 * n_tp)}
    kv_heads_per_chip = np.maximum(1.0, p.kv_heads / tp)
    kv_bytes = g["mb"] * s * p.kv_cache_dim * (kv_heads_per_chip / p.kv_heads) * e  # full-sequence K and V per layer
    n_cp = np.where(g["full"], 4.0, 3.0) * L_stage  # forward all-gather; backward all-gather + reduce-scatter
    out["cp_mb"] = comm.collective_s("all_gather", n_cp * kv_bytes, cp, tp, topo, calls=n_cp)
    out["ep_mb"] = moe.expert_parallel_comm_s(p, w, g, L_stage, c["tok_chip"], topo)
    sends = 2.0 * g["v"]  # forward activation and backward gradient per (virtual) stage boundary
    out["pp_mb"] = np.where(pp > 1, comm.p2p_s(sends * act / tp, tp * cp * g["dp"], topo, calls=sends), 0.0)
    return out


SWITCH_KEYS = ("tp_comm_overlap", "grad_reduce_in_fp32", "fp8_param_gather")  # the software switches of cluster.parallelism


def software_options(par: Parallelism | None, overlap: Overlap) -> tuple[Overlap, bool, bool]:
    """The overlap and gradient precision a layout's pins switch on: ``tp_comm_overlap`` hides the
    tensor-parallel collectives behind the layer's GEMMs (Megatron-LM ``--tp-comm-overlap``,
    Transformer Engine userbuffers; NeMo ``ub_tp_comm_overlap``), charged the overlap slowdown like
    every hidden collective; ``grad_reduce_in_fp32`` keeps and reduces fp32 gradients (Megatron-LM's
    default for bf16: ``accumulate_allreduce_grads_in_fp32``, megatron/training/arguments.py);
    ``fp8_param_gather`` keeps FP8 training's weights in FP8 (``_stage_shape``)."""
    if par is None:
        return overlap, False, False
    if getattr(par, "tp_comm_overlap", None):
        overlap = replace(overlap, tp=1.0)
    return overlap, bool(getattr(par, "grad_reduce_in_fp32", None)), bool(getattr(par, "fp8_param_gather", None))


def gpu_overlap_slowdown(o: Overlap, acc) -> float:
    """``Overlap.slowdown`` on a GPU (``kind`` gpu), 0 on TPUs and ASICs (see ``Overlap``)."""
    return float(o.slowdown) if str(acc.get("kind", "gpu")) == "gpu" else 0.0


def memory_per_chip_bytes(p: Profile, w: Workload, g: dict, st: dict, c: dict):
    """Memory per chip: the larger of the first pipeline stage (most activations in flight,
    ``activation_inflight_factor``) and the last (the fp32 logits for the loss, Korthikanti et al.
    2022 §4.3): weight, gradient and optimizer shards (``zero_state_bytes``), the gathered layers of
    ZeRO-3, stored activations (``profile.activation_bytes_per_token_per_layer``, less the GEMM
    inputs FP8 training keeps in one byte: ``profile.fp8_saved_input_savings_per_token_per_layer``) and
    the layer being recomputed."""
    s, V, frac = float(w.seq_len), float(p.vocab), st["frac"]
    tp, cp, pp, ep, z = g["tp"], g["cp"], g["pp"], g["ep"], g["z"]
    tok_chip, L_stage, wb, gb, ob = c["tok_chip"], st["L_stage"], st["wb"], st["gb"], st["ob"]
    act_tok = {r: float(prof.activation_bytes_per_token_per_layer(p, s, r, g["flash"]))
               - prof.fp8_saved_input_savings_per_token_per_layer(p, w.precision, r) for r in RECOMPUTE}
    # without sequence parallelism every TP rank keeps the whole 10h of norms, dropout masks and block inputs
    # (2h, the layer input, under full recompute): Korthikanti et al. 2022 Table 2, sbh(10 + 24/t) against 34/t
    rep = 0.0 if g["sp"] else float(p.hidden) * (tp - 1.0)
    act_tok = {r: v + (2.0 if r == "full" else 10.0) * rep for r, v in act_tok.items()}
    # the full, else the selective, else the no-recompute figure of each row (``np.select``'s choice, in two ``np.where``)
    stored = np.where(g["full"], act_tok["full"], np.where(g["sel"], act_tok["selective"], act_tok["none"])) * tok_chip
    working = np.where(g["full"], act_tok["none"] * tok_chip, 0.0)  # the layer being recomputed
    logits = 4.0 * g["mb"] * s * V / (tp * cp)  # fp32 logits for the loss (Korthikanti et al. 2022 §4.3)
    if st["expert_layer"] == 0.0 and all(math.isfinite(v) for v in (wb, gb, ob, frac)):
        experts = 0.0  # a dense model: zero_state_bytes of 0 weights over finite shards (dp·cp/ep >= 1/ep) is 0 in every row
    else:
        experts = zero_state_bytes(st["P_e"], st["D_e"], z, wb, gb, ob, frac)
    dense = zero_shard_factors(st["D_n"], z)  # the first and the last stage shard over the same replicas
    state_first = zero_state_bytes((L_stage * st["dense_layer"] + st["emb_first"]) / tp, st["D_n"], z, wb, gb, ob, frac,
                                   dense) + experts
    if np.array_equal(st["emb_first"], st["emb_last"]):  # tied, or a head as large as the embedding: the same state
        state_last = state_first
    else:
        state_last = zero_state_bytes((L_stage * st["dense_layer"] + st["emb_last"]) / tp, st["D_n"], z, wb, gb, ob, frac,
                                      dense) + experts
    gathered = np.where(z == 3, 2.0 * wb * (st["dense_layer"] + st["expert_layer"] / ep) / tp, 0.0)  # current + prefetched layer
    inflight = activation_inflight_factor(pp, g["m"], g["v"])
    mem_first = state_first + gathered + stored * L_stage * inflight + working + np.where(pp == 1, logits, 0.0)
    mem_last = state_last + gathered + stored * L_stage + working + logits
    return np.maximum(mem_first, mem_last)


def _setup(p: Profile, acc, chips: int, w: Workload, efficiency: Efficiency | None, topology: comm.Topology | None,
           overlap: Overlap, memory_headroom: float | None, sync_loss: float | None, parallelism: Parallelism | None) -> dict:
    """What ``_price`` reads besides the grid, computed once per search: the overlap and gradient switches of
    the pins, the efficiency, γ, the topology, the peak, the memory cap and the run's tokens and FLOPs per step."""
    _check_transformer(p)
    overlap, fp32_grads, fp8_params = software_options(parallelism, overlap)
    eff = default(efficiency)
    sync_loss = network_loss(eff, acc) if sync_loss is None else sync_loss
    topo = topology or comm.topology(acc, chips)
    B = _global_batch_seqs(w)
    tokens = B * float(w.seq_len)
    return {"overlap": overlap, "fp32_grads": fp32_grads, "fp8_params": fp8_params, "eff": eff, "topo": topo,
            "peak": _peak(acc, w.precision), "B": B, "tokens": tokens,
            "model_flops": float(prof.fine_tune_flops_per_token(p, w, causal=False)) * tokens,
            "mem_cap": float(acc["memory_bytes"]) * (1.0 - _headroom(memory_headroom)),
            # γ·log2(chips / domain chips): sync_s over the rest of the step
            "sync_factor": sync_loss * math.log2(max(chips / max(topo.domain_chips, 1), 1.0))}


def _price(profile: Profile, acc: pd.Series, chips: int, workload: Workload, grid: dict, efficiency: Efficiency | None = None, *,
           topology: comm.Topology | None = None, overlap: Overlap = DEFAULT_OVERLAP,
           memory_headroom: float | None = None, sync_loss: float | None = None,
           parallelism: Parallelism | None = None) -> dict:
    """``evaluate`` as a dict of numpy arrays: the step of the busiest stage from its parts (module
    docstring), memory per chip and throughput."""
    p, w = profile, workload
    x = _setup(p, acc, chips, w, efficiency, topology, overlap, memory_headroom, sync_loss, parallelism)
    g = _grid_arrays(grid)
    st = _stage_shape(p, w, g, x["fp32_grads"], x["fp8_params"])
    c = _compute_parts(p, w, g, st, x["eff"], acc, x["peak"], grid)
    return _finish(p, acc, chips, w, grid, g, st, c, x, memory_per_chip_bytes(p, w, g, st, c))


def _finish(p: Profile, acc, chips: int, w: Workload, grid: dict, g: dict, st: dict, c: dict, x: dict, memory,
            labels: bool = True) -> dict:
    """``_price``'s columns from the grid's arrays (``_grid_arrays``), the stage (``_stage_shape``), the
    compute parts (``_compute_parts``), the memory per chip and the search's constants (``_setup``); every
    column is computed row by row, so a subset of the rows prices exactly as in the whole grid. Without
    ``labels`` (the layout search, which reads one row's) the recompute column keeps the grid's objects
    (the same strings) instead of a string array."""
    topo, peak = x["topo"], x["peak"]
    mp = _model_parallel_comm(p, w, g, st, c, topo)
    s = gpu_overlap_slowdown(x["overlap"], acc)
    dpc = data_parallel_comm(g, st, c, topo, x["overlap"], s)
    o, m = x["overlap"], g["m"]
    t_compute_mb = c["t_fwd"] + c["t_bwd"] + c["t_rc"]  # what async TP can hide behind (its GEMMs)
    exposed_mb = (overlapped_s(mp["tp_mb"], t_compute_mb, o.tp, s) + overlapped_s(mp["cp_mb"], c["t_attn"], o.cp, s)
                  + (1.0 - o.ep + s * o.ep) * mp["ep_mb"] + (1.0 - o.pp + s * o.pp) * mp["pp_mb"] + dpc["zero_mb"])
    moe_host_mb = moe.host_s(p, g, st["L_stage"], x["eff"], acc)
    t_mb = t_compute_mb + exposed_mb + moe_host_mb  # (((fwd + bwd) + rc) + exposed) + host, as before
    compute_s, recompute_s = m * (c["t_fwd"] + c["t_bwd"]), m * c["t_rc"]
    exposed = m * exposed_mb + dpc["dp_step"]
    bubble = (g["pp"] - 1.0) / g["v"] * t_mb
    optimizer_s, dequant_s = _memory_bound_s(p, w, g, st, acc)
    step = compute_s + recompute_s + exposed + bubble + optimizer_s + dequant_s + m * moe_host_mb
    sync_s = x["sync_factor"] * step
    step = step + sync_s
    tokens = x["tokens"]
    return {
        "tp": grid["tp"], "pp": grid["pp"], "dp": grid["dp"], "ep": grid["ep"], "cp": grid["cp"],
        "vpp": grid["vpp"], "zero": grid["zero"], "recompute": g["rc"].astype(str) if labels else g["rc"], "micro_batch": grid["micro_batch"],
        "microbatches": grid["microbatches"],
        "step_time_s": step, "compute_s": compute_s, "exposed_comm_s": exposed, "bubble_s": bubble,
        "recompute_s": recompute_s, "optimizer_s": optimizer_s, "sync_s": sync_s, "dequant_s": dequant_s,
        "moe_host_s": m * moe_host_mb,
        "comm_s": m * (mp["tp_mb"] + mp["cp_mb"] + mp["ep_mb"] + mp["pp_mb"]) + dpc["dp_total"],
        "tp_comm_s": m * mp["tp_mb"], "cp_comm_s": m * mp["cp_mb"], "ep_comm_s": m * mp["ep_mb"],
        "pp_comm_s": m * mp["pp_mb"], "dp_comm_s": dpc["dp_total"], "memory_per_chip_bytes": memory,
        "fits": memory <= x["mem_cap"], "mfu": x["model_flops"] / (step * chips * peak), "tokens_per_s": tokens / step,
        "tokens_per_s_per_chip": tokens / step / chips, "efficiency": c["efficiency"],
        "global_batch_seqs": np.full(len(g["tp"]), x["B"]),
    }


def _memory_bound_s(p: Profile, w: Workload, g: dict, st: dict, acc) -> tuple:
    """The optimizer update (read and write every state of the chip's shard once) and the QLoRA
    dequantisation of the stage's frozen weights, both memory-bound at the datasheet bandwidth."""
    opt_params = np.where(g["z"] >= 1, st["P_n"] / st["D_n"] + st["P_e"] / st["D_e"], st["P_n"] + st["P_e"]) * st["frac"]
    optimizer_s = 2.0 * (st["wb"] + st["gb"] + st["ob"]) * opt_params / float(acc["memory_bytes_per_s"])
    dq_bytes = prof.dequant_bytes_per_weight(w.precision) * prof.frozen_share(w) * st["L_stage"] * (
        st["dense_layer"] + st["expert_layer"] / g["ep"]) / g["tp"]  # the stage's frozen block weights on the chip
    return optimizer_s, g["m"] * (2.0 + g["full"]) * dq_bytes / float(acc["memory_bytes_per_s"])
