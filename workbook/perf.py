"""Accelerator performance: roofline, a calibrated efficiency model, training and inference estimates.

Everything here is a small pure function over scalars or numpy arrays (numpy ufuncs only), so the
scaling search and the widgets can evaluate a grid at once. ``compare(s)`` is the one table that the
CLI (``estimate``), the cost model and the notebooks build on.

The efficiency model (parameters in ``data/efficiency.csv``, fitted by ``workbook.calibrate`` on the
published runs in ``data/reference_runs.csv``; every parameter row names the runs that set it):

- Matmul work reaches ``ceiling[family] · width · moe`` of the dense peak of its precision
  (``compute_efficiency``). ``ceiling``: the fraction of peak that a transformer's matrix
  multiplications reach inside a training step (``matmul_ceiling``; fitted so that the multi-chip
  model of ``workbook.scaling``, with its communication, pipeline bubbles, recomputation and
  optimizer time, reproduces the published end-to-end MFU) or in an inference engine
  (``inference_matmul_ceiling``). ``width = h / (h + κ · peak / HBM bandwidth)``: per token, the
  element-wise work of a layer (norms, activations, residuals, rotary embeddings, softmax
  statistics) moves O(h) bytes through HBM while its matmuls do O(h²) FLOPs, so their time ratio is
  proportional to the chip's ridge point (peak FLOP/s over HBM bytes/s, Williams et al. 2009) over
  h; κ is one pooled constant. The same term gives FP8 its Amdahl's-law ceiling: the FP8 peak doubles
  the ridge point, so small models gain little from FP8 (only the matmul time shrinks). ``moe``
  (training only): mixture-of-experts overhead per platform (see ``moe_factor``).
- Decode streams weights and KV cache from HBM at ``decode_memory_efficiency[family]`` of the
  datasheet bandwidth; tensor parallelism adds two all-reduces per layer (Megatron-LM, Shoeybi et al.
  2019), each ``latency[family] + bytes / link bandwidth``; continuous batching lets chunked prefill
  share the decode step's roofline (Agrawal et al. 2024, Sarathi-Serve).
- Roofline (Williams et al. 2009; "How to Scale Your Model" ch. 1): a step takes the larger of its
  compute time and its memory time.
- Multi-chip training time is ``workbook.scaling``'s best configuration (tensor, pipeline, data,
  expert and context parallelism, ZeRO, recomputation, micro-batch) over a practical grid
  (``scaling.practical_limits``), the same search the calibration runs, so that the efficiency is
  not charged twice for communication and bubbles. Generic (non-transformer) workloads use the
  sharded data-parallel model ``data_parallel_fallback``.

Calibrated range: training runs of 124M to 1T parameters (hidden size 768 to 18,432) at 8 to 8,192
chips. Below 1B parameters the width term rests on three llm-foundry runs on 8 GPUs (MPT-125M on A100,
MPT-350M in FP8 and MPT-760M on H100; predicted within -19% to +2%): smaller models, or small models
at scale, are outside what the runs check (see the README).

Uncertainty: the ``_low``/``_high`` columns are P10/P90 of observed/predicted over the calibration
runs (per family with at least 5 runs of that metric, pooled otherwise; for a family with no
calibrated parameters of its own, the spread of predicting the calibrated families from pooled
parameters), widened to contain the estimate.
"""
from __future__ import annotations

import contextlib
import functools
import math

import numpy as np
import pandas as pd

from . import catalog
from .errors import InputError
from .profile import (Profile, bytes_per_value, decode_flops_per_token, decode_weight_bytes_read,
                      kv_cache_bytes_per_token, prefill_flops_per_token, train_flops_per_token,
                      training_state_bytes_per_param, weight_bytes, workload_profile)
from .scenario import Parallelism, Scenario

try:  # the multi-chip training model (issue 4); the data-parallel fallback below works without it
    from . import scaling
except ImportError:  # pragma: no cover - depends on what is checked out
    scaling = None

TRAINING_KEYS = ["step_time_s", "tokens_per_s", "mfu", "training_days", "chip_hours"]
INFERENCE_KEYS = ["ttft_ms", "tpot_ms", "output_tokens_per_s"]
# the parallel layout of a training option (workbook.scaling's best configuration)
CONFIG_KEYS = ["tp", "pp", "dp", "ep", "cp", "zero", "recompute", "micro_batch"]
COLUMNS = (["accelerator", "family", "chips", "fits", "reason", "peak_flops_per_s", "memory_per_chip_bytes"]
           + [k + s for k in TRAINING_KEYS for s in ("", "_low", "_high")]
           + [k + s for k in INFERENCE_KEYS for s in ("", "_low", "_high")]
           + ["max_batch", "batch", "meets_slo", "replicas"] + CONFIG_KEYS + ["meets_deadline", "calibrated"])
_INT_COLUMNS = ("chips", "max_batch", "batch", "replicas", "tp", "pp", "dp", "ep", "cp", "zero", "micro_batch")


# --- parameters ------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _param_file() -> dict[tuple[str, str], float]:
    df = catalog.load("efficiency")
    return {(p, s): float(v) for p, s, v in zip(df["parameter"], df["scope"], df["value"])}


_OVERRIDES: list[dict] = []


def _param_table() -> dict[tuple[str, str], float]:
    return _OVERRIDES[-1] if _OVERRIDES else _param_file()


@contextlib.contextmanager
def using_parameters(table: dict[tuple[str, str], float]):
    """Evaluate the model with in-memory parameters ``{(parameter, scope): value}`` instead of
    data/efficiency.csv (the calibration fit and its hold-out check use this)."""
    _OVERRIDES.append(table)
    try:
        yield
    finally:
        _OVERRIDES.pop()


def parameter(name: str, scope: str | None = None, default_scope: str = "pooled") -> float:
    """An efficiency parameter from ``data/efficiency.csv``: the ``scope`` value (an accelerator
    family or platform) when calibrated, else the pooled value."""
    t = _param_table()
    if scope is not None and (name, scope) in t:
        return t[(name, scope)]
    if (name, default_scope) in t:
        return t[(name, default_scope)]
    raise InputError(f"data/efficiency.csv: parameter {name!r}: no value for {scope!r} and no pooled value "
                     f"(run `python -m workbook calibrate --write`)")


def is_calibrated(name: str, family: str) -> bool:
    """Whether ``family`` has its own fitted value of ``name`` (else the pooled value is used)."""
    return (name, family) in _param_table()


# parameters that change the training efficiency (the key of the cached multi-chip search)
TRAINING_PARAMETERS = ("matmul_ceiling", "width_hidden_per_ridge", "moe_bytes_per_flop", "network_loss_per_doubling")


def _training_fingerprint() -> tuple:
    t = _param_table()
    return tuple(sorted((k, v) for k, v in t.items() if k[0] in TRAINING_PARAMETERS))


def _family(acc) -> str:
    return str(acc["family"])


def _platform(acc) -> str:
    return str(acc["platform"])


# --- efficiency --------------------------------------------------------------------------------------

def width_factor(hidden, h0):
    """Share of a layer's time spent in matmuls, ``h / (h + h0)``: element-wise work per token grows
    like h, matmul work like h² (``width_scale`` gives h0)."""
    h = np.asarray(hidden, dtype=float)
    return h / (h + h0)


def width_scale(acc, precision: str) -> float:
    """h0 of ``width_factor`` on this chip at this precision: κ · peak / HBM bandwidth.

    Per token and layer, matmuls do c·h² FLOPs (at the peak) and element-wise operations move b·h
    bytes (at the HBM bandwidth), so element-wise time / matmul time = (b/c)·(peak/bandwidth)/h: the
    ridge point (Williams et al. 2009) scales the penalty; κ = ``width_hidden_per_ridge`` is fitted
    once for all chips (data/efficiency.csv). H100 (ridge 295 FLOP/byte in BF16) pays twice A100's
    (153) at the same width, FP8 twice BF16."""
    return parameter("width_hidden_per_ridge") * _peak(acc, precision) / float(acc["memory_bytes_per_s"])


