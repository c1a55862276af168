"""The layout search: the grid of parallel layouts a training run may take, the practical limits
and the realism prior that keep it to layouts people run, and the fastest layout that fits.

``configurations`` builds every candidate layout (TP x PP x DP x EP x CP x micro-batch x
interleaving x recompute x ZeRO stage on ``chips`` chips) as numpy arrays; ``model.training`` prices
them all at once (``training.evaluate``); ``search`` keeps those that fit, fastest first, and
``best_config`` returns the first. ``practical_limits`` are the limits ``model.estimate`` and the
calibration use, so that the calibrated efficiency and the estimates see the same layouts.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from .. import terms
from ..errors import InputError
from ..scenario import Parallelism, Workload
from . import comm, moe
from .efficiency import Efficiency
from .memo import Memo, hashable
from .pick import _grid_rows, _pick, _take
from .profile import Profile
from .training import (DEFAULT_OVERLAP, RECOMPUTE, RESULT_COLUMNS, ZERO_STAGES, Overlap, _check_transformer,
                       _compute_parts, _divisors, _finish, _global_batch_seqs, _grid_arrays, _memory_bound_s, _num, _setup,
                       _stage_shape, evaluate, memory_per_chip_bytes, tokens_per_chip)

INTERLEAVE = (1, 2, 4)  # virtual pipeline stages per chip tried by the search
MICRO_BATCHES = (1, 2, 4, 8, 16, 32, 64)  # micro-batch sizes (sequences) tried by the search
MAX_CP = 32
# What the training code has, beside the layout (grid limits of ``configurations``, keys of a
# published run's ``parallelism``): sequence parallelism (Korthikanti et al. 2022, arXiv:2205.05198,
# §4.2.2) and FlashAttention (Dao et al. 2022, arXiv:2205.14135). The model assumes both (default
# True); Megatron-LM as Narayanan et al. 2021 (arXiv:2104.04473) ran it had neither, so its
# activations are Korthikanti et al.'s Table 2 "tensor parallel" row, sbh(10 + 24/t + 5as/(ht)). Nor
# had it a distributed optimizer (ZeRO-1 sharding of the optimizer states): that entered NVIDIA's GPT
# stack in 2022 (NVIDIA/NeMo pull request 4487, "Add support for Apex distributed Adam optimizer with
# GPT-3", July 2022, rebased on the sequence-parallel support of pull request 4380), so its optimizer
# states are replicated on every data-parallel rank (ZeRO stage 0). Tensor-parallel communication
# overlap is not a key here but a ``cluster.parallelism`` pin (``tp_comm_overlap``, applied by
# ``training.software_options``): off by default, on where a run's published configuration turns it
# on. Transformer Engine userbuffers split each TP all-gather/reduce-scatter into chunks that run
# under the matmul they feed (Megatron-Bridge ``comm_overlap.tp_comm_overlap_cfg``,
# set for Llama 3.1 405B on H100 TP8 and on B200 TP4 in NVIDIA-NeMo/Megatron-Bridge @f53a722
# scripts/performance/configs/llama/llama31_llm_pretrain.py).
SOFTWARE_KEYS = ("sequence_parallel", "flash_attention", "distributed_optimizer")

def _recompute_options(w: Workload, par: Parallelism | None) -> tuple:
    if par is not None and par.recompute is not None:
        return (par.recompute,)
    if w.recompute != "auto":
        return (w.recompute,)
    return RECOMPUTE


def _pin_error(field: str, value, why: str):
    raise InputError(f"cluster.parallelism.{field}: {value} is not possible here: {why}")


# --- the grid -----------------------------------------------------------------------------------

def _tile(a: np.ndarray, n: int) -> np.ndarray:
    """``np.tile(a, n)`` of a 1-d array (the same values, dtype and order) without ``np.tile``'s Python wrapper."""
    return np.broadcast_to(a, (n, a.size)).reshape(-1)


