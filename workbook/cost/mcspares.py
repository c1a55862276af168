"""The spares of a Monte Carlo's latency-bound spot fleets along its interruption-rate draws, made once for all its
blocks of rows (``cost.uncertainty.monte_carlo`` evaluates the bill ``BLOCK_ROWS`` rows at a time; each block's
``bill._spot_factor`` reads the counts of its fleets here instead of searching them again). The counts are
``rates.spare_instances_over_rates``'s: each fleet's depend on its own inputs and the rates only, so one call over
every fleet gives each block the arrays it would compute."""
from __future__ import annotations

import contextvars

import numpy as np
import pandas as pd

from .rates import spare_instances_over_rates

# The spares of every latency-bound spot fleet of one Monte Carlo along its interruption-rate draws, made once for
# all its blocks of rows (``mc_spares``; set by ``cost.uncertainty.monte_carlo`` around its blocks)
MC_SPARES: contextvars.ContextVar = contextvars.ContextVar("mc_spares", default=None)


def fleet_keys(*cols) -> np.ndarray:
    """One row per fleet: (instances, restart hours, availability target, instances per replica), NaN as -1."""
    keys = np.column_stack([np.asarray(c, dtype=float).reshape(-1) for c in cols])
    return np.where(np.isnan(keys), -1.0, keys)


def mc_spares(unit: pd.DataFrame, lam: np.ndarray) -> dict | None:
    """``spare_instances_over_rates`` of the distinct latency-bound spot fleets of ``unit`` (priced rows: ``kind``
    spot, a finite ``spot_availability_target``) at the rate draws ``lam`` (shape (1, N)), in one call: each fleet's
    counts depend on its own inputs and the rates only (``rates.spare_instances_over_rates`` searches every fleet
    on its own), so a block of rows reads the same arrays it would compute. None when there is nothing to draw."""
    if "spot_availability_target" not in unit or np.size(lam) <= 1 or np.shape(lam)[0] != 1:
        return None
    tgt = unit["spot_availability_target"].to_numpy(float)
    lat = np.flatnonzero((unit["kind"].to_numpy(object) == "spot") & np.isfinite(tgt))
    if not len(lat):
        return None
    n = unit["instances"].to_numpy(float)[lat]
    lost = unit["lost_h_per_interruption"].to_numpy(float)[lat]
    u = unit["instances_per_replica"].to_numpy(float)[lat] if "instances_per_replica" in unit else np.ones(len(lat))
    keys = fleet_keys(n, lost, tgt[lat], u)
    first = np.sort(np.unique(keys, axis=0, return_index=True)[1])
    k = spare_instances_over_rates(n[first], lam, lost[first], tgt[lat][first], u[first])
    return {"lam": lam, "k": k, "row": {tuple(key): i for i, key in enumerate(keys[first].tolist())}}


def known(lam, keys: np.ndarray) -> np.ndarray | None:
    """The rows of the Monte Carlo's spares (``MC_SPARES``) of the fleets ``keys`` (``fleet_keys``) at the same draws
    ``lam``, else None."""
    t = MC_SPARES.get()
    if t is None or t["lam"] is not lam:
        return None
    at = [t["row"].get(tuple(key)) for key in keys.tolist()]
    return None if any(i is None for i in at) else t["k"][at]
