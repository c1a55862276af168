"""What a choice costs: prices per offering, the whole bill of every option, break-even tables.

Every option is one accelerator x offering (a row of ``data/offerings.csv``, or a system of
``data/hardware.csv`` to buy) x pricing model. Prices come from the catalogs; the scenario's
``pricing`` block supplies utilization, discounts, spot behaviour, horizon and the bill's other
lines. The performance model supplies how many chips and for how long.

How each way to pay is billed (the model, stated once):

- **on-demand** pays for the hours the work runs: a training run's wall time; a serving fleet's
  ``hours_per_day``. It scales with the load (ideal autoscaling for serving).
- **spot** pays the spot price for the same hours plus the work lost to interruptions:
  ``spot_overhead_factor`` (checkpointed training) or ``spot_serving_factor`` (batch or offline
  serving). A latency-bound service (``ttft_slo_ms``/``tpot_slo_ms`` set, no ``batch_window_hours``)
  cannot wait out a restart: it holds ``spare_instances`` extra spot instances so that it keeps its
  capacity through interruptions ``spot_availability_target`` of the time, and pays for them
  (``spot_spares_factor``).
- **commitments (1 y, 3 y), monthly servers and purchased hardware** pay for every hour of their
  term. ``pricing.utilization`` is the fraction of those hours that do useful work (the idle time of
  a real fleet), and a term longer than the horizon of use is paid in full (``reserved_factor``).
  A committed price is the published one where ``offerings.csv`` has it, otherwise on-demand x
  (1 - ``commit_*_discount``) for hyperscaler rows (the discount is derived from the published GCP
  committed prices: see ``Pricing`` in ``scenario.py``); GPU clouds and marketplaces publish no
  commitment in the catalog and get none.
- ``negotiated_discount`` comes off list prices (on-demand, commitments, monthly); not off spot
  (a market price) or purchases.
- The whole bill adds object storage (``storage_tb``), internet egress (``egress_tb_per_month``)
  and a one-off porting cost per accelerator (``porting_usd``, an input: the software-fit rules of
  ``workbook.decision`` decide it); serving spreads the porting cost over ``horizon_months``.

The formulas are in ``workbook.cost.rates``, with their sources.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import catalog
from ..errors import InputError
from ..scenario import Scenario
from ..terms import DAYS_PER_MONTH, HOURS_PER_DAY, HOURS_PER_MONTH, KIND, PRICING_MODEL_IDS, TERM_MONTHS
from .rates import (breakeven_interruptions_spot, breakeven_interruptions_spot_spares, breakeven_months_commit,
                    breakeven_months_purchase, breakeven_utilization_commit, energy_usd_per_hour, reserved_factor,
                    spare_instances, spot_goodput_breakeven, spot_overhead_factor, spot_spares_factor)


# --- prices per offering -------------------------------------------------------------------------

def requested_models(s: Scenario) -> list[str]:
    """The pricing models the scenario asks for (``pricing.models`` within ``candidates.pricing_models``)."""
    models = list(s.pricing.models)
    if s.candidates.pricing_models:
        models = [m for m in models if m in s.candidates.pricing_models]
    return models


_OFFER_KEEP = ["offering", "provider", "provider_kind", "region", "instance", "accelerator", "chips_per_instance",
               "as_of", "source", "notes"]


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
    # monthly
    return (off["monthly_usd"] / HOURS_PER_MONTH * (1 - p.negotiated_discount),
            pd.Series("published monthly / 730 h", index=off.index))


def _purchase_prices(s: Scenario, hw: pd.DataFrame) -> pd.DataFrame:
    """Systems to buy: capital cost per hour of the depreciation life plus hosting, and energy."""
    p = s.pricing
    term = p.depreciation_years * 12.0
    b = pd.DataFrame({
        "offering": hw["system"], "provider": "bought", "provider_kind": "owned", "region": "own site",
        "instance": hw["system"], "accelerator": hw["accelerator"],
        "chips_per_instance": hw["chips_per_system"], "as_of": hw["as_of"], "source": hw["source"],
        "notes": hw["notes"], "pricing_model": "purchase", "term_months": term,
        "on_demand_usd_per_hour": np.nan,
        "usd_per_instance_hour": hw["purchase_usd"] / (term * HOURS_PER_MONTH)
        + hw["hosting_usd_per_month"].fillna(0.0) / HOURS_PER_MONTH,
        "energy_usd_per_instance_hour": energy_usd_per_hour(hw["system_power_w"], p.pue, p.electricity_usd_per_kwh),
        "price_basis": np.where(hw["hosting_usd_per_month"].isna(),
                                f"purchase / {p.depreciation_years:g} y + power x PUE x electricity; hosting not priced",
                                f"purchase / {p.depreciation_years:g} y + hosting + power x PUE x electricity"),
    })
    b["sticker_usd_per_instance_hour"] = b["usd_per_instance_hour"]
    return b[b["usd_per_instance_hour"].notna() & b["energy_usd_per_instance_hour"].notna()]


def offer_prices(s: Scenario, offerings: pd.DataFrame | None = None, systems: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per offering x requested pricing model with a price: ``usd_per_instance_hour``
    (after negotiated discount; for purchases the capital cost per hour of the depreciation life
    plus hosting), ``energy_usd_per_instance_hour`` (purchases), ``term_months`` and ``price_basis``
    (where the number came from)."""
    off = catalog.offerings() if offerings is None else offerings
    if s.candidates.clouds:
        off = off[off["provider"].isin(s.candidates.clouds)]
    superseded = catalog.is_superseded(off)
    rows = []
    models = requested_models(s)
    for model in models:
        if model == "purchase":
            continue
        base = off[_OFFER_KEEP].copy()
        base["price_as_of"] = off["price_as_of"] if "price_as_of" in off else None  # when the price was valid
        base["pricing_model"] = model
        base["term_months"] = TERM_MONTHS.get(model, 0.0)
        base["energy_usd_per_instance_hour"] = 0.0
        base["on_demand_usd_per_hour"] = off["on_demand_usd_per_hour"].where(~superseded)
        price, basis = _list_price(s, off, model, superseded)
        base["usd_per_instance_hour"] = price
        base["sticker_usd_per_instance_hour"] = (off["spot_usd_per_hour"] if model == "spot" else price)
        base["price_basis"] = basis
        rows.append(base[price.notna()])
    if "purchase" in models:
        hw = catalog.hardware() if systems is None else systems
        if len(hw):
            rows.append(_purchase_prices(s, hw))
    if not rows:
        return pd.DataFrame(columns=_OFFER_KEEP + ["pricing_model", "usd_per_instance_hour"])
    out = pd.concat(rows, ignore_index=True)
    out["chips_per_instance"] = out["chips_per_instance"].astype(float)
    return out


