"""Prices per offering: one row per offering (a row of ``data/offerings.csv``, or a system of
``data/hardware.csv`` to buy) x requested pricing model, with where each number came from
(``price_derivation``), how firm it is (``price_basis`` of the catalog row, ``price_age_days``, the
price doubt of ``workbook.cost.doubt``) and which duplicate row's price it is (``duplicate_of``: the
offering whose price one (provider, instance, region, way to pay) keeps). ``workbook.cost.bill``
joins these prices to the performance rows.

- Rented models take the published price after ``negotiated_discount`` (spot: the market price);
  a commitment without a published price is on-demand x (1 - ``commit_*_discount``) on hyperscaler
  rows; a monthly server is ``monthly_usd`` / 730 h, billed in whole months with a minimum term of
  ``pricing.monthly_min_term_months`` or the row's own ``monthly_min_term_months``, the larger
  (``min_term_months``); a capacity block (AWS EC2 Capacity
  Blocks) is ``other_usd_per_hour`` of the rows whose ``other_price_model`` starts with
  ``capacity_block``, billed for whole blocks (``rates.capacity_block_hours``).
- A purchase is the list price spread over ``pricing.depreciation_years`` (``capital_usd_per_instance_hour``)
  plus hosting (``hosting_usd_per_instance_hour``: colocation, network, support and the cost of
  capital, ``workbook.cost.hosting``), with electricity as its own line.
"""
from __future__ import annotations

import datetime as _dt
from collections import OrderedDict

import numpy as np
import pandas as pd

from .. import catalog, paths
from ..scenario import Scenario
from ..terms import HOURS_PER_DAY, HOURS_PER_MONTH, TERM_MONTHS
from . import doubt
from .hosting import hosting_usd_per_hour
from .rates import CAPACITY_BLOCK_MAX_DAYS, capacity_block_hours, energy_usd_per_hour


def requested_models(s: Scenario) -> list[str]:
    """The pricing models the scenario asks for (``pricing.models`` within ``candidates.pricing_models``)."""
    models = list(s.pricing.models)
    if s.candidates.pricing_models:
        models = [m for m in models if m in s.candidates.pricing_models]
    return models


_OFFER_KEEP = ["offering", "provider", "provider_kind", "region", "instance", "accelerator", "chips_per_instance",
               "as_of", "price_as_of", "price_basis", "shape_confirmed", "inter_node_bytes_per_s", "fabric", "source",
               "notes"]
# a purchase's list price (data/hardware.csv) is a third party's record of a reseller's page (Epoch's dataset)
PURCHASE_BASIS = "transcription"