def dp_bytes_per_s(acc) -> float:
    """Per-chip bandwidth of the data-parallel gradient path: the network (``inter_node_bytes_per_s``)
    when the fast domain ends at the node (GPU servers), the chip-to-chip links
    (``intra_node_bytes_per_s``) when it spans a pod (TPU, Trainium); the other one when a figure is
    missing."""
    inter, intra = acc["inter_node_bytes_per_s"], acc["intra_node_bytes_per_s"]
    node_scale = (acc.get("fast_domain_chips") or 1) <= (acc.get("chips_per_node") or 1)
    first, second = (inter, intra) if node_scale else (intra, inter)
    for v in (first, second):
        if v is not None and not pd.isna(v):
            return float(v)
    return math.nan


def moe_factor(p: Profile, acc, bytes_per_flop, compute_rate):
    """Mixture-of-experts training overhead 1 / (1 + c · x · rate / bw) that the multi-chip model
    does not explain (router, token permutation, grouped expert matmuls, load imbalance).

    x = N_total/N_active − 1 counts the weights a token does not use, ``rate`` = peak × efficiency
    the chip's matmul rate and ``bw`` its data-parallel bandwidth (``dp_bytes_per_s``); c (bytes per
    FLOP, fitted per platform, data/efficiency.csv) sets the scale. The form is that of the gradient
    and optimizer traffic of the unused experts, the one that explains the H100 and B200
    Megatron-Bridge runs of the same model on the same 400 Gb/s network with one constant; the
    explicit expert-parallel communication of ``workbook.scaling`` comes on top. 1 for dense models."""
    if not p.is_moe or p.generic:
        return 1.0
    x = p.params_total / p.params_active - 1.0
    return 1.0 / (1.0 + bytes_per_flop * x * np.asarray(compute_rate, dtype=float) / dp_bytes_per_s(acc))


def network_loss(acc) -> float:
    """γ of ``workbook.scaling``'s synchronisation term (``sync_s`` = γ · log2(chips / fast-domain
    chips) of the step) for the accelerator's family: fitted only where the published runs of one
    model and code at three or more chip counts beyond one domain leave a loss that the
    communication model does not explain (data/efficiency.csv ``network_loss_per_doubling``; 0 for
    every other family)."""
    t = _param_table()
    return float(t.get(("network_loss_per_doubling", _family(acc)), t.get(("network_loss_per_doubling", "pooled"), 0.0)))


def _peak(acc, precision: str) -> float:
    """Dense peak of ``precision`` on one chip, NaN when unpublished (``catalog.peak_flops_per_s``)."""
    return catalog.peak_flops_per_s(acc, precision)


def compute_efficiency(acc, precision: str, work: str, profile: Profile, tp=1, tokens=None, ceiling=None):
    """Fraction of the dense peak of ``precision`` that matmul work reaches (scalar or numpy array,
    broadcast over ``tp`` and ``tokens``).

    ``work``: ``"train"`` (the matmuls of a training step: forward, backward; the family's
    ``matmul_ceiling``), ``"prefill"`` or ``"decode"`` (forward passes in an inference engine: the
    family's ``inference_matmul_ceiling``; a family without training runs takes the median of the
    calibrated families of its ``kind``, GPU, TPU or ASIC, else the pooled value). Efficiency =
    ceiling · width_factor(h, width_scale) ·
    moe_factor (training only); ``ceiling`` overrides the table. Tensor parallelism does not change
    it (with sequence parallelism both the matmuls and the element-wise work are split tp ways), and
    chip count does not enter: communication, bubbles and recomputation are ``workbook.scaling``'s.
    ``tokens`` (rows of each matmul per chip: micro-batch × sequence, or the decode batch) caps the
    result at the weight-streaming roofline 2·tokens·bandwidth / (bytes per weight · peak): a matmul
    over few tokens cannot run faster than its weights arrive ("How to Scale Your Model" ch. 1);
    inference streams at ``decode_memory_efficiency`` of the datasheet bandwidth, training at the
    datasheet bandwidth (a bound that rarely binds)."""
    if work not in ("train", "prefill", "decode"):
        raise InputError(f"work: expected train, prefill or decode, got {work!r}")
    fam = _family(acc)
    peak = _peak(acc, precision)
    if ceiling is None:
        ceiling = (parameter("matmul_ceiling", fam, default_scope=str(acc["kind"]))
                   if work == "train" and ("matmul_ceiling", str(acc["kind"])) in _param_table()
                   else parameter("matmul_ceiling" if work == "train" else "inference_matmul_ceiling", fam))
    eff = np.asarray(ceiling, dtype=float)
    if not profile.generic:
        eff = eff * width_factor(profile.hidden, width_scale(acc, precision))
        if work == "train":
            eff = eff * moe_factor(profile, acc, parameter("moe_bytes_per_flop", _platform(acc)), peak * eff)
    eff = eff * np.ones_like(np.asarray(tp, dtype=float))
    if tokens is not None:
        bw = float(acc["memory_bytes_per_s"]) * (1.0 if work == "train" else parameter("decode_memory_efficiency", fam))
        roof = 2.0 * np.asarray(tokens, dtype=float) * bw / (bytes_per_value(precision) * peak)
        eff = np.minimum(eff, roof)
    return eff if np.ndim(eff) else float(eff)


# --- roofline ----------------------------------------------------------------------------------------

def roofline_time_s(flops, hbm_bytes, peak_flops_per_s, hbm_bytes_per_s):
    """Roofline lower bound: compute and memory traffic overlap perfectly (Williams et al. 2009;
    'How to Scale Your Model' ch. 1)."""
    return np.maximum(np.asarray(flops) / peak_flops_per_s, np.asarray(hbm_bytes) / hbm_bytes_per_s)


def ridge_point(peak_flops_per_s, hbm_bytes_per_s):
    """Arithmetic intensity (FLOPs/byte) where a chip turns from memory- to compute-bound."""
    return np.asarray(peak_flops_per_s) / hbm_bytes_per_s


