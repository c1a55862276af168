"""Generic (non-transformer) training: the fixed time of every optimizer step.

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

from .. import terms
from .efficiency import Efficiency
from .profile import mlperf_benchmark

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
