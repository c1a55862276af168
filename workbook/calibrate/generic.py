"""Reference runs of generic (non-transformer) models: ResNet-50 training and inference throughput
published with chip counts (NVIDIA DeepLearningExamples), converted to one definition and predicted
by the generic path of the model (``estimate.data_parallel_fallback`` for training,
``serving.estimate_serving`` for inference), so the generic efficiency scale is fitted on published
runs and its band comes from their scatter.

A generic run names its per-sample cost in ``architecture`` as ``generic:params=...;
train_flops_per_sample=...;infer_flops_per_sample=...`` (keys of ``scenario.GenericProfile``).
Metrics: ``generic_mfu`` = train_flops_per_sample · samples/s / (chips · dense peak), and
``generic_samples_per_s_per_chip``.
"""
from __future__ import annotations

import pandas as pd

from .. import catalog
from ..errors import InputError
from ..model import serving
from ..model.efficiency import Efficiency, default, peak
from ..model.estimate import data_parallel_fallback
from ..model.profile import Profile, workload_profile
from ..scenario import GenericProfile, Workload

PREFIX = "generic:"
METRICS = {"generic_mfu": "generic training", "generic_samples_per_s_per_chip": "generic inference"}
HEADROOM = 0.1


def is_generic_shape(text) -> bool:
    return isinstance(text, str) and text.startswith(PREFIX)


def parse_generic(text: str, where: str) -> GenericProfile:
    """``generic:params=2.56e7;train_flops_per_sample=2.28e10`` as a ``GenericProfile``."""
    data = {}
    for part in text[len(PREFIX):].split(";"):
        if not part.strip():
            continue
        if "=" not in part:
            raise InputError(f"{where}: expected key=value pairs after 'generic:', got {part.strip()!r}")
        k, v = (x.strip() for x in part.split("=", 1))
        if k not in GenericProfile.model_fields:
            raise InputError(f"{where}: unknown key {k!r}{catalog._suggest(k, list(GenericProfile.model_fields))}")
        data[k] = float(v)
    return GenericProfile.model_validate(data)


def _workload(row) -> Workload:
    g = parse_generic(row["architecture"], f"reference_runs.csv: run {row.get('run')}: architecture")
    task = "training" if row["kind"] == "training" else "inference"
    if task == "training":
        extra = {"samples": 1e9, "global_batch_tokens": float(row["global_batch_seqs"])}
    else:  # an MLPerf Offline run publishes no batch: best throughput (no concurrency)
        extra = {} if pd.isna(row.get("batch")) else {"concurrency": int(float(row["batch"]))}
    return Workload(task=task, generic=g, precision=row["precision"], **extra)


def profile(row) -> Profile:
    return workload_profile(_workload(row))


def convert(row) -> float:
    """``samples_per_s_total`` -> ``generic_mfu`` (training) or samples/s per chip (inference)."""
    if row["basis"] != "samples_per_s_total":
        raise InputError(f"reference_runs.csv: run {row['run']!r}: basis: a generic run expects samples_per_s_total")
    v, chips = float(row["published_value"]), float(row["chips"])
    if row["metric"] == "generic_samples_per_s_per_chip":
        return v / chips
    acc = catalog.accelerator_record(row["accelerator"])
    return v * float(_workload(row).generic.train_flops_per_sample) / (chips * peak(acc, row["precision"]))


def predict(row, eff: Efficiency | None = None) -> float:
    """The generic model's figure for one run in its metric."""
    eff = default(eff)
    w, acc = _workload(row), catalog.accelerator_record(row["accelerator"])
    p, chips = workload_profile(w), int(row["chips"])
    if row["metric"] == "generic_mfu":
        r = data_parallel_fallback(p, acc, float(chips), w, HEADROOM, w.global_batch_tokens, eff)
        samples_per_s = w.global_batch_tokens / float(r["step_time_s"])
        return float(p.train_flops_per_sample * samples_per_s / (chips * peak(acc, w.precision)))
    out = serving.estimate_serving(p, acc, w, HEADROOM, chips, eff=eff)
    return float(out["output_tokens_per_s"]) / chips


def is_generic(row) -> bool:
    return row.get("metric") in METRICS


def generic_rows(runs: pd.DataFrame) -> pd.Series:
    return runs["metric"].isin(list(METRICS))