def roofline_table(accelerators: pd.DataFrame, precision: str = "bf16") -> pd.DataFrame:
    """Attainable FLOP/s per chip over a range of arithmetic intensities (tidy, for the chart)."""
    ai = np.geomspace(1, 1e4, 60)
    rows = []
    for _, a in accelerators.iterrows():
        peak = _peak(a, precision)
        if math.isnan(peak):
            continue
        att = np.minimum(peak, ai * float(a["memory_bytes_per_s"]))
        rows.append(pd.DataFrame({"accelerator": a["accelerator"], "intensity_flops_per_byte": ai,
                                  "attainable_flops_per_s": att, "peak_flops_per_s": peak,
                                  "ridge_flops_per_byte": peak / float(a["memory_bytes_per_s"])}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


# --- inference building blocks -------------------------------------------------------------------------

def tp_allreduce_s(p: Profile, acc, tokens, tp, latency_s):
    """Time of tensor parallelism's two all-reduces per layer over ``tokens`` activations (Megatron-LM,
    Shoeybi et al. 2019): 2·L·(latency + 2·(tp−1)/tp · tokens·h·2 bytes / link bandwidth), the ring
    all-reduce volume of 'How to Scale Your Model' ch. 3. Zero for tp = 1."""
    tp = np.asarray(tp, dtype=float)
    link = float(acc["intra_node_bytes_per_s"]) if not pd.isna(acc["intra_node_bytes_per_s"]) else math.nan
    data = 2.0 * (tp - 1.0) / tp * np.asarray(tokens, dtype=float) * p.hidden * 2.0
    t = 2.0 * p.layers * (latency_s + np.where(tp > 1, data / link if link == link else np.inf, 0.0))
    return np.where(tp > 1, t, 0.0)


def decode_step_s(p: Profile, acc, batch, context, tp, precision: str, weight_precision: str, kv_precision: str,
                  mem_eff=None, latency_s=None, compute_eff=None, prefill_tokens=0.0, prefill_context=0.0):
    """Time of one decode step (one token for each of ``batch`` sequences at ``context`` cached tokens)
    on a tensor-parallel group of ``tp`` chips: roofline of HBM traffic (active weights once + each
    sequence's KV cache) against FLOPs, plus the TP all-reduces ('How to Scale Your Model' ch. 7).

    ``prefill_tokens`` of other requests' prompts (of ``prefill_context`` tokens) can ride along in
    the same step (chunked prefill, Agrawal et al. 2024 "Sarathi-Serve"): their FLOPs add to the
    compute side, their weight reads are the step's own."""
    fam = _family(acc)
    mem_eff = parameter("decode_memory_efficiency", fam) if mem_eff is None else mem_eff
    latency_s = parameter("tp_collective_latency_s", fam) if latency_s is None else latency_s
    b = np.asarray(batch, dtype=float)
    tp = np.asarray(tp, dtype=float)
    pre = np.asarray(prefill_tokens, dtype=float)
    bytes_ = decode_weight_bytes_read(p, b + pre, weight_precision) + b * np.asarray(context, dtype=float) * kv_cache_bytes_per_token(p, kv_precision)
    t_mem = bytes_ / (tp * float(acc["memory_bytes_per_s"]) * mem_eff)
    if compute_eff is None:
        compute_eff = compute_efficiency(acc, precision, "decode", p, tp=tp)
    flops = b * decode_flops_per_token(p, context) + pre * prefill_flops_per_token(p, prefill_context)
    t_comp = flops / (tp * _peak(acc, precision) * compute_eff)
    return np.maximum(t_mem, t_comp) + tp_allreduce_s(p, acc, b + pre, tp, latency_s)


def prefill_s(p: Profile, acc, tokens, input_tokens, tp, precision: str, weight_precision: str,
              mem_eff=None, latency_s=None, compute_eff=None):
    """Time to prefill ``tokens`` prompt tokens (prompts of ``input_tokens``) on ``tp`` chips: roofline
    of FLOPs (2N + causal attention per token) against one read of the weights, plus TP all-reduces."""
    fam = _family(acc)
    mem_eff = parameter("decode_memory_efficiency", fam) if mem_eff is None else mem_eff
    latency_s = parameter("tp_collective_latency_s", fam) if latency_s is None else latency_s
    n = np.asarray(tokens, dtype=float)
    tp = np.asarray(tp, dtype=float)
    if compute_eff is None:
        compute_eff = compute_efficiency(acc, precision, "prefill", p, tp=tp)
    t_comp = n * prefill_flops_per_token(p, input_tokens) / (tp * _peak(acc, precision) * compute_eff)
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


def serving_point(p: Profile, acc, batch, input_tokens, output_tokens, tp, precision, weight_precision,
                  kv_precision, mem_eff=None, latency_s=None, ceiling=None, static: bool = False):
    """TTFT, TPOT and output tokens/s of one replica serving ``batch`` concurrent requests.

    Continuous batching with chunked prefill (vLLM, SGLang, TensorRT-LLM; Agrawal et al. 2024): each
    decode step also carries batch·I/O prompt tokens of the requests that replace finished ones, so
    their FLOPs share the step's roofline with the decode; TPOT is that step at the mean context
    I + O/2, output tokens/s = batch / TPOT, TTFT is one prompt's prefill (no queueing).
    ``static`` batching (a batch prefilled together, then decoded: Neuron, benchmark_latency): output
    tokens/s = batch·O / (prefill(batch·I) + O·TPOT), TTFT = prefill(batch·I).
    Arrays broadcast over the inputs; ``mem_eff``, ``latency_s`` and ``ceiling`` override
    data/efficiency.csv (the calibration grid)."""
    I = 0.0 if input_tokens is None else float(input_tokens)
    O = 0.0 if output_tokens is None else float(output_tokens)
    b = np.asarray(batch, dtype=float)
    ce_d = compute_efficiency(acc, precision, "decode", p, tp=tp, ceiling=ceiling)
    ce_p = compute_efficiency(acc, precision, "prefill", p, tp=tp, ceiling=ceiling)
    kw = dict(mem_eff=mem_eff, latency_s=latency_s)
    if static or I == 0 or O == 0:
        tpot = decode_step_s(p, acc, b, I + O / 2.0, tp, precision, weight_precision, kv_precision, compute_eff=ce_d, **kw)
        prefill_batch = prefill_s(p, acc, b * I, I, tp, precision, weight_precision, compute_eff=ce_p, **kw) if I > 0 else 0.0 * tpot
        thr = b * O / (prefill_batch + O * tpot) if O > 0 else b / tpot
    else:
        tpot = decode_step_s(p, acc, b, I + O / 2.0, tp, precision, weight_precision, kv_precision, compute_eff=ce_d,
                             prefill_tokens=b * I / O, prefill_context=I, **kw)
        thr = b / tpot
    if I > 0:
        ttft = prefill_s(p, acc, (b if static else 1.0) * I, I, tp, precision, weight_precision, compute_eff=ce_p, **kw)
    else:
        ttft = np.zeros_like(tpot)
    return {"ttft_s": ttft * np.ones_like(tpot), "tpot_s": tpot, "output_tokens_per_s": thr}


# --- bands ---------------------------------------------------------------------------------------------

def band(metric: str, family: str) -> tuple[float, float]:
    """P10 and P90 of observed/predicted for ``metric`` (mfu, output_tokens_per_s_per_chip, tpot_ms,
    ttft_ms) on ``family``: the family's own scatter when it has enough runs, else pooled; for a
    family without calibrated parameters, the scatter of predicting families from pooled values.
    Widened to include 1 so that low <= estimate <= high."""
    t = _param_table()
    for scope in (family, "pooled" if is_calibrated(_CAL_PARAM[metric], family) else "uncalibrated", "pooled"):
        k10, k90 = (f"band_p10_{metric}", scope), (f"band_p90_{metric}", scope)
        if k10 in t and k90 in t:
            # the band always contains the point estimate (a family whose runs all sit on one side
            # of the model would otherwise give a band that excludes it)
            return min(t[k10], 1.0), max(t[k90], 1.0)
    return (math.nan, math.nan)


_CAL_PARAM = {"mfu": "matmul_ceiling", "output_tokens_per_s_per_chip": "decode_memory_efficiency",
              "tpot_ms": "decode_memory_efficiency", "ttft_ms": "matmul_ceiling"}


# --- accelerators --------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _acc_records() -> dict[str, dict]:
    df = catalog.accelerators()
    return {r["accelerator"]: r for r in df.to_dict("records")}


def accelerator_record(ident: str) -> dict:
    """Catalog row of an accelerator (id or alias) as a dict, cached."""
    return _acc_records()[catalog.resolve("accelerators", ident)]


def usable_accelerators(precision: str) -> list[str]:
    """Catalog accelerators with a published dense peak for ``precision``."""
    return [a for a, r in _acc_records().items() if not math.isnan(_peak(r, precision))]


# --- training ------------------------------------------------------------------------------------------

def _recompute_choices(w) -> list[str]:
    return ["none", "selective", "full"] if w.recompute == "auto" else [w.recompute]


def _train_flops_per_token(p: Profile, w) -> float:
    """Model FLOPs per trained token; with ``trainable_fraction`` < 1 only that share of weights gets
    weight gradients: (4 + 2·fraction)·N + attention (forward 2N, activation gradients 2N, weight
    gradients 2N·fraction; Kaplan et al. 2020 §2.1 split of 6N)."""
    if p.generic:
        return math.nan
    full = float(train_flops_per_token(p, w.seq_len))
    return full - 2.0 * p.params_matmul_active * (1.0 - w.trainable_fraction)


def data_parallel_fallback(p: Profile, acc: dict, chips, w, headroom: float, tokens_per_step=None):
    """Sharded data parallelism, vectorised over ``chips``: the multi-chip model of generic
    (non-transformer) workloads, which ``workbook.scaling`` cannot split into layers, and the first
    guess of a chip count (``choose_training_chips``) that the scaling search then refines.

    The better of two layouts that fit memory:
    - ZeRO-3 / FSDP over all chips (Rajbhandari et al. 2020): weights, gradients and optimizer states
      split n ways; per step each chip moves 3·2·N·(n−1)/n bytes (all-gather forward and backward,
      reduce-scatter gradients: ZeRO §7);
    - hybrid sharding (HSDP; PyTorch FSDP ``HYBRID_SHARD``, Zhao et al. 2023): ZeRO-3 inside the fast
      domain of k chips, replicas across domains; 3·2·N·(k−1)/k bytes over the fast links plus an
      all-reduce of the 2·N/k-byte gradient shard, 2·(2N/k)·(m−1)/m bytes, over the network.
    Each chip holds one sequence's activations (the cheapest recomputation that fits) and two layers
    of gathered weights. Traffic inside the fast domain uses ``intra_node_bytes_per_s``, across it the
    per-chip ``inter_node_bytes_per_s``; communication overlaps with compute and only the excess is
    exposed ('How to Scale Your Model' ch. 5); compute runs at ``compute_efficiency``. Returns
    arrays: step_time_s, compute_s, exposed_comm_s, memory_per_chip_bytes, fits, recompute (index
    into none/selective/full, −1 if nothing fits)."""
    from .profile import activation_bytes

    n = np.asarray(chips, dtype=float)
    tokens = float(tokens_per_step) if tokens_per_step else w.seq_len * n
    frac = w.trainable_fraction
    state = training_state_bytes_per_param(w.precision if w.precision in ("fp32",) else "bf16", w.optimizer)
    bpp = 2.0 + (state - 2.0) * frac
    usable = float(acc["memory_bytes"]) * (1.0 - headroom)
    fast = float(acc.get("fast_domain_chips") or acc.get("chips_per_node") or 1)
    k = np.minimum(n, fast)
    m = n / k
    gathered = 2.0 * 2.0 * p.params_total / max(p.layers, 1)
    intra = float(acc["intra_node_bytes_per_s"]) if not pd.isna(acc["intra_node_bytes_per_s"]) else math.nan
    inter = float(acc["inter_node_bytes_per_s"]) if not pd.isna(acc["inter_node_bytes_per_s"]) else math.nan
    bw_all = np.where(n <= fast, intra, min(intra, inter) if inter == inter else math.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        comm_fsdp = np.where(n > 1, 3.0 * 2.0 * p.params_total * (n - 1.0) / n / bw_all, 0.0)
        comm_hsdp = (np.where(k > 1, 3.0 * 2.0 * p.params_total * (k - 1.0) / k / intra, 0.0)
                     + np.where(m > 1, 2.0 * (2.0 * p.params_total / k) * (m - 1.0) / m / inter, 0.0))
    layouts = [(p.params_total * bpp / n + gathered, np.where(np.isnan(comm_fsdp), np.inf, comm_fsdp)),
               (p.params_total * bpp / k + gathered, np.where(np.isnan(comm_hsdp), np.inf, comm_hsdp))]
    peak = _peak(acc, w.precision)
    eff = compute_efficiency(acc, w.precision, "train", p)
    flops = _train_flops_per_token(p, w) * tokens if not p.generic else p.train_flops_per_sample * tokens
    compute = flops / (n * peak * eff)
    best = {"step_time_s": np.full(n.shape, np.inf), "compute_s": compute * np.ones(n.shape),
            "exposed_comm_s": np.full(n.shape, np.nan), "memory_per_chip_bytes": np.full(n.shape, np.nan),
            "fits": np.zeros(n.shape, dtype=bool), "recompute": np.full(n.shape, -1.0)}
    for state_bytes, comm in layouts:
        rec_idx = np.full(n.shape, -1.0)
        mem = np.full(n.shape, np.nan)
        for i, rc in enumerate(["none", "selective", "full"]):
            if rc not in _recompute_choices(w):
                continue
            act = activation_bytes(p, w.seq_len, 1, rc) if not p.generic else 0.0
            m_rc = state_bytes + act
            take = (rec_idx < 0) & (m_rc <= usable)
            rec_idx = np.where(take, i, rec_idx)
            mem = np.where(take | np.isnan(mem) & (rec_idx < 0), m_rc, mem)
        exposed = np.maximum(comm - compute, 0.0)
        step = compute + exposed
        fits = (rec_idx >= 0) & np.isfinite(comm)
        better = fits & (~best["fits"] | (step < best["step_time_s"]))
        unset = ~best["fits"] & ~fits & np.isnan(best["memory_per_chip_bytes"])
        for key, val in (("step_time_s", step), ("exposed_comm_s", exposed), ("memory_per_chip_bytes", mem),
                         ("recompute", rec_idx)):
            best[key] = np.where(better, val, np.where(unset, val, best[key]) if key == "memory_per_chip_bytes" else best[key])
        best["fits"] = best["fits"] | fits
    return best


def _training_tokens(w) -> float:
    if w.tokens is not None:
        return float(w.tokens)
    return float(w.samples) * (w.seq_len if w.generic is None else 1.0)


def choose_training_chips(p: Profile, acc: dict, s: Scenario) -> int | None:
    """First guess of the chip count for training when the scenario pins none (``estimate_training``
    refines it with the scaling search).

    Rule: candidates are whole nodes (multiples of ``chips_per_node``) up to
    ``constraints.max_chips`` (else the accelerator's ``max_cluster_chips``, else 65,536 as a search
    bound). Among those where the model fits in memory, take the fewest chips that finish by
    ``constraints.deadline_days``; with no deadline, the fewest chips that fit; when no count meets
    the deadline, the count with the shortest time. Evaluated with ``data_parallel_fallback`` (fast,
    vectorised) on ~96 geometrically spaced node counts, then on every count between the last one
    that misses and the first one that meets."""
    node = int(acc.get("chips_per_node") or 1)
    cap = _chip_cap(acc, s)
    if s.constraints.max_chips and s.constraints.max_chips < node:
        return _first_feasible(p, acc, s, np.array([float(s.constraints.max_chips)]))
    max_nodes = max(cap // node, 1)
    # coarse geometric grid of node counts, then every count between the last miss and the first hit
    coarse = np.unique(np.round(np.geomspace(1, max_nodes, min(max_nodes, 96)))) * node
    pick = _first_feasible(p, acc, s, coarse, return_index=True)
    if pick is None:
        return None
    i, best = pick
    if i > 0 and best is not None:
        lo, hi = int(coarse[i - 1]) // node, int(coarse[i]) // node
        fine = np.unique(np.round(np.linspace(lo + 1, hi, min(hi - lo, 512)))) * node
        refined = _first_feasible(p, acc, s, fine)
        best = refined if refined is not None else best
    return best


def _chip_cap(acc: dict, s: Scenario) -> int:
    if s.constraints.max_chips:
        return int(s.constraints.max_chips)
    return int(acc["max_cluster_chips"]) if not pd.isna(acc.get("max_cluster_chips")) else 65536


def _first_feasible(p: Profile, acc: dict, s: Scenario, counts: np.ndarray, return_index: bool = False):
    """The fewest of ``counts`` chips that fit and meet the deadline (no deadline: that fit); when
    none meets the deadline, the count with the shortest time. None when nothing fits."""
    w = s.workload
    r = data_parallel_fallback(p, acc, counts, w, s.constraints.min_memory_headroom, w.global_batch_tokens)
    ok = r["fits"]
    if not ok.any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        days = _training_tokens(w) / (_tokens_per_step(w, counts) / r["step_time_s"]) / 86400.0
    dl = s.constraints.deadline_days
    good = ok & (days <= dl) if dl is not None else ok
    if good.any():
        i = int(np.flatnonzero(good)[0])
        return (i, int(counts[i])) if return_index else int(counts[i])
    i = int(np.argmin(np.where(ok, days, np.inf)))
    return (0, int(counts[i])) if return_index else int(counts[i])


def _tokens_per_step(w, chips):
    return float(w.global_batch_tokens) if w.global_batch_tokens else w.seq_len * np.asarray(chips, dtype=float)


@functools.lru_cache(maxsize=256)
def _acc_series(acc_key: tuple) -> pd.Series:
    return pd.Series(dict(acc_key))


@functools.lru_cache(maxsize=8192)
def _training_config(p: Profile, acc_key: tuple, chips: int, workload_json: str, par_json: str, headroom: float,
                     limits: tuple, fingerprint: tuple):
    from .scenario import Workload

    acc = _acc_series(acc_key)
    w = Workload.model_validate_json(workload_json)
    par = Parallelism.model_validate_json(par_json) if par_json else None
    lim = scaling.practical_limits(acc) | dict(limits)
    try:
        return scaling.best_config(p, acc, chips, w, par, compute_efficiency, memory_headroom=headroom,
                                   sync_loss=network_loss(acc), **lim)
    except InputError as e:  # cached too: a count that cannot be priced stays so
        return e


def training_config(p: Profile, acc, chips: int, w, parallelism: Parallelism | None = None, headroom: float = 0.1,
                    **limits) -> dict | None:
    """The fastest parallel layout of ``chips`` chips (``workbook.scaling.best_config`` over
    ``scaling.practical_limits`` with the calibrated ``compute_efficiency``; ``parallelism`` pins
    dimensions like ``cluster.parallelism``; ``limits`` add grid limits such as a published ``vpp``),
    or None when nothing fits in memory. A step is ``global_batch_tokens`` (default: one sequence per
    chip). The one multi-chip path of ``estimate_training`` and the calibration; cached per process
    on the profile, accelerator, chip count, workload, pins and the training parameters in use."""
    if w.global_batch_tokens is None:
        w = w.model_copy(update={"global_batch_tokens": float(w.seq_len) * int(chips)})
    cfg = _training_config(p, _acc_key(acc), int(chips), w.model_dump_json(),
                           parallelism.model_dump_json() if parallelism is not None else "", float(headroom),
                           tuple(sorted(limits.items())), _training_fingerprint())
    if isinstance(cfg, InputError):
        raise cfg
    return None if cfg is None else dict(cfg)


def _acc_key(acc) -> tuple:
    """A hashable key of an accelerator record (NaN as None, so equal records give equal keys)."""
    return tuple((k, None if isinstance(v, float) and v != v else v) for k, v in dict(acc).items())


def _pinned_unit(acc: dict, par: Parallelism | None) -> tuple[int, int | None]:
    """Chip counts a pinned layout allows: multiples of the node and of tp·pp·cp, or exactly
    tp·pp·cp·dp when dp is pinned too."""
    node = int(acc.get("chips_per_node") or 1)
    if par is None:
        return node, None
    inner = (par.tp or 1) * (par.pp or 1) * (par.cp or 1)
    if par.dp is not None:
        return inner, inner * par.dp
    return math.lcm(node, inner), None


def _plan_training(p: Profile, acc: dict, s: Scenario, pinned: int | None, par: Parallelism | None):
    """(chips, configuration) for a transformer: the pinned count, else the fewest whole nodes whose
    best layout (``training_config``) meets ``constraints.deadline_days`` (no deadline: the fewest
    that fit), starting from ``choose_training_chips`` and refined by proportional steps and a
    bisection; (count, None) when nothing fits. At most ~16 searches, each cached."""
    w = s.workload
    headroom = s.constraints.min_memory_headroom
    dl = s.constraints.deadline_days
    unit, exact = _pinned_unit(acc, par)
    cap = _chip_cap(acc, s)

    def cfg_at(n):
        try:
            return training_config(p, acc, n, w, par, headroom)
        except InputError as e:
            if pinned or not str(e).startswith("cluster.parallelism"):
                raise  # the catalog cannot price this accelerator (no network figure, ...)
            return None  # a pinned layout that does not divide this count

    def days(n, cfg):
        return _training_tokens(w) / (float(_tokens_per_step(w, n)) / float(cfg["step_time_s"])) / 86400.0

    if pinned or exact:
        n = int(pinned or exact)
        return n, cfg_at(n)
    top = max(unit, (cap // unit) * unit)
    guess = choose_training_chips(p, acc, s)
    if guess is None:  # the sharded data-parallel model fits nowhere: start where the states fit half the memory
        state = p.params_total * training_state_bytes_per_param("fp32" if w.precision == "fp32" else "bf16", w.optimizer)
        guess = state / (0.5 * float(acc["memory_bytes"]) * (1.0 - headroom))
        if dl is not None:  # and no fewer chips than the matmuls alone need to finish in time
            flops = _train_flops_per_token(p, w) * _training_tokens(w)
            guess = max(guess, flops / (dl * 86400.0 * _peak(acc, w.precision) * compute_efficiency(acc, w.precision, "train", p)))
    n = min(top, max(unit, int(math.ceil(guess / unit)) * unit))
    cfg = cfg_at(n)
    for _ in range(6):  # grow until a layout fits
        if cfg is not None or n >= top:
            break
        n = min(top, 2 * n)
        cfg = cfg_at(n)
    if cfg is None:
        return n, None
    if dl is None:
        return n, cfg
    lo, hi = None, None  # the largest count known to miss the deadline, the smallest known to meet it
    for _ in range(8):  # steps up towards the deadline, by the square of the shortfall and at least 5%
        d = days(n, cfg)  # (throughput per chip falls as chips grow: a proportional step lands short)
        if d <= dl:
            hi = (n, cfg)
            break
        lo = n
        if n >= top:
            return n, cfg  # the shortest time within the cap still misses: report it
        n = min(top, max(n + unit, int(math.ceil(n * max((d / dl) ** 2, 1.05) / unit)) * unit))
        cfg = cfg_at(n) or cfg
    if hi is None:
        return n, cfg
    for _ in range(3):  # the first count met the deadline: probe downwards for a count that misses
        if lo is not None or hi[0] <= unit:
            break
        d = days(*hi)
        m = min(hi[0] - unit, max(unit, int(hi[0] * d / dl) // unit * unit))
        c = cfg_at(m)
        if c is not None and days(m, c) <= dl:
            hi = (m, c)
        else:
            lo = m
    if lo is None:
        return hi
    d_lo = None
    for _ in range(10):  # interpolation (regula falsi on log days against log chips), else bisection,
        if hi[0] - lo <= unit:  # on whole units between a miss and a hit
            break
        d_hi = days(*hi)
        if d_lo is None:
            c_lo = cfg_at(lo)
            d_lo = days(lo, c_lo) if c_lo is not None else None
        mid = (lo + hi[0]) // 2 // unit * unit
        if d_lo is not None and d_lo > dl >= d_hi and d_lo > d_hi:
            x = math.log(lo) + (math.log(d_lo) - math.log(dl)) * (math.log(hi[0]) - math.log(lo)) / (math.log(d_lo) - math.log(d_hi))
            guess_n = int(math.ceil(math.exp(x) / unit)) * unit
            if lo < guess_n < hi[0]:
                mid = guess_n
        if mid <= lo:
            break
        c = cfg_at(mid)
        if c is not None and days(mid, c) <= dl:
            hi = (mid, c)
            if mid - unit > lo:  # one unit fewer: usually the miss that closes the bracket
                c2 = cfg_at(mid - unit)
                if c2 is not None and days(mid - unit, c2) <= dl:
                    hi = (mid - unit, c2)
                else:
                    lo, d_lo = mid - unit, (days(mid - unit, c2) if c2 is not None else None)
        else:
            lo, d_lo = mid, (days(mid, c) if c is not None else None)
    return hi


@functools.lru_cache(maxsize=4096)
def _plan_cached(p: Profile, accelerator: str, workload_json: str, constraints_json: str, pinned, par_json: str,
                 fingerprint: tuple):
    from types import SimpleNamespace

    from .scenario import Constraints, Workload

    s = SimpleNamespace(workload=Workload.model_validate_json(workload_json),
                        constraints=Constraints.model_validate_json(constraints_json))
    par = Parallelism.model_validate_json(par_json) if par_json else None
    try:
        return _plan_training(p, accelerator_record(accelerator), s, pinned, par)
    except InputError as e:
        return e


def plan_training(p: Profile, accelerator: str, s: Scenario, pinned: int | None, par: Parallelism | None):
    """``_plan_training`` cached per process on the profile, accelerator, workload, constraints, pins
    and training parameters (a widget redraw re-plans only what changed)."""
    out = _plan_cached(p, accelerator, s.workload.model_dump_json(), s.constraints.model_dump_json(),
                       None if pinned is None else int(pinned), par.model_dump_json() if par is not None else "",
                       _training_fingerprint())
    if isinstance(out, InputError):
        raise out
    n, cfg = out
    return n, (None if cfg is None else dict(cfg))


def estimate_training(s: Scenario, accelerator: str, chips: int | None = None) -> dict:
    """Training (or fine-tuning) time on one accelerator type: step time, tokens/s, MFU, days and
    chip-hours with P10/P90 bands, and the parallel layout (``CONFIG_KEYS``: tp, pp, dp, ep, cp,
    zero, recompute, micro_batch) of ``workbook.scaling``'s best configuration.

    ``chips`` pinned, else the scenario's ``cluster`` (whose ``parallelism`` pins dimensions), else
    the fewest whole nodes that meet ``constraints.deadline_days`` (``_plan_training``). One step =
    ``global_batch_tokens`` (default: one sequence per chip). Generic (non-transformer) workloads use
    ``data_parallel_fallback`` and report no layout."""
    w = s.workload
    p = workload_profile(w)
    acc = accelerator_record(accelerator)
    out = _blank(acc)
    peak = _peak(acc, w.precision)
    out["peak_flops_per_s"] = peak
    if math.isnan(peak):
        out["reason"] = f"no published dense {w.precision} peak"
        return out
    if p.generic and p.train_flops_per_sample is None:
        out["reason"] = "workload.generic.train_flops_per_sample is needed for a training estimate"
        return out
    on_cluster = s.cluster is not None and catalog.resolve("accelerators", s.cluster.accelerator) == acc["accelerator"]
    pinned = chips or (s.cluster.chips if on_cluster else None)
    par = s.cluster.parallelism if on_cluster else None
    headroom = s.constraints.min_memory_headroom
    flops_token = _train_flops_per_token(p, w) if not p.generic else p.train_flops_per_sample
    if not p.generic:
        try:
            n, cfg = plan_training(p, acc["accelerator"], s, pinned, par)
        except InputError as e:  # a pinned layout that cannot be laid out, no network figure, ...
            out.update(chips=pinned, fits=False, reason="; ".join(e.problems))
            return out
        if cfg is None:
            out.update(chips=int(n), fits=False, reason=f"no parallel layout fits memory on {n} chips")
            return out
        step, mem = float(cfg["step_time_s"]), float(cfg["memory_per_chip_bytes"])
        out.update({k: cfg[k] for k in CONFIG_KEYS})
    else:
        n = pinned or choose_training_chips(p, acc, s)
        if n is None:
            fb = data_parallel_fallback(p, acc, float(_chip_cap(acc, s)), w, headroom)
            out.update(fits=False, reason=f"does not fit in memory on up to {_chip_cap(acc, s)} chips "
                                          f"({float(fb['memory_per_chip_bytes']) / 1e9:.0f} GB per chip needed)")
            return out
        r = data_parallel_fallback(p, acc, float(n), w, headroom, w.global_batch_tokens)
        if not bool(r["fits"]):
            out.update(chips=int(n), fits=False,
                       reason=f"does not fit: {float(r['memory_per_chip_bytes']) / 1e9:.0f} GB per chip needed "
                              f"(sharded data parallel, ZeRO-3)")
            return out
        step, mem = float(r["step_time_s"]), float(r["memory_per_chip_bytes"])
    tps = float(_tokens_per_step(w, n)) / step
    mfu = flops_token * tps / (n * peak)
    days = _training_tokens(w) / tps / 86400.0
    # A generic (non-transformer) model borrows the transformer-fitted ceiling: no published run of
    # such a model is in the calibration, so it always gets the wider uncalibrated band.
    lo, hi = band("mfu", "generic" if p.generic else _family(acc))
    out.update(chips=int(n), fits=True, memory_per_chip_bytes=mem, step_time_s=step, tokens_per_s=tps, mfu=mfu,
               training_days=days, chip_hours=days * 24.0 * n,
               calibrated=(not p.generic) and is_calibrated("matmul_ceiling", _family(acc)))
    # observed = predicted · ratio: throughput scales with the ratio, times with its inverse
    for k, scale in (("tokens_per_s", 1), ("mfu", 1), ("step_time_s", -1), ("training_days", -1), ("chip_hours", -1)):
        a, b = (out[k] * lo ** scale, out[k] * hi ** scale)
        out[k + "_low"], out[k + "_high"] = min(a, b), max(a, b)
    dl = s.constraints.deadline_days
    out["meets_deadline"] = bool(days <= dl) if dl is not None else None
    if dl is not None and days > dl:
        out["reason"] = f"misses the {dl:g}-day deadline ({days:.0f} days on {n} chips)"
    if s.constraints.max_chips and n > s.constraints.max_chips:
        out["reason"] = (out["reason"] + "; " if out["reason"] else "") + f"needs {n} chips > max_chips {s.constraints.max_chips}"
    return out


# --- inference -----------------------------------------------------------------------------------------

def _tp_candidates(acc: dict, chips: int | None = None) -> np.ndarray:
    """Single-node tensor-parallel degrees: powers of two up to the node size, and the node size."""
    node = int(acc.get("chips_per_node") or 1)
    limit = node if chips is None else min(node, chips)
    c = [2 ** k for k in range(0, 12) if 2 ** k <= limit]
    if limit not in c and (chips is None or chips % limit == 0):
        c.append(limit)
    if chips is not None:
        c = [t for t in c if chips % t == 0]
    return np.array(sorted(set(c)), dtype=float)


_BATCH_GRID = np.unique(np.r_[np.arange(1, 65), np.round(np.geomspace(64, 65536, 120))]).astype(float)


def estimate_inference(s: Scenario, accelerator: str, chips: int | None = None) -> dict:
    """Serving on one accelerator type: TTFT, TPOT, output tokens/s of the whole deployment, the
    largest batch that fits memory, replicas (model copies) and ``tp`` (chips per copy).

    For each single-node tensor-parallel degree, the batch is the largest that fits memory and meets
    ``tpot_slo_ms`` (or ``concurrency`` when given); replicas = the fewest copies that serve
    ``requests_per_s`` (one when no load is given); the degree with the fewest chips wins (ties: the
    lower TPOT). With ``chips`` (or a pinned ``cluster``) the deployment uses exactly those chips.
    Without concurrency and latency targets this is the best throughput that fits memory."""
    w = s.workload
    p = workload_profile(w)
    acc = accelerator_record(accelerator)
    out = _blank(acc)
    cprec = "bf16" if w.precision == "int4" else w.precision
    wprec, kvprec = w.precision, w.kv_precision
    peak = _peak(acc, cprec)
    out["peak_flops_per_s"] = peak
    if math.isnan(peak):
        out["reason"] = f"no published dense {cprec} peak"
        return out
    fam = _family(acc)
    headroom = s.constraints.min_memory_headroom
    pinned = chips or (s.cluster.chips if s.cluster and s.cluster.accelerator == acc["accelerator"] else None)
    if p.generic:
        return _estimate_generic_inference(p, acc, w, out, pinned)
    I, O = float(w.input_tokens), float(w.output_tokens)
    tps = _tp_candidates(acc, pinned)
    if len(tps) == 0:
        tps = np.array([1.0])
    best = None
    for tp in tps:
        mb = float(max_batch_fit(p, acc, tp, I + O, wprec, kvprec, headroom))
        if mb < 1:
            continue
        grid = _BATCH_GRID[_BATCH_GRID <= mb]
        if grid[-1] != mb:
            grid = np.append(grid, mb)
        if w.concurrency is not None:
            grid = grid[grid <= w.concurrency] if (grid <= w.concurrency).any() else grid[:1]
        pt = serving_point(p, acc, grid, I, O, tp, cprec, wprec, kvprec)
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
            continue  # e.g. tensor parallelism over a link with no published bandwidth (T4 PCIe)
        if pinned:
            replicas = int(pinned // tp)
        elif w.requests_per_s is not None:
            replicas = max(1, math.ceil(w.requests_per_s * O / thr))
        elif w.concurrency is not None:
            replicas = max(1, math.ceil(w.concurrency / grid[j]))
        else:
            replicas = 1
        cand = {"tp": int(tp), "batch": int(grid[j]), "max_batch": int(mb), "meets": meets, "replicas": replicas,
                "chips": int(replicas * tp), "ttft": float(pt["ttft_s"][j]), "tpot": float(pt["tpot_s"][j]),
                "thr": thr * replicas}
        key = (not meets, cand["chips"], cand["tpot"]) if not pinned else (not meets, -cand["thr"])
        if best is None or key < best[0]:
            best = (key, cand)
    if best is None:
        need = weight_bytes(p, wprec) / (float(acc["memory_bytes"]) * (1.0 - headroom))
        node = int(acc.get("chips_per_node") or 1)
        out.update(fits=False, chips=int(math.ceil(need)),
                   reason=(f"weights ({weight_bytes(p, wprec) / 1e9:.0f} GB) and one sequence's KV cache do not fit "
                           f"{'the pinned ' + str(pinned) + ' chips' if pinned else f'one node ({node} chips)'}; "
                           f"needs at least {math.ceil(need)} chips (multi-node serving is not modelled)"))
        return out
    c = best[1]
    lo_t, hi_t = band("output_tokens_per_s_per_chip", fam)
    lo_p, hi_p = band("tpot_ms", fam)
    lo_f, hi_f = band("ttft_ms", fam)
    out.update(fits=True, chips=c["chips"], tp=c["tp"], replicas=c["replicas"], batch=c["batch"], max_batch=c["max_batch"],
               meets_slo=c["meets"], ttft_ms=c["ttft"] * 1e3, tpot_ms=c["tpot"] * 1e3, output_tokens_per_s=c["thr"],
               memory_per_chip_bytes=(weight_bytes(p, wprec) + c["batch"] * (I + O) * kv_cache_bytes_per_token(p, kvprec)) / c["tp"],
               calibrated=is_calibrated("decode_memory_efficiency", fam))
    out["output_tokens_per_s_low"], out["output_tokens_per_s_high"] = c["thr"] * lo_t, c["thr"] * hi_t
    out["tpot_ms_low"], out["tpot_ms_high"] = out["tpot_ms"] * lo_p, out["tpot_ms"] * hi_p
    out["ttft_ms_low"], out["ttft_ms_high"] = out["ttft_ms"] * lo_f, out["ttft_ms"] * hi_f
    if not c["meets"]:
        out["reason"] = "misses the latency targets at every batch size (estimated at the largest batch that fits)"
    if s.constraints.max_chips and c["chips"] > s.constraints.max_chips:
        out["reason"] = (out["reason"] + "; " if out["reason"] else "") + \
            f"needs {c['chips']} chips > max_chips {s.constraints.max_chips}"
    return out


def _estimate_generic_inference(p: Profile, acc: dict, w, out: dict, pinned) -> dict:
    """Non-transformer model: samples/s per chip = min(peak·eff / FLOPs per sample, bandwidth·eff / bytes
    per sample) (roofline), reported in ``output_tokens_per_s`` (samples/s) and ``ttft_ms`` (latency
    of one sample)."""
    if p.infer_flops_per_sample is None:
        out["reason"] = "workload.generic.infer_flops_per_sample is needed for an inference estimate"
        return out
    fam = _family(acc)
    cprec = "bf16" if w.precision == "int4" else w.precision
    eff = compute_efficiency(acc, cprec, "prefill", p)
    t = float(roofline_time_s(p.infer_flops_per_sample, p.bytes_per_sample or 0.0, _peak(acc, cprec) * eff,
                              float(acc["memory_bytes_per_s"]) * parameter("decode_memory_efficiency", fam)))
    n = pinned or 1
    per_chip = 1.0 / t
    replicas = n if pinned else (max(1, math.ceil(w.requests_per_s / per_chip)) if w.requests_per_s else 1)
    fits = weight_bytes(p, w.precision) <= float(acc["memory_bytes"])
    out.update(fits=fits, chips=replicas, tp=1, replicas=replicas, ttft_ms=t * 1e3, output_tokens_per_s=per_chip * replicas,
               reason="" if fits else "weights do not fit one chip")
    return out


# --- the comparison ------------------------------------------------------------------------------------

def _blank(acc: dict) -> dict:
    out = {c: math.nan for c in COLUMNS}
    out.update(accelerator=acc["accelerator"], family=acc["family"], chips=None, fits=False, reason="",
               memory_per_chip_bytes=math.nan, max_batch=None, batch=None, meets_slo=None, replicas=None,
               meets_deadline=None, calibrated=False, peak_flops_per_s=math.nan, **{k: None for k in CONFIG_KEYS})
    return out


def candidate_accelerators(s: Scenario) -> list[str]:
    """The accelerators a scenario compares: the pinned ``cluster``; else ``candidates.accelerators``;
    else every catalog chip with a published peak for the workload's compute precision."""
    if s.cluster is not None:
        return [catalog.resolve("accelerators", s.cluster.accelerator)]
    if s.candidates.accelerators:
        return [catalog.resolve("accelerators", a) for a in s.candidates.accelerators]
    prec = "bf16" if s.workload.precision == "int4" else s.workload.precision
    return usable_accelerators(prec)


def compare(s: Scenario) -> pd.DataFrame:
    """One row per accelerator considered: chips, fits, reason, and the training or inference figures
    with ``_low``/``_high`` bands (columns ``perf.COLUMNS``; the ``estimate --json`` option keys).
    Training rows carry the parallel layout of the best configuration (``CONFIG_KEYS``). Multi-chip
    training searches layouts with ``workbook.scaling`` (cached per process: a widget that changes
    one accelerator or the batch re-searches only what changed)."""
    if s.workload.task == "inference":
        rows = [estimate_inference(s, a) for a in candidate_accelerators(s)]
    else:
        rows = [estimate_training(s, a) for a in candidate_accelerators(s)]
    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in _INT_COLUMNS:
        df[c] = pd.array(df[c].astype("Float64").round(), dtype="Int64") if len(df) else df[c]
    df["recompute"] = df["recompute"].astype(object).where(df["recompute"].notna(), None) if len(df) else df["recompute"]
    for c in ("fits", "meets_slo", "meets_deadline", "calibrated"):
        df[c] = df[c].astype("boolean") if len(df) else df[c]
    return df


# --- tables for the notebooks ------------------------------------------------------------------------

def workload_summary(s: Scenario) -> pd.DataFrame:
    """What the workload needs, one quantity per row with its unit and formula (notebook 01)."""
    from .profile import attention_flops_per_token, decode_arithmetic_intensity, prefill_arithmetic_intensity

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
                 ("total training FLOPs", float(train_flops_per_token(p, w.seq_len)) * _training_tokens(w), "FLOP",
                  "per-token FLOPs x training tokens (6ND + attention)"),
                 ("weights + gradients + optimizer", p.params_total * training_state_bytes_per_param("bf16", w.optimizer),
                  "bytes", f"{training_state_bytes_per_param('bf16', w.optimizer):g} bytes per parameter (ZeRO §3.1, mixed-precision {w.optimizer})")]
    else:
        I, O = w.input_tokens, w.output_tokens
        rows += [("prefill FLOPs per prompt token", float(prefill_flops_per_token(p, I)), "FLOP", f"2N + causal attention over {I} tokens"),
                 ("decode FLOPs per output token", float(decode_flops_per_token(p, I + O / 2)), "FLOP",
                  f"2N + 4·L·H·Q·context at context {I + O / 2:g}"),
                 ("weights", weight_bytes(p, w.precision), "bytes", f"parameters x {bytes_per_value(w.precision):g} bytes ({w.precision})"),
                 ("KV cache per token", kv_cache_bytes_per_token(p, w.kv_precision), "bytes",
                  f"2·L·kv_heads·head_dim x {bytes_per_value(w.kv_precision):g} bytes ({w.kv_precision})"),
                 ("KV cache per request", kv_cache_bytes_per_token(p, w.kv_precision) * (I + O), "bytes", f"per token x (I + O) = {I + O}"),
                 ("prefill arithmetic intensity", float(prefill_arithmetic_intensity(p, I, 1, w.precision)), "FLOP/byte",
                  "one prompt's FLOPs over one read of the weights"),
                 ("decode intensity at batch 1", float(decode_arithmetic_intensity(p, 1, I + O / 2, w.precision, w.kv_precision)),
                  "FLOP/byte", "FLOPs over weight + KV bytes read per step"),
                 ("decode intensity at batch 64", float(decode_arithmetic_intensity(p, 64, I + O / 2, w.precision, w.kv_precision)),
                  "FLOP/byte", "grows with the batch until the KV cache dominates")]
    return pd.DataFrame(rows, columns=["quantity", "value", "unit", "formula"])


def memory_breakdown(s: Scenario, batch: int | None = None) -> pd.DataFrame:
    """Memory of one model copy by component (tidy: ``setting``, ``component``, ``bytes``).

    Training: weights, gradients, optimizer states (mixed-precision Adam: 2 + 2 + 12 bytes per
    parameter, ZeRO §3.1) and activations of ``batch`` sequences (default 1) for each recomputation
    setting (Korthikanti et al. 2022). Inference: weights and the KV cache of ``batch`` requests
    (default 1, 8, 64) at I + O tokens."""
    from .profile import activation_bytes

    w = s.workload
    p = workload_profile(w)
    rows = []
    if w.task != "inference":
        b = batch or 1
        frac = w.trainable_fraction
        opt = training_state_bytes_per_param("bf16", w.optimizer) - 4.0
        for rc in ("none", "selective", "full"):
            label = f"{b} x {w.seq_len} tokens, recompute {rc}"
            rows += [(label, "weights", p.params_total * 2.0), (label, "gradients", p.params_total * 2.0 * frac),
                     (label, "optimizer states", p.params_total * opt * frac)]
            if not p.generic:
                rows.append((label, "activations", float(activation_bytes(p, w.seq_len, b, rc))))
    else:
        per_req = kv_cache_bytes_per_token(p, w.kv_precision) * ((w.input_tokens or 0) + (w.output_tokens or 0))
        for b in ([batch] if batch else [1, 8, 64]):
            label = f"batch {b}"
            rows += [(label, "weights", weight_bytes(p, w.precision)), (label, "KV cache", per_req * b)]
    return pd.DataFrame(rows, columns=["setting", "component", "bytes"])


def operating_points(s: Scenario, perf_df: pd.DataFrame | None = None) -> pd.DataFrame:
    """The workload's arithmetic intensity and the FLOP/s it attains on each candidate chip
    (``roofline_time_s`` applied to one step): training step, prefill, decode at batch 1 and at the
    estimated batch. Tidy: accelerator, point, intensity_flops_per_byte, attained_flops_per_s."""
    from .profile import decode_arithmetic_intensity, prefill_arithmetic_intensity

    w = s.workload
    p = workload_profile(w)
    if p.generic:
        return pd.DataFrame(columns=["accelerator", "point", "intensity_flops_per_byte", "attained_flops_per_s"])
    cprec = "bf16" if w.precision == "int4" else w.precision
    rows = []
    for a in candidate_accelerators(s):
        acc = accelerator_record(a)
        peak = _peak(acc, cprec)
        if math.isnan(peak):
            continue
        bw = float(acc["memory_bytes_per_s"])
        pts = []
        if w.task != "inference":
            # one micro-batch sequence: weights read once per forward/backward, 6N+attention FLOPs per token
            ai = float(train_flops_per_token(p, w.seq_len)) * w.seq_len / (3.0 * weight_bytes(p, "bf16"))
            pts.append(("training step (1 sequence)", ai))
        else:
            I, O = w.input_tokens, w.output_tokens
            pts.append(("prefill (1 prompt)", float(prefill_arithmetic_intensity(p, I, 1, w.precision))))
            pts.append(("decode, batch 1", float(decode_arithmetic_intensity(p, 1, I + O / 2, w.precision, w.kv_precision))))
            if perf_df is not None and a in set(perf_df["accelerator"]):
                b = perf_df.set_index("accelerator").loc[a, "batch"]
                if b is not None and not pd.isna(b):
                    pts.append(("decode, estimated batch", float(decode_arithmetic_intensity(p, float(b), I + O / 2, w.precision, w.kv_precision))))
        for name, ai in pts:
            rows.append((a, name, ai, float(np.minimum(peak, ai * bw))))
    return pd.DataFrame(rows, columns=["accelerator", "point", "intensity_flops_per_byte", "attained_flops_per_s"])


def explain(s: Scenario, perf_df: pd.DataFrame | None = None) -> pd.DataFrame:
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
             "tp, pp, dp, ep, cp, zero, recompute, micro_batch columns", "perf.training_config -> workbook.scaling"),
            ("compute", "6N+12LHQS FLOPs per token x tokens / (chips x peak x efficiency)",
             f"N = {p.params_matmul_active:.3g}, S = {w.seq_len}, precision {w.precision}", "profile.train_flops_per_token"),
            ("efficiency", "ceiling[family] x h / (h + kappa x peak / HBM bandwidth) x MoE factor",
             f"h = {p.hidden}; per family", "data/efficiency.csv (fitted on data/reference_runs.csv with the scaling model on)"),
            ("mfu", "model FLOPs x tokens/s / (chips x dense peak)", "PaLM definition", "Chowdhery et al. 2022 App. B"),
            ("training_days", "tokens / tokens_per_s / 86400", f"{_training_tokens(w):.3g} tokens", "scenario"),
            ("chip_hours", "chips x training_days x 24", "", ""),
            ("_low / _high", "P10 / P90 of observed / predicted MFU over the calibration runs", "per family (>= 5 runs) or pooled",
             "data/efficiency.csv band_p10_mfu, band_p90_mfu")]
    else:
        rows += [
            ("ttft_ms", "prefill of one prompt: max(FLOPs / (tp x peak x eff), weights / (tp x HBM x mem_eff)) + TP all-reduces",
             f"I = {w.input_tokens} tokens", "perf.prefill_s"),
            ("tpot_ms", "decode step: max(weights + batch x context x KV bytes over tp x HBM x mem_eff, FLOPs incl. "
                        "chunked prefill over tp x peak x eff) + 2L x (latency + bytes / link)",
             f"context I + O/2 = {w.input_tokens + w.output_tokens / 2:g}", "perf.decode_step_s"),
            ("output_tokens_per_s", "replicas x batch / TPOT", "batch = largest that fits and meets the targets", "perf.serving_point"),
            ("max_batch", "(tp x memory x (1 - headroom) - weights) / KV bytes per request",
             f"headroom {s.constraints.min_memory_headroom:g} (vLLM default 0.1)", "perf.max_batch_fit"),
            ("replicas", "ceil(requests_per_s x O / per-replica tokens/s)", f"{w.requests_per_s} requests/s", "scenario"),
            ("tp", "single-node tensor-parallel degree with the fewest chips for the load", "powers of 2 up to the node",
             "perf.estimate_inference"),
            ("mem_eff, eff, latency", "fitted per family", "", "data/efficiency.csv (fitted on data/reference_runs.csv)"),
            ("_low / _high", "P10 / P90 of observed / predicted over the calibration runs",
             "per family (>= 5 runs) or pooled", "data/efficiency.csv band_p10_*, band_p90_*")]
    return pd.DataFrame(rows, columns=["figure", "formula", "inputs for this scenario", "source"])


def roofline_lines(s: Scenario) -> pd.DataFrame:
    """``roofline_table`` of the scenario's candidate accelerators at its compute precision."""
    prec = "bf16" if s.workload.precision == "int4" else s.workload.precision
    accs = catalog.accelerators()
    return roofline_table(accs[accs["accelerator"].isin(candidate_accelerators(s))], prec)
