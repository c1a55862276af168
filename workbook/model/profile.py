"""Workload profile of a decoder-only transformer (dense or mixture-of-experts), or a generic model.

Small pure functions; each names its source. Functions take scalars or numpy arrays / pandas
Series alike (numpy ufuncs only), so the scaling search can evaluate a whole grid at once.

Sources
- Parameter and FLOP counts: Kaplan et al. 2020 "Scaling Laws for Neural Language Models" (Table 1);
  Chowdhery et al. 2022 "PaLM" Appendix B (model FLOPs: 6N + 12·L·H·Q·T per token);
  "How to Scale Your Model" (scaling-book, Austin et al. 2025) ch. 4 "Transformer Math".
- Training memory: Rajbhandari et al. 2020 "ZeRO" §3 (mixed-precision Adam: 2+2+12 = 16 bytes/param).
- LoRA and QLoRA: Hu et al. 2021 "LoRA" (arXiv:2106.09685) §4 (a frozen W plus a trainable B·A of
  rank r: r·(d_in + d_out) weights per adapted matrix); Dettmers et al. 2023 "QLoRA"
  (arXiv:2305.14314) §3 (NF4 storage, bf16 compute, double quantisation: 8/64 + 32/(64·256) = 0.127
  bits of quantisation constants per parameter; adapters on every linear layer of the blocks, §4).
- Activation memory: Korthikanti et al. 2022 "Reducing Activation Recomputation in Large Transformer
  Models" §4 (sbh·(34 + 5as/h) bytes per layer; selective recompute drops the 5as/h term; full
  recompute keeps only the 2sbh layer input).
- KV cache: 2 · layers · kv_heads · head_dim · bytes per token (scaling-book ch. 7 "Inference").
- Multi-head latent attention (MLA): DeepSeek-AI 2024 "DeepSeek-V2" (arXiv:2405.04434) §2.1.2-2.1.3
  (low-rank key-value joint compression, low-rank query compression, decoupled rotary keys);
  shapes of DeepSeek-V3 from its config.json (deepseek-ai/DeepSeek-V3).
"""
from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .. import catalog, hf
from ..scenario import Architecture, Workload, hf_architecture

# FP4 block formats with their scales: NVFP4 = 4-bit E2M1 + one FP8 E4M3 scale per 16 values
# (0.5 + 1/16 bytes; a per-tensor FP32 scale on top is negligible), NVIDIA Technical Blog
# "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference" (2025); MXFP4 = E2M1 + one
# E8M0 scale per 32 values (0.5 + 1/32 bytes), OCP Microscaling Formats (MX) Specification v1.0
# (2023) §5.2. "fp4" alone is the bare 4-bit element (a compute precision).
FP4_BLOCK = {"nvfp4": 16, "mxfp4": 32}
BYTES_PER_VALUE = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5, "nf4": 0.5, "fp4": 0.5,
                   **{f: 0.5 + 1.0 / n for f, n in FP4_BLOCK.items()}}


def bytes_per_value(precision: str) -> float:
    """Storage bytes of one number in ``precision``."""
    return BYTES_PER_VALUE[precision]