# --- the whole bill ------------------------------------------------------------------------------

_PERF_KEEP_TRAIN = ["chips", "fits", "reason", "peak_flops_per_s", "perf_training_days", "perf_training_days_low",
                    "perf_training_days_high", "chip_hours", "tokens_per_s", "mfu", "step_time_s"]
_PERF_KEEP_INFER = ["chips", "fits", "reason", "peak_flops_per_s", "ttft_ms", "tpot_ms", "output_tokens_per_s",
                    "output_tokens_per_s_low", "output_tokens_per_s_high", "max_batch", "meets_slo", "replicas", "tp",
                    "replicas_low", "replicas_high", "chips_low", "chips_high", "ttft_ms_low", "ttft_ms_high",
                    "tpot_ms_low", "tpot_ms_high"]
_NOT_NUMERIC = ("accelerator", "family", "reason", "fits", "meets_slo", "meets_deadline", "calibrated")


def is_latency_bound(s: Scenario) -> bool:
    """Online serving with latency targets (``ttft_slo_ms`` or ``tpot_slo_ms``) and no batch window:
    the service cannot wait out a spot restart, so spot holds spare instances (``spare_instances``).
    Training and batch or offline inference keep the lost-hours model."""
    w = s.workload
    return (not s.is_training and (w.ttft_slo_ms is not None or w.tpot_slo_ms is not None)
            and w.batch_window_hours is None)


