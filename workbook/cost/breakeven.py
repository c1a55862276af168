"""Break-even tables: when a commitment, a purchase or spot stops or starts paying against
on-demand, per accelerator (formulas in ``workbook.cost.rates``)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..scenario import Scenario
from ..terms import HOURS_PER_MONTH
from .rates import (breakeven_interruptions_spot, capacity_block_hours, breakeven_interruptions_spot_spares, breakeven_months_commit,
                    breakeven_months_purchase, breakeven_utilization_commit, spot_goodput_breakeven)


# --- break-even ------------------------------------------------------------------------------------

def _or_never(u):
    """A break-even utilization above 1 cannot be reached: inf ("never")."""
    return np.where(np.asarray(u, dtype=float) > 1.0, np.inf, u)


def _spares_fleet(option: pd.Series) -> bool:
    """A latency-bound spot fleet that keeps spare instances (an availability target and a size)."""
    return bool(pd.notna(option.get("spot_availability_target", np.nan)) and pd.notna(option.get("instances", np.nan)))


def max_interruptions_per_hour(s: Scenario, option: pd.Series, spot_usd_per_hour: float,
                               on_demand_usd_per_hour: float) -> float:
    """The interruption rate per instance-hour above which one spot option (a priced row) costs more
    than on-demand at the given prices: with spare instances for a latency-bound fleet, else from
    the lost hours (checkpoint interval for training)."""
    p = s.pricing
    if _spares_fleet(option):
        return breakeven_interruptions_spot_spares(spot_usd_per_hour, on_demand_usd_per_hour, p.restart_h,
                                                   option["instances"], option["spot_availability_target"])
    n = option["spot_instances"] if "spot_instances" in option and pd.notna(option["spot_instances"]) else 1.0
    ckpt = 0.0
    if s.is_training:  # the offer's checkpoint interval (the Young/Daly optimum unless the scenario fixes one)
        ckpt = (float(option["checkpoint_interval_s"]) / 3600.0 if pd.notna(option.get("checkpoint_interval_s", np.nan))
                else (p.checkpoint_interval_h or 0.0))
    return float(breakeven_interruptions_spot(spot_usd_per_hour, on_demand_usd_per_hour, ckpt, p.restart_h, n))


def _breakeven_entry(s: Scenario, r: pd.Series, od_price: float, spares_later: bool = False) -> dict:
    """The break-even figures of one non-on-demand option against an on-demand chip-hour price (a
    capacity block pays every hour of a block that follows the work, so it has no break-even month:
    it beats on-demand when utilization > block price / on-demand price). ``spares_later``: a spot
    fleet with spares leaves its interruption rate to the caller (solved for many rows at once)."""
    p = s.pricing
    model, price = r["pricing_model"], r["usd_per_chip_hour"]
    out = {}
    if model in ("commit_1y", "commit_3y", "monthly"):
        out["months_to_beat_on_demand"] = float(breakeven_months_commit(price, od_price, r["term_months"], p.utilization))
        out["utilization_to_beat_on_demand"] = float(_or_never(breakeven_utilization_commit(
            price, od_price, r["term_months"], p.horizon_months)))
    elif model == "capacity_block":  # every hour of a block is paid, however long it is: only utilization decides
        out["utilization_to_beat_on_demand"] = float(_or_never(price / od_price))
    elif model == "purchase":
        cpi = r["chips_per_instance"]
        hosting_h = r.get("hosting_usd_per_instance_hour", 0.0)
        hosting_h = 0.0 if pd.isna(hosting_h) else float(hosting_h)
        out["months_to_beat_on_demand"] = float(breakeven_months_purchase(
            (r["usd_per_instance_hour"] - hosting_h) * r["term_months"] * HOURS_PER_MONTH, od_price * cpi,
            r["energy_usd_per_instance_hour"], p.utilization, hosting_h * HOURS_PER_MONTH))
        out["utilization_to_beat_on_demand"] = float(_or_never(breakeven_utilization_commit(
            price + r["energy_usd_per_instance_hour"] / cpi, od_price, r["term_months"], p.horizon_months)))
    elif model == "spot":
        if not (spares_later and _spares_fleet(r)):
            out["max_interruptions_per_hour"] = max_interruptions_per_hour(s, r, price, od_price)
        out["min_useful_fraction"] = float(spot_goodput_breakeven(price, od_price))
    return out


# the priced columns ``_breakeven_entry`` and ``max_interruptions_per_hour`` read
_ENTRY_COLUMNS = ["accelerator", "pricing_model", "offering", "usd_per_instance_hour", "chips_per_instance",
                  "term_months", "hosting_usd_per_instance_hour", "energy_usd_per_instance_hour",
                  "spot_availability_target", "instances", "spot_instances", "checkpoint_interval_s"]
_BREAKEVEN_COLUMNS = ["accelerator", "pricing_model", "offering", "usd_per_chip_hour", "on_demand_offering",
                      "on_demand_usd_per_chip_hour", "price_ratio", "months_to_beat_on_demand",
                      "utilization_to_beat_on_demand", "max_interruptions_per_hour", "min_useful_fraction"]


def breakeven(s: Scenario, priced: pd.DataFrame) -> pd.DataFrame:
    """Per accelerator, against its cheapest on-demand chip-hour: months of use after which each
    commitment or purchase beats on-demand, the utilization at which it does over the scenario's
    horizon, and for spot the interruption rate and useful fraction at which it stops paying.

    Only the best (cheapest per chip-hour) offering of each accelerator x model is kept, so that one
    is chosen first (from the prices alone) and only its figures are worked out; the spot fleets'
    interruption rates are solved together (``breakeven_interruptions_spot_spares`` over arrays)."""
    # only the columns the figures read (the priced table is wide: filtering every column is the cost)
    ok = priced.loc[priced["usd_per_instance_hour"].notna(), [c for c in _ENTRY_COLUMNS if c in priced]]
    ok = ok.reset_index(drop=True)
    ok["usd_per_chip_hour"] = ok["usd_per_instance_hour"] / ok["chips_per_instance"]
    is_od = (ok["pricing_model"] == "on_demand").to_numpy()
    # per accelerator its cheapest on-demand row (the first of equal ones), and the other ways to pay in
    # the order of a per-accelerator loop (accelerators sorted, rows as priced)
    od_best = ok.loc[ok[is_od].groupby("accelerator", sort=True)["usd_per_chip_hour"].idxmin().to_numpy()]
    od_best = od_best.set_index("accelerator")
    cand = ok[~is_od & ok["accelerator"].isin(od_best.index).to_numpy()]
    cand = cand.iloc[np.argsort(cand["accelerator"].to_numpy(dtype=str), kind="stable")]
    if cand.empty:
        return pd.DataFrame(columns=_BREAKEVEN_COLUMNS)
    acc = cand["accelerator"]
    cand = pd.DataFrame({"priced_row": cand.index, "accelerator": acc.to_numpy(),
                         "on_demand_offering": od_best["offering"].reindex(acc).to_numpy(),
                         "on_demand_usd_per_chip_hour": od_best["usd_per_chip_hour"].reindex(acc).to_numpy(),
                         "pricing_model": cand["pricing_model"].to_numpy(), "offering": cand["offering"].to_numpy(),
                         "usd_per_chip_hour": cand["usd_per_chip_hour"].to_numpy()})
    # keep the best (cheapest per chip-hour) offering per accelerator x model (the same sorts as on the full table)
    best = cand.sort_values("usd_per_chip_hour").groupby(["accelerator", "pricing_model"], sort=True).head(1)
    best = best.sort_values(["accelerator", "pricing_model"]).reset_index(drop=True)
    rows, options = [], []
    # each option's priced row as a dict of the values ``ok.loc[label]`` holds (numpy scalars of numpy
    # columns, the elements of extension arrays), not a pandas Series per row
    values = {c: (ok[c].to_numpy() if isinstance(ok[c].dtype, np.dtype) else ok[c].array) for c in ok.columns}
    for b in best.itertuples(index=False):
        r = {c: v[b.priced_row] for c, v in values.items()}
        options.append(r)
        od_price = b.on_demand_usd_per_chip_hour
        entry = {"accelerator": b.accelerator, "pricing_model": b.pricing_model, "offering": b.offering,
                 "usd_per_chip_hour": b.usd_per_chip_hour, "on_demand_offering": b.on_demand_offering,
                 "on_demand_usd_per_chip_hour": od_price, "price_ratio": b.usd_per_chip_hour / od_price,
                 "months_to_beat_on_demand": np.nan, "utilization_to_beat_on_demand": np.nan,
                 "max_interruptions_per_hour": np.nan, "min_useful_fraction": np.nan}
        entry.update(_breakeven_entry(s, r, od_price, spares_later=True))
        rows.append(entry)
    out = pd.DataFrame(rows, columns=_BREAKEVEN_COLUMNS)
    _solve_spares(s, out, options)
    return out


def _solve_spares(s: Scenario, out: pd.DataFrame, options: list) -> None:
    """The spot rows of ``out`` whose fleet keeps spares (``_spares_fleet``): their interruption
    rates in one array bisection, written into ``max_interruptions_per_hour``."""
    at = [i for i, r in enumerate(options) if r["pricing_model"] == "spot" and _spares_fleet(r)]
    if not at:
        return
    rates = breakeven_interruptions_spot_spares(
        out["usd_per_chip_hour"].to_numpy()[at], out["on_demand_usd_per_chip_hour"].to_numpy()[at],
        s.pricing.restart_h, np.array([float(options[i]["instances"]) for i in at]),
        np.array([float(options[i]["spot_availability_target"]) for i in at]))
    out.loc[at, "max_interruptions_per_hour"] = np.atleast_1d(rates)


def _cheapest_accelerator(s: Scenario, ok: pd.DataFrame) -> str | None:
    ranked = ok[ok["excluded_reason"].isna()] if "excluded_reason" in ok else ok
    metric = "cost_usd" if s.is_training else "usd_per_million_tokens"
    ranked = ranked.dropna(subset=[metric])
    return (ranked.loc[ranked[metric].idxmin(), "accelerator"] if len(ranked)
            else ok["accelerator"].iloc[0] if len(ok) else None)


def _cumulative(s: Scenario, r: pd.Series, months: np.ndarray) -> np.ndarray:
    """Cumulative cost of one chip of option ``r`` used ``utilization`` of the time, per month (a
    capacity block: the block that covers the months, NaN beyond 182 days)."""
    p = s.pricing
    model, price, u = r["pricing_model"], r["usd_per_chip_hour"], p.utilization
    if model == "on_demand":
        return months * HOURS_PER_MONTH * u * price
    if model == "spot":
        # the option's paid hours per used hour: spares (latency-bound serving), lost hours, goodput
        f = float(r["paid_per_used_hour"]) if pd.notna(r.get("paid_per_used_hour", np.nan)) else 1.0
        with np.errstate(invalid="ignore"):  # a spot job that never finishes (f = inf) costs inf after month 0
            return np.where(months > 0, months * HOURS_PER_MONTH * u * price * f, 0.0)
    if model == "purchase":  # the capital up front; hosting every month the systems are kept; power when used
        host = float(r.get("hosting_per_chip_hour", 0.0) or 0.0)
        capex = (price - host) * r["term_months"] * HOURS_PER_MONTH
        return (np.where(months > 0, capex, 0.0) + months * HOURS_PER_MONTH * host
                + months * HOURS_PER_MONTH * u * r["energy_per_chip_hour"])
    if model == "capacity_block":  # the shortest block that holds m months; none beyond the longest
        y = capacity_block_hours(months * HOURS_PER_MONTH) * price
        return np.where(months > 0, y, 0.0)
    term = r["term_months"]
    least = r.get("min_term_months", term)
    least = term if pd.isna(least) else least
    # a new term starts when the previous one ends; a monthly server is paid at least its minimum term
    y = np.maximum(np.ceil(np.maximum(months, 1e-9) / term) * term, least) * HOURS_PER_MONTH * price
    return np.where(months > 0, y, 0.0)


_CURVE_COLUMNS = ["accelerator", "pricing_model", "offering", "usd_per_instance_hour", "chips_per_instance",
                  "energy_usd_per_instance_hour", "hosting_usd_per_instance_hour", "paid_per_used_hour", "term_months",
                  "min_term_months", "excluded_reason", "cost_usd", "usd_per_million_tokens"]


def breakeven_curves(s: Scenario, priced: pd.DataFrame, accelerator: str | None = None,
                     max_months: int | None = None) -> pd.DataFrame:
    """Cumulative cost of one chip used ``utilization`` of the time, month by month, for each way
    to pay (cheapest offering of each): where a line crosses on-demand is the break-even month."""
    # only the columns read here and by _cheapest_accelerator and _cumulative, not the 116 priced columns
    ok = priced.loc[priced["usd_per_instance_hour"].notna(), [c for c in _CURVE_COLUMNS if c in priced]]
    if accelerator is None:
        accelerator = _cheapest_accelerator(s, ok)
    if accelerator is None:
        return pd.DataFrame(columns=["accelerator", "pricing_model", "month", "cumulative_usd_per_chip"])
    g = ok[ok["accelerator"] == accelerator].copy()
    g["usd_per_chip_hour"] = g["usd_per_instance_hour"] / g["chips_per_instance"]
    g["energy_per_chip_hour"] = g["energy_usd_per_instance_hour"] / g["chips_per_instance"]
    g["hosting_per_chip_hour"] = (g["hosting_usd_per_instance_hour"].fillna(0.0) / g["chips_per_instance"]
                                  if "hosting_usd_per_instance_hour" in g else 0.0)
    best = g.sort_values("usd_per_chip_hour").groupby("pricing_model", sort=False).head(1)
    horizon = max_months or int(max(48, math.ceil(s.pricing.horizon_months) + 12))
    months = np.arange(0, horizon + 1, dtype=float)
    rows = [pd.DataFrame({"accelerator": accelerator, "pricing_model": r["pricing_model"], "offering": r["offering"],
                          "month": months, "cumulative_usd_per_chip": _cumulative(s, r, months)})
            for _, r in best.iterrows()]
    return pd.concat(rows, ignore_index=True)