@dataclass(frozen=True)
class Profile:
    """What a model is, in numbers that the performance, scaling and cost models share."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn_hidden: int
    vocab: int
    experts: int
    experts_per_token: int
    gated_mlp: bool
    params_total: float  # every weight, embeddings included
    params_active: float  # weights touched by one token (MoE: routed + shared experts only)
    params_embedding: float  # input embedding table (a lookup: no FLOPs)
    params_matmul_active: float  # weights in matmuls per token: active minus input embedding
    params_expert: float  # weights in routed experts (sharded by expert parallelism)
    kv_cache_dim: int  # cached elements per token per layer (2·kv_heads·head_dim, or MLA's latent)
    moe_ffn_hidden: int
    generic: bool = False
    qk_head_dim: int | None = None  # query/key size per head (MLA: nope + rope); None = head_dim
    v_head_dim: int | None = None  # value size per head (MLA: v_head_dim); None = head_dim
    train_flops_per_sample: float | None = None
    infer_flops_per_sample: float | None = None
    bytes_per_sample: float | None = None

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def attn_dim(self) -> int:
        """H·Q: the mean of the query/key and value widths over all heads (H·(qk + v)/2), which is the
        H·Q of the ``4·L·H·Q·context`` attention FLOPs (equal to heads·head_dim without MLA)."""
        qk = self.qk_head_dim or self.head_dim
        v = self.v_head_dim or self.head_dim
        return self.heads * (qk + v) / 2.0

    def as_dict(self) -> dict:
        return asdict(self)


def mlp_params(hidden, ffn_hidden, gated_mlp: bool):
    """Weights of one MLP: 3·h·f when gated (SwiGLU: gate, up, down), else 2·h·f (Kaplan et al. 2020)."""
    return (3 if gated_mlp else 2) * hidden * ffn_hidden


def attention_params(hidden, heads, kv_heads, head_dim, q_lora_rank=None, kv_lora_rank=None,
                     qk_rope_head_dim=None, v_head_dim=None):
    """Q and O projections h·H·Q each, K and V h·K·Q each (GQA/MQA: K < H). scaling-book ch. 4.

    Multi-head latent attention (``kv_lora_rank`` given; DeepSeek-V2 §2.1.2-2.1.3, eqs. 9-18):
    queries h·r_q (down) + r_q·H·(d_nope + d_rope) (up), or h·H·(d_nope + d_rope) without query
    compression; keys and values h·(r_kv + d_rope) (the joint latent and the shared rotary key) +
    r_kv·H·(d_nope + d_v) (up); output H·d_v·h. ``head_dim`` is d_nope. DeepSeek-V3 (h 7168, H 128,
    r_q 1536, r_kv 512, d_nope 128, d_rope 64, d_v 128): 187.1M per layer instead of 4·h·H·Q = 469.8M."""
    if kv_lora_rank is None:
        return 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    rope = qk_rope_head_dim or 0
    v = v_head_dim or head_dim
    qk = head_dim + rope
    q = hidden * q_lora_rank + q_lora_rank * heads * qk if q_lora_rank else hidden * heads * qk
    kv = hidden * (kv_lora_rank + rope) + kv_lora_rank * heads * (head_dim + v)
    return q + kv + heads * v * hidden


def profile_from_architecture(arch: Architecture, name: str = "custom") -> Profile:
    """Parameter counts of a decoder-only transformer from its shape (norms and biases ignored, <0.1%).

    Mixture-of-experts (Shazeer et al. 2017; Mixtral, DeepSeek-V3): each MoE layer holds ``experts``
    routed MLPs of width ``moe_ffn_hidden`` plus ``shared_experts`` always-on MLPs and a router
    (h·E); a token uses ``experts_per_token`` routed experts. ``dense_layers`` layers are dense MLPs
    of width ``ffn_hidden``, leading (DeepSeek-V3's first 3) or interleaved (Llama 4 Maverick's every
    other layer): only their count enters these sums. Multi-head latent attention
    (``kv_lora_rank`` given) counts its low-rank projections (``attention_params``) and caches the
    latent plus the rotary key, ``kv_lora_rank + qk_rope_head_dim`` values per token per layer
    (DeepSeek-V2 §2.1.2), unless ``kv_cache_dim`` says otherwise."""
    h, L = arch.hidden, arch.layers
    hd = arch.head_dim or h // arch.heads
    mla = arch.kv_lora_rank is not None
    attn = attention_params(h, arch.heads, arch.kv_heads, hd, arch.q_lora_rank, arch.kv_lora_rank,
                            arch.qk_rope_head_dim, arch.v_head_dim)
    moe = arch.experts > 1
    f_exp = arch.moe_ffn_hidden or arch.ffn_hidden
    dense_L = arch.dense_layers if moe else L
    moe_L = L - dense_L
    dense_mlp = mlp_params(h, arch.ffn_hidden, arch.gated_mlp)
    one_expert = mlp_params(h, f_exp, arch.gated_mlp)
    routed_total = moe_L * arch.experts * one_expert
    routed_active = moe_L * arch.experts_per_token * one_expert
    shared = moe_L * (arch.shared_experts * one_expert + h * arch.experts)
    embed = arch.vocab * h
    head = 0 if arch.tied_embeddings else arch.vocab * h
    body_common = L * attn + dense_L * dense_mlp + shared
    total = embed + head + body_common + routed_total
    active = embed + head + body_common + routed_active
    kv_dim = arch.kv_cache_dim or (arch.kv_lora_rank + (arch.qk_rope_head_dim or 0) if mla else 2 * arch.kv_heads * hd)
    return Profile(
        name=name, layers=L, hidden=h, heads=arch.heads, kv_heads=arch.kv_heads, head_dim=hd,
        ffn_hidden=arch.ffn_hidden, vocab=arch.vocab, experts=arch.experts,
        experts_per_token=arch.experts_per_token, gated_mlp=arch.gated_mlp,
        params_total=float(total), params_active=float(active), params_embedding=float(embed),
        params_matmul_active=float(active - embed + (embed if arch.tied_embeddings else 0)),
        params_expert=float(routed_total), kv_cache_dim=int(kv_dim), moe_ffn_hidden=int(f_exp),
        qk_head_dim=(hd + (arch.qk_rope_head_dim or 0)) if mla else None,
        v_head_dim=(arch.v_head_dim or hd) if mla else None,
    )


_MODEL_ROWS = catalog.PerLoad(lambda df: {r["model"]: r for r in df.to_dict("records")})   # one ``to_dict`` per loaded table


def _model_row(model_id: str) -> dict:
    """The ``data/models.csv`` row of a model (id or alias) as a dict (``catalog.model`` re-indexes the
    whole table on every call, a pandas row per model costs as much)."""
    return _MODEL_ROWS.get(catalog.models())[catalog.resolve("models", model_id)]


@functools.lru_cache(maxsize=None)
def architecture_of(model_id: str) -> Architecture:
    """The Architecture of a model in ``data/models.csv`` (id or alias); blank cells take the defaults."""
    row = _model_row(model_id)
    data = {}
    for k in Architecture.model_fields:
        if k not in row or row[k] is None or pd.isna(row[k]):
            continue
        v = row[k]
        data[k] = v.item() if hasattr(v, "item") else v
    return Architecture.model_validate(data)


@functools.lru_cache(maxsize=None)
def model_profile(model_id: str) -> Profile:
    """The Profile of a catalog model (id or alias), cached per process."""
    return profile_from_architecture(architecture_of(model_id), catalog.resolve("models", model_id))


@functools.lru_cache(maxsize=64)
def hf_profile(path: str) -> Profile:
    """The Profile of a Hugging Face config.json (``workbook.hf``), named after its folder."""
    name = hf.config_file(path).resolve().parent.name or "hf-config"
    return profile_from_architecture(hf_architecture(path), name)


def workload_profile(w: Workload) -> Profile:
    """The Profile of a scenario's workload: a catalog model, an inline architecture, a Hugging Face
    config.json, or a generic one."""
    if w.model is not None:
        return model_profile(w.model)
    if w.architecture is not None:
        return profile_from_architecture(w.architecture, "custom")
    if w.hf_config is not None:
        return hf_profile(w.hf_config)
    g = w.generic
    return Profile(name="generic", layers=1, hidden=1, heads=1, kv_heads=1, head_dim=1, ffn_hidden=1, vocab=1,
                   experts=1, experts_per_token=1, gated_mlp=False, params_total=g.params, params_active=g.params,
                   params_embedding=0.0, params_matmul_active=g.params, params_expert=0.0, kv_cache_dim=0,
                   moe_ffn_hidden=1, generic=True, train_flops_per_sample=g.train_flops_per_sample,
                   infer_flops_per_sample=g.infer_flops_per_sample, bytes_per_sample=g.bytes_per_sample)


# The per-image cost of the MLPerf benchmarks the generic calibration is fitted on
# (``data/reference_runs.csv``, ``*-mlperf-resnet*`` rows): ResNet-50 v1.5 at 224x224, 3.8e9
# multiply-adds (He et al. 2016, Table 1), x2 FLOPs per multiply-add, x3 for forward + backward.
MLPERF_GENERIC_BENCHMARKS = {"ResNet-50": {"train_flops_per_sample": 2.28e10, "infer_flops_per_sample": 7.6e9}}
BENCHMARK_MATCH = 0.05  # a generic workload within 5% of a benchmark's per-sample FLOPs is that benchmark


def mlperf_benchmark(g, task: str) -> str | None:
    """The MLPerf benchmark whose per-sample FLOPs (of the task: training or inference) a generic
    workload ``g`` (``scenario.GenericProfile``) matches within ``BENCHMARK_MATCH``, else None."""
    key = "infer_flops_per_sample" if task == "inference" else "train_flops_per_sample"
    v = getattr(g, key, None)
    for name, cost in MLPERF_GENERIC_BENCHMARKS.items():
        if v and abs(v / cost[key] - 1.0) <= BENCHMARK_MATCH:
            return name
    return None


# --- FLOPs -------------------------------------------------------------------------------------

def attention_flops_per_token(p: Profile, context, causal: bool = True):
    """Forward FLOPs of QKᵀ and AV for one token attending to ``context`` tokens: 4·L·H·Q·context,
    i.e. 2·L·H·(d_qk + d_v)·context: QKᵀ over the query/key width, AV over the value width (MLA:
    d_qk = d_nope + d_rope = 192 and d_v = 128 for DeepSeek-V3, the non-absorbed form used in
    training and prefill; DeepSeek-V2 §2.1).

    For a full causal sequence of length S the mean context is S/2 (``causal=True`` halves it);
    PaLM's MFU convention counts the full S (``causal=False``)."""
    ctx = np.asarray(context, dtype=float) * (0.5 if causal else 1.0)
    return 4.0 * p.layers * p.attn_dim * ctx