def configurations(p: Profile, chips: int, w: Workload, parallelism: Parallelism | None = None, *,
                   max_tp: int | None = None, max_pp: int | None = None, micro_batches=None, interleave=None,
                   vpp: int | None = None, min_cp_tokens: int | None = None, max_cp: int | None = None,
                   recompute_choices=None, sequence_parallel: bool = True, flash_attention: bool = True,
                   distributed_optimizer: bool = True, zero_stages=None, _masks: bool = False) -> dict:
    """Every candidate configuration for ``chips`` chips as numpy arrays of one length (the grid
    the search prices). Structural rules: tp divides the attention heads (Megatron); cp divides
    the sequence into 2·cp chunks (Megatron-Core load balancing); pp ≤ layers (stages may hold
    unequal layer counts); ep divides the experts and the data-parallel size; each data-parallel
    rank gets at least one sequence; interleaving needs m a multiple of pp (Megatron-LM).

    Limits (``practical_limits`` gives the ones ``estimate`` and the calibration use): ``max_tp``,
    ``max_pp``; ``micro_batches`` and ``interleave`` replace ``MICRO_BATCHES`` and ``INTERLEAVE``;
    ``vpp`` pins the interleaving (a published layout); ``min_cp_tokens``: context parallelism only
    when each rank keeps at least that many tokens of a sequence, ``max_cp``: at most that degree
    (``published_max_cp``; a pinned ``cp`` is kept for both); ``recompute_choices`` replaces ``RECOMPUTE`` when neither the workload nor the pins fix it.
    ``zero_stages`` replaces ``ZERO_STAGES`` (``PUBLISHED_MOE_GPU``; a pinned ``zero`` wins).
    ``sequence_parallel``, ``flash_attention`` and ``distributed_optimizer`` (``SOFTWARE_KEYS``) say
    whether the code has them: the first two set the activation memory of every row
    (``training.memory_per_chip_bytes``), the third allows ZeRO stages above 0 (unless ``zero`` is pinned).
    ``_masks`` (the layout search's shared grids, ``_shared_grid``): also ``_full`` and ``_sel``, the rows whose
    recompute is full and selective (``training._grid_arrays`` reads them instead of comparing every label)."""
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
    else:
        cp_opts = [c for c in cp_opts if c == 1 or ((min_cp_tokens is None or s / c >= min_cp_tokens)
                                                     and (max_cp is None or c <= max_cp))]
    rows = []
    is_moe = p.is_moe  # a property: read once, not per (tp, cp, pp)
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
                eps = [e for e in _divisors(dp) if p.experts % e == 0] if is_moe else [1]
                if par.ep is not None:
                    eps = [e for e in eps if e == par.ep]
                for ep in eps:
                    rows.append((tp, cp, pp, dp, ep))
    software = {"sequence_parallel": bool(sequence_parallel), "flash_attention": bool(flash_attention)}
    if not rows:
        pins = {k: v for k, v in par.model_dump(exclude_none=True).items() if k in ("tp", "pp", "dp", "cp", "ep")}
        if pins:
            raise InputError(f"cluster.parallelism: {pins} cannot be laid out on {chips} chips "
                             f"(tp·pp·dp·cp must equal the chip count, dp ≤ {B} sequences per batch"
                             + (f", ep must divide dp and the {p.experts} experts" if p.is_moe else "") + ")")
        return {k: np.zeros(0, dtype=int) for k in ("tp", "cp", "pp", "dp", "ep", "micro_batch", "vpp", "zero")} | {
            "recompute": np.zeros(0, dtype=object), "microbatches": np.zeros(0, dtype=int)} | software
    # The product base x micro-batch x interleaving x (recompute, ZeRO), filtered, as indices into the base rows
    # (gathered once at the end): the same rows in the same order as expanding the arrays step by step.
    base = np.array(rows, dtype=np.int64)
    dp_base = base[:, 3]
    mb_grid = MICRO_BATCHES if micro_batches is None else tuple(micro_batches)
    mbs = np.array([par.micro_batch] if par.micro_batch is not None else mb_grid, dtype=np.int64)
    # each step as a (rows x choices) mask whose nonzero positions, in row-major order, are the rows and choices
    # that repeating the rows and tiling the choices, then filtering, keeps in that order
    if par.micro_batch is None:  # no micro-batch larger than a data-parallel rank's share of the batch
        bi, j = np.nonzero(mbs <= np.ceil(B / dp_base)[:, None])
    else:
        bi, j = np.arange(len(base)), np.zeros(len(base), dtype=np.int64)
    mb = mbs[j]
    m = np.ceil(B / (dp_base[bi] * mb)).astype(np.int64)
    # x interleaving
    vs = np.array([vpp] if vpp is not None else (INTERLEAVE if interleave is None else tuple(interleave)), dtype=np.int64)
    pp, m2, v2 = base[bi, 2][:, None], m[:, None], vs[None, :]
    i, j = np.nonzero((v2 == 1) | ((pp > 1) & (m2 % pp == 0) & (np.ceil(p.layers / (pp * v2)) >= 1) & (pp * v2 <= p.layers)))
    bi, mb, m, v = bi[i], mb[i], m[i], vs[j]
    # x recompute x ZeRO
    rc_opts = _recompute_options(w, par)
    if recompute_choices is not None and len(rc_opts) > 1:
        rc_opts = tuple(recompute_choices)
    rcs = np.array(rc_opts, dtype=object)
    stages = ZERO_STAGES if zero_stages is None else tuple(zero_stages)
    zs = np.array([par.zero] if par.zero is not None else stages if distributed_optimizer else (0,), dtype=np.int64)
    combo_rc, combo_z = np.repeat(rcs, len(zs)), _tile(zs, len(rcs))
    replicas = (dp_base * base[:, 1] > 1)[bi]  # ZeRO needs data-parallel replicas
    ri, ci = np.nonzero((combo_z == 0)[None, :] | replicas[:, None] | (par.zero is not None))
    g = base[bi[ri]]
    grid = {"tp": g[:, 0], "cp": g[:, 1], "pp": g[:, 2], "dp": g[:, 3], "ep": g[:, 4], "micro_batch": mb[ri],
            "microbatches": m[ri], "vpp": v[ri], "recompute": combo_rc[ci], "zero": combo_z[ci]} | software
    if _masks:  # ``training._grid_arrays``' recompute masks, from the few choices instead of every row's label
        grid |= {"_full": (combo_rc == "full")[ci], "_sel": (combo_rc == "selective")[ci]}
    return grid