def _list_price(s: Scenario, off: pd.DataFrame, model: str, superseded: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(price per instance-hour, where it came from) of one rented pricing model for every offering."""
    p = s.pricing
    od = off["on_demand_usd_per_hour"].where(~superseded)
    if model == "on_demand":
        return od * (1 - p.negotiated_discount), pd.Series("published on-demand", index=off.index)
    if model == "spot":
        return off["spot_usd_per_hour"], pd.Series("published spot (market price)", index=off.index)
    if model in ("commit_1y", "commit_3y"):
        published = off[f"{model}_usd_per_hour"]
        disc = p.commit_1y_discount if model == "commit_1y" else p.commit_3y_discount
        derived = (od * (1 - disc)).where(off["provider_kind"] == "hyperscaler")
        basis = np.where(published.notna(), f"published {model.replace('_', ' ')}",
                         f"on-demand x (1 - {disc:g}) (commit_{model[-2:]}_discount)")
        return published.fillna(derived) * (1 - p.negotiated_discount), pd.Series(basis, index=off.index)
    if model == "capacity_block":
        return _capacity_block_price(s, off)
    # monthly: whole months, at least the minimum term (the scenario's or the source's, the larger)
    least = monthly_min_term_months(s, off)
    basis = [f"published monthly / 730 h, whole months, minimum {m:g} month(s) "
             + ("(pricing.monthly_min_term_months)" if m <= p.monthly_min_term_months else
                "(the source's term, offerings monthly_min_term_months)") for m in least]
    return off["monthly_usd"] / HOURS_PER_MONTH * (1 - p.negotiated_discount), pd.Series(basis, index=off.index)


def monthly_min_term_months(s: Scenario, off: pd.DataFrame) -> pd.Series:
    """The least term a monthly server bills, per offering: the larger of ``pricing.monthly_min_term_months``
    and the row's own ``monthly_min_term_months`` (a term its source states: a bare-metal server rented
    by the year is 12, so a one-month run still pays twelve months)."""
    own = off["monthly_min_term_months"] if "monthly_min_term_months" in off else pd.Series(np.nan, index=off.index)
    return np.maximum(pd.to_numeric(own, errors="coerce").fillna(0.0), s.pricing.monthly_min_term_months)


def _capacity_block_price(s: Scenario, off: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """An AWS Capacity Block's hourly rate: ``other_usd_per_hour`` of the rows whose ``other_price_model``
    starts with ``capacity_block`` (after ``negotiated_discount``, a list price); the block's length
    follows the work (``capacity_block_term_months``)."""
    kind = off["other_price_model"].fillna("").astype(str) if "other_price_model" in off else pd.Series("", index=off.index)
    price = off["other_usd_per_hour"].where(kind.str.startswith("capacity_block")) * (1 - s.pricing.negotiated_discount)
    what = ("the run's wall time" if s.is_training else f"the {s.pricing.horizon_months:g}-month horizon")
    basis = (f"published capacity block rate, paid up front for whole days of {what} (1-day steps to 14 days, "
             f"7-day steps to {CAPACITY_BLOCK_MAX_DAYS} days; AWS EC2 Capacity Blocks)")
    return price, pd.Series(basis, index=off.index)


def capacity_block_term_months(s: Scenario) -> float:
    """The billed length of a Capacity Block in months: serving, the shortest block that covers
    ``horizon_months`` (NaN beyond the longest block: ruled out, ``bill``); training, one day (the
    increment; the bill rounds the run's wall time up to a block, ``rates.capacity_block_hours``)."""
    if s.is_training:
        return HOURS_PER_DAY / HOURS_PER_MONTH
    return float(capacity_block_hours(s.pricing.horizon_months * HOURS_PER_MONTH)) / HOURS_PER_MONTH


def _hosting_basis(s: Scenario, hw: pd.DataFrame) -> pd.Series:
    """Which hosting lines a purchase's price holds, in words."""
    p = s.pricing
    parts = [f"colocation {hw_kw} kW x ${p.colocation_usd_per_kw_month:g}/kW-month" for hw_kw in
             (hw["system_power_w"] / 1000.0).map(lambda x: f"{x:g}")]
    extra = []
    extra.append(f"network ${p.network_usd_per_system_month:g}/month" if p.network_usd_per_system_month is not None
                 else "network not priced")
    extra.append(f"support {p.support_fraction_per_year:.1%} of list a year" if p.support_fraction_per_year is not None
                 else "support not priced")
    extra.append(f"cost of capital {p.cost_of_capital:.1%}" if p.cost_of_capital > 0 else "cost of capital 0")
    own = np.where(hw["hosting_usd_per_month"].notna(), " + the system's hosting_usd_per_month", "")
    return pd.Series([f"purchase / {p.depreciation_years:g} y + power x PUE x electricity + hosting: {c}, "
                      + ", ".join(extra) + o for c, o in zip(parts, own)], index=hw.index)


def _purchase_prices(s: Scenario, hw: pd.DataFrame) -> pd.DataFrame:
    """Systems to buy: capital cost per hour of the depreciation life plus hosting, and energy."""
    p = s.pricing
    term = p.depreciation_years * 12.0
    capital_h, hosting_h = hosting_usd_per_hour(
        hw["purchase_usd"], hw["system_power_w"], hw["hosting_usd_per_month"], term,
        usd_per_kw_month=p.colocation_usd_per_kw_month, network_usd_per_month=p.network_usd_per_system_month,
        support_fraction_per_year=p.support_fraction_per_year, cost_of_capital=p.cost_of_capital)
    b = pd.DataFrame({
        "offering": hw["system"], "provider": "bought", "provider_kind": "owned", "region": "own site",
        "instance": hw["system"], "accelerator": hw["accelerator"],
        "chips_per_instance": hw["chips_per_system"], "as_of": hw["as_of"], "source": hw["source"],
        "notes": hw["notes"], "pricing_model": "purchase", "term_months": term, "min_term_months": term,
        "on_demand_usd_per_hour": np.nan,
        "capital_usd_per_instance_hour": capital_h, "hosting_usd_per_instance_hour": hosting_h,
        "usd_per_instance_hour": capital_h + hosting_h,
        "energy_usd_per_instance_hour": energy_usd_per_hour(hw["system_power_w"], p.pue, p.electricity_usd_per_kwh),
        "system_power_w": hw["system_power_w"],
        "price_derivation": _hosting_basis(s, hw), "price_basis": PURCHASE_BASIS, "price_as_of": hw["as_of"],
    })
    b["sticker_usd_per_instance_hour"] = b["usd_per_instance_hour"]
    return b[b["usd_per_instance_hour"].notna() & b["energy_usd_per_instance_hour"].notna()]


_OFFER_PRICES: OrderedDict = OrderedDict()


def offer_prices(s: Scenario, offerings: pd.DataFrame | None = None, systems: pd.DataFrame | None = None) -> pd.DataFrame:
    """``_offer_prices`` (below); with the shipped catalogs, remembered per process for the scenario's
    content, the day (price ages) and the very catalog frames it read, and handed out as a copy: the
    pipeline prices the offers once for the per-offer plans and again for the bill."""
    if offerings is not None or systems is not None:
        return _offer_prices(s, offerings, systems)
    full = catalog.offerings()
    hw = catalog.load("hardware") if (paths.DATA_DIR / "hardware.csv").exists() else None
    key = (s.model_dump_json(), str(paths.DATA_DIR), _dt.date.today(), catalog.offerings, catalog.hardware)
    hit = _OFFER_PRICES.get(key)
    if hit is None or hit[0] is not full or hit[1] is not hw:
        hit = _OFFER_PRICES[key] = (full, hw, _offer_prices(s))
        if len(_OFFER_PRICES) > 8:
            _OFFER_PRICES.popitem(last=False)
    return hit[2].copy()


def _offer_prices(s: Scenario, offerings: pd.DataFrame | None = None, systems: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per offering x requested pricing model with a price: ``usd_per_instance_hour``
    (after negotiated discount; for purchases the capital cost per hour of the depreciation life
    plus hosting, ``capital_usd_per_instance_hour`` + ``hosting_usd_per_instance_hour``),
    ``energy_usd_per_instance_hour`` (purchases), ``term_months`` (the billing term), ``min_term_months``
    (the least that is paid), ``price_derivation`` (how the number was made), ``price_basis`` (where
    it came from), ``duplicate_of``/``duplicates``/``duplicate_spread``/``region_spread`` (``doubt.resolve``, once per
    catalog load) and the price doubt (``doubt.doubt_columns``: ``price_age_days``,
    ``price_doubt_low``/``_high``, ``price_sigma``)."""
    full = catalog.offerings() if offerings is None else offerings
    res = doubt.resolution(full)
    undated = doubt.undated_age_days(full)
    off = full
    if s.candidates.clouds:
        off = off[off["provider"].isin(s.candidates.clouds)]
    superseded = catalog.is_superseded(off)
    res = resolved_arrays(res, full.index)
    at = full.index.get_indexer(off.index)
    rows = []
    models = requested_models(s)
    kept = off[[c for c in _OFFER_KEEP if c in off]]
    on_demand, basis_of = off["on_demand_usd_per_hour"].where(~superseded), doubt.basis_of(off)  # every model's
    for model in models:
        if model == "purchase":
            continue
        price, basis = _list_price(s, off, model, superseded)
        has = price.notna().to_numpy()
        if has.any():  # the offerings with a price only (the rows kept in the end), each column at those rows
            base, cut = kept[has], (lambda col, has=has: col[has])
        else:  # none: the whole catalog's columns, then none of its rows
            base, cut = kept.copy(), (lambda col: col)
        base["pricing_model"] = model
        term = capacity_block_term_months(s) if model == "capacity_block" else TERM_MONTHS.get(model, 0.0)
        base["term_months"] = term
        base["min_term_months"] = cut(monthly_min_term_months(s, off)) if model == "monthly" else term
        base["energy_usd_per_instance_hour"] = 0.0
        base["hosting_usd_per_instance_hour"] = 0.0
        base["on_demand_usd_per_hour"] = cut(on_demand)
        base["usd_per_instance_hour"] = cut(price)
        base["capital_usd_per_instance_hour"] = np.nan
        base["sticker_usd_per_instance_hour"] = cut(off["spot_usd_per_hour"] if model == "spot" else price)
        base["price_derivation"] = cut(basis)
        base["price_basis"] = cut(basis_of)
        _duplicates(base, res, model if model in doubt.PRICE_COLUMN else None, cut(at))
        rows.append(base if has.any() else base[has])
    if "purchase" in models:
        hw = catalog.hardware() if systems is None else systems
        if len(hw):
            rows.append(_purchase_prices(s, hw))
    if not rows:
        return pd.DataFrame(columns=_OFFER_KEEP + ["pricing_model", "usd_per_instance_hour"])
    out = pd.concat(rows, ignore_index=True)
    out["chips_per_instance"] = out["chips_per_instance"].astype(float)
    return out.join(doubt.doubt_columns(out, undated, scale=s.pricing.price_doubt_scale))


def resolved_arrays(res: pd.DataFrame, index: pd.Index) -> dict[str, tuple[np.ndarray, ...]]:
    """``doubt.resolve``'s long frame ``res`` as arrays aligned to the catalog rows ``index``, per way to
    pay: (``duplicate_of`` (None where unresolved), ``duplicates``, ``duplicate_spread``, ``region_spread``
    (NaN where unresolved), whether the row is resolved)."""
    pos = index.get_indexer(res["row"])
    models = res["pricing_model"].to_numpy(object)
    dup_of = res["duplicate_of"].to_numpy(object)
    nums = [res[c].to_numpy(float) for c in ("duplicates", "duplicate_spread", "region_spread")]
    out = {}
    for m in dict.fromkeys(models):
        sel = (models == m) & (pos >= 0)
        at = pos[sel]
        d = np.full(len(index), None, dtype=object)
        d[at] = dup_of[sel]
        arrays = [d]
        for v in nums:
            a = np.full(len(index), np.nan)
            a[at] = v[sel]
            arrays.append(a)
        own = np.zeros(len(index), dtype=bool)
        own[at] = True
        out[m] = (*arrays, own)
    return out


def _duplicates(base: pd.DataFrame, res: dict, model: str | None, at: np.ndarray) -> None:
    """``duplicate_of``, ``duplicates``, ``duplicate_spread`` and ``region_spread`` of one way to pay, in place
    (``base``'s rows are the catalog rows at positions ``at`` of ``res``, ``resolved_arrays``). A derived
    commitment (on-demand x (1 - discount)) follows its on-demand price: ``model`` is then ``on_demand``'s
    resolution where the row publishes none."""
    n = len(base)
    r = res.get(model) if model else None
    if r is None:
        dup, dups, dspread, rspread = (np.full(n, None, dtype=object), np.full(n, np.nan), np.full(n, np.nan),
                                       np.full(n, np.nan))
        own = np.zeros(n, dtype=bool)
    else:
        dup, dups, dspread, rspread, own = (a[at] for a in r)
    if model in ("commit_1y", "commit_3y") and not own.all() and "on_demand" in res:
        od = [a[at] for a in res["on_demand"]]
        dup, dups, dspread, rspread = (np.where(own, a, b) for a, b in zip((dup, dups, dspread, rspread), od))
    base["duplicate_of"] = pd.Series(dup, index=base.index, dtype=object)
    base["duplicates"] = np.where(np.isnan(dups), 1.0, dups)
    base["duplicate_spread"] = np.where(np.isnan(dspread), 0.0, dspread)
    base["region_spread"] = np.where(np.isnan(rspread), 0.0, rspread)


def option_ids(df: pd.DataFrame) -> pd.Series:
    """``accelerator | offering | pricing_model`` per row, a missing offering as "-": the pandas expression
    ``accelerator.astype(str) + " | " + offering.fillna("-").astype(str) + " | " + pricing_model.astype(str)``
    (its dtype, ``str``), joined a row at a time in Python when every accelerator and pricing model is a string
    (``str`` of a string is itself); else that expression (a missing one stays missing there)."""
    acc, off, pm = (df[c].tolist() for c in ("accelerator", "offering", "pricing_model"))
    if not all(type(v) is str for v in acc) or not all(type(v) is str for v in pm):
        return (df["accelerator"].astype(str) + " | " + df["offering"].fillna("-").astype(str) + " | "
                + df["pricing_model"].astype(str))
    off = [v if type(v) is str else "-" if pd.isna(v) else str(v) for v in off]
    return pd.Series([f"{a} | {o} | {m}" for a, o, m in zip(acc, off, pm)], index=df.index, dtype="str")


def sorted_frame(df: pd.DataFrame, keys: dict, cols: list) -> pd.DataFrame:
    """``df.assign(**keys).sort_values(list(keys), kind="stable")[cols].reset_index(drop=True)``: the row order
    from a frame of the sort keys only (the same stable sort), then one take of each column of ``cols`` into
    a new frame, one block per dtype (the priced frame gets its ~25 recipe and bill columns one at a time:
    sorting, dropping the key and reordering that frame took each of its ~120 blocks three times)."""
    order = pd.DataFrame({k: v._values for k, v in keys.items()})  # positions as the index
    rows = order.sort_values(list(keys), kind="stable").index.to_numpy()
    return pd.DataFrame({c: _taken(df[c]._values, rows) for c in cols})


def _taken(values, rows):
    """``values`` at the positions ``rows``, of the same dtype in a new frame (an object array as a Series
    of object dtype: the frame constructor would infer strings from it)."""
    v = values.take(rows)
    return pd.Series(v, dtype=object, copy=False) if v.dtype == object else v