def train_flops_per_token(p: Profile, seq_len, causal: bool = False):
    """Model FLOPs per trained token: 6·N (forward 2N + backward 4N) + attention 3·(4·L·H·Q·S).

    ``N`` = weights in matmuls touched per token (MoE: active only; the input embedding is a lookup).
    With ``causal=False`` this is PaLM's definition, 6N + 12·L·H·Q·S (Chowdhery et al. 2022, App. B),
    the MFU denominator used throughout this package. Recomputation is not counted (it is hardware
    FLOPs, not model FLOPs)."""
    return 6.0 * p.params_matmul_active + 3.0 * attention_flops_per_token(p, seq_len, causal=causal)


def prefill_flops_per_token(p: Profile, input_tokens):
    """Forward FLOPs per prompt token: 2·N + causal attention over the prompt (mean context S/2)."""
    return 2.0 * p.params_matmul_active + attention_flops_per_token(p, input_tokens, causal=True)


def decode_flops_per_token(p: Profile, context):
    """Forward FLOPs for one generated token at ``context`` cached tokens: 2·N + 4·L·H·Q·context."""
    return 2.0 * p.params_matmul_active + attention_flops_per_token(p, context, causal=False)


def training_flops(p: Profile, tokens, seq_len):
    """Total model FLOPs of a training run (6ND + attention); the 6ND rule (Kaplan et al. 2020) when S→0."""
    return train_flops_per_token(p, seq_len) * tokens


