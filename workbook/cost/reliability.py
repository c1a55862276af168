"""Failures, checkpoints, goodput, deadline odds and lead times of a training run (scalars or arrays).

A synchronous training job stops when any of its hosts fails or (spot) is reclaimed, rolls back to
the last checkpoint and restarts. Its wall time per unit of useful work follows from four inputs:

- the interruption rate of the whole job, hosts x (hardware failures per host-hour + spot reclaims
  per host-hour); the hardware rate's default is the Llama 3 run's (``Pricing.failures_per_host_hour``);
- the checkpoint write time: the model state (``checkpoint_bytes``, from the performance model)
  over the storage tier's bandwidth (``STORAGE_TIERS``);
- the restart time (``Pricing.restart_min``);
- the checkpoint interval: the optimum of Young 1974 ("A first order approximation to the optimum
  checkpoint interval", CACM 17(9)) as refined by Daly 2006 ("A higher order estimate of the optimum
  checkpoint interval for restart dumps", FGCS 22(3)), unless the scenario fixes one.

Goodput = useful time / wall time (Daly 2006's expected wall-clock model). The deadline odds take the
run length as log-normal between its P10 and P90 (``lognormal_from_band``).
"""
from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np

from .. import catalog
from .rates import lognormal_from_band


SECONDS_PER_HOUR = 3600.0


# Checkpoint storage tiers: per-chip write bandwidth (each rank writes its own shard in parallel)
# and the tier's aggregate cap, bytes/s (inf = not limited at that level; NaN = no sourced figure).
STORAGE_TIERS = {
    "object_store": {
        "per_chip_bytes_per_s": 5e9 / 8, "aggregate_bytes_per_s": math.inf,
        "source": "AWS re:Post 'Maximizing Amazon S3 transfer throughput to Amazon EC2 instances': each "
                  "connection to S3 transfers at most 5 Gbps, more connections scale; one connection per "
                  "rank assumed (5 Gb/s / 8 = 6.25e8 B/s per chip); S3 scales by prefix (3,500 PUT/s each)"},
    "parallel_fs": {
        "per_chip_bytes_per_s": math.inf, "aggregate_bytes_per_s": 2e12,
        "source": "Dubey et al. 2024 (Llama 3) §3.3.1: Meta's Tectonic file system for checkpoints, "
                  "2 TB/s sustained (7 TB/s peak) for the 16K-GPU cluster"},
    "nfs": {
        "per_chip_bytes_per_s": math.inf, "aggregate_bytes_per_s": 3414 * 2 ** 20,
        "source": "Amazon EFS API UpdateFileSystem: provisioned throughput 1-3414 MiBps (the upper limit "
                  "of one NFS file system without a support request)"},
    "local_nvme": {
        "per_chip_bytes_per_s": math.nan, "aggregate_bytes_per_s": math.inf,
        "source": "no sourced write bandwidth for the instances' local NVMe (data/offerings.csv "
                  "local_nvme_bytes is blank too): set pricing.checkpoint_write_bytes_per_s"},
}

NO_LEAD_TIME = "none published"  # start_days_source of a provider and chip no lead_times.csv row covers


def checkpoint_write_s(checkpoint_bytes, chips, tier: str = "object_store", write_bytes_per_s=None):
    """Seconds to write one checkpoint: bytes / min(chips x per-chip bandwidth, the tier's aggregate),
    or bytes / ``write_bytes_per_s`` when the scenario gives its own bandwidth. NaN when the tier has
    no sourced bandwidth and none is given. Example: Llama 3 405B's 6.48e12-byte state on a 2 TB/s
    parallel file system: 3.2 s."""
    b = np.asarray(checkpoint_bytes, dtype=float)
    if write_bytes_per_s is not None:
        return b / float(write_bytes_per_s)
    t = STORAGE_TIERS[tier]
    bw = np.minimum(np.asarray(chips, dtype=float) * t["per_chip_bytes_per_s"], t["aggregate_bytes_per_s"])
    return b / bw


