"""The calibrated efficiency as a value: what fraction of a chip's datasheet peak each kind of work
reaches, the roofline, and the uncertainty bands.

Parameters live in ``data/efficiency.csv`` (fitted by ``workbook.calibrate`` on the published runs of
``data/reference_runs.csv``; every row names the runs that set it). ``Efficiency.from_csv()`` reads
them once; the calibration passes trial values (``Efficiency.from_table``); tests of the scaling
model pass ``Efficiency.constant(x)``. Nothing here keeps global state: every function takes the
``Efficiency`` it uses.

- Matmul work reaches ``ceiling[family] · width · moe`` of the dense peak of its precision
  (``compute_efficiency``). ``ceiling``: the fraction of peak that a transformer's matrix
  multiplications reach inside a training step (``matmul_ceiling``; fitted so that the multi-chip
  model of ``model.training``, with its communication, pipeline bubbles, recomputation and optimizer
  time, reproduces the published end-to-end MFU) or in an inference engine
  (``inference_matmul_ceiling``). ``width = h / (h + κ · peak / HBM bandwidth)``: per token, the
  element-wise work of a layer moves O(h) bytes through HBM while its matmuls do O(h²) FLOPs, so
  their time ratio is proportional to the chip's ridge point (peak FLOP/s over HBM bytes/s,
  Williams et al. 2009) over h; κ is one pooled constant. The same term gives FP8 its Amdahl's-law
  ceiling. Training only: an inference forward stores no activations and fuses its element-wise
  steps (``INFERENCE_WIDTH_NOTE``). ``moe`` (training only): mixture-of-experts overhead per platform (``moe_factor``).
- Roofline (Williams et al. 2009; "How to Scale Your Model" ch. 1): a step takes the larger of its
  compute time and its memory time.
- Bands: the ``_low``/``_high`` figures are P10/P90 of observed/predicted over the calibration runs
  (per family with at least 5 runs of that metric, pooled otherwise; for a family without calibrated
  parameters of its own, the spread of predicting the calibrated families from pooled parameters),
  widened to contain the estimate (``band``).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import catalog, terms
from ..errors import InputError
from . import mamf
from .profile import Profile, bytes_per_value

WORKS = ("train", "prefill", "decode")
FREE_METRIC = "mfu_free"  # the MFU band of a freely searched training layout (band_p10_mfu_free, band_p90_mfu_free)
# the parameter whose own value makes a family "calibrated" for each banded metric
CALIBRATED_BY = {"mfu": "matmul_ceiling", "mfu_free": "matmul_ceiling", "output_tokens_per_s_per_chip": "decode_memory_efficiency",
                 "tpot_ms": "decode_memory_efficiency", "ttft_ms": "matmul_ceiling",
                 "generic_mfu": "generic_train_scale", "generic_samples_per_s_per_chip": "generic_inference_scale"}


@dataclass(frozen=True)
class Efficiency:
    """Efficiency parameters ``{(parameter, scope): value}``; scope is an accelerator family, a
    platform, a kind (gpu, tpu, asic), ``pooled`` or ``uncalibrated``. Hashable, so that results
    computed with it can be cached on it. ``constant``: every matmul at that fraction of peak, no
    width, MoE or roofline terms, no synchronisation loss (a stand-in for testing the scaling model)."""

    items: tuple = ()
    constant: float | None = None

    @classmethod
    def from_table(cls, table: dict) -> "Efficiency":
        return cls(tuple(sorted((tuple(k), float(v)) for k, v in table.items())))

    @classmethod
    def from_csv(cls) -> "Efficiency":
        """The fitted parameters of ``data/efficiency.csv`` (read once per process)."""
        return _from_csv()

    @classmethod
    def fixed(cls, value: float) -> "Efficiency":
        """Every matmul at ``value`` of peak (tests of the layout model)."""
        return cls((), float(value))

    @functools.cached_property
    def table(self) -> dict:
        return dict(self.items)

    def replace(self, updates: dict) -> "Efficiency":
        """A copy with ``updates`` ``{(parameter, scope): value}`` set."""
        return Efficiency.from_table({**self.table, **updates})

    def without_scopes(self, scopes) -> "Efficiency":
        """A copy with every value of ``scopes`` removed (family-out predictions use the pooled ones)."""
        drop = set(scopes)
        return Efficiency.from_table({k: v for k, v in self.table.items() if k[1] not in drop})

    def get(self, name: str, scope: str | None = None, default_scope: str = "pooled") -> float:
        """The ``scope`` value of ``name`` when calibrated, else the ``default_scope`` one."""
        t = self.table
        if scope is not None and (name, scope) in t:
            return t[(name, scope)]
        if (name, default_scope) in t:
            return t[(name, default_scope)]
        raise InputError(f"data/efficiency.csv: parameter {name!r}: no value for {scope!r} and no pooled value "
                         f"(run `python -m workbook calibrate --write`)")

    def has(self, name: str, scope: str) -> bool:
        return (name, scope) in self.table

    @functools.cached_property
    def scopes(self) -> frozenset:
        return frozenset(sc for (_, sc), _ in self.items)

    def is_calibrated(self, name: str, family: str) -> bool:
        """Whether ``family`` has its own fitted value of ``name`` (else the pooled value is used)."""
        return self.has(name, family)


@functools.lru_cache(maxsize=None)
def _from_csv() -> Efficiency:
    df = catalog.load("efficiency")
    return Efficiency.from_table({(p, s): float(v) for p, s, v in zip(df["parameter"], df["scope"], df["value"])})


# A family without published runs of its own borrows the fitted values of the nearest calibrated
# family: its predecessor on the same vendor software stack (issue 24: "chips without any run get
# the nearest family's parameters and the wider uncalibrated band, labelled"). Its bands stay the
# uncalibrated ones and its estimates say calibrated False (``band_scope``).
NEAREST_FAMILY = {
    "amd-cdna4": "amd-cdna3",  # MI350X/MI355X after MI300X/MI325X: ROCm, same engines
    "tpu-v7": "tpu-v6e",  # Ironwood after Trillium: XLA/MaxText, JetStream
    "aws-trainium3": "aws-trainium2",  # Neuron SDK, NxD
}


def band_scope(eff: Efficiency, acc) -> str:
    """The scope of the accelerator's own calibration: its id where ``eff`` holds values for it (the
    team's runs, ``calibrate.own``), else its family. Bands and the ``calibrated`` label use it."""
    chip = str(acc.get("accelerator", ""))
    return chip if chip and chip in eff.scopes else str(acc["family"])


