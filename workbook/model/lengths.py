"""Request lengths that vary: a dataset's answer-length distribution and what it changes where the
serving physics is nonlinear in length (``model.replica`` serves every request at the mean lengths).

- **Decode context.** Continuous batching refills a slot as soon as its answer ends, so a slot is
  held by a request for as many steps as it has answer tokens: the requests a step sees are
  length-biased (the inspection paradox of renewal theory; renewal-reward theorem, Ross,
  "Stochastic Processes", 2nd ed. 1996, §3.6). The mean cached context over a slot's steps is
  I + E[O²] / (2·E[O]), not I + E[O]/2: the long answers occupy the batch for longer
  (``slot_tokens``). Decode attention reads each sequence's own KV cache (``replica.step_s``), so
  the step reads that much cache per slot.
- **KV memory.** PagedAttention (Kwon et al., SOSP'23, §4) allocates cache blocks as tokens are
  generated and preempts when they run out, so the sequences that fit beside the weights are the
  budget over the mean tokens a slot holds, ``slot_tokens`` (the long requests cap the batch),
  not over the mean final length.
- **The offline run's tail.** An offline benchmark (all N requests queued at time 0, request rate
  inf) keeps every slot busy until the queue empties; then the batch drains: each slot finishes
  the residual of its answer, the equilibrium residual of renewal theory with survival
  E[(O − t)+] / E[O] (Ross §3.4), so the batch t steps into the drain is B·E[(O − t)+] / E[O] and
  the drain lasts as long as the longest residual. Its steps are cheap (few sequences read the
  weights) but carry few tokens: the run's mean batch is below its slots (``offline_tokens_per_s``).
- **Prefill** cost per prompt is superlinear in the prompt (attention), E[I²]/E[I] per token: not
  built, as no spread of the prompts is published for the datasets here (the prompts are served at
  their mean, and with independent prompt and answer lengths the decode context above is unchanged).

Each distribution of ``DATASETS`` is a lognormal answer length fitted to a published mean and
median, cut at the benchmark's own bound; its quantiles (``answer_quantiles``) stand in for the
sample. A scenario names its distribution in ``workload.request_lengths`` (its keys are
``terms.REQUEST_LENGTHS``; the distribution's shape then spreads the scenario's own ``output_tokens``),
a reference run in ``reference_runs.csv`` column ``request_lengths``.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .efficiency import compute_efficiency
from .replica import decode_step_s, prefill_s, serving_point

DRAIN_NODES = 33      # points of the drain integral (trapezoid over the longest residual)
QUANTILES = 400       # midpoint quantiles standing in for the answer-length sample


@dataclass(frozen=True)
class AnswerLengths:
    """Answer lengths O ~ lognormal(μ, σ) truncated at ``max_tokens``, fitted to a published ``mean``
    and ``median``: μ = ln(median) and σ such that the truncated distribution's mean is ``mean``
    (bisection; without the truncation σ = √(2·ln(mean / median)), the lognormal's mean being
    median·exp(σ²/2))."""

    mean: float
    median: float
    max_tokens: float
    source: str

    @property
    def sigma(self) -> float:
        return _fit_sigma(self.mean, self.median, self.max_tokens)


@functools.lru_cache(maxsize=None)
def _fit_sigma(mean: float, median: float, cap: float) -> float:
    """σ whose lognormal(ln median, σ) truncated at ``cap`` has mean ``mean`` (bisection on [0, 4]);
    0 when mean <= median."""
    if mean <= median:
        return 0.0
    lo, hi = 0.0, 4.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if float(np.mean(_quantiles(median, mid, cap, QUANTILES))) < mean:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def _quantiles(median: float, sigma: float, cap: float, n: int) -> np.ndarray:
    from statistics import NormalDist
    nd = NormalDist()
    if sigma <= 0:
        return np.full(n, min(median, cap))
    top = nd.cdf(math.log(cap / median) / sigma)
    z = np.array([nd.inv_cdf(top * (k + 0.5) / n) for k in range(n)])
    return np.clip(median * np.exp(sigma * z), 1.0, cap)


# ShareGPT as SGLang's bench_serving samples it (first human turn and first answer; pairs with a
# prompt under 4 or over 1,024 tokens or prompt + answer over 2,048 tokens dropped:
# sgl-project/sglang python/sglang/bench_serving.py ``sample_sharegpt_requests``, the same rule as
# vLLM's benchmarks/benchmark_serving.py), the tool of the SGLang v0.3.0 / vLLM v0.6.0 benchmark
# (sgl-project/sglang @120affb benchmark/benchmark_vllm_060/README.md, read 2026-12-02):
# - mean answer 194.3 tokens: its offline tables, output tokens/s over requests/s (4281.51 / 22.03;
#   the four 5,000-prompt runs agree within 0.1%);
# - median answer 119 tokens: its online tables at 4 and 8 requests/s, where a request's end-to-end
#   latency is TTFT + (O − 1)·TPOT and rises with O, so the median latency belongs to the median
#   answer: (median E2E − median TTFT) / median TPOT + 1 = 117 (8B, 4 rps: (1564.17 − 31.98) /
#   13.17 + 1), 121 (8B, 8 rps), 119 (70B, 4 rps: (3005.24 − 53.94) / 25.03 + 1), 122 (70B, 8 rps);
#   the SGLang rows, whose TPOT and ITL agree (the vLLM rows' ITL is 10 steps at once);
# - answers at most 2,048 − 4 tokens (the sampler's bound).
# σ = √(2·ln(194.3 / 119)) = 0.99: a coefficient of variation of 1.3. No prompt spread is
# published there: the prompts stay at their mean.
DATASETS = {
    "sharegpt-sglang-bench": AnswerLengths(
        mean=194.3, median=119.0, max_tokens=2044.0,
        source="sgl-project/sglang @120affb benchmark/benchmark_vllm_060/README.md (offline: mean 194.3; "
               "online SGLang rows: median 117-122 from median E2E, TTFT and TPOT)"),
}


def dataset(key) -> AnswerLengths | None:
    """The answer-length distribution of a ``DATASETS`` key; None for a blank key; ValueError naming
    the known keys otherwise."""
    if key is None or (isinstance(key, float) and math.isnan(key)) or key == "":
        return None
    if key not in DATASETS:
        raise ValueError(f"request_lengths: unknown {key!r}; expected one of {', '.join(sorted(DATASETS))}")
    return DATASETS[key]


def answer_quantiles(d: AnswerLengths, n: int = QUANTILES) -> np.ndarray:
    """``n`` answer lengths at the midpoint quantiles (k + ½)/n of the lognormal truncated at
    ``max_tokens`` (the sampler drops longer pairs rather than cutting them), at least 1: an
    equal-weight sample of the distribution (every answer at ``mean`` when σ = 0)."""
    if d.sigma <= 0:
        return np.full(n, min(d.mean, d.max_tokens))
    return _cached_quantiles(d.median, d.sigma, d.max_tokens, n)


@functools.lru_cache(maxsize=None)
def _cached_quantiles(median, sigma, cap, n):
    q = _quantiles(median, sigma, cap, n)
    q.setflags(write=False)
    return q


def slot_tokens(input_tokens: float, d: AnswerLengths | None, output_tokens: float | None = None) -> float:
    """Mean cached tokens of a continuously refilled slot over its decode steps: I + E[O²]/(2·E[O])
    (renewal-reward: a request holds its slot for O steps, at I + t tokens on step t). Without a
    distribution, I + O/2 (every answer at the mean ``output_tokens``); with both, the distribution's
    shape scaled to the mean ``output_tokens`` (E[O²]/E[O] scales with the mean)."""
    if d is None:
        return float(input_tokens) + float(output_tokens or 0.0) / 2.0
    o = answer_quantiles(d)
    scale = 1.0 if output_tokens is None else float(output_tokens) / float(np.mean(o))
    return float(input_tokens) + scale * float(np.mean(o ** 2) / (2.0 * np.mean(o)))


def drain_batch(d: AnswerLengths, slots: float, requests: float | None, t) -> np.ndarray:
    """Sequences still decoding ``t`` steps after the queue empties: slots·E[(O − t)+]/E[O] (each
    slot holds the equilibrium residual of its answer). With no more ``requests`` than slots all
    start together: requests·P(O > t)."""
    o = answer_quantiles(d)
    t = np.asarray(t, dtype=float)[..., None]
    if requests is not None and requests <= slots:
        return float(requests) * np.mean(o > t, axis=-1)
    return float(slots) * np.mean(np.maximum(o - t, 0.0), axis=-1) / np.mean(o)


def offline_tokens_per_s(eff, p, acc, slots, input_tokens, d: AnswerLengths, requests, tp, precision: str,
                         weight_precision: str, kv_precision: str, mem_eff=None, latency_s=None, ceiling=None,
                         prefill_ceiling=None) -> dict:
    """Output tokens/s of an offline run of ``requests`` requests with ``slots`` concurrent sequences
    on one replica: N·E[O] tokens over the steady phase, (N·E[O] − drain tokens) / B steps of the
    mean chunked-prefill step at the slot context (``replica.serving_point`` with
    ``decode_context`` = ``slot_tokens``), plus the drain, ∫ T(b(t)) dt over ``drain_batch`` b(t)
    of plain decode steps (the queue is empty: no prompt rides along) at a batch of at least one,
    each weighted by the chance 1 − exp(−b(t)) that any sequence is left (the survivors as a
    Poisson count; the fluid b(t) < 1 would count steps that do not run), by the trapezoid rule on
    ``DRAIN_NODES`` points up to the longest answer; plus the prefill of the prompts the steady
    steps leave out (drain tokens · I / E[O], the first batch's burst), so every prompt is prefilled
    once. Returns ``output_tokens_per_s``,
    ``tpot_s`` (steady step), ``ttft_s`` and the ``mean_batch`` over the run. Arrays broadcast
    as in ``serving_point`` (the calibration's grids)."""
    o = answer_quantiles(d)
    mean_o = float(np.mean(o))
    ctx = slot_tokens(input_tokens, d)
    pt = serving_point(eff, p, acc, slots, input_tokens, mean_o, tp, precision, weight_precision, kv_precision,
                       mem_eff=mem_eff, latency_s=latency_s, ceiling=ceiling, prefill_ceiling=prefill_ceiling,
                       decode_context=ctx)
    b_full = np.asarray(pt["output_tokens_per_s"] * pt["tpot_s"], dtype=float)  # sequences a steady step decodes
    n_tok = float(requests) * mean_o
    t = float(np.max(o)) * np.linspace(0.0, 1.0, DRAIN_NODES) ** 2   # denser where the batch falls fast
    b_t = drain_batch(d, float(slots), requests, t)
    alive = 1.0 - np.exp(-b_t)   # P(a step runs): at least one survivor, Poisson with mean b(t)
    shape = np.shape(pt["tpot_s"])
    bt = np.maximum(b_t, 1.0).reshape((-1,) + (1,) * len(shape))
    step = decode_step_s(eff, p, acc, bt, ctx, tp, precision, weight_precision, kv_precision, mem_eff=mem_eff,
                         latency_s=latency_s, compute_eff=_ceiling(eff, p, acc, precision, tp, ceiling, "decode"))
    drain_s = np.trapezoid(step * alive.reshape(bt.shape), t, axis=0)
    drain_tok = float(np.trapezoid(b_t, t))
    steady_steps = np.maximum(n_tok - drain_tok, 0.0) / np.maximum(b_full, 1.0)
    # the steady steps prefill I/E[O] prompt tokens per answer token they decode; the prompts of the
    # answers finished in the drain (drain_tok·I/E[O] tokens: the first batch's burst) come on top
    burst = drain_tok * float(input_tokens) / mean_o
    ce_p = _ceiling(eff, p, acc, precision, tp, ceiling if prefill_ceiling is None else prefill_ceiling, "prefill")
    burst_s = prefill_s(eff, p, acc, burst, input_tokens, tp, precision, weight_precision, mem_eff=mem_eff,
                        latency_s=latency_s, compute_eff=ce_p) if burst > 0 else 0.0
    total_s = steady_steps * pt["tpot_s"] + drain_s + burst_s
    drain_steps = float(np.trapezoid(alive, t))
    return {"output_tokens_per_s": n_tok / total_s, "tpot_s": pt["tpot_s"], "ttft_s": pt["ttft_s"],
            "mean_batch": n_tok / (steady_steps + drain_steps), "drain_s": drain_s, "total_s": total_s}


def _ceiling(eff, p, acc, precision, tp, ceiling, phase: str):
    return compute_efficiency(eff, acc, precision, phase, p, tp=tp, ceiling=ceiling)