# --- Memory ------------------------------------------------------------------------------------

# --- fine-tuning: frozen weights and adapters ---------------------------------------------------

# Quantisation constants stored with each frozen weight, bytes per parameter (Dettmers et al. 2023,
# "QLoRA", arXiv:2305.14314, §3 "Double Quantization"): blockwise 4-bit quantisation with one fp32
# absmax per block of 64 weights costs 32/64 = 0.5 bits per weight (int4: bitsandbytes' 4-bit without
# double quantisation); nf4 (QLoRA's NF4 with double quantisation: the absmax constants quantised to
# 8 bits in blocks of 256) 8/64 + 32/(64·256) = 0.127 bits, 0.373 bits less ("approximately 3 GB for
# a 65B model", §1). int8: LLM.int8() keeps one fp32 absmax per row of ``hidden`` inputs (Dettmers
# et al. 2022 §3.2), 32/hidden bits, below 0.01 bits at hidden >= 4096: counted as 0, like norms and biases.
QUANT_CONSTANT_BYTES_PER_PARAM = {"int4": 0.5 / 8.0, "nf4": 0.127 / 8.0, "int8": 0.0}
# 4-bit frozen weights are dequantised to bf16 before each matmul (bitsandbytes ``dequantize_4bit``
# in ``MatMul4Bit``, forward and backward); int8 multiplies in int8 (LLM.int8()) and is not counted
DEQUANTISED_PRECISIONS = ("int4", "nf4")


