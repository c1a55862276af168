"""What a choice costs: the whole bill of every option (prices per offering: ``workbook.cost.pricebook``).

Every option is one accelerator x offering (a row of ``data/offerings.csv``, or a system of
``data/hardware.csv`` to buy) x pricing model. Prices come from the catalogs; the scenario's
``pricing`` block supplies utilization, discounts, spot behaviour, horizon and the bill's other
lines. The performance model supplies how many chips and for how long.

How each way to pay is billed (the model, stated once):

- **whole instances, every way to pay**: every chip the work uses sits in a whole instance or TPU
  slice that is paid for (``_instances``): a serving replica of tp x pp x ep chips takes
  ceil(chips per replica / chips per instance) instances of its own when it is larger than one
  instance, else replicas pack floor(chips per instance / chips per replica) to an instance;
  ``chips_billed`` = (instances + spare instances) x chips per instance on every priced row.

- **training, every way to pay**: the run's wall time includes its failures (Daly 2006 goodput,
  ``workbook.cost.reliability``): hardware failures per host-hour on every pricing model, spot
  reclaims per host-hour added on spot, the optimal checkpoint interval for the checkpoint write time
  of the model state on ``pricing.checkpoint_storage``. A **commitment or purchase bought for a
  training run costs its whole term** (``contract_usd``; terms renewed while the run lasts) unless
  ``pricing.commitment_backfill_fraction`` says what share of the hours left after the run other work
  fills: cost = price x instances x (run hours + (1 - backfill) x (contract hours - run hours)).
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
- **capacity blocks** (AWS EC2 Capacity Blocks for ML, ``rates.capacity_block_hours``) are reserved
  capacity paid up front: a training run pays the shortest block that holds its wall time (whole days
  up to 14, whole weeks up to 182 days; the leftover hours like a commitment's, less the backfill), with
  hardware failures but no reclaims (goodput as on-demand); a service pays every hour of the block that
  covers ``horizon_months``. Work longer than 182 days, or more than 256 instances, cannot be held
  (``term_reason``, ruled out with code ``term``).
- ``negotiated_discount`` comes off list prices (on-demand, commitments, monthly); not off spot
  (a market price) or purchases.
- The whole bill adds object storage (``storage_tb``), internet egress (``egress_tb_per_month``),
  operations staff per month of use (``ops_usd_per_month``: ceil(hosts / ``ops_hosts_per_engineer``)
  x ``engineer_usd_per_week``, ``rates.ops_staff_usd_per_month``; none by default) and a porting
  cost per accelerator (``porting_usd``, an input: ``decision.framework_fit`` prices it from
  ``data/effort.csv`` engineer-weeks x ``engineer_usd_per_week``, with the recurring share of
  stack changes); serving spreads the porting cost over ``horizon_months``.
- Bought hardware adds hosting to its price (``hosting_usd``: colocation per kW, network, support,
  cost of capital; ``workbook.cost.hosting``). A monthly server pays whole months, at least
  ``pricing.monthly_min_term_months``. Serving with ``workload.user_locations`` adds the round trip
  from the offer's region to the users to TTFT before the SLO check (``workbook.cost.location``).

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
from . import energy, mcspares
from .location import add_user_rtt
from .pricebook import offer_prices, option_ids, requested_models, sorted_frame
from .rates import (CAPACITY_BLOCK_MAX_DAYS, CAPACITY_BLOCK_MAX_INSTANCES, capacity_block_hours, ops_staff_usd_per_month,
                    reserved_factor, spare_instances, spare_instances_over_rates, spares_factor, spot_spares_factor)
from .goodput import contract_hours, goodput_rows
from .reliability import STORAGE_TIERS, checkpoint_write_s, lead_time, p_meets_deadline


# --- the whole bill ------------------------------------------------------------------------------

_PERF_KEEP_TRAIN = ["chips", "fits", "reason", "peak_flops_per_s", "perf_training_days", "perf_training_days_low",
                    "perf_training_days_high", "chip_hours", "tokens_per_s", "mfu", "step_time_s", "checkpoint_bytes",
                    "hosts", "network_bytes_per_s_per_chip", "network_basis"]
_PERF_KEEP_INFER = ["chips", "fits", "reason", "peak_flops_per_s", "ttft_ms", "tpot_ms", "output_tokens_per_s",
                    "output_tokens_per_s_low", "output_tokens_per_s_high", "max_batch", "meets_slo", "replicas", "tp", "pp", "ep",
                    "replicas_low", "replicas_high", "chips_low", "chips_high", "ttft_ms_low", "ttft_ms_high",
                    "tpot_ms_low", "tpot_ms_high", "ttft_ms_p50", "ttft_ms_p99", "ttft_ms_at_slo_percentile"]
_NOT_NUMERIC = ("accelerator", "family", "reason", "fits", "meets_slo", "meets_deadline", "calibrated", "offering",
                "network_basis", "start_days_source")
_NULLABLE = (pd.Int8Dtype, pd.Int16Dtype, pd.Int32Dtype, pd.Int64Dtype, pd.UInt8Dtype, pd.UInt16Dtype, pd.UInt32Dtype,
             pd.UInt64Dtype, pd.Float32Dtype, pd.Float64Dtype, pd.BooleanDtype)  # pandas' nullable numbers and booleans


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
    """Output tokens per second the scenario asks for (requests/s x output tokens; a generic model's
    service: requests/s, one forward pass each), else what the deployment produces (perf)."""
    w = s.workload
    if w.generic is not None and w.requests_per_s is not None:
        return pd.Series(w.requests_per_s, index=perf.index, dtype=float)
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
    for c, dtype in perf.dtypes.items():  # perf may use nullable dtypes (Int64 with <NA>): floats from here on
        if c in _NOT_NUMERIC or dtype == np.float64:  # already floats
            continue
        if (isinstance(dtype, np.dtype) and dtype.kind in "iub") or isinstance(dtype, _NULLABLE):
            perf[c] = perf[c].astype(float)  # numpy's: no NaN; nullable ones (to_numeric keeps them): NA to NaN
            continue
        if pd.api.types.is_numeric_dtype(perf[c]) or perf[c].dtype == object:
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
    on = ["accelerator", "offering"] if "offering" in perf else ["accelerator"]  # per-offer rows (model.offers)
    df = prices.merge(perf[on + [k for k in keep if k not in on]], on=on, how="inner")
    missing, first, perf_accs = [], {}, perf["accelerator"].tolist()  # lists and arrays: no filtered frames
    for model in requested_models(s):
        have = set(df["accelerator"].to_numpy(object)[(df["pricing_model"] == model).to_numpy()].tolist())
        for acc in perf_accs:
            if acc not in have:
                if acc not in first:  # the accelerator's first performance row, its kept values read once
                    prow = perf.iloc[perf_accs.index(acc)]
                    first[acc] = {k: prow[k] for k in keep if k != "offering"}
                row = {"accelerator": acc, "pricing_model": model, "offering": None, "provider": None,
                       "price_derivation": "not priced", "usd_per_instance_hour": np.nan,
                       "term_months": TERM_MONTHS.get(model, 0.0), "energy_usd_per_instance_hour": 0.0,
                       "min_term_months": TERM_MONTHS.get(model, 0.0), "hosting_usd_per_instance_hour": 0.0,
                       "chips_per_instance": np.nan}
                row.update(first[acc])
                missing.append(row)
    if missing:
        df = pd.concat([df, pd.DataFrame(missing)], ignore_index=True)
    return df


def _instances(df: pd.DataFrame, training: bool) -> tuple[np.ndarray, pd.Series, np.ndarray]:
    """Instances bought per option, why the instance shape cannot hold the layout (else None), and
    instances per replica (serving; 1 for training).

    Every chip the work uses sits in a whole instance or slice that is paid for. Training: ceil(chips
    / chips per instance). Serving: a replica is ``chips / replicas`` chips (tp x pp x ep; the
    performance row's own count); replicas that fit one instance are packed floor(chips per instance
    / chips per replica) to an instance, and a replica larger than an instance (pipeline or expert
    parallel across instances) takes ceil(chips per replica / chips per instance) whole instances of
    its own. Its tensor-parallel group must sit inside one instance (``shape``)."""
    node = df["accelerator"].map(catalog.accelerators_by_id()["chips_per_node"]).astype(float)
    cpi = df["chips_per_instance"].astype(float)
    chips = df["chips"].astype(float)
    shape = pd.Series(None, index=df.index, dtype=object)
    if training:
        instances = np.ceil(chips / cpi)
        bad = (chips > cpi) & (cpi < np.minimum(chips, node))
        if bad.any():  # the reasons' text only where there is one (most offers have none)
            shape[bad] = ("instance: " + df["instance"].astype(str) + " has " + cpi.astype("Int64").astype(str)
                          + " chip(s), fewer than the " + node.astype("Int64").astype(str)
                          + "-chip node the performance model assumes for a multi-node run")
        return instances.to_numpy(float), shape, np.ones(len(df))
    tp = df["tp"].astype(float) if "tp" in df else pd.Series(1.0, index=df.index)
    tp = tp.fillna(1.0)
    replicas = df["replicas"].astype(float) if "replicas" in df else chips / tp
    replicas = replicas.where(replicas > 0).fillna(chips / tp)
    per_replica = (chips / replicas).where(lambda x: x > 0).fillna(tp)
    per_replica = np.maximum(per_replica, tp)
    per_inst = np.floor(cpi / per_replica)
    inst_per_replica = np.where(per_inst >= 1, 1.0, np.ceil(per_replica / cpi))
    instances = np.where(per_inst >= 1, np.ceil(replicas / np.maximum(per_inst, 1)), replicas * inst_per_replica)
    bad = tp > cpi
    if bad.any():
        shape[bad] = ("instance: a replica needs " + tp[bad].astype(int).astype(str) + " chips in one instance (tensor "
                      "parallel); " + df.loc[bad, "instance"].astype(str) + " has " + cpi[bad].astype("Int64").astype(str))
    return np.asarray(instances, dtype=float), shape, np.asarray(inst_per_replica, dtype=float)


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
        df["lost_h_per_interruption"] = np.nan  # training: goodput (below), not lost hours
        df["fixed_usd"] = df["porting_usd"].fillna(0.0)
        df["base_days"] = df["perf_training_days"].astype(float)
        _failure_recipe(s, df)
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
    # operations staff per month of use (0 unless pricing.ops_hosts_per_engineer is set)
    df["ops_usd_per_month"] = ops_staff_usd_per_month(_hosts(df).fillna(0.0).to_numpy(float),
                                                      p.ops_hosts_per_engineer, p.engineer_usd_per_week)
    df["fixed_per_month_usd"] = fixed_per_month + df["ops_usd_per_month"]
    # spare spot instances of a latency-bound fleet at the point interruption rate (0: not applicable)
    lat = df["spot_availability_target"].notna().to_numpy()
    df["spare_instances"] = 0.0
    if lat.any():
        # once per distinct (fleet, replica size): the regions of an offer share their spares
        fleet = np.column_stack([df.loc[lat, "instances"].to_numpy(float), df.loc[lat, "instances_per_replica"].to_numpy(float)])
        first, inv = np.unique(np.nan_to_num(fleet, nan=-1.0), axis=0, return_index=True, return_inverse=True)[1:]
        df.loc[lat, "spare_instances"] = spare_instances(fleet[first, 0], p.spot_interruptions_per_hour, p.restart_h,
                                                         p.spot_availability_target, fleet[first, 1])[inv.reshape(-1)]
    # every chip paid for: the whole instances (or slices) bought, spares included
    df["chips_billed"] = (df["instances"].astype(float) + df["spare_instances"].astype(float)) \
        * df["chips_per_instance"].astype(float)


def _hosts(df: pd.DataFrame) -> pd.Series:
    """Hosts bought: instances x hosts per instance (an instance or TPU slice of c chips on hosts of
    ``chips_per_node`` chips has max(1, c / chips_per_node) hosts: tpu-v6e-256 = 32 hosts)."""
    node = df["accelerator"].map(catalog.accelerators_by_id()["chips_per_node"]).astype(float)
    per = np.maximum(1.0, np.ceil(df["chips_per_instance"].astype(float) / node))
    return df["instances"].astype(float) * per


def _failure_recipe(s: Scenario, df: pd.DataFrame) -> None:
    """Training rows, in place: hosts, hardware failures and spot reclaims per host-hour, checkpoint
    write time of the model state (``checkpoint_bytes`` from the performance rows; 0 where absent),
    restart, fixed interval (None: optimal), the contract's hours and its backfill."""
    p = s.pricing
    df["hosts"] = _hosts(df)  # what is bought (the performance rows' hosts are the same on per-offer rows)
    df["failures_per_host_hour"] = p.failures_per_host_hour
    df["spot_exposure"] = (df["kind"] == "spot").astype(float)  # x the reclaim rate per host-hour
    ckpt = df["checkpoint_bytes"].astype(float).fillna(0.0) if "checkpoint_bytes" in df else 0.0
    billed = df["instances"].astype(float) * df["chips_per_instance"].astype(float)
    df["checkpoint_write_s"] = checkpoint_write_s(ckpt, billed, p.checkpoint_storage, p.checkpoint_write_bytes_per_s)
    if p.checkpoint_write_bytes_per_s is None and math.isnan(STORAGE_TIERS[p.checkpoint_storage]["per_chip_bytes_per_s"]):
        raise InputError(f"{s.name}: pricing.checkpoint_write_bytes_per_s: expected a bandwidth: the "
                         f"'{p.checkpoint_storage}' checkpoint storage has no sourced default")
    df["restart_s"] = p.restart_min * 60.0
    df["fixed_interval_s"] = np.nan if p.checkpoint_interval_min is None else p.checkpoint_interval_min * 60.0
    df["term_h"] = df["term_months"].astype(float) * HOURS_PER_MONTH
    df["min_term_h"] = df["min_term_months"].astype(float).fillna(0.0) * HOURS_PER_MONTH
    df["backfill_fraction"] = p.commitment_backfill_fraction
    df["capacity_block"] = (df["pricing_model"] == "capacity_block").astype(float)