def _band(perf: pd.DataFrame, training: bool) -> tuple[np.ndarray, np.ndarray]:
    """Multipliers (low, high) on the hours bought, from perf's ``_low``/``_high`` columns: training
    wall time (training_days or chip_hours bands); serving fleet size (replicas or chips bands, else
    throughput: a fleet that is x times slower needs x times the chips)."""
    n = len(perf)
    lo, hi = np.ones(n), np.ones(n)

    def ratio(col, inverse=False):
        if col not in perf or f"{col}_low" not in perf or f"{col}_high" not in perf:
            return None
        base = perf[col].astype(float).to_numpy()
        a = perf[f"{col}_low"].astype(float).to_numpy() / base
        b = perf[f"{col}_high"].astype(float).to_numpy() / base
        if inverse:
            a, b = 1 / b, 1 / a
        return np.where(np.isfinite(a), a, 1.0), np.where(np.isfinite(b), b, 1.0)

    cands = (["training_days", "chip_hours"] if training else ["replicas", "chips", ("output_tokens_per_s", True)])
    for c in cands:
        col, inv = (c if isinstance(c, tuple) else (c, False))
        r = ratio(col, inv)
        if r is not None:
            lo, hi = np.minimum(r[0], r[1]), np.maximum(r[0], r[1])
            break
    return np.minimum(lo, 1.0), np.maximum(hi, 1.0)


def _demand_tokens_per_s(s: Scenario, perf: pd.DataFrame) -> pd.Series:
    """Output tokens per second the scenario asks for (requests/s x output tokens), else what the
    deployment produces (perf)."""
    w = s.workload
    if w.requests_per_s is not None and w.output_tokens is not None:
        return pd.Series(w.requests_per_s * w.output_tokens, index=perf.index, dtype=float)
    return perf["output_tokens_per_s"].astype(float)


def _perf_table(s: Scenario, perf_df: pd.DataFrame) -> pd.DataFrame:
    """The performance rows as floats, with the hours multipliers (band) and, for serving, the demand;
    the model's uninterrupted ``training_days`` becomes ``perf_training_days``."""
    if perf_df is None or len(perf_df) == 0:
        raise InputError(f"{s.name}: no performance rows to price (the performance model returned nothing)")
    if "accelerator" not in perf_df:
        raise InputError("perf_df: missing column 'accelerator'")
    perf = perf_df.reset_index(drop=True).copy()
    for c in perf.columns:  # perf may use nullable dtypes (Int64 with <NA>): floats from here on
        if c not in _NOT_NUMERIC and (pd.api.types.is_numeric_dtype(perf[c]) or perf[c].dtype == object):
            conv = pd.to_numeric(perf[c], errors="coerce")
            if conv.notna().sum() == perf[c].notna().sum():
                perf[c] = conv.astype(float)
    perf["hours_multiplier_low"], perf["hours_multiplier_high"] = _band(perf, s.is_training)
    if not s.is_training:
        perf["demand_tokens_per_s"] = _demand_tokens_per_s(s, perf)
    return perf.rename(columns={f"training_days{x}": f"perf_training_days{x}" for x in ("", "_low", "_high")})


def _join_prices(s: Scenario, perf: pd.DataFrame, offerings, systems) -> pd.DataFrame:
    """Prices x performance per accelerator; an accelerator with no price for a requested model is
    kept as one row marked "not priced"."""
    training = s.is_training
    keep = [c for c in (_PERF_KEEP_TRAIN if training else _PERF_KEEP_INFER) if c in perf]
    keep = ["hours_multiplier_low", "hours_multiplier_high", *keep] + ([] if training else ["demand_tokens_per_s"])
    prices = offer_prices(s, offerings, systems)
    prices = prices[prices["accelerator"].isin(perf["accelerator"])]
    df = prices.merge(perf[["accelerator", *keep]], on="accelerator", how="inner")
    missing = []
    for model in requested_models(s):
        have = set(df.loc[df["pricing_model"] == model, "accelerator"])
        for acc in perf["accelerator"]:
            if acc not in have:
                row = {"accelerator": acc, "pricing_model": model, "offering": None, "provider": None,
                       "price_basis": "not priced", "usd_per_instance_hour": np.nan,
                       "term_months": TERM_MONTHS.get(model, 0.0), "energy_usd_per_instance_hour": 0.0,
                       "chips_per_instance": np.nan}
                prow = perf.loc[perf["accelerator"] == acc].iloc[0]
                row.update({k: prow[k] for k in keep})
                missing.append(row)
    if missing:
        df = pd.concat([df, pd.DataFrame(missing)], ignore_index=True)
    return df