def adapter_params(p: Profile, rank, active: bool = False):
    """LoRA weights of rank ``rank`` on every linear layer of every block (QLoRA §4; LoRA §4):
    r·(d_in + d_out) per matrix. Attention: q (h → H·d_qk), k and v (h → K·d), o (H·d_v → h); MLA
    (DeepSeek-V2 §2.1.2): each low-rank projection is a matrix of its own. MLP: gate and up h → f,
    down f → h (2 matrices when not gated). MoE: every routed expert (``active``: the k a token
    uses) and the shared experts; the router and the embeddings carry none."""
    h, L, H, K, d = p.hidden, p.layers, p.heads, p.kv_heads, p.head_dim
    qk, v = p.qk_head_dim or d, p.v_head_dim or d
    attn = (h + H * qk) + 2 * (h + K * d) + (H * v + h)
    mlp_mats = 3 if p.gated_mlp else 2

    def mlp(f):
        return mlp_mats * (h + f)

    if not p.is_moe:
        per_layer = attn + mlp(p.ffn_hidden)
        return float(rank) * L * per_layer
    experts = p.experts_per_token if active else p.experts
    moe_layers = round(p.params_expert / (p.experts * mlp_params(h, p.moe_ffn_hidden, p.gated_mlp)))
    routed = moe_layers * experts * mlp(p.moe_ffn_hidden)
    dense = (L - moe_layers) * mlp(p.ffn_hidden)
    return float(rank) * (L * attn + routed + dense)


def trainable_params(p: Profile, w: Workload) -> float:
    """Weights that get gradients and optimizer states: the LoRA adapters when ``lora_rank`` is set
    (added to the frozen base), else ``trainable_fraction`` of the model's weights."""
    if getattr(w, "lora_rank", None):
        return adapter_params(p, w.lora_rank)
    return w.trainable_fraction * p.params_total


def frozen_weight_bytes_per_param(p: Profile, precision: str) -> float:
    """Bytes per frozen weight at the stored precision. nf4/int4/int8 (QLoRA's NF4, LLM.int8): the
    block weights take the quantised bytes plus ``QUANT_CONSTANT_BYTES_PER_PARAM``; the input
    embedding and the output head stay 16-bit (the QLoRA reference code quantises the blocks'
    ``nn.Linear`` layers with bitsandbytes only), so the mean over all weights is returned. Other
    precisions keep 16-bit weights (fp32: 4 bytes), as in mixed-precision training."""
    if precision not in QUANT_CONSTANT_BYTES_PER_PARAM:
        return 4.0 if precision == "fp32" else 2.0
    tied = math.isclose(p.params_matmul_active, p.params_active) and not p.generic
    sixteen_bit = p.params_embedding + (0.0 if tied else p.params_embedding)
    quantised = p.params_total - sixteen_bit
    per = bytes_per_value(precision) + QUANT_CONSTANT_BYTES_PER_PARAM[precision]
    return (quantised * per + sixteen_bit * 2.0) / p.params_total


