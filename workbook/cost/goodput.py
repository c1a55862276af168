"""The training bill's per-row pieces, evaluated once where rows share them (``cost.bill._bill_training``).

A Monte Carlo bills every offer x pricing model against thousands of draws; the offers of one shape in
many regions differ only in price, so the goodput (Young 1974 / Daly 2006, ``reliability``) is
evaluated once per distinct shape and gathered back per row, and a commitment's contract hours only on
the rows that commit. The arithmetic per element is the same as evaluating every row.
"""
from __future__ import annotations

import numpy as np

from .rates import capacity_block_hours
from .reliability import optimal_checkpoint_interval_s, wall_per_useful

_GOODPUT_KEYS = ("hosts", "failures_per_host_hour", "spot_exposure", "fixed_interval_s", "checkpoint_write_s",
                 "restart_s")


def goodput_rows(rec, lam, col, shared_draws: bool):
    """The checkpoint interval and wall time per useful hour (Young/Daly, ``reliability``) of every
    row, evaluated once per distinct (hosts, failure rate, spot exposure, checkpoint and restart
    times): the offers of one shape in many regions differ only in price, so a (rows x draws) Monte
    Carlo evaluates the exponentials once per shape (the same arithmetic, gathered back per row).
    ``shared_draws``: the reclaim-rate draws are the same for every row (else no row is shared)."""
    def of(lam_rows, c):
        mtbf = np.where(lam_rows > 0, 3600.0 / lam_rows, np.inf)
        fixed = c("fixed_interval_s")
        tau = np.where(np.isfinite(fixed), fixed, optimal_checkpoint_interval_s(c("checkpoint_write_s"), mtbf))
        return tau, wall_per_useful(np.where(np.isfinite(tau), tau, np.inf), c("checkpoint_write_s"), c("restart_s"), mtbf)

    lam = np.asarray(lam, dtype=float)
    if not shared_draws or lam.ndim < 2 or lam.shape[0] < 2 or lam.shape[0] != len(np.atleast_1d(rec["hosts"])):
        return of(lam, col)
    keys = np.column_stack([np.asarray(rec[k], dtype=float) for k in _GOODPUT_KEYS])
    _, first, inverse = np.unique(np.nan_to_num(keys, nan=-1.0, posinf=-2.0), axis=0, return_index=True,
                                  return_inverse=True)
    if len(first) == len(keys):
        return of(lam, col)
    tau, g = of(lam[first], lambda name: col(name)[first])
    inverse = inverse.reshape(-1)
    return tau[inverse], g[inverse]


def contract_hours(rec, col, reserved, wall_h):
    """Hours a commitment or purchase pays (``contract_h``: the terms that cover the wall time, at
    least the minimum term; a capacity block: the shortest block that holds it, NaN beyond; NaN on
    other rows) and the paid hours (wall hours, and on reserved rows the contract less its backfilled
    share). Evaluated on the reserved rows only when the rows are arrays (a Monte Carlo's)."""
    res = np.flatnonzero(np.asarray(reserved).reshape(-1))
    rowwise = np.ndim(rec["term_h"]) == 1 and np.ndim(wall_h) >= 1 and np.shape(wall_h)[0] == len(np.asarray(reserved))
    if not rowwise:
        term_h = col("term_h")
        contract_h = np.where(reserved, np.maximum(np.ceil(np.maximum(wall_h, 1e-9) / term_h) * term_h,
                                                   col("min_term_h") if "min_term_h" in rec else 0.0), np.nan)
        if "capacity_block" in rec:
            contract_h = np.where(col("capacity_block") > 0, capacity_block_hours(wall_h), contract_h)
        return contract_h, np.where(reserved, wall_h + (1.0 - col("backfill_fraction")) * (contract_h - wall_h), wall_h)
    shape = np.broadcast_shapes(np.shape(wall_h), np.shape(reserved))
    contract_h = np.full(shape, np.nan)
    paid_h = np.array(np.broadcast_to(wall_h, shape), dtype=float)
    if len(res):
        w = paid_h[res]
        t = col("term_h")[res]
        c = np.maximum(np.ceil(np.maximum(w, 1e-9) / t) * t, col("min_term_h")[res] if "min_term_h" in rec else 0.0)
        if "capacity_block" in rec:
            block = col("capacity_block")[res] > 0
            if np.any(block):
                c = np.where(block, capacity_block_hours(w), c)
        contract_h[res] = c
        paid_h[res] = w + (1.0 - col("backfill_fraction")[res]) * (c - w)
    return contract_h, paid_h