def _instances(df: pd.DataFrame, training: bool) -> tuple[np.ndarray, pd.Series]:
    """Instances bought per option, and why the instance shape cannot hold the layout (else None)."""
    acc_tab = catalog.accelerators().set_index("accelerator")
    node = df["accelerator"].map(acc_tab["chips_per_node"]).astype(float)
    cpi = df["chips_per_instance"].astype(float)
    chips = df["chips"].astype(float)
    shape = pd.Series(None, index=df.index, dtype=object)
    if training:
        instances = np.ceil(chips / cpi)
        bad = (chips > cpi) & (cpi < np.minimum(chips, node))
        shape[bad] = ("instance: " + df["instance"].astype(str) + " has " + cpi.astype("Int64").astype(str)
                      + " chip(s), fewer than the " + node.astype("Int64").astype(str)
                      + "-chip node the performance model assumes for a multi-node run")
        return instances, shape
    tp = df["tp"].astype(float) if "tp" in df else pd.Series(1.0, index=df.index)
    tp = tp.fillna(1.0)
    replicas = df["replicas"].astype(float) if "replicas" in df else chips / tp
    replicas = replicas.fillna(chips / tp)
    per_inst = np.floor(cpi / tp)
    instances = np.where(per_inst >= 1, np.ceil(replicas / np.maximum(per_inst, 1)), replicas * np.ceil(tp / cpi))
    bad = tp > cpi
    shape[bad] = ("instance: a replica needs " + tp.astype(int).astype(str) + " chips in one instance (tensor "
                  "parallel); " + df["instance"].astype(str) + " has " + cpi.astype("Int64").astype(str))
    return instances, shape


def _porting(porting_usd, accelerators: pd.Series) -> pd.Series:
    """One-off porting cost per option from a per-accelerator input: None (no porting), a dict or
    Series keyed by accelerator, or a frame with ``accelerator`` and ``porting_usd`` columns (the
    software-fit table)."""
    if porting_usd is None:
        return pd.Series(0.0, index=accelerators.index)
    if isinstance(porting_usd, pd.DataFrame):
        porting_usd = porting_usd.set_index("accelerator")["porting_usd"]
    return accelerators.map(pd.Series(porting_usd, dtype=float)).astype(float)


def _recipe(s: Scenario, df: pd.DataFrame) -> None:
    """The bill's recipe (internal to ``cost``), in place: used hours, duty cycle, horizon, spot
    exposure, fixed costs."""
    p = s.pricing
    fixed_per_month = p.storage_tb * p.storage_usd_per_tb_month + p.egress_tb_per_month * p.egress_usd_per_tb
    df["spot_availability_target"] = np.nan
    if s.is_training:
        wall_h = df["perf_training_days"].astype(float) * HOURS_PER_DAY
        df["used_instance_hours"] = df["instances"] * wall_h
        df["duty_fraction"] = 1.0
        df["horizon_eff_months"] = np.maximum(p.horizon_months, wall_h / HOURS_PER_MONTH)
        df["spot_instances"] = df["instances"]
        df["lost_h_per_interruption"] = p.checkpoint_interval_h / 2.0 + p.restart_h
        df["fixed_usd"] = df["porting_usd"].fillna(0.0)
        df["base_days"] = df["perf_training_days"].astype(float)
    else:
        hpd = s.workload.hours_per_day
        df["used_instance_hours"] = df["instances"] * hpd * DAYS_PER_MONTH  # per month
        df["duty_fraction"] = hpd / HOURS_PER_DAY
        df["horizon_eff_months"] = float(p.horizon_months)
        df["spot_instances"] = 1.0
        df["lost_h_per_interruption"] = p.restart_h
        if is_latency_bound(s):
            df["spot_availability_target"] = np.where(df["kind"] == "spot", p.spot_availability_target, np.nan)
        df["fixed_usd"] = df["porting_usd"].fillna(0.0) / p.horizon_months  # per month
        df["base_days"] = np.nan
        df["tokens_per_month"] = df["demand_tokens_per_s"].astype(float) * 3600.0 * hpd * DAYS_PER_MONTH
    df["fixed_per_month_usd"] = fixed_per_month
    # spare spot instances of a latency-bound fleet at the point interruption rate (0: not applicable)
    lat = df["spot_availability_target"].notna().to_numpy()
    df["spare_instances"] = 0.0
    if lat.any():
        df.loc[lat, "spare_instances"] = spare_instances(df.loc[lat, "instances"].to_numpy(float),
                                                         p.spot_interruptions_per_hour, p.restart_h,
                                                         p.spot_availability_target)


