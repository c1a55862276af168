"""Training on what an offering actually sells: whole instances or TPU slices, on that offering's
network, sized for the deadline after the wait to start.

An offering (a row of ``data/offerings.csv``) sells ``chips_per_instance`` chips per instance or slice:
the plan runs on whole instances (every chip paid for is used: ``chips`` = ``chips_billed``), the
fast chip-to-chip domain is the part of the chip's domain the shape contains (a tpu-v6e-8 slice has
8 chips on ICI, a tpu-v6e-256 slice 256; more instances talk over the network: TPU Multislice over
DCN, GPU instances over EFA/InfiniBand/RoCE), and the network between instances is the offering's
``inter_node_bytes_per_s`` (per instance; the accelerator catalog's per-chip figure where the
offering's is not published, said in ``network_basis``). The chip count is the fewest whole
instances that finish by (deadline - start days) / q, q the multiple of the point estimate that the
run stays below with probability ``constraints.deadline_confidence`` (given by the caller), and
never more than the chip's largest published cluster or slice (``max_cluster_chips``) or
``constraints.max_chips``.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pandas as pd

from .. import catalog
from ..scenario import Scenario
from .efficiency import Efficiency, peak
from .estimate import estimate_training_on, training_tokens
from .profile import fine_tune_flops_per_token, workload_profile


def offer_record(acc: dict, chips_per_instance: float, instance_bytes_per_s: float) -> tuple[dict, str]:
    """The accelerator record as one offering sells it, and where its network figure comes from: the
    fast domain cut to the instance or slice (``fast_domain_chips`` = min(chip's, chips per
    instance); a node no larger than the instance) and the per-chip network = the offering's
    per-instance bandwidth / chips per instance."""
    rec = dict(acc)
    cpi = int(chips_per_instance)
    rec["fast_domain_chips"] = min(int(acc.get("fast_domain_chips") or cpi), cpi)
    rec["chips_per_node"] = min(int(acc.get("chips_per_node") or cpi), cpi)
    if instance_bytes_per_s == instance_bytes_per_s and instance_bytes_per_s:  # not NaN
        rec["inter_node_bytes_per_s"] = float(instance_bytes_per_s) / cpi
        return rec, "offering (data/offerings.csv inter_node_bytes_per_s / chips_per_instance)"
    return rec, "accelerator catalog (the offering's network is not published)"


def hosts_of(chips: float, chips_per_instance: float, chips_per_node: float) -> float:
    """Hosts in ``chips`` chips bought as instances of ``chips_per_instance`` (a slice of c chips on
    hosts of n chips has c / n hosts; an instance of fewer chips than a node is one host)."""
    instances = math.ceil(chips / chips_per_instance)
    return instances * max(1.0, math.ceil(chips_per_instance / chips_per_node))


def ideal_days(s: Scenario, acc: dict, chips: float) -> float:
    """A lower bound on the run length: the run's model FLOPs (6N + attention per token, Kaplan et
    al. 2020; with frozen weights ``profile.fine_tune_flops_per_token``) on ``chips`` chips at their
    dense peak (MFU 1, no recomputation, no communication). NaN for generic workloads."""
    w = s.workload
    p = workload_profile(w)
    if p.generic:
        return math.nan
    flops = float(fine_tune_flops_per_token(p, w))
    return flops * training_tokens(w) / (chips * peak(acc, w.precision)) / 86400.0


def _plan_one(s: Scenario, acc: dict, rec: dict, cpi: int, start_days: Callable[[float], float], q: float,
              eff: Efficiency | None) -> dict:
    """The estimate of one shape: a pinned cluster rounded up to whole instances; else one instance
    when it meets the deadline after one instance's start days (not searched when even its
    ``ideal_days`` miss it); else the fewest whole instances that meet it after a cluster's start
    days (``start_days(2)``: the wait of more than one instance)."""
    node = float(acc.get("chips_per_node") or 1)
    dl = s.constraints.deadline_days
    pinned_cluster = s.cluster is not None and catalog.resolve("accelerators", s.cluster.accelerator) == acc["accelerator"]
    if pinned_cluster:
        n = int(math.ceil(s.cluster.chips / cpi) * cpi)
        row = estimate_training_on(s, rec, n, s.cluster.parallelism, eff)
    elif dl is None:
        row = estimate_training_on(s, rec, None, None, eff, unit=cpi)
    else:
        row = None
        left1 = dl - float(start_days(1))
        if not ideal_days(s, acc, cpi) * q > left1:  # one instance can meet it even at MFU 1: evaluate it
            one = estimate_training_on(s, rec, cpi, None, eff)
            if one["fits"] and one["training_days"] * q <= left1:
                row = one
        if row is None:
            left = max(dl - float(start_days(2)), 1e-3)
            row = estimate_training_on(s, rec, None, None, eff, unit=cpi, deadline_days=left / q)
    chips = row.get("chips")
    row["hosts"] = hosts_of(float(chips), cpi, node) if chips else math.nan
    return row


def plan_offers(s: Scenario, shapes: pd.DataFrame, start_days: Callable[[dict, float], float],
                deadline_multiple: dict[str, float] | None = None, eff: Efficiency | None = None) -> pd.DataFrame:
    """One training estimate per offering of ``shapes`` (columns ``offering``, ``accelerator``,
    ``chips_per_instance``, ``inter_node_bytes_per_s``): the ``estimate_training`` columns on the
    offering's shape and network, plus ``hosts``, ``network_bytes_per_s_per_chip`` and
    ``network_basis``. ``start_days(shape, instances)`` (``shape``: the row as a dict): the days before that many instances of the
    shape run (they shorten the time left before the deadline). Shapes with the same chip, instance
    size, network and start days share one plan. ``deadline_multiple``: per accelerator, the q of
    the module docstring (default 1: the point estimate meets the deadline)."""
    q_of = deadline_multiple or {}
    rows, memo = [], {}
    for sh in shapes.to_dict("records"):  # each shape as a dict (a row read by name, as a Series is)
        acc = catalog.accelerator_record(sh["accelerator"])
        cpi = int(sh["chips_per_instance"])
        net = float(sh["inter_node_bytes_per_s"]) if pd.notna(sh.get("inter_node_bytes_per_s")) else math.nan
        waits = (float(start_days(sh, 1)), float(start_days(sh, 2)))
        key = (acc["accelerator"], cpi, None if np.isnan(net) else net, waits)
        if key not in memo:
            rec, basis = offer_record(acc, cpi, net)
            row = _plan_one(s, acc, rec, cpi, lambda n, w=waits: w[0] if n <= 1 else w[1],
                            float(q_of.get(acc["accelerator"], 1.0)), eff)
            row["network_bytes_per_s_per_chip"] = rec["inter_node_bytes_per_s"]
            row["network_basis"] = basis
            memo[key] = row
        rows.append({**memo[key], "offering": sh["offering"]})
    return pd.DataFrame(rows)