def training_weight_bytes_per_param(p: Profile, w: Workload) -> float:
    """Weight bytes held in training, per parameter of the base model: the frozen weights at
    ``frozen_weight_bytes_per_param`` plus the trainable ones in 16-bit (fp32: 4 bytes). LoRA: the
    whole base is frozen and the adapters add ``trainable_params``; ``trainable_fraction`` f: 1 - f
    is frozen, f trainable. Full training (f = 1): 2 bytes, the mixed-precision weights of ZeRO §3.1."""
    train_b = 4.0 if w.precision == "fp32" else 2.0
    f = trainable_params(p, w) / p.params_total
    frozen = frozen_share(w)
    if frozen <= 0.0:
        return train_b
    return frozen * frozen_weight_bytes_per_param(p, w.precision) + f * train_b


def frozen_share(w: Workload) -> float:
    """Share of the base model's weights that stay frozen: all of them with LoRA adapters
    (``lora_rank``), else 1 - ``trainable_fraction`` (0 for full training)."""
    return 1.0 if getattr(w, "lora_rank", None) else 1.0 - w.trainable_fraction


def dequant_bytes_per_weight(precision: str) -> float:
    """HBM bytes moved to dequantise one frozen weight to bf16 before its matmul (QLoRA §3: "we
    dequantize the storage data type to the computation data type", once per forward and once per
    backward pass): read the 4-bit value and its constants (``QUANT_CONSTANT_BYTES_PER_PARAM``),
    write the 2-byte bf16 copy that the matmul then reads as any bf16 weight. nf4: 0.5 + 0.127/8 + 2
    = 2.516 bytes. 0 for precisions multiplied as stored (``DEQUANTISED_PRECISIONS``)."""
    if precision not in DEQUANTISED_PRECISIONS:
        return 0.0
    return bytes_per_value(precision) + QUANT_CONSTANT_BYTES_PER_PARAM[precision] + 2.0


def optimizer_bytes_per_trainable_param(w: Workload) -> float:
    """Optimizer state bytes per trainable weight: ``training_state_bytes_per_param`` less weights
    and gradients (Adam in mixed precision: 12 = fp32 master + m + v, ZeRO §3.1). LoRA adapters are
    held in bf16 and updated in place (the QLoRA reference code casts every ``LoraLayer`` to bf16 and
    uses 32-bit paged AdamW, Dettmers et al. 2023 §3): no master copy, Adam 8 bytes."""
    w16 = 4.0 if w.precision == "fp32" else 2.0
    states = training_state_bytes_per_param("fp32" if w.precision == "fp32" else "bf16", w.optimizer) - 2.0 * w16
    return states - (4.0 if getattr(w, "lora_rank", None) and w.precision != "fp32" else 0.0)


def fine_tune_flops_per_token(p: Profile, w: Workload, causal: bool = False):
    """Model FLOPs per trained token with frozen weights (Kaplan et al. 2020 §2.1 split of 6N:
    forward 2N, activation gradients 2N, weight gradients 2N): activation gradients still flow
    through every frozen weight, weight gradients only for the trainable ones, so 4N + 2N·f +
    attention (``trainable_fraction`` f), or 4N + 6·A + attention for LoRA adapters of A weights
    per token (``adapter_params(active=True)``; LoRA §4). Full training: 6N + attention."""
    full = train_flops_per_token(p, w.seq_len, causal=causal)
    if getattr(w, "lora_rank", None):
        return full - 2.0 * p.params_matmul_active + 6.0 * adapter_params(p, w.lora_rank, active=True)
    return full - 2.0 * p.params_matmul_active * (1.0 - w.trainable_fraction)