def _costs(s: Scenario, df: pd.DataFrame) -> None:
    """The bill at the point estimate and at both ends of the performance band, in place."""
    p = s.pricing
    training = s.is_training
    ones = np.ones(len(df))
    res, lo, hi = (bill(df, training, hours_multiplier=m, price_mult=ones, utilization=p.utilization,
                        interruptions_per_hour=p.spot_interruptions_per_hour)
                   for m in (ones, df["hours_multiplier_low"].to_numpy(float),
                             df["hours_multiplier_high"].to_numpy(float)))
    df["paid_per_used_hour"] = res["factor"]
    df["usd_per_chip_hour_effective"] = (df["usd_per_instance_hour"] * res["factor"]
                                         + df["energy_usd_per_instance_hour"]) / df["chips_per_instance"].astype(float)
    for sfx, r in (("", res), ("_low", lo), ("_high", hi)):
        if training:
            df[f"cost_usd{sfx}"] = r["cost"]
            df[f"training_days{sfx}"] = r["days"]
        else:
            df[f"usd_per_month{sfx}"] = r["cost"]
            df[f"usd_per_million_tokens{sfx}"] = r["cost"] / df["tokens_per_month"] * 1e6
            df[f"usd_total{sfx}"] = r["cost"] * p.horizon_months
    df["metric"] = "cost_usd" if training else "usd_per_million_tokens"
    # the other task's figures exist as blank columns, so readers need not branch on the task
    for c in (["usd_per_million_tokens", "usd_per_month", "usd_total"] if training else ["cost_usd", "training_days"]):
        for sfx in ("", "_low", "_high"):
            df[c + sfx] = np.nan


