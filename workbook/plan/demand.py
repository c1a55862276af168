"""What each workload needs, hour by hour, on each offering it may run on.

``offer_table(priced, training)`` reads the one pipeline's priced frame (``analysis.analyse(s).priced``)
into one row per feasible offering: the instances the workload needs at full load (serving) or for
one job (training), the hours of one job, and the price of an instance-hour of that need for each way
to pay the scenario allows. ``demand(...)`` lays that need over the horizon's hours (months of 730 h,
``terms.HOURS_PER_MONTH``) as an array of instances per offering and hour.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..scenario import Scenario
from ..terms import HOURS_PER_DAY, HOURS_PER_MONTH
from .portfolio import PortfolioWorkload

HOURS = int(HOURS_PER_MONTH)
BURST_MODELS = ("on_demand", "spot")
COMMIT_MODELS = ("commit_1y", "commit_3y")
# per-offer energy and carbon: workbook.cost.energy's ``<col>_per_instance_hour`` columns of the priced
# frame (else the totals over ``used_instance_hours``), summed per month by instance-hours used
ENERGY_COLUMNS = ("energy_kwh", "co2_kg")
OFFER_COLUMNS = ["offering", "accelerator", "provider", "region", "instances", "job_hours", "porting_usd",
                 *[f"{m}_usd_per_hour" for m in BURST_MODELS + COMMIT_MODELS]]


def _burst_usd_per_hour(rows: pd.DataFrame, training: bool) -> pd.Series:
    """Price of one instance-hour of the need: serving pays the spare instances spot adds
    (``spare_instances``, cost.bill's availability rule) on top; a training job pays its whole priced
    cost (goodput, interruptions and restarts included, porting left out) over the on-demand job's
    instance-hours, so spot's lost work is in the price."""
    if training:
        return (rows["cost_usd"] - rows["porting_usd"].fillna(0.0)) / rows["need_instance_hours"]
    return rows["usd_per_instance_hour"] * (rows["instances"] + rows["spare_instances"].fillna(0.0)) / rows["instances"]


def offer_table(priced: pd.DataFrame, training: bool) -> pd.DataFrame:
    """One row per offering with a feasible on-demand or spot row (a burst is always needed above a
    commitment): ``instances`` (serving: at the scenario's requests_per_s; training: of one job),
    ``job_hours`` (training: wall hours of one job on on-demand instances), ``porting_usd`` (once),
    ``<model>_usd_per_hour`` per instance-hour of the need for ``on_demand``, ``spot`` (effective, as
    ``_burst_usd_per_hour``), ``commit_1y`` and ``commit_3y`` (the committed hourly price, paid for
    every hour of the term); NaN where the scenario does not allow that way to pay or a hard
    constraint rules it out. Energy columns (``ENERGY_COLUMNS``) become ``<col>_per_instance_hour``."""
    ok = priced[priced["excluded_reason"].isna() & priced["pricing_model"].isin(BURST_MODELS + COMMIT_MODELS)].copy()
    ok = ok[ok["instances"].notna() & (ok["instances"] > 0)]
    if ok.empty:
        return pd.DataFrame(columns=OFFER_COLUMNS)
    ok["spare_instances"] = ok.get("spare_instances", pd.Series(0.0, index=ok.index)).fillna(0.0)
    ok["porting_usd"] = ok.get("porting_usd", pd.Series(0.0, index=ok.index)).fillna(0.0)
    uih = ok.get("used_instance_hours", pd.Series(np.nan, index=ok.index))
    od_hours = uih.where(ok["pricing_model"] == "on_demand").groupby(ok["offering"]).transform("max")
    ok["need_instance_hours"] = od_hours.fillna(uih)
    base = ok.sort_values("pricing_model").drop_duplicates("offering").set_index("offering")
    out = base[["accelerator", "provider", "region", "instances", "porting_usd"]].copy()
    out["job_hours"] = (base["need_instance_hours"] / base["instances"]) if training else np.nan
    burst = ok[ok["pricing_model"].isin(BURST_MODELS)]
    ok.loc[burst.index, "usd_per_need_hour"] = _burst_usd_per_hour(burst, training)
    commit = ok[ok["pricing_model"].isin(COMMIT_MODELS)]
    ok.loc[commit.index, "usd_per_need_hour"] = commit["usd_per_instance_hour"]
    wide = ok.pivot_table(index="offering", columns="pricing_model", values="usd_per_need_hour", aggfunc="min")
    for m in BURST_MODELS + COMMIT_MODELS:
        out[f"{m}_usd_per_hour"] = wide[m] if m in wide else np.nan
    for col in ENERGY_COLUMNS:
        direct = f"{col}_per_instance_hour"  # workbook.cost.energy's per-instance-hour figure
        if direct in ok or col in ok:
            per = ok[direct] if direct in ok else ok[col] / uih
            out[direct] = per.groupby(ok["offering"]).first()
    has_burst = out[[f"{m}_usd_per_hour" for m in BURST_MODELS]].notna().any(axis=1)
    return out[has_burst].reset_index()


def serving_shares(w: PortfolioWorkload, s: Scenario) -> np.ndarray:
    """Load by hour of the day (24 shares of requests_per_s): the portfolio's ``hourly_load``, else 1
    for the first ``hours_per_day`` hours of each day."""
    if w.hourly_load is not None:
        return np.asarray(w.hourly_load, float)
    return (np.arange(24) < s.workload.hours_per_day).astype(float)


def job_starts(w: PortfolioWorkload, months: int) -> list[int]:
    """Months (1-based) in which a training job starts."""
    end = w.end_month or months
    return list(range(w.start_month, end + 1, w.repeat_every_months)) if w.repeat_every_months else [w.start_month]


def demand(w: PortfolioWorkload, s: Scenario, offers: pd.DataFrame, months: int) -> np.ndarray:
    """Instances needed on each offering (rows of ``offers``) in each hour of the horizon, shape
    (offers, months * 730). Serving: ceil(share of the hour x instances at full load), i.e. capacity
    scales with the request rate (each instance keeps the per-instance load the scenario was sized
    for). Training: the job's instances from hour 0 of each start month for ``job_hours`` (the last
    hour fractional), cut at the horizon's end."""
    T = months * HOURS
    out = np.zeros((len(offers), T))
    if s.is_training:  # every offer at once, job by job (each hour's terms added in the order of the jobs)
        n, h = offers["instances"].to_numpy(float), offers["job_hours"].to_numpy(float)
        full = np.array([int(math.floor(x)) for x in h], dtype=np.int64)
        rows = np.arange(len(offers))
        for m in job_starts(w, months):
            t0 = (m - 1) * HOURS
            width = min(T - t0, int(full.max())) if len(full) else 0
            if width > 0:  # the job's whole hours (adding 0.0 elsewhere in the window changes nothing)
                out[:, t0:t0 + width] += np.where(np.arange(width)[None, :] < full[:, None], n[:, None], 0.0)
            last = t0 + full < T  # the last, fractional hour
            out[rows[last], t0 + full[last]] += n[last] * (h[last] - full[last])
        return out
    t = np.arange(T)
    share = serving_shares(w, s)[(t % int(HOURS_PER_DAY))]
    active = (t >= (w.start_month - 1) * HOURS) & (t < (w.end_month or months) * HOURS)
    inst = offers["instances"].to_numpy(float)[:, None]
    return np.ceil(share[None, :] * inst - 1e-9) * active[None, :]