def _deadline_odds(s: Scenario, df: pd.DataFrame) -> None:
    """Training rows, in place: the start days of the instances bought
    (``reliability.lead_time``: ``constraints.start_days``, else the sourced ``data/lead_times.csv``
    wait of the provider and chip, else 0 "none published"; with ``start_days_low``/``_high`` and
    ``start_days_source``) and ``p_meets_deadline`` (``reliability.p_meets_deadline`` on the
    wall-time band, after the start point)."""
    c = s.constraints
    waits = [lead_time(p, a, n, c.start_days) for p, a, n in
             zip(df["provider"], df["accelerator"], df["instances"].astype(float))]
    for k in ("start_days", "start_days_low", "start_days_high", "start_days_source"):
        df[k] = [w[k] for w in waits]
    df["p_meets_deadline"] = (np.nan if c.deadline_days is None else
                              p_meets_deadline(df["training_days_low"].to_numpy(float),
                                               df["training_days_high"].to_numpy(float), c.deadline_days,
                                               df["start_days"].to_numpy(float)))


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
    _hosting_total(s, df, res["factor"])
    _capacity_block_limits(s, df, res["days"])
    if training:
        for k in ("goodput", "interruptions_per_hour", "checkpoint_interval_s", "contract_usd"):
            df[k] = res[k]
        df["checkpoint_interval_min"] = df["checkpoint_interval_s"] / 60.0
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