# Limits of the practical search (``practical_limits``): what ``model.estimate`` and the
# calibration search, so that the calibrated efficiency and the estimates see the same layouts.
PRACTICAL_MICRO_BATCHES = (1, 2, 4, 8)
# Tensor parallelism on a TPU torus: up to 16 chips along ICI, the largest degree in the published
# MaxText configurations (v5e/v5p 128B-1024B scripts: ici_tensor_parallelism=16).
TORUS_MAX_TP = 16
# Context parallelism only when every rank keeps >= 4,096 tokens of a sequence: Megatron-Core uses it
# for long sequences (NeMo/Megatron-Bridge Llama 3.1 405B: CP2 at 8,192 tokens); shorter chunks make
# the ring-attention blocks too small to hide the KV exchange (Liu et al. 2023 §3).
PRACTICAL_MIN_CP_TOKENS = 4096
# The realism prior on context parallelism: (sequence length, the largest CP a published tuned run
# uses at that length or shorter, source). A search at seq_len may use at most the CP of the longest
# listed length <= seq_len (1 below the first): CP grows with the context in published practice,
# it is not a free lever at short context.
PUBLISHED_CP = (
    (8192, 2, "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md @00b7660: Llama 3.1 405B, TP8 PP8 CP2 "
              "on 1,024 H100 and TP4 PP8 CP2 on 128 B200 at 8,192 tokens (Meta ran CP1 at 8,192: Dubey et al. "
              "2024 'The Llama 3 Herd of Models' Table 4)"),
    (131072, 16, "Dubey et al. 2024 Table 4: Llama 3 405B long-context stage, TP8 CP16 PP16 on 16,384 H100 at "
                 "131,072 tokens; NVIDIA/NeMo docs/source/performance/performance_long_sequence.md @0aa2671: "
                 "Llama 2 7B CP4 at 128K, CP8 at 256K, CP16 at 512K"),
    (1048576, 32, "NVIDIA/NeMo docs/source/performance/performance_long_sequence.md @0aa2671: Llama 2 7B, TP8 "
                  "CP32 on 1,024 H100 at 1M tokens"),
)


# The realism prior on GPU mixture-of-experts layouts: what the published Megatron-Bridge MoE recipes
# for H100 and B200 run (NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs, read 2026-12-01:
# qwen/qwen3_workload_base_configs.py @01b2977, deepseek/deepseek_workload_base_configs.py @0426418,
# gpt_oss/gpt_oss_workload_base_configs.py @07eea52; the reference runs `*-bridge-*` of 25.11 and 26.02).
# Each entry: (limit, value, what the recipes show).
PUBLISHED_MOE_GPU = (
    ("max_micro_batch", 4,
     "micro-batch 1 by default (Qwen3-235B-A22B, DeepSeek-V3, GPT-OSS 120B on H100, Qwen3-Next 80B), 2 on GB300, "
     "4 for Qwen3-30B-A3B on 8 B200/GB200 and GPT-OSS 120B on 64 B200 at EP64; 8 only on 288 GB GB300/B300 "
     "(not catalogued)"),
    ("zero_stages", (0, 1),
     "the distributed optimizer (ZeRO-1: ddp.use_distributed_optimizer = True, ddp.use_megatron_fsdp = False, "
     "Megatron-Bridge src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py @0cabbd5); no MoE recipe shards "
     "parameters or gradients (ZeRO-2/3, FSDP)"),
)
# Not a limit: the same recipes run expert parallelism 8-128 for every model of 128 or more routed experts
# (Qwen3-30B-A3B EP8 on B200, EP16 on H100; Qwen3-235B-A22B EP8-64; DeepSeek-V3 EP8-64; GPT-OSS 120B EP8/64;
# Qwen3-Next 80B EP64/128), but an EP floor of 8 is not imposed: the model does not price the recipes'
# all-to-all overlap (moe_a2a_overlap, set for Qwen3-235B-A22B on H100), so EP8 x TP2 across two nodes
# moves the pinned Qwen3-235B-A22B on 256 H100 from -8% to -30%. With ZeRO-1 the memory already forces
# expert parallelism on the large models.