def training_state_bytes_per_param(precision: str = "bf16", optimizer: str = "adam"):
    """Bytes per trainable parameter for weights + gradients + optimizer states.

    Mixed precision (bf16/fp16/fp8 compute) keeps an fp32 master copy: Adam = 2 (weights) + 2
    (gradients) + 4 (master) + 4 (m) + 4 (v) = 16 bytes (ZeRO, Rajbhandari et al. 2020, §3.1).
    fp32 training: 4 + 4 + 8 = 16. SGD with momentum: 2 + 2 + 4 + 4 = 12. Adafactor (factored
    second moment, Shazeer & Stern 2018): ~2 + 2 + 4 = 8."""
    optim = {"adam": 12.0, "sgd": 8.0, "adafactor": 4.0}[optimizer]
    if precision == "fp32":
        return 4.0 + 4.0 + optim - 4.0
    return 2.0 + 2.0 + optim


def weight_bytes(p: Profile, precision: str):
    """Bytes to hold every weight once in ``precision`` (int4/int8: weight-only quantisation)."""
    return p.params_total * bytes_per_value(precision)


def activation_bytes_per_token_per_layer(p: Profile, seq_len, recompute: str = "none", flash_attention: bool = True):
    """Activation bytes stored for backward, per token per layer, 16-bit activations, no TP.

    Korthikanti et al. 2022 §4.1: attention 11h + 5·a·s, MLP 19h (for f = 4h, non-gated), norms 4h,
    total h·(34 + 5as/h). Generalised to an MLP of width f as 3h + (2 or 3)·2f bytes (input, dropout
    mask and the 2-byte outputs of each projection and activation), which is 19h at f = 4h non-gated.
    MoE layers store the routed experts' activations for each of the k experts a token visits.
    ``flash_attention`` (Dao et al. 2022) and ``selective`` recompute drop the 5·a·s score term;
    ``full`` recompute keeps only the layer input (2h)."""
    s = np.asarray(seq_len, dtype=float)
    h = p.hidden
    f = p.moe_ffn_hidden * p.experts_per_token if p.is_moe else p.ffn_hidden
    mlp = 3.0 * h + (3.0 if p.gated_mlp else 2.0) * 2.0 * f
    attn = 11.0 * h + (0.0 if flash_attention else 5.0 * p.heads * s)
    per_layer = attn + mlp + 4.0 * h
    if recompute == "full":
        return 2.0 * h + 0.0 * s
    if recompute == "selective":
        per_layer = 11.0 * h + mlp + 4.0 * h + 0.0 * s
    return per_layer


FP8_SAVED_INPUT_PRECISIONS = ("fp8",)  # training precisions whose GEMM inputs Transformer Engine keeps in 8 bits


def fp8_saved_input_savings_per_token_per_layer(p: Profile, precision: str, recompute: str = "none") -> float:
    """Activation bytes per token per layer that FP8 training does not store, against
    ``activation_bytes_per_token_per_layer``'s 16-bit count: Transformer Engine's FP8 linear layers
    (the ``Linear``/``LayerNormLinear``/``LayerNormMLP`` modules Megatron-Core uses for FP8) cast each
    GEMM input to FP8 for the forward GEMM and keep that 1-byte copy for the weight-gradient GEMM of
    the backward pass (NVIDIA/TransformerEngine transformer_engine/pytorch/module/linear.py,
    ``_Linear.forward``: with FP8 weight gradients, ``ctx.save_for_backward`` keeps ``inputmat_t``, the
    FP8 cast-transposed input, and not the 16-bit ``inputmat``; read in the 2023 version of the file,
    TE 1.x; Megatron-Core runs FP8 through these modules, ``--fp8-format``). Of Korthikanti et al. 2022
    §4.1's per-layer terms the GEMM inputs are the QKV input (2h), the output-projection input (2h),
    the first MLP input (2h) and the second MLP input (2f; f = ``moe_ffn_hidden`` · k for MoE), so FP8
    halves 3h + f of them: 3h + f bytes. Norm inputs, softmax/attention tensors, activation-function
    inputs and dropout masks stay 16-bit (or 1-byte masks) as counted. ``full`` recompute keeps only
    the 16-bit layer input: no saving. 0 for other precisions."""
    if precision not in FP8_SAVED_INPUT_PRECISIONS or recompute == "full":
        return 0.0
    f = p.moe_ffn_hidden * p.experts_per_token if p.is_moe else p.ffn_hidden
    return 3.0 * float(p.hidden) + float(f)