def scope_of(eff: Efficiency, acc) -> str:
    """The scope whose parameter values apply to the accelerator ``acc``: ``band_scope``, or, for a
    family with no fitted values, the nearest calibrated family (``NEAREST_FAMILY``)."""
    own = band_scope(eff, acc)
    near = NEAREST_FAMILY.get(own)
    return near if own not in eff.scopes and near in eff.scopes else own


def default(eff: Efficiency | None) -> Efficiency:
    """``eff``, or the fitted parameters when None."""
    return Efficiency.from_csv() if eff is None else eff


def peak(acc, precision: str) -> float:
    """Dense peak of ``precision`` on one chip, NaN when unpublished (``catalog.peak_flops_per_s``)."""
    return catalog.peak_flops_per_s(acc, precision)


def matmul_precision(acc, precision: str, fp4_fallback: str = "refuse") -> str:
    """The precision one chip runs a workload's matmuls at: ``terms.compute_precision``, except fp4 with
    ``fp4_fallback: weight_only`` on a chip without FP4 tensor cores (no ``peak_fp4_flops_per_s``): fp8
    where the chip has an FP8 peak (W4A8), else bf16 (W4A16). With ``refuse``: fp4 (the blank peak excludes it)."""
    prec = terms.compute_precision(precision)
    if prec == "fp4" and fp4_fallback == "weight_only" and math.isnan(peak(acc, "fp4")):
        return "fp8" if not math.isnan(peak(acc, "fp8")) else "bf16"
    return prec


FP4_REFUSAL = "no FP4 tensor cores (peak_fp4_flops_per_s blank); workload.fp4_fallback: weight_only serves fp4 weights with fp8/bf16 matmuls"


def candidate_precision(precision: str, fp4_fallback: str = "refuse") -> str:
    """The peak a chip must publish to be a candidate: ``terms.compute_precision``; bf16 for fp4 with
    ``fp4_fallback: weight_only`` (any chip dequantises FP4 weights)."""
    return "bf16" if (precision, fp4_fallback) == ("fp4", "weight_only") else terms.compute_precision(precision)


INFERENCE_WIDTH_NOTE = """Why prefill and decode carry no width term.

The width term prices element-wise work that moves O(h) bytes per token through HBM for every
O(h²) matmul FLOPs. A training step does: it writes the layer's activations to HBM for the backward
pass (about 34·s·b·h bytes per layer, Korthikanti et al. 2022, "Reducing Activation Recomputation in
Large Transformer Models", Table 2) and runs the element-wise backward. An inference forward stores
no activations, and the engines fuse the element-wise steps into single passes (vLLM's
``fused_add_rms_norm`` does the residual add and RMSNorm in one read of the token, csrc/layernorm_kernels.cu
@0112cf2; ``silu_and_mul`` the gated activation); the few h-vectors per token left are a small
fraction of the step's weight and KV-cache reads. With the training-fitted κ on serving (h / (h + κ·ridge),
κ = 3.5) Llama 3.3 70B in FP4 on B200 ran its matmuls at 0.67 of the family ceiling and 405B at
0.81, so prompt-heavy 70B runs came out 21-25% too slow and 405B 12-22% too fast; refitted without
it, held-out serving throughput went from 16% to 10% median error (AMD 16% to 5%, Blackwell 17% to
11%), training unchanged (docs/explanation/calibration.md)."""


