"""Reference runs of generic (non-transformer) models: ResNet-50 training and inference throughput
published with chip counts (NVIDIA DeepLearningExamples), converted to one definition and predicted
by the generic path of the model (``estimate.data_parallel_fallback`` for training,
``serving.estimate_serving`` for inference), so the generic efficiency scale is fitted on published
runs and its band comes from their scatter.

A generic run names its per-sample cost in ``architecture`` as ``generic:params=...;
train_flops_per_sample=...;infer_flops_per_sample=...`` (keys of ``scenario.GenericProfile``).
Metrics: ``generic_mfu`` = train_flops_per_sample · samples/s / (chips · dense peak), and
``generic_samples_per_s_per_chip``.

MLPerf Training publishes time to train, not throughput: ``mlperf_training_throughput`` converts one
result log (``:::MLLOG`` JSON lines, the MLPerf logging format of mlcommons/logging) into images/s =
epochs x ``train_samples`` / (``run_stop`` - ``run_start``), evaluation time included. MLPerf
Inference Offline publishes samples/s directly (``mlperf_log_summary.txt``).
"""
from __future__ import annotations

import json

import pandas as pd

from .. import catalog
from ..errors import InputError
from ..model import generic as generic_model, serving
from ..model.efficiency import Efficiency, default, peak
from ..model.estimate import data_parallel_fallback
from ..model.profile import Profile, workload_profile
from ..scenario import GenericProfile, Workload

PREFIX = "generic:"
METRICS = {"generic_mfu": "generic training", "generic_samples_per_s_per_chip": "generic inference"}
HEADROOM = 0.1


MLLOG = ":::MLLOG "


def read_mllog(text: str, where: str) -> list[dict]:
    """The ``:::MLLOG`` events of an MLPerf result log, in order (other lines are ignored)."""
    events = []
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith(MLLOG):
            try:
                events.append(json.loads(line[len(MLLOG):]))
            except json.JSONDecodeError as e:
                raise InputError(f"{where}: line {i}: expected a JSON object after ':::MLLOG' ({e.msg})") from None
    return events


def _event(events: list[dict], key: str, where: str, last: bool = False) -> dict:
    hits = [e for e in events if e.get("key") == key]
    if not hits:
        raise InputError(f"{where}: no ':::MLLOG' {key!r} event (expected an MLPerf Training result log)")
    return hits[-1] if last else hits[0]


def mlperf_training_throughput(text: str, where: str = "MLPerf log") -> dict:
    """An MLPerf Training result log as throughput: ``samples_per_s`` = epochs x ``train_samples`` /
    (``run_stop`` - ``run_start``) (time to train, evaluation included, so a lower bound of the
    training rate), with ``epochs``, ``run_s``, ``train_samples`` and ``global_batch_size``.
    Epochs = the ``epoch_num`` of the last ``eval_accuracy``, plus one where the log numbers epochs from
    0 (its first ``block_start`` has ``first_epoch_num`` 0: Google's v1.0 logs; NVIDIA's count from 1)."""
    ev = read_mllog(text, where)
    start, stop = _event(ev, "run_start", where), _event(ev, "run_stop", where, last=True)
    first_block = _event(ev, "block_start", where).get("metadata", {})
    last_eval = _event(ev, "eval_accuracy", where, last=True).get("metadata", {})
    if "epoch_num" not in last_eval or "first_epoch_num" not in first_block:
        raise InputError(f"{where}: expected 'epoch_num' on eval_accuracy and 'first_epoch_num' on block_start")
    epochs = float(last_eval["epoch_num"]) + (1.0 if float(first_block["first_epoch_num"]) == 0 else 0.0)
    run_s = (float(stop["time_ms"]) - float(start["time_ms"])) / 1e3
    if run_s <= 0:
        raise InputError(f"{where}: run_stop is not after run_start")
    samples = float(_event(ev, "train_samples", where)["value"])
    return {"epochs": epochs, "run_s": run_s, "train_samples": samples,
            "global_batch_size": int(_event(ev, "global_batch_size", where)["value"]),
            "samples_per_s": epochs * samples / run_s}


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
        samples_per_s = w.global_batch_tokens / float(generic_model.train_step_time_s(r["step_time_s"], eff))
        return float(p.train_flops_per_sample * samples_per_s / (chips * peak(acc, w.precision)))
    out = serving.estimate_serving(p, acc, w, HEADROOM, chips, eff=eff)
    return float(out["output_tokens_per_s"]) / chips


def is_generic(row) -> bool:
    return row.get("metric") in METRICS


def generic_rows(runs: pd.DataFrame) -> pd.Series:
    return runs["metric"].isin(list(METRICS))
