"""Options that one Monte Carlo evaluation serves: rows whose bills, draw by draw, are c x W + F for
one random W (the regions of one offer re-price it; ``cost.uncertainty.monte_carlo``).

The bill (``cost.bill.bill``) of an option under a draw is, with P its instance-hour price and F its
fixed cost (porting, and for serving the monthly fixed costs), cost = P x W + E x V + F, where W and
V depend only on the option's other inputs (instances, hours, terms, spares, tokens...) and on its
random streams (efficiency per accelerator and band, price doubt and spot price per instance:
``uncertainty.stream_keys``). Where the energy term E is 0 (and, for training, no per-month cost
rides on the drawn run length), two options with equal other inputs and streams have costs
c x W + F, c = P > 0: an increasing map of one W, so their sorted draws are the map of W's sorted
draws and every percentile is c x q(W) + F (a percentile commutes with an increasing map: Hyndman
and Fan 1996, type 7 interpolates between the same two order statistics). Otherwise the price stays
in the key (c = 1: only F differs). The draw-by-draw cheapest of a group with one F is its lowest
c; so ``p_cheapest`` needs one row per (group, F)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .bill import bill

PRICE, FIXED, PER_MONTH, ENERGY = "usd_per_instance_hour", "fixed_usd", "fixed_per_month_usd", "energy_usd_per_instance_hour"


class _Reads:
    """A priced frame that records the columns the bill reads (``name in rec``, ``rec[name]``)."""

    def __init__(self, frame: pd.DataFrame):
        self.frame, self.read = frame, set()

    def __contains__(self, name) -> bool:
        return name in self.frame

    def __getitem__(self, name):
        self.read.add(name)
        return self.frame[name].to_numpy()


def bill_inputs(priced: pd.DataFrame, training: bool) -> list[str]:
    """The columns of ``priced`` the bill reads for these rows (one evaluation at the point values:
    every branch the rows take), in frame order."""
    rec = _Reads(priced)
    bill(rec, training, hours_multiplier=1.0, price_mult=1.0, utilization=0.5, interruptions_per_hour=0.1)
    if not training and "tokens_per_month" in priced:
        rec.read.add("tokens_per_month")
    return [c for c in priced.columns if c in rec.read]


def _codes(values) -> np.ndarray:
    """Equal values, equal codes (NaN equals NaN)."""
    return pd.factorize(pd.Series(values), use_na_sentinel=False)[0]


def option_groups(priced: pd.DataFrame, training: bool, streams: list[np.ndarray]) -> dict:
    """Groups of the rows of ``priced`` that share one evaluation. ``streams``: per-row indices of
    the random streams a row draws (equal index, equal draws). Returns ``group`` (per row),
    ``first`` (the first row of each group: its representative), ``scale`` (c, per row),
    ``shift`` (F, per row) and ``unit`` (the price the representative is evaluated at: 1 where
    scaled, else its own)."""
    cols = bill_inputs(priced, training)
    fixed = [FIXED] if training else [FIXED, PER_MONTH]
    price = priced[PRICE].to_numpy(float)
    energy = np.nan_to_num(priced[ENERGY].to_numpy(float)) if ENERGY in priced else np.zeros(len(priced))
    per_month = (np.nan_to_num(priced[PER_MONTH].to_numpy(float)) if training and PER_MONTH in priced
                 else np.zeros(len(priced)))
    scaled = (energy == 0) & (per_month == 0) & np.isfinite(price) & (price > 0)
    keys = [_codes(priced[c].to_numpy()) for c in cols if c not in fixed and c != PRICE]
    keys += [np.asarray(x, dtype=np.int64).reshape(-1) for x in streams]
    keys.append(np.where(scaled, -1, _codes(price)))
    _, first, group = np.unique(np.column_stack(keys), axis=0, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    order = np.argsort(first, kind="stable")  # groups numbered in the order of their first row
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    shift = priced[FIXED].to_numpy(float)
    if not training:  # the bill's own sum
        shift = shift + priced[PER_MONTH].to_numpy(float)
    return {"group": rank[group], "first": first[order], "scale": np.where(scaled, price, 1.0),
            "shift": shift, "unit": np.where(scaled, 1.0, price)}


def unit_rows(priced: pd.DataFrame, groups: dict, training: bool) -> pd.DataFrame:
    """The representatives of the groups, priced at ``unit`` with no fixed cost: their bill is W."""
    rows = priced.iloc[groups["first"]].reset_index(drop=True)
    rows[PRICE] = groups["unit"][groups["first"]]
    rows[FIXED] = 0.0
    if not training and PER_MONTH in rows:
        rows[PER_MONTH] = 0.0
    return rows


def winners(groups: dict) -> np.ndarray:
    """The rows that can be cheapest in some draw: per group and fixed cost, the lowest price (the
    first row of equal ones), in row order."""
    d = pd.DataFrame({"g": groups["group"], "f": groups["shift"], "c": groups["scale"],
                      "row": np.arange(len(groups["group"]))})
    best = d.sort_values(["c", "row"], kind="stable").drop_duplicates(["g", "f"])
    return np.sort(best["row"].to_numpy())


def rank_positions(n: int, percents: np.ndarray):
    """The two order statistics (0-based) and the weight of each percentile of n sorted values
    (numpy's "linear" method, Hyndman and Fan 1996 type 7: virtual index (n - 1)·q)."""
    virtual = (n - 1) * percents
    prev = np.floor(virtual)
    nxt = prev + 1
    above, below = virtual >= n - 1, virtual < 0
    prev[above], nxt[above] = -1, -1
    prev[below], nxt[below] = 0, 0
    return prev.astype(np.intp), nxt.astype(np.intp), virtual - prev


def lerp_ranks(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Between order statistics a and b (shape (percents, rows)) at weights t (per percent): the
    two-sided interpolation of numpy 2.x's ``_lerp`` (exact at both ends)."""
    t = t[:, None]
    diff = b - a
    out = a + diff * t
    np.subtract(b, diff * (1 - t), out=out, where=np.broadcast_to(t >= 0.5, out.shape))
    return out