def _capacity_block_limits(s: Scenario, df: pd.DataFrame, days) -> None:
    """Capacity-block rows, in place: ``block_days`` (the block bought: training, the shortest that
    holds the run's wall time; serving, the one that covers ``horizon_months``) and ``term_reason``
    (why no block can hold the work: longer than the longest block, or more instances than the
    blocks of one account hold; ``rates.CAPACITY_BLOCK_*``), None elsewhere."""
    cb = (df["pricing_model"] == "capacity_block").to_numpy()
    work_h = (np.asarray(days, dtype=float) * HOURS_PER_DAY if s.is_training
              else np.full(len(df), s.pricing.horizon_months * HOURS_PER_MONTH))
    df["block_days"] = np.where(cb, capacity_block_hours(work_h) / HOURS_PER_DAY, np.nan)
    what = "the run's wall time" if s.is_training else "pricing.horizon_months"
    long_ = cb & np.isfinite(work_h) & np.isnan(df["block_days"].to_numpy(float))
    many = cb & (df["instances"].astype(float).to_numpy() > CAPACITY_BLOCK_MAX_INSTANCES)
    reason = pd.Series(None, index=df.index, dtype=object)
    reason[long_] = [f"capacity block: {what} ({h / HOURS_PER_DAY:,.1f} days) is longer than the longest block "
                     f"({CAPACITY_BLOCK_MAX_DAYS} days)" for h in work_h[long_]]
    reason[many & ~long_] = [f"capacity block: {n:,.0f} instances > the {CAPACITY_BLOCK_MAX_INSTANCES} an account "
                             "may hold across capacity blocks" for n in df.loc[many & ~long_, "instances"]]
    df["term_reason"] = reason