def job_interruptions_per_hour(hosts, failures_per_host_hour, reclaims_per_host_hour=0.0):
    """Interruptions of a synchronous job per hour: any host failing or reclaimed stops all of them,
    so the rates add, hosts x (failures + reclaims) per host-hour. Llama 3: 2,048 hosts x 1.579e-4 =
    0.32 per hour, one every 3.1 hours (the paper: "one failure every three hours")."""
    return np.asarray(hosts, dtype=float) * (np.asarray(failures_per_host_hour, dtype=float)
                                             + np.asarray(reclaims_per_host_hour, dtype=float))


def young_interval_s(write_s, mtbf_s):
    """Young 1974's optimum compute time between checkpoints: sqrt(2·δ·M) (δ the write time, M the
    mean time between interruptions)."""
    return np.sqrt(2.0 * np.asarray(write_s, dtype=float) * np.asarray(mtbf_s, dtype=float))


def optimal_checkpoint_interval_s(write_s, mtbf_s):
    """Daly 2006's higher-order optimum: τ = sqrt(2δM)·[1 + (1/3)·sqrt(δ/(2M)) + (1/9)·δ/(2M)] − δ for
    δ < 2M, else M. Reduces to Young's sqrt(2δM) when δ << M. Llama 3 405B (δ = 3.2 s, M = 3.1 h):
    268 s."""
    d = np.asarray(write_s, dtype=float)
    m = np.asarray(mtbf_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = d / (2.0 * m)
        tau = np.sqrt(2.0 * d * m) * (1.0 + np.sqrt(r) / 3.0 + r / 9.0) - d
    return np.where(d < 2.0 * m, tau, m)


def wall_per_useful(interval_s, write_s, restart_s, mtbf_s):
    """Expected wall time per unit of useful compute (1 / goodput), Daly 2006's model with
    exponentially distributed interruptions: T_wall / T_solve = M·e^{R/M}·(e^{(τ+δ)/M} − 1) / τ
    (τ interval, δ write time, R restart, M mean time between interruptions). Limits: no
    interruptions (M = inf) gives 1 + δ/τ; δ = τ = 0 gives e^{R/M}. Always >= 1. Where M <= R + δ
    the job is, on average, interrupted before it has restarted and written one checkpoint: the
    formula still gives a finite (astronomical) wall time, which this model reads as never
    finishing (inf)."""
    tau = np.asarray(interval_s, dtype=float)
    d = np.asarray(write_s, dtype=float)
    r = np.asarray(restart_s, dtype=float)
    m = np.asarray(mtbf_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inv = np.where(np.isfinite(m), 1.0 / m, 0.0)
        daly = np.exp(r * inv) * np.expm1((tau + d) * inv) / (tau * inv)
        out = np.where(inv > 0, daly, 1.0 + d / tau)
        out = np.where((tau <= 0) & (d <= 0), np.exp(r * inv), out)
        out = np.where(m <= r + d, np.inf, out)
    return np.where(np.isnan(out), np.inf, np.maximum(out, 1.0))


def goodput(interval_s, write_s, restart_s, mtbf_s):
    """Useful fraction of the wall time: 1 / ``wall_per_useful``."""
    return 1.0 / wall_per_useful(interval_s, write_s, restart_s, mtbf_s)


def training_goodput(hosts, failures_per_host_hour, reclaims_per_host_hour, write_s, restart_s,
                     interval_s=None) -> dict:
    """Goodput of a run on ``hosts`` hosts: the job's interruption rate, its mean time between
    interruptions, the checkpoint interval (``interval_s``, else the Daly optimum) and the goodput."""
    lam = job_interruptions_per_hour(hosts, failures_per_host_hour, reclaims_per_host_hour)
    with np.errstate(divide="ignore"):
        mtbf = np.where(lam > 0, SECONDS_PER_HOUR / lam, np.inf)
    tau = optimal_checkpoint_interval_s(write_s, mtbf) if interval_s is None else np.broadcast_to(
        np.asarray(interval_s, dtype=float), np.shape(mtbf))
    tau = np.where(np.isfinite(tau), tau, np.nan)
    return {"interruptions_per_hour": lam, "mtbf_s": mtbf, "checkpoint_interval_s": tau,
            "goodput": goodput(np.where(np.isnan(tau), np.inf, tau), write_s, restart_s, mtbf)}


def p_meets_deadline(days_low, days_high, deadline_days, start_days=0.0):
    """P(start + run length <= deadline), the run length log-normal with P10 ``days_low`` and P90
    ``days_high`` (``rates.lognormal_from_band``); a band of zero width is a step at the point."""
    lo = np.asarray(days_low, dtype=float)
    hi = np.asarray(days_high, dtype=float)
    left = np.asarray(deadline_days, dtype=float) - np.asarray(start_days, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu, sigma = lognormal_from_band(lo, hi)
        z = (np.log(np.where(left > 0, left, np.nan)) - mu) / np.where(sigma > 0, sigma, np.nan)
    cdf = np.vectorize(lambda x: NormalDist().cdf(x) if np.isfinite(x) else np.nan, otypes=[float])(z)
    step = np.where(lo <= left, 1.0, 0.0)
    out = np.where(sigma > 0, cdf, step)
    out = np.where(left <= 0, 0.0, out)
    return np.where(np.isfinite(lo) & np.isfinite(hi), out, np.nan)


def deadline_quantile(days_low_ratio, days_high_ratio, confidence):
    """The multiple of the point estimate that the run length stays below with probability
    ``confidence``: exp(mu + sigma·z_c) for the log-normal through the band's ratios to the point."""
    mu, sigma = lognormal_from_band(days_low_ratio, days_high_ratio)
    return float(np.exp(mu + sigma * NormalDist().inv_cdf(confidence)))


def lead_time(provider, accelerator, instances, override=None) -> dict:
    """See ``_lead_time`` (cached per provider, accelerator, instances and override; a copy)."""
    return dict(_lead_time(provider, accelerator, float(instances), override))


def _build_lead_rows(lt) -> list[dict]:
    rows = lt.to_dict("records")
    for r in rows:
        r["min_instances"] = float(r["min_instances"])
    return rows


_LEAD_ROWS = catalog.PerLoad(_build_lead_rows)


def _lead_rows() -> list[dict]:
    """``data/lead_times.csv`` as a list of dicts (``min_instances`` as float), rebuilt when the
    catalog is reloaded: a scan of a few rows instead of a frame filter per lookup."""
    return _LEAD_ROWS.get(catalog.lead_times())


@functools.lru_cache(maxsize=4096)
def _lead_time(provider, accelerator, instances, override=None) -> dict:
    """Days before the capacity runs (quota and capacity waits) for ``instances`` instances or slices
    of ``accelerator`` from ``provider``: the scenario's ``constraints.start_days`` when given; else
    the ``data/lead_times.csv`` row of that provider whose ``accelerator`` is the chip or its family
    and whose ``min_instances`` the request reaches (point = the midpoint of days_low-days_high, the
    source named); else 0 days, ``"none published"`` (no source states a wait). Returns
    ``start_days``, ``start_days_low``, ``start_days_high`` and ``start_days_source``."""
    if override is not None:
        d = float(override)
        return {"start_days": d, "start_days_low": d, "start_days_high": d,
                "start_days_source": "scenario (constraints.start_days)"}
    acc = catalog.accelerator_record(accelerator) if accelerator in catalog.resolve_map("accelerators") else {}
    keys = {accelerator, acc.get("accelerator"), acc.get("family")} - {None}
    # the first catalog row (file order) of the provider, the chip or its family, reached by the count
    r = next((r for r in (_lead_rows() if instances == instances else ())
              if r["provider"] == provider and r["accelerator"] in keys and r["min_instances"] <= float(instances)), None)
    if r is None:
        return {"start_days": 0.0, "start_days_low": 0.0, "start_days_high": 0.0, "start_days_source": NO_LEAD_TIME}
    lo, hi = float(r["days_low"]), float(r["days_high"])
    return {"start_days": (lo + hi) / 2.0, "start_days_low": lo, "start_days_high": hi,
            "start_days_source": f"{r['source']} ({r['as_of']}; data/lead_times.csv)"}