def published_moe_limits(acc, experts: int) -> dict:
    """Grid limits (``configurations`` keywords) of the GPU mixture-of-experts prior
    (``PUBLISHED_MOE_GPU``): micro-batches of at most 4 sequences and ZeRO stage 0 or 1 (the distributed
    optimizer), as the published Megatron-Bridge H100/B200 MoE recipes run. Without it the fixed host time
    per MoE layer pass (``model.moe.host_s``) makes 8-sequence micro-batches with ZeRO-3 the fastest
    layout, which no MoE recipe runs. Empty for dense models and for non-GPU chips (no TPU or Trainium
    MoE recipe was read for it; TPUs keep no host time per MoE layer either)."""
    if int(experts) <= 1 or str(acc.get("kind")) != "gpu":
        return {}
    prior = {k: v for k, v, _ in PUBLISHED_MOE_GPU}
    return {"micro_batches": tuple(m for m in PRACTICAL_MICRO_BATCHES if m <= prior["max_micro_batch"]),
            "zero_stages": prior["zero_stages"]}


# The realism prior of a training framework: the data-parallel sharding modes (ZeRO stages of
# ``dataparallel``) and layout limits its code and its published recipes run, so that the free search
# does not choose a layout the framework cannot run (issue 26: the free search chose DeepSpeed-style
# ZeRO-2 for Megatron and torchtitan runs). Each entry: (id, texts that identify it in a run's
# ``framework``, ``configurations`` limits, source). Matched in this order (first hit wins: a
# "NeMo-Megatron (neuronx-nemo-megatron)" run is NeuronX, "Megatron-DeepSpeed" is DeepSpeed). A scenario
# names its framework with ``workload.training_framework``; without one the search keeps every stage.
FRAMEWORK_MODES = (
    ("neuronx", ("neuron",), {"zero_stages": (0, 1)},
     "aws-neuron/neuronx-distributed docs (parallelism overview): tensor, pipeline and data parallelism with the "
     "ZeRO-1 optimizer (NeuronZero1Optimizer; neuronx-nemo-megatron wraps the same); no ZeRO-2/3 mode"),
    ("deepspeed", ("deepspeed",), {"zero_stages": (0, 1, 2, 3)},
     "DeepSpeed configuration JSON docs, zero_optimization.stage 0-3 (Rajbhandari et al. 2020); Megatron-DeepSpeed "
     "adds Megatron's TP/PP: every stage is the framework's own"),
    ("llm-foundry", ("llm-foundry", "composer"), {"max_tp": 1, "max_pp": 1, "zero_stages": (0, 3)},
     "mosaicml/llm-foundry @061f2c7 scripts/train/benchmarking/README.md (read 2026-12-01): every row of its MPT "
     "tables is FSDP FULL_SHARD data parallelism, no tensor or pipeline parallelism; Composer's FSDP also runs "
     "NO_SHARD (stage 0). Its SHARD_GRAD_OP re-gathers weights every micro-batch, not the once-per-step "
     "DeepSpeed schedule the model's ZeRO-2 prices, so stage 2 is not offered"),
    ("fms-fsdp", ("fms-fsdp",), {"max_tp": 1, "max_pp": 1, "zero_stages": (3,)},
     "foundation-model-stack/fms-fsdp @0d31998 README.md (read 2026-12-01): the throughput table's 'Sharding "
     "Strategy' column is FSDP (hsdp/fsdp) for every model"),
    ("torchtitan", ("torchtitan",), {"zero_stages": (0, 3)},
     "pytorch/torchtitan docs/fsdp.md and torchtitan/config job_config parallelism (read 2026-12-02): FSDP2 "
     "fully_shard over data_parallel_shard_degree (stage 3), replicate/DDP over data_parallel_replicate_degree "
     "(stage 0; HSDP combines both), with TP, PP and CP; no optimizer-only (ZeRO-1) or DeepSpeed ZeRO-2 mode"),
    ("maxtext", ("maxtext",), {"zero_stages": (0, 3)},
     "AI-Hypercomputer/maxtext docs sharding page (read 2026-12-02): 'Distributed Data Parallelism, Tensor "
     "Parallelism, Fully Sharded Data Parallel, Sequence Parallel' (ici_/dcn_data_parallelism = stage 0, "
     "ici_/dcn_fsdp_parallelism = stage 3)"),
    ("megatron", ("megatron", "nemo"), {"zero_stages": (0, 1, 3)},
     "Megatron Core user guide 'Distributed Optimizer' (stage 1, --use-distributed-optimizer) and "
     "NVIDIA/Megatron-LM docs/discussions/megatron-fsdp-user-guide (stage 3: --use-megatron-fsdp "
     "--data-parallel-sharding-strategy optim_grads_params); DDP is stage 0. Megatron-FSDP also has "
     "'optim_grads' (ZeRO-2), but no published Megatron-Bridge/NeMo recipe runs it (the recipes read for "
     "PUBLISHED_MOE_GPU and the Megatron-Bridge performance summary use the distributed optimizer or FSDP), so "
     "the prior leaves it out"),
)
FRAMEWORK_IDS = tuple(k for k, _, _, _ in FRAMEWORK_MODES)
assert sorted(FRAMEWORK_IDS) == sorted(terms.TRAINING_FRAMEWORKS)  # the scenario key's choices


