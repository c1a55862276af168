"""Generic (non-transformer) models: the fixed time of every training step, and serving (``serve``:
latency, throughput and queueing of one forward pass per request).

A data-parallel step of a convolutional network costs a part that grows with the images each chip
processes (the convolutions, and the batch-norm and element-wise passes over the activations) and a
part that does not: the launch and the minimum duration of every layer's forward, data-gradient and
weight-gradient kernels, the optimizer's pass over all weights, and the latency of the gradient
all-reduce. Per chip, step time = per-image time x images per chip + ``generic_step_overhead_s``
(the linear 'fixed cost plus per-item cost' model of a batched step).

Source of the form: the MLPerf Training ResNet-50 result logs at different images per chip
(``data/reference_runs.csv``, ``*-mlperf-resnet-*`` rows; step time = images per chip / images per
chip per second): on H100 16 images per GPU take 6.3 ms a step (NVIDIA Eos, 2,528 GPUs, v4.0) and 400
take 57.1 ms (ASUSTeK, 8 GPUs, v3.1), a line of 0.132 ms per image plus 4.2 ms; on A100 408 take
124.1 ms (8 GPUs) and 51 take 19.7 ms (64 GPUs, both NVIDIA v2.0), 0.293 ms per image plus 4.7 ms.
The value used is fitted with the generic efficiency scale (``calibrate.fit.fit_generic``) on the
generic ``fit`` runs; none fitted = 0.
"""
from __future__ import annotations

import math

import numpy as np

from .. import terms
from . import queueing
from .efficiency import Efficiency, band, compute_efficiency, matmul_precision, peak, roofline_time_s, scope_of
from .profile import Profile, mlperf_benchmark, weight_bytes

STEP_OVERHEAD = "generic_step_overhead_s"


def step_overhead_s(eff: Efficiency) -> float:
    """The fitted fixed time of a generic training step (s); 0 where none is fitted."""
    return float(eff.get(STEP_OVERHEAD)) if eff.has(STEP_OVERHEAD, "pooled") else 0.0


def train_step_time_s(step_time_s, eff: Efficiency):
    """A generic model's step time: ``estimate.data_parallel_fallback``'s (compute at the calibrated
    efficiency, exposed communication) plus the fixed per-step time (module docstring)."""
    return step_time_s + step_overhead_s(eff)


def estimate_label(w) -> str | None:
    """The label every output prints beside a generic estimate (``estimate --json`` ``estimate_label``):
    ``calibrated on MLPerf ResNet-50`` when the workload's per-sample FLOPs are a benchmark's the
    generic fit uses (``profile.mlperf_benchmark``), else ``uncalibrated/optimistic``; None for a
    transformer."""
    if w.generic is None:
        return None
    bench = mlperf_benchmark(w.generic, w.task)
    return terms.GENERIC_CALIBRATED_LABEL.format(benchmark=bench) if bench else terms.GENERIC_ESTIMATE_LABEL


# --- generic serving: one forward pass per request (an encoder, an embedding model, a vision model) ---

# batches a generic deployment tries (dynamic batching, as Triton's ``max_batch_size``): powers of two
SERVING_BATCHES = 2.0 ** np.arange(0, 11)  # 1 .. 1,024


def batch_time_s(eff: Efficiency, p: Profile, acc, w, batch):
    """Time of one batch of ``batch`` requests on one chip, by the roofline (Williams et al. 2009): the
    larger of compute b·F / (peak·efficiency) and memory (weights + b·``bytes_per_sample``) /
    (bandwidth·memory efficiency). The weights are read once per batch (a forward pass), so batching
    amortises them; F is ``infer_flops_per_sample``. Efficiency: the transformer-fitted prefill
    efficiency x ``generic_inference_scale`` (fitted on the published ResNet-50 inference runs,
    ``calibrate.generic``); memory efficiency: the fitted decode memory efficiency."""
    cprec = matmul_precision(acc, w.precision, w.fp4_fallback)
    e = compute_efficiency(eff, acc, cprec, "prefill", p)
    b = np.asarray(batch, dtype=float)
    mem = weight_bytes(p, w.weight_precision) + b * float(p.bytes_per_sample or 0.0)
    return roofline_time_s(b * float(p.infer_flops_per_sample), mem, peak(acc, cprec) * e,
                           float(acc["memory_bytes_per_s"]) * eff.get("decode_memory_efficiency", scope_of(eff, acc)))


def max_batch(p: Profile, acc, w, headroom: float) -> float:
    """The largest batch whose weights + batch x ``activation_bytes_per_sample`` fit one chip's memory
    less the headroom, at most the largest of ``SERVING_BATCHES``; 0 when the weights do not fit."""
    room = float(acc["memory_bytes"]) * (1.0 - headroom) - float(weight_bytes(p, w.weight_precision))
    if room < 0:
        return 0.0
    act = float(w.generic.activation_bytes_per_sample or 0.0) if w.generic is not None else 0.0
    cap = float(SERVING_BATCHES[-1])
    return cap if act <= 0 else float(min(cap, math.floor(room / act)))


def _latency_s(w, host_s, service_s, servers, q):
    """Latency of a request at quantile ``q``: host time + the wait for a free batch slot (M/G/c,
    ``queueing.wait_quantile_s``; c = replicas x batch slots, each held for the batch's time) + the
    batch's own time. Unloaded (no request rate): host + batch time."""
    if not w.requests_per_s:
        return host_s + service_s + 0.0 * np.asarray(servers, dtype=float)
    return host_s + service_s + queueing.wait_quantile_s(q, w.requests_per_s, service_s, servers)