def activation_bytes(p: Profile, seq_len, micro_batch_seqs, recompute: str = "none", layers=None,
                     flash_attention: bool = True):
    """Activation bytes of ``micro_batch_seqs`` sequences over ``layers`` layers (default all).

    With full recompute one layer's full activations are also live during its backward pass."""
    L = p.layers if layers is None else layers
    tokens = np.asarray(seq_len, dtype=float) * micro_batch_seqs
    stored = activation_bytes_per_token_per_layer(p, seq_len, recompute, flash_attention) * tokens * L
    if recompute == "full":
        stored = stored + activation_bytes_per_token_per_layer(p, seq_len, "none", flash_attention) * tokens
    return stored


def kv_cache_bytes_per_token(p: Profile, precision: str = "bf16"):
    """KV cache per token over all layers: layers · (2·kv_heads·head_dim or MLA latent) · bytes.

    GQA/MQA shrink it by heads/kv_heads (Ainslie et al. 2023); scaling-book ch. 7."""
    return p.layers * p.kv_cache_dim * bytes_per_value(precision)


# --- Arithmetic intensity ----------------------------------------------------------------------

def decode_arithmetic_intensity(p: Profile, batch, context, weight_precision: str = "bf16", kv_precision: str = "bf16"):
    """FLOPs per byte of HBM traffic for one decode step of ``batch`` sequences at ``context`` tokens.

    Each step reads every active weight once (shared by the batch) and each sequence's KV cache;
    intensity ≈ batch·2N / (N·bytes + batch·kv) — about ``batch`` FLOPs/byte for bf16 weights at short
    context, so decode is memory-bound until the batch reaches the chip's FLOPs/byte ridge point
    (scaling-book ch. 7)."""
    b = np.asarray(batch, dtype=float)
    flops = b * decode_flops_per_token(p, context)
    weights_read = decode_weight_bytes_read(p, b, weight_precision)
    kv = b * np.asarray(context, dtype=float) * kv_cache_bytes_per_token(p, kv_precision)
    return flops / (weights_read + kv)


def decode_weight_bytes_read(p: Profile, batch, precision: str = "bf16"):
    """Weight bytes read per decode step: every weight used in a matmul (the input embedding is a
    lookup of a few rows; a tied embedding is read once as the output layer). MoE: only the experts the
    batch's tokens route to, E·(1-(1-k/E)^batch) distinct experts per layer under uniform routing."""
    b = np.asarray(batch, dtype=float)
    bpv = bytes_per_value(precision)
    if not p.is_moe:
        return np.full_like(b, p.params_matmul_active * bpv) if np.ndim(b) else p.params_matmul_active * bpv
    routed_active = p.params_expert * p.experts_per_token / p.experts
    frac = 1.0 - (1.0 - p.experts_per_token / p.experts) ** b
    return (p.params_matmul_active - routed_active + p.params_expert * frac) * bpv


def prefill_arithmetic_intensity(p: Profile, input_tokens, batch=1, precision: str = "bf16"):
    """FLOPs per byte for a prefill of ``batch`` prompts of ``input_tokens``: weights read once."""
    tokens = np.asarray(input_tokens, dtype=float) * batch
    return tokens * prefill_flops_per_token(p, input_tokens) / decode_weight_bytes_read(p, tokens, precision)