def framework_id(text) -> str | None:
    """The ``FRAMEWORK_MODES`` id a run's ``framework`` text names (first match in table order), or None."""
    low = str(text or "").lower()
    for key, marks, _, _ in FRAMEWORK_MODES:
        if any(m in low for m in marks):
            return key
    return None


def framework_limits(framework: str | None) -> dict:
    """``configurations`` limits of a framework id (``FRAMEWORK_MODES``); {} for None (every stage, today's search)."""
    if framework is None:
        return {}
    for key, _, limits, _ in FRAMEWORK_MODES:
        if key == framework:
            return dict(limits)
    raise InputError(f"workload.training_framework: unknown {framework!r}; expected one of {', '.join(FRAMEWORK_IDS)}")


def merge_limits(base: dict, extra: dict) -> dict:
    """Two sets of grid limits combined so that both hold: the tighter ``max_tp``/``max_pp``, the common
    ``zero_stages`` and ``micro_batches`` (``extra``'s when they share none); any other key from ``extra``."""
    out = dict(base)
    for k, v in extra.items():
        if k in ("max_tp", "max_pp") and out.get(k) is not None:
            out[k] = min(out[k], v)
        elif k in ("zero_stages", "micro_batches") and out.get(k) is not None:
            common = tuple(x for x in out[k] if x in v)
            out[k] = common or tuple(v)
        else:
            out[k] = v
    return out


def published_max_cp(seq_len: int) -> int:
    """The largest context-parallel degree published tuned runs use at ``seq_len`` tokens or
    shorter (``PUBLISHED_CP``): 1 below 8,192 tokens, 2 from 8,192 (Llama 3.1 405B on H100/B200),
    16 from 131,072 (Llama 3 405B), 32 from 1M (NeMo's long-sequence table)."""
    out = 1
    for length, cp, _ in PUBLISHED_CP:
        if seq_len >= length:
            out = cp
    return out


def practical_limits(acc: pd.Series, topology: comm.Topology | None = None, seq_len: int | None = None,
                     experts: int = 1, framework: str | None = None) -> dict:
    """Keyword limits for ``configurations`` that keep the search to layouts people run (and fast
    enough for ``estimate.compare`` over the whole catalog): tensor parallelism inside one NVLink (or
    mesh) domain (``comm.tp_domain_chips``: the node, ``chips_per_node``, or a switched multi-node
    domain such as a GB200 NVL72 rack; Megatron-LM keeps TP within an NVLink domain, Narayanan et al.
    2021 §3.3) or up to ``TORUS_MAX_TP`` chips on a TPU torus; micro-batches of
    1, 2, 4 or 8 sequences (the micro-batch sizes of the published Megatron-Bridge, NeMo and
    llm-foundry layouts are 1-4); context parallelism only with at least ``PRACTICAL_MIN_CP_TOKENS``
    tokens per rank and at most the degree published runs use at that context
    (``published_max_cp``: the realism prior; the grid's own bound ``MAX_CP`` stays for pinned
    layouts and direct searches); recomputation none or full (with FlashAttention the attention
    scores are never stored, so selective recomputation, which recomputes exactly them, saves no
    memory in ``profile.activation_bytes_per_token_per_layer`` and only adds time; a workload or pin
    that asks for it still gets it); for a mixture of ``experts`` routed experts on GPUs, the MoE prior
    (``published_moe_limits``); for a ``framework`` id, the sharding modes and layouts it runs
    (``framework_limits``, combined with the rest by ``merge_limits``)."""
    node = comm.tp_domain_chips(acc)  # chips_per_node, or a switched domain of several nodes (NVL72)
    torus = (topology.fabric == "torus") if topology is not None else int(_num(acc.get("torus_dims"), 0)) >= 1
    out = {"max_tp": max(node, TORUS_MAX_TP) if torus else node, "micro_batches": PRACTICAL_MICRO_BATCHES,
           "min_cp_tokens": PRACTICAL_MIN_CP_TOKENS, "recompute_choices": ("none", "full")}
    if seq_len is not None:
        out["max_cp"] = published_max_cp(int(seq_len))
    return merge_limits(out | published_moe_limits(acc, experts), framework_limits(framework))