def _hosting_total(s: Scenario, df: pd.DataFrame, factor) -> None:
    """``hosting_usd``, in place: the hosting of bought systems (colocation, network, support, cost of
    capital: ``hosting_usd_per_instance_hour``) over the hours paid, for the run (training) or over
    ``horizon_months`` (serving); 0 for rented options."""
    h = df["hosting_usd_per_instance_hour"].astype(float).fillna(0.0) if "hosting_usd_per_instance_hour" in df else 0.0
    if s.is_training:
        paid_h = np.asarray(factor, dtype=float) * df["base_days"].astype(float).to_numpy() * HOURS_PER_DAY
        df["hosting_usd"] = df["instances"].astype(float) * paid_h * h
    else:
        df["hosting_usd"] = (df["used_instance_hours"].astype(float) * np.asarray(factor, dtype=float) * h
                             * s.pricing.horizon_months)


def price_options(s: Scenario, perf_df: pd.DataFrame, porting_usd=None, offerings: pd.DataFrame | None = None,
                  systems: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every accelerator x offering x pricing model, priced for the scenario (long table).

    ``porting_usd``: the one-off porting cost per accelerator (dict, Series, or the software-fit
    frame of ``decision.framework_fit``; default none). Hard constraints are not applied here
    (``decision.apply_constraints`` marks the exclusions).

    Documented columns: ``option`` (id), ``accelerator, offering, provider, region, instance,
    platform, pricing_model, kind, term_months, price_derivation, price_basis, as_of, source``; ``instances`` bought
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
    ``usd_total`` over the horizon, with bands; ``metric`` (the ranking figure's column); ``energy_kwh``,
    ``co2_kg`` and their per-instance-hour inputs (``workbook.cost.energy``). The other
    columns are the recipe the Monte Carlo re-evaluates (internal to ``cost``)."""
    training = s.is_training
    perf = _perf_table(s, perf_df)
    df = _join_prices(s, perf, offerings, systems)
    df["platform"] = df["accelerator"].map(catalog.accelerators_by_id()["platform"])
    df["instances"], df["shape_reason"], df["instances_per_replica"] = _instances(df, training)
    df["kind"] = df["pricing_model"].map(KIND)
    df["porting_usd"] = _porting(porting_usd, df["accelerator"])
    add_user_rtt(s, df)
    _recipe(s, df)
    energy.add_per_instance_hour(s, df)  # kWh and kg CO2e per instance-hour; a carbon price into the bill
    _costs(s, df)
    energy.add_totals(s, df)  # energy_kwh, co2_kg of the work (workbook.cost.energy)
    if training:
        _deadline_odds(s, df)
    df["option"] = option_ids(df)
    order = {m: i for i, m in enumerate(PRICING_MODEL_IDS)}
    metric = "cost_usd" if training else "usd_per_million_tokens"
    keys = {"accelerator": df["accelerator"], "_o": df["pricing_model"].map(order), metric: df[metric]}
    front = ["option", "accelerator", "offering", "provider", "region", "instance", "pricing_model", "instances",
             "spare_instances", "chips_per_instance", "usd_per_instance_hour", "usd_per_chip_hour_effective"]
    front += (["cost_usd", "cost_usd_low", "cost_usd_high", "training_days", "training_days_low",
               "training_days_high"] if training
              else ["usd_per_million_tokens", "usd_per_million_tokens_low", "usd_per_million_tokens_high",
                    "usd_per_month", "usd_per_month_low", "usd_per_month_high", "usd_total"])
    front += ["price_derivation", "price_basis", "as_of", "source"]
    return sorted_frame(df, keys, front + [c for c in df.columns if c not in front])


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
            shared = np.ndim(lam_lat) == 0 or lam_lat.shape[0] == 1
            lam_lat = lam_lat if shared else lam_lat[lat]
            lost, tgt = col("lost_h_per_interruption")[sp][lat], target[lat]
            # spares as whole replicas: a replica of u instances (cost.rates.spare_instances)
            unit = (col("instances_per_replica")[sp][lat] if "instances_per_replica" in rec
                    else np.ones_like(np.asarray(n_lat, dtype=float)))
            # once per distinct (fleet, restart, target, replica size) when the draws are shared: regions re-price only
            keys = mcspares.fleet_keys(*(np.reshape(x, (len(lat), -1))[:, 0] for x in (n_lat, lost, tgt, unit)))
            _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
            if shared and np.size(lam_lat) > 1:  # a Monte Carlo's rates: the spares of each fleet along the sorted rates
                n_f = np.asarray(n_lat[first], dtype=float)
                k = mcspares.known(lam_lat, keys[first])
                if k is None:
                    k = spare_instances_over_rates(n_f, lam_lat, lost[first], tgt[first], unit[first])
                spot_f[lat] = spares_factor(n_f.reshape(len(first), -1), k)[inv.reshape(-1)]
            elif shared and len(first) < len(lat):
                spot_f[lat] = spot_spares_factor(n_lat[first], lam_lat, lost[first], tgt[first],
                                                 unit[first])[inv.reshape(-1)]
            else:
                spot_f[lat] = spot_spares_factor(n_lat, lam_lat, lost, tgt, unit)
    return spot_f


def bill(rec: pd.DataFrame | dict, training: bool, hours_multiplier, price_mult, utilization, interruptions_per_hour,
         spot_price_mult=None, outputs: tuple[str, ...] | None = None) -> dict:
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
    hour). Large draws are evaluated in place: few temporaries; ``outputs`` (training) names the
    arrays wanted (default all), so a Monte Carlo does not copy the ones it does not read."""
    if training:
        return _bill_training(rec, hours_multiplier, price_mult, interruptions_per_hour, spot_price_mult, outputs)
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
            term = col("term_months")[rs]
            if "min_term_months" in rec:  # a monthly server's minimum term is paid even when longer than its use
                term = np.maximum(term, np.nan_to_num(col("min_term_months")[rs]))
            factor[rs] = reserved_factor(rows(utilization, rs), col("duty_fraction")[rs], term,
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
        days = np.full(shape, np.nan) if nd == 1 else None
        cost += col("fixed_usd") + col("fixed_per_month_usd")
        cost[~np.isfinite(cost)] = np.nan
    return {"cost": cost, "days": days, "factor": factor}


def _bill_training(rec, hours_multiplier, price_mult, reclaims_per_host_hour, spot_price_mult=None,
                   outputs=None) -> dict:
    """The training bill (see the module docstring), vectorised like ``bill``. Wall time = the
    model's days x the performance draw / goodput (Daly 2006, ``reliability.wall_per_useful``) with
    the job's interruptions hosts x (failures + spot reclaims) per host-hour and the Young/Daly
    interval (or the fixed one). On-demand and spot pay instances x wall hours; commitments and
    purchases pay ``contract_h`` = the terms that cover the run, less the backfilled share of the
    hours after it. Returns ``cost``, ``days``, ``factor`` (paid per used hour), ``goodput``,
    ``interruptions_per_hour``, ``checkpoint_interval_s`` and ``contract_usd`` (reserved rows)."""
    nd = max(np.ndim(hours_multiplier), np.ndim(price_mult), np.ndim(reclaims_per_host_hour), 1)

    def col(name):
        v = np.asarray(rec[name], dtype=float)
        return v if v.ndim == 0 else v.reshape((-1,) + (1,) * (nd - 1))

    kind = np.asarray(rec["kind"], dtype=object).reshape((-1,) + (1,) * (nd - 1))
    lam = col("hosts") * (col("failures_per_host_hour") + col("spot_exposure") * np.asarray(reclaims_per_host_hour,
                                                                                               dtype=float))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tau, g = goodput_rows(rec, lam, col, np.ndim(reclaims_per_host_hour) < 2 or np.shape(reclaims_per_host_hour)[0] == 1)
        days = col("base_days") * hours_multiplier * g
        wall_h = days * 24.0
        price = col("usd_per_instance_hour") * price_mult
        if spot_price_mult is not None:
            sp = np.flatnonzero(np.asarray(rec["kind"], dtype=object) == "spot")
            price = np.broadcast_to(price, np.broadcast_shapes(price.shape, (len(kind),) + np.shape(spot_price_mult)[1:])).copy()
            price[sp] *= spot_price_mult
        reserved = kind == "reserved"
        contract_h, paid_h = contract_hours(rec, col, reserved, wall_h)
        n = col("instances")
        energy, per_month = col("energy_usd_per_instance_hour"), col("fixed_per_month_usd")
        cost = paid_h * price
        if np.any(energy != 0):  # a zero term is left out: the same sum (a run that never ends is NaN below)
            cost = cost + wall_h * energy
        cost = n * cost + col("fixed_usd")
        if np.any(per_month != 0):
            cost = cost + per_month * days / DAYS_PER_MONTH
        want = (lambda k: True) if outputs is None else (lambda k: k in outputs)
        factor = paid_h / (col("base_days") * hours_multiplier * 24.0) if want("factor") else None
        contract = np.where(reserved, n * contract_h * price, np.nan) if want("contract_usd") else None
    shape = np.broadcast_shapes(np.shape(cost), np.shape(days))
    out = {"cost": cost, "days": days, "factor": factor, "goodput": 1.0 / g if want("goodput") else None,
           "interruptions_per_hour": lam, "checkpoint_interval_s": tau, "contract_usd": contract}
    out = {k: np.array(np.broadcast_to(v, shape), dtype=float) for k, v in out.items() if want(k)}
    for k in ("cost", "days", "contract_usd"):
        if k in out:
            out[k][~np.isfinite(out[k])] = np.nan
    return out