def width_factor(hidden, h0):
    """Share of a layer's time spent in matmuls, ``h / (h + h0)``: element-wise work per token grows
    like h, matmul work like h² (``width_scale`` gives h0)."""
    h = np.asarray(hidden, dtype=float)
    return h / (h + h0)


def width_scale(eff: Efficiency, acc, precision: str) -> float:
    """h0 of ``width_factor`` on this chip at this precision: κ · peak / HBM bandwidth.

    Per token and layer, matmuls do c·h² FLOPs (at the peak) and element-wise operations move b·h
    bytes (at the HBM bandwidth), so element-wise time / matmul time = (b/c)·(peak/bandwidth)/h: the
    ridge point (Williams et al. 2009) scales the penalty; κ = ``width_hidden_per_ridge`` is fitted
    once for all chips (data/efficiency.csv). H100 (ridge 295 FLOP/byte in BF16) pays twice A100's
    (153) at the same width, FP8 twice BF16."""
    return eff.get("width_hidden_per_ridge") * peak(acc, precision) / float(acc["memory_bytes_per_s"])


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
    explicit expert-parallel communication of ``model.training`` comes on top. 1 for dense models."""
    if not p.is_moe or p.generic:
        return 1.0
    x = p.params_total / p.params_active - 1.0
    return 1.0 / (1.0 + bytes_per_flop * x * np.asarray(compute_rate, dtype=float) / dp_bytes_per_s(acc))


def network_loss(eff: Efficiency, acc) -> float:
    """γ of the training model's synchronisation term (``sync_s`` = γ · log2(chips / fast-domain
    chips) of the step) for the accelerator's family: fitted only where the published runs of one
    model and code at three or more chip counts beyond one domain leave a loss that the
    communication model does not explain (data/efficiency.csv ``network_loss_per_doubling``; 0 for
    every other family and for a fixed efficiency)."""
    t = eff.table
    return float(t.get(("network_loss_per_doubling", scope_of(eff, acc)), t.get(("network_loss_per_doubling", "pooled"), 0.0)))


def _ceiling(eff: Efficiency, acc, work: str) -> float:
    """The matmul ceiling of ``work`` for the accelerator's family: training uses the family's
    ``matmul_ceiling`` (a family without enough runs: the median of its kind, GPU, TPU or ASIC, else
    pooled), a fraction of the chip's measured matmul ceiling (``mamf.fraction``: MAMF / peak; 1
    where none is measured) that ``compute_efficiency`` multiplies in; inference the
    ``inference_matmul_ceiling`` (a fraction of peak), except prefill where the family has a
    ``prefill_matmul_ceiling`` of its own (fitted on its time-to-first-token runs: a prompt's large
    matmuls run alone and nearer the peak than the engines' mixed decode steps)."""
    fam, kind = scope_of(eff, acc), str(acc["kind"])
    if work == "train":
        return eff.get("matmul_ceiling", fam, default_scope=kind if eff.has("matmul_ceiling", kind) else "pooled")
    if work == "prefill" and eff.has("prefill_matmul_ceiling", fam):
        return eff.get("prefill_matmul_ceiling", fam)
    return eff.get("inference_matmul_ceiling", fam)


def precision_ratio(eff: Efficiency, acc, precision: str) -> float:
    """The training GEMM rate of ``precision`` relative to BF16's, each as a fraction of its own peak:
    the measured MAMF ratio (``mamf.precision_ratio``) where the chip or its family has both
    measurements; else ``matmul_ratio_<precision>`` fitted on published runs of one code at BF16
    and at that precision (data/efficiency.csv, per kind: the TPU int8 value from MaxText's GPT-3
    175B on v6e-256 at BF16 and with AQT int8, tpu-recipes); else 1 (no evidence: the datasheet
    ratio of peaks stands)."""
    measured = mamf.precision_ratio(acc, precision)
    if measured is not None:
        return measured
    name, t = f"matmul_ratio_{precision}", eff.table
    for scope in (scope_of(eff, acc), str(acc["kind"]), "pooled"):
        if (name, scope) in t:
            return float(t[(name, scope)])
    return 1.0


def compute_efficiency(eff: Efficiency, acc, precision: str, work: str, profile: Profile, tp=1, tokens=None,
                       ceiling=None):
    """Fraction of the dense peak of ``precision`` that matmul work reaches (scalar or numpy array,
    broadcast over ``tp`` and ``tokens``).

    ``work``: ``"train"`` (the matmuls of a training step: forward, backward), ``"prefill"`` or
    ``"decode"`` (forward passes in an inference engine). Efficiency = ceiling (``_ceiling``;
    ``ceiling`` overrides it) · BF16 MAMF/peak · ``precision_ratio`` (training only, ``mamf.fraction``: the ceiling is fitted
    as a fraction of the measured maximum achievable matmul rate, so a chip whose software reaches
    less of its peak, MI300X's 51% against H100's 80%, is not credited with another chip's
    efficiency) · width_factor(h, width_scale) (training only: ``INFERENCE_WIDTH_NOTE``) · moe_factor
    (training only). Tensor
    parallelism does not change it (with sequence parallelism both the matmuls and the element-wise
    work are split tp ways), and chip count does not enter: communication, bubbles and recomputation
    are ``model.training``'s. ``tokens`` (rows of each matmul per chip: micro-batch × sequence, or
    the decode batch) caps the result at the weight-streaming roofline 2·tokens·bandwidth / (bytes
    per weight · peak): a matmul over few tokens cannot run faster than its weights arrive ("How to
    Scale Your Model" ch. 1); inference streams at ``decode_memory_efficiency`` of the datasheet
    bandwidth, training at the datasheet bandwidth (a bound that rarely binds)."""
    if work not in WORKS:
        raise InputError(f"work: expected train, prefill or decode, got {work!r}")
    shape = np.broadcast(np.asarray(tp), np.asarray(1 if tokens is None else tokens)).shape
    if eff.constant is not None:
        out = eff.constant * np.ones(shape)
        return out if out.ndim else float(out)
    pk = peak(acc, precision)
    e = np.asarray(_ceiling(eff, acc, work) if ceiling is None else ceiling, dtype=float)
    if work == "train" and ceiling is None:
        e = e * mamf.fraction(acc, mamf.REFERENCE_PRECISION) * precision_ratio(eff, acc, precision)
    if profile.generic:  # published ResNet-50 runs scale the transformer-fitted efficiency (calibrate.generic)
        e = e * eff.table.get(("generic_train_scale" if work == "train" else "generic_inference_scale", "pooled"), 1.0)
    elif work == "train":  # the width term prices training's element-wise HBM traffic (INFERENCE_WIDTH_NOTE)
        e = e * width_factor(profile.hidden, width_scale(eff, acc, precision))
        e = e * moe_factor(profile, acc, eff.get("moe_bytes_per_flop", str(acc["platform"])), pk * e)
    e = e * np.ones_like(np.asarray(tp, dtype=float))
    if tokens is not None:
        bw = float(acc["memory_bytes_per_s"]) * (1.0 if work == "train" else eff.get("decode_memory_efficiency", scope_of(eff, acc)))
        roof = 2.0 * np.asarray(tokens, dtype=float) * bw / (bytes_per_value(precision) * pk)
        e = np.minimum(e, roof)
    return e if np.ndim(e) else float(e)


def roofline_time_s(flops, hbm_bytes, peak_flops_per_s, hbm_bytes_per_s):
    """Roofline lower bound: compute and memory traffic overlap perfectly (Williams et al. 2009;
    'How to Scale Your Model' ch. 1)."""
    return np.maximum(np.asarray(flops) / peak_flops_per_s, np.asarray(hbm_bytes) / hbm_bytes_per_s)


def ridge_point(peak_flops_per_s, hbm_bytes_per_s):
    """Arithmetic intensity (FLOPs/byte) where a chip turns from memory- to compute-bound."""
    return np.asarray(peak_flops_per_s) / hbm_bytes_per_s


def band(eff: Efficiency, metric: str, family: str) -> tuple[float, float]:
    """P10 and P90 of observed/predicted for ``metric`` (mfu, output_tokens_per_s_per_chip, tpot_ms,
    ttft_ms) on ``family``: the family's own scatter when it has enough runs, else pooled; for a
    family without calibrated parameters, the scatter of predicting families from pooled values.
    Widened to include 1 so that low <= estimate <= high."""
    t = eff.table
    for scope in (family, "pooled" if eff.is_calibrated(CALIBRATED_BY[metric], family) else "uncalibrated", "pooled"):
        k10, k90 = (f"band_p10_{metric}", scope), (f"band_p90_{metric}", scope)
        if k10 in t and k90 in t:
            return min(t[k10], 1.0), max(t[k90], 1.0)
    return (math.nan, math.nan)