def serve(eff: Efficiency, p: Profile, acc, w, headroom: float, pinned: int | None = None) -> dict:
    """The deployment of a generic model: one chip per replica (data-parallel copies), a batch of the
    ``SERVING_BATCHES`` grid that fits memory, and the fewest replicas that keep the queue stable
    (λ x batch time < replicas x batch) and meet ``ttft_slo_ms`` (the request's latency: this model has
    no tokens) at ``ttft_slo_percentile``; ties: the lower latency. ``pinned`` chips: that many
    replicas, the batch of highest throughput that meets the target (``concurrency``: batch =
    concurrency / replicas). Without a request rate: one replica at the largest batch that meets the
    target (the best throughput).

    Figures in the comparison row's keys: ``ttft_ms`` is the request latency unloaded (host + batch
    time), ``ttft_ms_p50``/``_p99``/``_at_slo_percentile`` under the load, ``output_tokens_per_s`` the
    deployment's requests (samples) per second, ``tpot_ms`` blank. The host time is
    ``workload.host_ms_per_request``, overlapped with the chip's work (it adds latency, not chip time).
    Calibrated: the throughput (samples/s per chip, on published ResNet-50 runs, band
    ``generic_samples_per_s_per_chip``); not calibrated: the host time, the queueing and the latency."""
    if p.infer_flops_per_sample is None:
        return {"fits": False, "reason": "workload.generic.infer_flops_per_sample is needed for an inference estimate"}
    mb = max_batch(p, acc, w, headroom)
    if mb < 1:
        wb = float(weight_bytes(p, w.weight_precision))
        return {"fits": False, "chips": pinned or 1, "reason": (f"weights ({wb / 1e9:.1f} GB) do not fit one chip's "
                                                                 "memory less the headroom")}
    host_s = float(w.host_ms_per_request) / 1e3
    q = float(w.ttft_slo_percentile) / 100.0 if w.ttft_slo_ms is not None else 0.99
    slo = w.ttft_slo_ms / 1e3 if w.ttft_slo_ms is not None else math.inf
    lam = float(w.requests_per_s or 0.0)
    batches = SERVING_BATCHES[SERVING_BATCHES <= mb]
    if w.concurrency is not None and pinned:
        batches = np.array([float(min(mb, math.ceil(w.concurrency / pinned)))])
    best = None
    for b in batches:
        t = float(batch_time_s(eff, p, acc, w, b))
        if pinned:
            r = np.array([float(pinned)])
        else:
            r0 = math.floor(lam * t / b) + 1 if lam else 1
            r = np.arange(r0, r0 + 4 * r0 + 64, dtype=float) if lam and math.isfinite(slo) else np.array([float(r0)])
        lat = np.atleast_1d(_latency_s(w, host_s, t, r * b, q))
        ok = lat <= slo
        j = int(np.argmax(ok)) if ok.any() else len(r) - 1
        thr = float(r[j] * b / t)
        meets = bool(ok[j]) and (not lam or lam < thr)
        key = ((not meets, -thr) if pinned or not lam else (not meets, r[j], float(lat[j])))
        if best is None or key < best[0]:
            best = (key, dict(b=float(b), t=t, r=float(r[j]), thr=thr, meets=meets))
    c = best[1]
    servers = c["r"] * c["b"]
    tails = {k: float(np.atleast_1d(_latency_s(w, host_s, c["t"], servers, x))[0])
             for k, x in (("p50", 0.5), ("p99", 0.99), ("slo", q))}
    lo, hi = band(eff, "generic_samples_per_s_per_chip", "pooled")
    out = {"fits": True, "chips": int(c["r"]), "tp": 1, "pp": 1, "ep": 1, "replicas": int(c["r"]),
           "batch": int(c["b"]), "max_batch": int(mb), "meets_slo": c["meets"], "ttft_ms": (host_s + c["t"]) * 1e3,
           "ttft_ms_p50": tails["p50"] * 1e3, "ttft_ms_p99": tails["p99"] * 1e3,
           "ttft_ms_at_slo_percentile": tails["slo"] * 1e3, "tpot_ms": math.nan,
           "output_tokens_per_s": c["thr"], "output_tokens_per_s_low": c["thr"] * lo,
           "output_tokens_per_s_high": c["thr"] * hi, "ttft_ms_low": (host_s + c["t"] / hi) * 1e3,
           "ttft_ms_high": (host_s + c["t"] / lo) * 1e3, "layout": "data parallel",
           "memory_per_chip_bytes": float(weight_bytes(p, w.weight_precision)) + c["b"] * float(
               w.generic.activation_bytes_per_sample or 0.0),
           "calibrated": bool(mlperf_benchmark(w.generic, "inference")), "reason": ""}
    if not c["meets"]:
        out["reason"] = (f"misses ttft_slo_ms (the request latency) at P{q * 100:g} under the request rate "
                         f"(P99 {out['ttft_ms_p99']:,.0f} ms)" if lam < c["thr"] else
                         f"the pinned {pinned} chips serve {c['thr']:,.0f} requests/s < requests_per_s {lam:g}")
    return out