def price_options(s: Scenario, perf_df: pd.DataFrame, porting_usd=None, offerings: pd.DataFrame | None = None,
                  systems: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every accelerator x offering x pricing model, priced for the scenario (long table).

    ``porting_usd``: the one-off porting cost per accelerator (dict, Series, or the software-fit
    frame of ``decision.framework_fit``; default none). Hard constraints are not applied here
    (``decision.apply_constraints`` marks the exclusions).

    Documented columns: ``option`` (id), ``accelerator, offering, provider, region, instance,
    platform, pricing_model, kind, term_months, price_basis, as_of, source``; ``instances`` bought
    and ``spare_instances`` (latency-bound spot); ``usd_per_instance_hour`` (sticker after
    negotiated discount), ``sticker_usd_per_instance_hour`` (before it), ``paid_per_used_hour``
    (paid hours per hour of work) and ``usd_per_chip_hour_effective`` (per paid chip-hour after
    interruptions and idle hours); ``porting_usd``; ``shape_reason`` (why the instance cannot hold
    the layout); ``duty_fraction`` (fraction of the day the work uses the capacity),
    ``horizon_eff_months``, ``spot_instances`` (instances whose reclaim stops the job) and
    ``spot_availability_target`` (latency-bound spot rows); training: ``cost_usd`` and
    ``training_days`` (wall-clock, interruptions included; ``perf_training_days`` is the model's
    uninterrupted figure), each with ``_low``/``_high`` from the performance band; inference:
    ``usd_per_month``, ``usd_per_million_tokens`` (output tokens, at the scenario's load),
    ``usd_total`` over the horizon, with bands; ``metric`` (the ranking figure's column). The other
    columns are the recipe the Monte Carlo re-evaluates (internal to ``cost``)."""
    training = s.is_training
    perf = _perf_table(s, perf_df)
    df = _join_prices(s, perf, offerings, systems)
    df["platform"] = df["accelerator"].map(catalog.accelerators().set_index("accelerator")["platform"])
    df["instances"], df["shape_reason"] = _instances(df, training)
    df["kind"] = df["pricing_model"].map(KIND)
    df["porting_usd"] = _porting(porting_usd, df["accelerator"])
    _recipe(s, df)
    _costs(s, df)
    df["option"] = (df["accelerator"].astype(str) + " | " + df["offering"].fillna("-").astype(str) + " | "
                    + df["pricing_model"].astype(str))
    order = {m: i for i, m in enumerate(PRICING_MODEL_IDS)}
    df["_o"] = df["pricing_model"].map(order)
    metric = "cost_usd" if training else "usd_per_million_tokens"
    df = df.sort_values(["accelerator", "_o", metric], kind="stable").drop(columns="_o").reset_index(drop=True)
    front = ["option", "accelerator", "offering", "provider", "region", "instance", "pricing_model", "instances",
             "spare_instances", "chips_per_instance", "usd_per_instance_hour", "usd_per_chip_hour_effective"]
    front += (["cost_usd", "cost_usd_low", "cost_usd_high", "training_days", "training_days_low",
               "training_days_high"] if training
              else ["usd_per_million_tokens", "usd_per_million_tokens_low", "usd_per_million_tokens_high",
                    "usd_per_month", "usd_per_month_low", "usd_per_month_high", "usd_total"])
    front += ["price_basis", "as_of", "source"]
    return df[front + [c for c in df.columns if c not in front]]


def _spot_factor(col, rows, sp, lam, shape, rec) -> np.ndarray:
    """Paid hours per used hour of the spot rows ``sp``: lost hours, or spares for latency-bound rows."""
    loss = rows(lam, sp) * col("spot_instances")[sp] * col("lost_h_per_interruption")[sp]
    spot_f = np.where(loss < 1.0, 1.0 / (1.0 - loss), np.inf)
    if "spot_availability_target" in rec:
        target = col("spot_availability_target")[sp]
        lat = np.flatnonzero(np.isfinite(target.reshape(-1)))
        if len(lat):
            spot_f = np.broadcast_to(spot_f, (len(sp),) + shape[1:]).copy()
            n_lat = col("instances")[sp][lat]
            lam_lat = rows(lam, sp)
            lam_lat = lam_lat if np.ndim(lam_lat) == 0 or lam_lat.shape[0] == 1 else lam_lat[lat]
            spot_f[lat] = spot_spares_factor(n_lat, lam_lat, col("lost_h_per_interruption")[sp][lat], target[lat])
    return spot_f


def bill(rec: pd.DataFrame | dict, training: bool, hours_multiplier, price_mult, utilization, interruptions_per_hour,
         spot_price_mult=None) -> dict:
    """Evaluate the bill of every option for given draws (vectorised; the one formula that
    ``price_options``, ``monte_carlo`` and ``tornado`` share).

    ``rec`` holds per-option arrays (shape (M,)): used_instance_hours, usd_per_instance_hour,
    energy_usd_per_instance_hour, kind, duty_fraction, term_months, horizon_eff_months,
    spot_instances, lost_h_per_interruption, fixed_usd, fixed_per_month_usd, base_days; optional
    ``instances`` and ``spot_availability_target`` (set on spot rows of latency-bound serving: those
    pay ``spot_spares_factor`` for the point fleet size, with the spares re-derived for each
    interruption rate drawn, instead of the lost hours). ``hours_multiplier`` (on the hours the work
    needs: the performance band), ``price_mult`` (on every price), ``utilization`` and
    ``interruptions_per_hour`` broadcast against shape (M,) or (M, N); ``spot_price_mult``
    (optional, shape (spot rows, N)) varies spot prices only. Returns ``cost`` (training: USD per
    run; serving: USD per month), ``days`` (training run length) and ``factor`` (paid hours per used
    hour). Large draws are evaluated in place: few temporaries."""
    eff = hours_multiplier
    nd = max(np.ndim(eff), np.ndim(price_mult), np.ndim(utilization), np.ndim(interruptions_per_hour), 1)

    def col(name, dtype=float):
        v = np.asarray(rec[name], dtype=dtype)
        return v if v.ndim == 0 else v.reshape((-1,) + (1,) * (nd - 1))

    def rows(a, idx):
        a = np.asarray(a, dtype=float)
        return a if a.ndim == 0 or a.shape[0] == 1 else a[idx]

    kind = np.asarray(rec["kind"], dtype=object)
    shape = np.broadcast_shapes((len(kind),) + (1,) * (nd - 1), np.shape(eff), np.shape(price_mult),
                                np.shape(utilization), np.shape(interruptions_per_hour))
    sp = np.flatnonzero(kind == "spot")
    rs = np.flatnonzero(kind == "reserved")
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.ones(shape)
        spot_f = None
        if len(sp):
            spot_f = _spot_factor(col, rows, sp, np.asarray(interruptions_per_hour, dtype=float), shape, rec)
            factor[sp] = spot_f
        if len(rs):
            factor[rs] = reserved_factor(rows(utilization, rs), col("duty_fraction")[rs], col("term_months")[rs],
                                         col("horizon_eff_months")[rs])
        paid = factor * col("usd_per_instance_hour")
        if np.ndim(price_mult) or price_mult != 1.0:
            paid *= price_mult
        if spot_price_mult is not None and len(sp):
            paid[sp] *= spot_price_mult
        paid += col("energy_usd_per_instance_hour")
        cost = np.multiply(col("used_instance_hours"), eff, dtype=float)
        cost = np.broadcast_to(cost, shape).copy() if cost.shape != shape else cost
        cost *= paid
        del paid
        if training:
            days = np.broadcast_to(np.multiply(col("base_days"), eff, dtype=float), shape).copy()
            if spot_f is not None:
                days[sp] *= spot_f
            cost += col("fixed_usd")
            cost += col("fixed_per_month_usd") * days / DAYS_PER_MONTH
            days[~np.isfinite(days)] = np.nan
        else:
            days = np.full(shape, np.nan) if nd == 1 else None
            cost += col("fixed_usd") + col("fixed_per_month_usd")
        cost[~np.isfinite(cost)] = np.nan
    return {"cost": cost, "days": days, "factor": factor}


# --- break-even ------------------------------------------------------------------------------------

def _or_never(u):
    """A break-even utilization above 1 cannot be reached: inf ("never")."""
    return np.where(np.asarray(u, dtype=float) > 1.0, np.inf, u)


def max_interruptions_per_hour(s: Scenario, option: pd.Series, spot_usd_per_hour: float,
                               on_demand_usd_per_hour: float) -> float:
    """The interruption rate per instance-hour above which one spot option (a priced row) costs more
    than on-demand at the given prices: with spare instances for a latency-bound fleet, else from
    the lost hours (checkpoint interval for training)."""
    p = s.pricing
    if pd.notna(option.get("spot_availability_target", np.nan)) and pd.notna(option.get("instances", np.nan)):
        return breakeven_interruptions_spot_spares(spot_usd_per_hour, on_demand_usd_per_hour, p.restart_h,
                                                   option["instances"], option["spot_availability_target"])
    n = option["spot_instances"] if "spot_instances" in option and pd.notna(option["spot_instances"]) else 1.0
    ckpt = p.checkpoint_interval_h if s.is_training else 0.0
    return float(breakeven_interruptions_spot(spot_usd_per_hour, on_demand_usd_per_hour, ckpt, p.restart_h, n))


def _breakeven_entry(s: Scenario, r: pd.Series, od_price: float) -> dict:
    """The break-even figures of one non-on-demand option against an on-demand chip-hour price."""
    p = s.pricing
    model, price = r["pricing_model"], r["usd_per_chip_hour"]
    out = {}
    if model in ("commit_1y", "commit_3y", "monthly"):
        out["months_to_beat_on_demand"] = float(breakeven_months_commit(price, od_price, r["term_months"], p.utilization))
        out["utilization_to_beat_on_demand"] = float(_or_never(breakeven_utilization_commit(
            price, od_price, r["term_months"], p.horizon_months)))
    elif model == "purchase":
        cpi = r["chips_per_instance"]
        out["months_to_beat_on_demand"] = float(breakeven_months_purchase(
            r["usd_per_instance_hour"] * r["term_months"] * HOURS_PER_MONTH, od_price * cpi,
            r["energy_usd_per_instance_hour"], p.utilization))
        out["utilization_to_beat_on_demand"] = float(_or_never(breakeven_utilization_commit(
            price + r["energy_usd_per_instance_hour"] / cpi, od_price, r["term_months"], p.horizon_months)))
    elif model == "spot":
        out["max_interruptions_per_hour"] = max_interruptions_per_hour(s, r, price, od_price)
        out["min_useful_fraction"] = float(spot_goodput_breakeven(price, od_price))
    return out


_BREAKEVEN_COLUMNS = ["accelerator", "pricing_model", "offering", "usd_per_chip_hour", "on_demand_offering",
                      "on_demand_usd_per_chip_hour", "price_ratio", "months_to_beat_on_demand",
                      "utilization_to_beat_on_demand", "max_interruptions_per_hour", "min_useful_fraction"]


def breakeven(s: Scenario, priced: pd.DataFrame) -> pd.DataFrame:
    """Per accelerator, against its cheapest on-demand chip-hour: months of use after which each
    commitment or purchase beats on-demand, the utilization at which it does over the scenario's
    horizon, and for spot the interruption rate and useful fraction at which it stops paying."""
    rows = []
    ok = priced[priced["usd_per_instance_hour"].notna()].copy()
    ok["usd_per_chip_hour"] = ok["usd_per_instance_hour"] / ok["chips_per_instance"]
    for acc, g in ok.groupby("accelerator", sort=True):
        od = g[g["pricing_model"] == "on_demand"]
        if od.empty:
            continue
        od_best = od.loc[od["usd_per_chip_hour"].idxmin()]
        od_price = od_best["usd_per_chip_hour"]
        for _, r in g[g["pricing_model"] != "on_demand"].iterrows():
            price = r["usd_per_chip_hour"]
            entry = {"accelerator": acc, "pricing_model": r["pricing_model"], "offering": r["offering"],
                     "usd_per_chip_hour": price, "on_demand_offering": od_best["offering"],
                     "on_demand_usd_per_chip_hour": od_price, "price_ratio": price / od_price,
                     "months_to_beat_on_demand": np.nan, "utilization_to_beat_on_demand": np.nan,
                     "max_interruptions_per_hour": np.nan, "min_useful_fraction": np.nan}
            entry.update(_breakeven_entry(s, r, od_price))
            rows.append(entry)
    out = pd.DataFrame(rows, columns=_BREAKEVEN_COLUMNS)
    # keep the best (cheapest per chip-hour) offering per accelerator x model
    if len(out):
        out = out.sort_values("usd_per_chip_hour").groupby(["accelerator", "pricing_model"], sort=True).head(1)
        out = out.sort_values(["accelerator", "pricing_model"]).reset_index(drop=True)
    return out


def _cheapest_accelerator(s: Scenario, ok: pd.DataFrame) -> str | None:
    ranked = ok[ok["excluded_reason"].isna()] if "excluded_reason" in ok else ok
    metric = "cost_usd" if s.is_training else "usd_per_million_tokens"
    ranked = ranked.dropna(subset=[metric])
    return (ranked.loc[ranked[metric].idxmin(), "accelerator"] if len(ranked)
            else ok["accelerator"].iloc[0] if len(ok) else None)


def _cumulative(s: Scenario, r: pd.Series, months: np.ndarray) -> np.ndarray:
    """Cumulative cost of one chip of option ``r`` used ``utilization`` of the time, per month."""
    p = s.pricing
    model, price, u = r["pricing_model"], r["usd_per_chip_hour"], p.utilization
    if model == "on_demand":
        return months * HOURS_PER_MONTH * u * price
    if model == "spot" and pd.notna(r.get("spot_availability_target", np.nan)):
        f = float(r["paid_per_used_hour"])  # latency-bound serving: spare instances, (n + k) / n
        return months * HOURS_PER_MONTH * u * price * f
    if model == "spot":
        f = float(spot_overhead_factor(p.spot_interruptions_per_hour,
                                       p.checkpoint_interval_h if s.is_training else 0.0, p.restart_h, 1))
        return months * HOURS_PER_MONTH * u * price * f
    if model == "purchase":
        capex = price * r["term_months"] * HOURS_PER_MONTH
        return np.where(months > 0, capex, 0.0) + months * HOURS_PER_MONTH * u * r["energy_per_chip_hour"]
    term = r["term_months"]
    # a new term starts when the previous one ends
    y = np.ceil(np.maximum(months, 1e-9) / term) * term * HOURS_PER_MONTH * price
    return np.where(months > 0, y, 0.0)


def breakeven_curves(s: Scenario, priced: pd.DataFrame, accelerator: str | None = None,
                     max_months: int | None = None) -> pd.DataFrame:
    """Cumulative cost of one chip used ``utilization`` of the time, month by month, for each way
    to pay (cheapest offering of each): where a line crosses on-demand is the break-even month."""
    ok = priced[priced["usd_per_instance_hour"].notna()].copy()
    if accelerator is None:
        accelerator = _cheapest_accelerator(s, ok)
    if accelerator is None:
        return pd.DataFrame(columns=["accelerator", "pricing_model", "month", "cumulative_usd_per_chip"])
    g = ok[ok["accelerator"] == accelerator].copy()
    g["usd_per_chip_hour"] = g["usd_per_instance_hour"] / g["chips_per_instance"]
    g["energy_per_chip_hour"] = g["energy_usd_per_instance_hour"] / g["chips_per_instance"]
    best = g.sort_values("usd_per_chip_hour").groupby("pricing_model", sort=False).head(1)
    horizon = max_months or int(max(48, math.ceil(s.pricing.horizon_months) + 12))
    months = np.arange(0, horizon + 1, dtype=float)
    rows = [pd.DataFrame({"accelerator": accelerator, "pricing_model": r["pricing_model"], "offering": r["offering"],
                          "month": months, "cumulative_usd_per_chip": _cumulative(s, r, months)})
            for _, r in best.iterrows()]
    return pd.concat(rows, ignore_index=True)