def search(profile: Profile, acc: pd.Series, chips: int, workload: Workload, parallelism: Parallelism | None = None,
           efficiency: Efficiency | None = None, *, topology: comm.Topology | None = None, overlap: Overlap = DEFAULT_OVERLAP,
           memory_headroom: float | None = None, sync_loss: float | None = None, **limits) -> pd.DataFrame:
    """Every feasible configuration for ``chips`` chips, fastest first.

    ``profile`` is a ``workbook.profile.Profile``; ``acc`` a row of ``catalog.accelerators()``;
    ``workload`` a ``scenario.Workload`` (seq_len, global_batch_tokens, precision, recompute,
    optimizer, trainable_fraction); ``parallelism`` pins dimensions (``cluster.parallelism``);
    ``efficiency`` (an ``Efficiency``; default the fitted one) gives the fraction of dense peak the
    matmuls reach (``efficiency.compute_efficiency``). ``topology`` replaces the
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
                  memory_headroom=memory_headroom, sync_loss=sync_loss, parallelism=parallelism)
    df = df[df["fits"].to_numpy() & np.isfinite(df["step_time_s"].to_numpy())]
    df = df.sort_values(["step_time_s", "memory_per_chip_bytes", "tp", "pp"], kind="stable").reset_index(drop=True)
    return df[RESULT_COLUMNS]


# ``best_config`` prices in full first the FIRST_ROWS layouts of smallest lower bound, then only the
# layouts whose bound does not exceed the fastest step found (``_candidates``).
FIRST_ROWS = 256
# The bound and the step add their terms in different orders (rounding of order 1e-16 each): a layout is
# pruned only when its bound exceeds the incumbent by this relative margin, so no layout that could tie is.
PRUNE_MARGIN = 1e-9


def _candidates(p: Profile, acc, chips: int, w: Workload, grid: dict, efficiency, *, topology, overlap, memory_headroom,
                sync_loss, parallelism) -> list | None:
    """``training._price``'s columns for the layouts of ``grid`` that can be the fastest feasible one, as
    parts (rows, columns), the rows in grid order within a part (positions among the layouts that fit; None
    when none fits in memory): the same figures as pricing the whole grid, for fewer rows.

    Every column is computed row by row (``training._finish``), so pricing a subset gives each row's
    figures exactly. The memory per chip is computed for every layout first and those that do not fit
    are dropped. Of the rest, the step time is at least the bound b = m·t + (pp-1)/v·t + optimizer +
    dequantisation, times 1 + γ·log2(chips / domain chips), where t is a micro-batch's forward, backward
    and recomputation: the step adds communication exposed after overlap (never negative:
    ``dataparallel.overlapped_s``), the MoE host time and the bubble's share of them, all ≥ 0. The
    ``FIRST_ROWS`` layouts of smallest b are priced in full; of the others only those with
    b ≤ (fastest step so far) · (1 + ``PRUNE_MARGIN``): a layout above it is slower than that step, so
    neither it nor a tie on the step can be the fastest. Where a term could be negative (a negative
    fitted γ or host time) nothing is pruned."""
    x = _setup(p, acc, chips, w, efficiency, topology, overlap, memory_headroom, sync_loss, parallelism)
    g = _grid_arrays(grid)
    st = _stage_shape(p, w, g, x["fp32_grads"], x["fp8_params"])
    n = len(grid["tp"])
    memory = memory_per_chip_bytes(p, w, g, st, {"tok_chip": tokens_per_chip(w, g)})
    fit = np.flatnonzero(memory <= x["mem_cap"])
    if not len(fit):
        return None
    pos = None  # the grid rows of the layouts that fit (None: every row); the grid is cut once, to the rows priced
    if len(fit) < n:
        g, st, memory, pos = _take(g, fit, n), _take(st, fit, n), memory[fit], fit
    n = len(fit)
    c = _compute_parts(p, w, g, st, x["eff"], acc, x["peak"], {"tp": grid["tp"] if pos is None else grid["tp"][pos]})
    prunable = x["sync_factor"] >= 0.0 and (not p.is_moe or moe.host_s_per_layer(x["eff"], acc) >= 0.0)
    if n <= FIRST_ROWS or not prunable:
        return [(np.arange(n), _finish(p, acc, chips, w, grid if pos is None else _grid_rows(grid, pos), g, st, c, x, memory,
                                       labels=False))]

    def price(rows):
        return _finish(p, acc, chips, w, _grid_rows(grid, rows if pos is None else pos[rows]), _take(g, rows, n),
                       _take(st, rows, n), _take(c, rows, n), x, memory[rows], labels=False)

    t = c["t_fwd"] + c["t_bwd"] + c["t_rc"]
    optimizer_s, dequant_s = _memory_bound_s(p, w, g, st, acc)
    bound = g["m"] * t + (g["pp"] - 1.0) / g["v"] * t + optimizer_s + dequant_s
    bound = bound + x["sync_factor"] * bound
    order = np.argsort(bound, kind="stable")
    first, later = np.sort(order[:FIRST_ROWS]), order[FIRST_ROWS:]
    r = price(first)
    step = r["step_time_s"][np.isfinite(r["step_time_s"])]
    if len(step):
        later = later[bound[later] <= step.min() * (1.0 + PRUNE_MARGIN)]
    return [(first, r)] + ([(later, price(later))] if len(later) else [])


_GRIDS = Memo(1024)


def _shared_grid(profile: Profile, chips: int, workload: Workload, parallelism: Parallelism | None, limits: dict,
                 workload_key=None) -> dict:
    """``configurations`` remembered per process on its arguments, its arrays read-only: the searches of
    one chip count on offers that differ only in their network (``model.offers``) share one grid.
    ``workload_key``: ``hashable(workload)`` when the caller has made it (``estimate.training_config``'s key)."""
    key = (profile, int(chips), hashable(workload) if workload_key is None else workload_key, hashable(parallelism),
           tuple(sorted(limits.items())))

    def build():
        grid = configurations(profile, chips, workload, parallelism, **limits, _masks=True)
        for v in grid.values():
            if isinstance(v, np.ndarray):
                v.flags.writeable = False
        return grid
    return dict(_GRIDS.get(key, build))


def best_config(profile: Profile, acc: pd.Series, chips: int, workload: Workload, parallelism: Parallelism | None = None,
                efficiency: Efficiency | None = None, *, topology: comm.Topology | None = None, overlap: Overlap = DEFAULT_OVERLAP,
                memory_headroom: float | None = None, sync_loss: float | None = None, workload_key=None,
                **limits) -> dict | None:
    """The fastest feasible configuration (the first row ``search`` would return, without building
    the table: only the layouts that can be the fastest are priced, ``_candidates``) as a dict of
    Python scalars with ``chips`` and ``accelerator`` added, or None when nothing fits in memory.
    ``workload_key``: ``memo.hashable(workload)`` when the caller has it (the shared grid's key)."""
    grid = _shared_grid(profile, chips, workload, parallelism, limits, workload_key)
    if len(grid["tp"]) == 0:
        return None
    r = _candidates(profile, acc, chips, workload, grid, efficiency, topology=topology, overlap=overlap,
                    memory_headroom=memory_headroom, sync_loss=sync_loss, parallelism=parallelism)
    return None if r is None else _pick(r, [chips], acc)[0]


def _network_key(topo: comm.Topology) -> tuple:
    """A topology's fields but the domain count (which no collective reads), NaN as None: equal keys, one network."""
    return tuple((f.name, None if isinstance(v, float) and v != v else v)
                 for f in dataclasses.fields(topo) if f.name != "n_domains" for v in (getattr(topo, f.name),))


def best_configs(profile: Profile, acc, counts, workload: Workload, parallelism: Parallelism | None = None,
                 efficiency: Efficiency | None = None, *, overlap: Overlap = DEFAULT_OVERLAP,
                 memory_headroom: float | None = None, sync_loss: float | None = None, workload_key=None, **limits) -> list:
    """``best_config`` of each chip count of ``counts`` (everything else shared), as a list in their order:
    a dict, None, or the exception that count raised (returned, not raised). Counts on one network (the
    same ``comm.topology`` apart from its domain count) are priced as one grid over layouts x counts, so
    the ~500 numpy calls of a search are paid once: the grids are concatenated with each row's chip
    count and γ·log2(chips / domain chips) as columns, and ``_candidates``' rule runs per count (the
    memory filter, the ``FIRST_ROWS`` layouts of smallest bound, then those whose bound does not exceed
    that count's fastest step). Every column is computed row by row, so each count's answer is
    ``best_config``'s to the bit (``tests/model/test_search_batch.py``)."""
    out, nets = [None] * len(counts), {}
    for j, n in enumerate(int(c) for c in counts):
        try:
            grid = _shared_grid(profile, n, workload, parallelism, limits, workload_key)
            if len(grid["tp"]):
                x = _setup(profile, acc, n, workload, efficiency, None, overlap, memory_headroom, sync_loss, parallelism)
                nets.setdefault(_network_key(x["topo"]), []).append((j, n, grid, x))
        except Exception as e:  # noqa: BLE001 - handed back per count, as best_config would raise it
            out[j] = e
    for parts in nets.values():
        for j, answer in _batch(profile, acc, workload, parts):
            out[j] = answer
    return out


def _batch(p: Profile, acc, w: Workload, parts: list) -> list:
    """(index, answer) of each count of ``parts`` ((index, chips, grid, ``_setup``), one network) by one grid."""
    x = dict(parts[0][3])
    sizes = [len(grid["tp"]) for _, _, grid, _ in parts]
    grid = {k: (np.concatenate([pt[2][k] for pt in parts]) if isinstance(v, np.ndarray) else v)
            for k, v in parts[0][2].items()}
    group = np.repeat(np.arange(len(parts)), sizes)
    g = _grid_arrays(grid)
    st = _stage_shape(p, w, g, x["fp32_grads"], x["fp8_params"])
    n = len(group)
    memory = memory_per_chip_bytes(p, w, g, st, {"tok_chip": tokens_per_chip(w, g)})
    fit = np.flatnonzero(memory <= x["mem_cap"])
    g, st, memory, group = _take(g, fit, n), _take(st, fit, n), memory[fit], group[fit]
    n = len(fit)
    chips = np.array([pt[1] for pt in parts], dtype=np.int64)[group]
    sync = np.array([pt[3]["sync_factor"] for pt in parts], dtype=float)[group]
    c = _compute_parts(p, w, g, st, x["eff"], acc, x["peak"], {"tp": grid["tp"][fit]})
    host_ok = not p.is_moe or moe.host_s_per_layer(x["eff"], acc) >= 0.0
    first, later, bound = [], [], None
    for k, pt in enumerate(parts):
        rows = np.flatnonzero(group == k)
        if len(rows) <= FIRST_ROWS or not (pt[3]["sync_factor"] >= 0.0 and host_ok):
            first.append(rows)
        else:
            if bound is None:  # _candidates' bound, for every row
                t = c["t_fwd"] + c["t_bwd"] + c["t_rc"]
                optimizer_s, dequant_s = _memory_bound_s(p, w, g, st, acc)
                bound = g["m"] * t + (g["pp"] - 1.0) / g["v"] * t + optimizer_s + dequant_s
                bound = bound + sync * bound
            order = rows[np.argsort(bound[rows], kind="stable")]
            first.append(np.sort(order[:FIRST_ROWS]))
            later.append((k, order[FIRST_ROWS:]))

    def price(rows):  # the grid cut once, from its whole rows (``fit[rows]``)
        return _finish(p, acc, chips[rows], w, _grid_rows(grid, fit[rows]), _take(g, rows, n), _take(st, rows, n),
                       _take(c, rows, n), x | {"sync_factor": sync[rows]}, memory[rows], labels=False)

    rows = np.concatenate(first)
    r = price(rows)
    more = []
    for k, rest in later:
        step = r["step_time_s"][(group[rows] == k) & np.isfinite(r["step_time_s"])]
        more.append(rest[bound[rest] <= step.min() * (1.0 + PRUNE_MARGIN)] if len(step) else rest)
    priced = [(rows, r)]
    if more and sum(map(len, more)):
        extra = np.concatenate(more)
        priced.append((extra, price(extra)))
    return list(zip([pt[0] for pt in parts], _pick(priced, [pt[1] for pt in parts], acc, group)))


def compute_share(profile: Profile, acc: pd.Series, chips: int, workload: Workload,
                  parallelism: Parallelism | None = None, efficiency: Efficiency | None = None, **kwargs) -> float | None:
    """``compute_s / step_time_s`` of the best configuration (None when nothing fits): the factor by
    which the scaling model's MFU falls below the matmul efficiency it is given. An efficiency that
    was fitted to published end-to-end MFU already contains the runs' communication and bubbles;
    ``workbook.calibrate.fit_training`` fits it to observed MFU divided by this share (at a fixed
    point, since the share depends on the efficiency) so that they are not counted twice."""
    cfg = best_config(profile, acc, chips, workload, parallelism, efficiency, **kwargs)
    return None if cfg is None else cfg["compute_s"] / cfg["step_time_s"]
