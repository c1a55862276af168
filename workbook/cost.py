"""What a choice costs: ways to pay, the whole bill, break-even points, Monte Carlo and tornado.

Every option is one accelerator x offering (a row of ``data/offerings.csv``, or a system of
``data/hardware.csv`` to buy) x pricing model. Prices come from the catalogs; the scenario's
``pricing`` block supplies utilisation, discounts, spot behaviour, horizon and the bill's other
lines. The performance model (``perf.compare``) supplies how many chips and for how long.

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
  and a one-off porting cost where the platform needs it (``decision.framework_fit``); serving
  spreads the porting cost over ``horizon_months``.

Sources: Young 1974 "A first order approximation to the optimum checkpoint interval" (CACM 17(9)) and
Daly 2006 "A higher order estimate of the optimum checkpoint interval for restart dumps" (FGCS 22(3))
for the work lost per interruption (half a checkpoint interval plus the restart); the M/G/infinity
result (Gross & Harris, "Fundamentals of Queueing Theory", the M/G/inf model: the number in service
is Poisson with mean arrival rate x mean service time, whatever the service-time distribution) for
the instances down at once; the break-even formulas are the equalities of the billing rules above,
derived in each docstring.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import catalog, paths
from .errors import InputError
from .scenario import Scenario

HOURS_PER_MONTH = 730.0  # 8,760 h / 12: the cloud billing month (offerings' committed hourly = monthly / 730)
HOURS_PER_DAY = 24.0
DAYS_PER_MONTH = HOURS_PER_MONTH / HOURS_PER_DAY
Z90 = 1.2815515655446004  # standard normal 90th percentile: a P10-P90 band is +/- Z90 sigma

PRICING_MODELS = ("on_demand", "spot", "commit_1y", "commit_3y", "monthly", "purchase")
TERM_MONTHS = {"commit_1y": 12.0, "commit_3y": 36.0, "monthly": 1.0}
KIND = {"on_demand": "payg", "spot": "spot", "commit_1y": "reserved", "commit_3y": "reserved",
        "monthly": "reserved", "purchase": "reserved"}
MODEL_LABEL = {"on_demand": "on-demand", "spot": "spot", "commit_1y": "a 1-year commitment",
               "commit_3y": "a 3-year commitment", "monthly": "a monthly server", "purchase": "bought hardware"}


# --- formulas ------------------------------------------------------------------------------------

def spot_overhead_factor(interruptions_per_hour, checkpoint_interval_h, restart_h, instances=1):
    """Paid hours per useful hour for a checkpointed job on spot capacity.

    Each interruption loses, on average, half a checkpoint interval of work plus the restart time
    (Young 1974; Daly 2006). A job spread over ``instances`` machines stops when any one is reclaimed,
    at rate n·λ. Wall time W then satisfies W = useful + n·λ·W·(τ/2 + R), so
    W / useful = 1 / (1 - n·λ·(τ/2 + R)), and the job never finishes (inf) when n·λ·(τ/2 + R) >= 1.
    Always >= 1: spot never costs less than its sticker price per useful hour."""
    loss = np.asarray(instances, dtype=float) * np.asarray(interruptions_per_hour, dtype=float) * (
        np.asarray(checkpoint_interval_h, dtype=float) / 2.0 + np.asarray(restart_h, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(loss < 1.0, 1.0 / (1.0 - loss), np.inf)


def spot_serving_factor(interruptions_per_hour, restart_h):
    """Instance-hours held per useful instance-hour for a serving fleet on spot capacity.

    A reclaimed replica is out for the restart time R (no training progress is lost, in-flight
    requests are retried), so a fleet keeps its capacity by holding 1 / (1 - λ·R) times the
    instance-hours (same renewal argument as ``spot_overhead_factor`` with τ = 0, n = 1)."""
    return spot_overhead_factor(interruptions_per_hour, 0.0, restart_h, 1)


def poisson_sf(k: int, mean):
    """P(N > k) for N ~ Poisson(mean), k a non-negative integer, ``mean`` an array: 1 - sum of the
    first k+1 terms e^-m m^j / j! (absolute error ~1e-16, ample for availability targets)."""
    m = np.asarray(mean, dtype=float)
    term = np.exp(-m)
    cdf = term.copy()
    for j in range(1, int(k) + 1):
        term = term * m / j
        cdf += term
    return np.maximum(0.0, 1.0 - cdf)


MAX_SPARES = 1000  # search limit of spare_instances: beyond it spot cannot meet the target (inf)


def spare_instances(instances, interruptions_per_hour, restart_h, availability_target):
    """Spare spot instances a latency-bound fleet of ``instances`` needs to keep its full capacity
    ``availability_target`` of the time.

    Each instance is reclaimed as a Poisson process at rate r (per hour) and is out for the restart
    time R. The reclaims of a fleet of n + k instances arrive at rate (n + k)·r and each keeps an
    instance out for R, so the number out at a random moment is the number in service of an M/G/inf
    queue: Poisson with mean (n + k)·r·R (Gross & Harris, "Fundamentals of Queueing Theory", M/G/inf:
    arrival rate x mean service time, whatever the service-time distribution). Approximation: the
    exact count is Binomial(n + k, rR / (1 + rR)) (each instance an alternating up/restart renewal
    process); the Poisson form keeps reclaiming instances that are already out, so its tail is
    slightly heavier (conservative) and the two agree when rR << 1 (r = 0.05/h, R = 10 min:
    rR = 0.0083). The spares are spot instances too, hence the n + k.

    Returns the smallest k >= 0 with P(N > k) <= 1 - target, N ~ Poisson((n + k)·r·R); inf when
    no k up to ``MAX_SPARES`` does (rR >= 1: an instance is out more than it is up); NaN where n is
    unknown. Example: n = 1, r = 0.05/h, R = 10 min: P(N > 0) = 1 - e^-0.00833 = 0.0083, so a 0.99
    target needs no spare and a 0.999 target needs one."""
    n = np.asarray(instances, dtype=float)
    rho = np.asarray(interruptions_per_hour, dtype=float) * np.asarray(restart_h, dtype=float)
    eps = 1.0 - np.asarray(availability_target, dtype=float)
    n, rho, eps = np.broadcast_arrays(n, rho, eps)
    out = np.full(n.shape, np.nan)
    known = np.isfinite(n) & np.isfinite(rho) & np.isfinite(eps)
    out[known & (rho >= 1.0)] = np.inf
    idx = np.flatnonzero(known & (rho < 1.0))
    nn, rr, ee = n.ravel()[idx], rho.ravel()[idx], eps.ravel()[idx]
    flat = out.ravel()
    for k in range(MAX_SPARES + 1):
        if idx.size == 0:
            break
        ok = poisson_sf(k, (nn + k) * rr) <= ee
        flat[idx[ok]] = k
        idx, nn, rr, ee = idx[~ok], nn[~ok], rr[~ok], ee[~ok]
    flat[idx] = np.inf
    return flat.reshape(n.shape) if n.ndim else float(flat[0])


def spot_spares_factor(instances, interruptions_per_hour, restart_h, availability_target):
    """Instance-hours paid per instance-hour the load needs for a latency-bound fleet on spot:
    (n + k) / n with k = ``spare_instances``. Every one of the n + k slots is paid every hour (a
    reclaimed instance stops billing, its replacement bills while it starts), so no separate
    lost-hours term; >= 1 always: spot never costs less than n + k instances at the spot price."""
    n = np.asarray(instances, dtype=float)
    k = spare_instances(n, interruptions_per_hour, restart_h, availability_target)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (n + k) / n


def breakeven_interruptions_spot_spares(spot_usd_per_hour, on_demand_usd_per_hour, restart_h, instances,
                                        availability_target):
    """Interruptions per instance-hour above which a latency-bound spot fleet of n instances costs
    more than on-demand: spot·(n + k)/n < OD allows k_max = ceil(n·(OD/spot - 1)) - 1 spares, and
    the rate r* is where ``spare_instances`` first exceeds k_max (found by bisection: k grows with r).
    0 when even no spare is too dear (spot >= OD)."""
    spot, od, n = float(spot_usd_per_hour), float(on_demand_usd_per_hour), float(instances)
    if not (spot > 0 and od > 0 and n > 0 and restart_h > 0) or spot >= od:
        return 0.0
    k_max = math.ceil(n * (od / spot - 1.0)) - 1
    if k_max < 0:
        return 0.0
    # k_max spares suffice at rate r when P(N > k_max) <= 1 - target with N ~ Poisson((n + k_max)·r·R)
    # (the test ``spare_instances`` applies at k = k_max; it grows with r, so bisect on it directly:
    # one Poisson tail per step instead of a search over k).
    eps = 1.0 - float(availability_target)
    lo, hi = 0.0, 1.0 / restart_h  # at r·R = 1 no number of spares suffices
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if float(poisson_sf(k_max, (n + k_max) * mid * restart_h)) <= eps:
            lo = mid
        else:
            hi = mid
    return lo


def reserved_factor(utilization, duty, term_months, horizon_months):
    """Paid hours per used hour for capacity billed every hour of a term (commitment, monthly server,
    purchase).

    The work uses the capacity ``duty`` of the day (training 1; serving hours_per_day / 24) and keeps a
    fraction ``utilization`` of the paid hours busy; when utilisation is below the duty cycle the
    fleet must also cover the peaks, so paid hours are max(1, duty/u) / duty per used hour. A term T
    longer than the horizon of use m is paid in full: x max(T, m) / m."""
    u = np.asarray(utilization, dtype=float)
    duty = np.asarray(duty, dtype=float)
    term = np.asarray(term_months, dtype=float)
    m = np.asarray(horizon_months, dtype=float)
    return np.maximum(1.0, duty / u) / duty * np.maximum(term, m) / m


def energy_usd_per_hour(power_w, pue, usd_per_kwh):
    """Electricity for one system at full power: kW x PUE x $/kWh (PUE as defined by The Green Grid,
    facility energy / IT energy)."""
    return np.asarray(power_w, dtype=float) / 1000.0 * pue * usd_per_kwh


def breakeven_months_commit(commit_usd_per_hour, on_demand_usd_per_hour, term_months, utilization=1.0):
    """Months of use after which a commitment of ``term_months`` costs less than on-demand.

    On-demand for m months pays m·730·u·OD (only the used hours); the commitment pays
    max(T, m)·730·C. For m <= T they are equal at m* = T·C / (u·OD). When C/u >= OD the commitment
    never pays (inf); m* <= T otherwise."""
    c = np.asarray(commit_usd_per_hour, dtype=float)
    od = np.asarray(on_demand_usd_per_hour, dtype=float)
    u = np.asarray(utilization, dtype=float)
    m = np.asarray(term_months, dtype=float) * c / (u * od)
    return np.where(c / u < od, m, np.inf)


def breakeven_utilization_commit(commit_usd_per_hour, on_demand_usd_per_hour, term_months=0.0, horizon_months=1.0):
    """Utilisation above which a commitment beats on-demand over a horizon of m months:
    C·max(T, m)/m / u = OD  ->  u* = C/OD · max(T, m)/m (> 1 means never)."""
    c = np.asarray(commit_usd_per_hour, dtype=float)
    od = np.asarray(on_demand_usd_per_hour, dtype=float)
    return c / od * np.maximum(term_months, horizon_months) / np.asarray(horizon_months, dtype=float)


def breakeven_months_purchase(purchase_usd, on_demand_usd_per_hour, energy_usd_per_hour_=0.0, utilization=1.0,
                              hosting_usd_per_month=0.0):
    """Months of use after which buying beats renting on-demand.

    Buying costs P + m·(hosting + 730·u·E); renting costs m·730·u·OD, equal at
    m* = P / (730·u·(OD - E) - hosting); never (inf) when the denominator is <= 0."""
    p = np.asarray(purchase_usd, dtype=float)
    margin = HOURS_PER_MONTH * np.asarray(utilization, dtype=float) * (
        np.asarray(on_demand_usd_per_hour, dtype=float) - energy_usd_per_hour_) - hosting_usd_per_month
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(margin > 0, p / margin, np.inf)


def breakeven_interruptions_spot(spot_usd_per_hour, on_demand_usd_per_hour, checkpoint_interval_h, restart_h,
                                 instances=1):
    """Interruptions per instance-hour above which spot costs more than on-demand:
    spot / (1 - n·λ·(τ/2 + R)) = OD  ->  λ* = (1 - spot/OD) / (n·(τ/2 + R))."""
    ratio = np.asarray(spot_usd_per_hour, dtype=float) / np.asarray(on_demand_usd_per_hour, dtype=float)
    k = np.asarray(instances, dtype=float) * (np.asarray(checkpoint_interval_h, dtype=float) / 2.0 + restart_h)
    return np.maximum(0.0, 1.0 - ratio) / k


def spot_goodput_breakeven(spot_usd_per_hour, on_demand_usd_per_hour):
    """The useful fraction of paid spot hours below which spot stops paying: spot / on-demand."""
    return np.asarray(spot_usd_per_hour, dtype=float) / np.asarray(on_demand_usd_per_hour, dtype=float)


def lognormal_from_band(low, high):
    """(mu, sigma) of a log-normal whose P10 and P90 are ``low`` and ``high`` (> 0)."""
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    return (np.log(low) + np.log(high)) / 2.0, (np.log(high) - np.log(low)) / (2.0 * Z90)


# --- prices per offering -------------------------------------------------------------------------

def _requested_models(s: Scenario) -> list[str]:
    models = list(s.pricing.models)
    if s.candidates.pricing_models:
        models = [m for m in models if m in s.candidates.pricing_models]
    return models


def _is_superseded(off: pd.DataFrame) -> pd.Series:
    """Rows whose on-demand price an older vintage carries (catalog marks them in id and notes)."""
    return off["offering"].str.endswith("-superseded") | off["notes"].fillna("").str.startswith("SUPERSEDED")


def hardware() -> pd.DataFrame:
    """``data/hardware.csv`` (systems to buy), or an empty frame when the file is absent."""
    if "hardware" not in catalog.SCHEMAS or not (paths.DATA_DIR / "hardware.csv").exists():
        return pd.DataFrame(columns=["system", "accelerator", "chips_per_system", "purchase_usd", "system_power_w",
                                     "hosting_usd_per_month", "as_of", "source", "notes"])
    hw = catalog.load("hardware").copy()
    known = catalog.resolve_map("accelerators")
    for i, a in enumerate(hw["accelerator"]):
        if a not in known:
            raise InputError(f"data/hardware.csv: row {i + 2}: accelerator: unknown id {a!r}"
                             f"{catalog._suggest(a, set(known.values()))}")
    hw["accelerator"] = hw["accelerator"].map(known)
    return hw


def offer_prices(s: Scenario, offerings: pd.DataFrame | None = None, systems: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per offering x requested pricing model with a price: ``usd_per_instance_hour``
    (after negotiated discount; for purchases the capital cost per hour of the depreciation life
    plus hosting), ``energy_usd_per_instance_hour`` (purchases), ``term_months`` and ``price_basis``
    (where the number came from)."""
    p = s.pricing
    off = catalog.offerings() if offerings is None else offerings
    if s.candidates.clouds:
        off = off[off["provider"].isin(s.candidates.clouds)]
    superseded = _is_superseded(off)
    rows = []
    models = _requested_models(s)
    keep = ["offering", "provider", "provider_kind", "region", "instance", "accelerator", "chips_per_instance",
            "as_of", "source", "notes"]
    for model in models:
        if model == "purchase":
            continue
        base = off[keep].copy()
        base["pricing_model"] = model
        base["term_months"] = TERM_MONTHS.get(model, 0.0)
        base["energy_usd_per_instance_hour"] = 0.0
        base["on_demand_usd_per_hour"] = off["on_demand_usd_per_hour"].where(~superseded)
        if model == "on_demand":
            price = off["on_demand_usd_per_hour"].where(~superseded) * (1 - p.negotiated_discount)
            basis = pd.Series("published on-demand", index=off.index)
        elif model == "spot":
            price = off["spot_usd_per_hour"]
            basis = pd.Series("published spot (market price)", index=off.index)
        elif model in ("commit_1y", "commit_3y"):
            published = off[f"{model}_usd_per_hour"]
            disc = p.commit_1y_discount if model == "commit_1y" else p.commit_3y_discount
            derived = (off["on_demand_usd_per_hour"].where(~superseded) * (1 - disc)).where(
                off["provider_kind"] == "hyperscaler")
            price = published.fillna(derived) * (1 - p.negotiated_discount)
            basis = pd.Series(np.where(published.notna(), f"published {model.replace('_', ' ')}",
                                       f"on-demand x (1 - {disc:g}) (commit_{model[-2:]}_discount)"), index=off.index)
        else:  # monthly
            price = off["monthly_usd"] / HOURS_PER_MONTH * (1 - p.negotiated_discount)
            basis = pd.Series("published monthly / 730 h", index=off.index)
        base["usd_per_instance_hour"] = price
        base["sticker_usd_per_instance_hour"] = (off["spot_usd_per_hour"] if model == "spot" else price)
        base["price_basis"] = basis
        rows.append(base[price.notna()])
    if "purchase" in models:
        hw = hardware() if systems is None else systems
        if len(hw):
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
            rows.append(b[b["usd_per_instance_hour"].notna() & b["energy_usd_per_instance_hour"].notna()])
    if not rows:
        return pd.DataFrame(columns=keep + ["pricing_model", "usd_per_instance_hour"])
    out = pd.concat(rows, ignore_index=True)
    out["chips_per_instance"] = out["chips_per_instance"].astype(float)
    return out


# --- the whole bill ------------------------------------------------------------------------------

_PERF_KEEP_TRAIN = ["chips", "fits", "reason", "training_days", "training_days_low", "training_days_high",
                    "chip_hours", "tokens_per_s", "mfu", "step_time_s"]
_PERF_KEEP_INFER = ["chips", "fits", "reason", "ttft_ms", "tpot_ms", "output_tokens_per_s", "output_tokens_per_s_low",
                    "output_tokens_per_s_high", "max_batch", "meets_slo", "replicas", "tp", "replicas_low",
                    "replicas_high", "chips_low", "chips_high", "ttft_ms_low", "ttft_ms_high", "tpot_ms_low",
                    "tpot_ms_high"]


def is_training(s: Scenario) -> bool:
    return s.workload.task != "inference"


def is_latency_bound(s: Scenario) -> bool:
    """Online serving with latency targets (``ttft_slo_ms`` or ``tpot_slo_ms``) and no batch window:
    the service cannot wait out a spot restart, so spot holds spare instances (``spare_instances``).
    Training and batch or offline inference keep the lost-hours model."""
    w = s.workload
    return (not is_training(s) and (w.ttft_slo_ms is not None or w.tpot_slo_ms is not None)
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


def price_options(s: Scenario, perf_df: pd.DataFrame, offerings: pd.DataFrame | None = None,
                  systems: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every accelerator x offering x pricing model, priced for the scenario (long table).

    Columns: ``option`` (id), ``accelerator, offering, provider, region, instance, pricing_model,
    price_basis, as_of, source``; ``instances`` bought; ``usd_per_instance_hour`` (sticker after
    negotiated discount) and ``usd_per_chip_hour_effective`` (per paid chip-hour after interruptions
    and idle hours); training: ``cost_usd`` and ``time_days`` (spot runs longer), each with
    ``_low``/``_high`` from the performance band; inference: ``usd_per_month``,
    ``usd_per_million_tokens`` (output tokens, at the scenario's load), ``usd_total`` over the
    horizon, with bands; ``excluded_reason`` (a hard constraint that rules the option out, else
    empty; see ``decision.apply_constraints``); and the cost recipe the Monte Carlo re-evaluates."""
    from . import decision  # lazy: decision imports this module

    training = is_training(s)
    p = s.pricing
    if perf_df is None or len(perf_df) == 0:
        raise InputError(f"{s.name}: no performance rows to price (perf.compare returned nothing)")
    if "accelerator" not in perf_df:
        raise InputError("perf_df: missing column 'accelerator'")
    perf = perf_df.reset_index(drop=True).copy()
    for c in perf.columns:  # perf may use nullable dtypes (Int64 with <NA>): floats from here on
        if c not in ("accelerator", "family", "reason", "fits", "meets_slo", "meets_deadline", "calibrated"):
            if pd.api.types.is_numeric_dtype(perf[c]) or perf[c].dtype == object:
                conv = pd.to_numeric(perf[c], errors="coerce")
                if conv.notna().sum() == perf[c].notna().sum():
                    perf[c] = conv.astype(float)
    perf["band_lo"], perf["band_hi"] = _band(perf, training)
    keep = [c for c in (_PERF_KEEP_TRAIN if training else _PERF_KEEP_INFER) if c in perf]
    prices = offer_prices(s, offerings, systems)
    prices = prices[prices["accelerator"].isin(perf["accelerator"])]
    df = prices.merge(perf[["accelerator", "band_lo", "band_hi", *keep]], on="accelerator", how="inner")
    if training:
        df["demand_tokens_per_s"] = np.nan
    else:
        perf["demand_tokens_per_s"] = _demand_tokens_per_s(s, perf)
        df = df.merge(perf[["accelerator", "demand_tokens_per_s"]], on="accelerator", how="left")

    # accelerators with no price at all for a requested model: kept, marked "not priced"
    missing = []
    for model in _requested_models(s):
        have = set(df.loc[df["pricing_model"] == model, "accelerator"])
        for acc in perf["accelerator"]:
            if acc not in have:
                row = {"accelerator": acc, "pricing_model": model, "offering": None, "provider": None,
                       "price_basis": "not priced", "usd_per_instance_hour": np.nan, "term_months": TERM_MONTHS.get(model, 0.0),
                       "energy_usd_per_instance_hour": 0.0, "chips_per_instance": np.nan}
                prow = perf.loc[perf["accelerator"] == acc].iloc[0]
                row.update({k: prow[k] for k in ["band_lo", "band_hi", *keep]})
                if not training:
                    row["demand_tokens_per_s"] = prow["demand_tokens_per_s"]
                missing.append(row)
    if missing:
        df = pd.concat([df, pd.DataFrame(missing)], ignore_index=True)

    acc_tab = catalog.accelerators().set_index("accelerator")
    node = df["accelerator"].map(acc_tab["chips_per_node"]).astype(float)
    platform = df["accelerator"].map(acc_tab["platform"])
    df["platform"] = platform
    cpi = df["chips_per_instance"].astype(float)
    chips = df["chips"].astype(float)
    shape = pd.Series(None, index=df.index, dtype=object)
    if training:
        instances = np.ceil(chips / cpi)
        bad = (chips > cpi) & (cpi < np.minimum(chips, node))
        shape[bad] = ("instance: " + df["instance"].astype(str) + " has " + cpi.astype("Int64").astype(str)
                      + " chip(s), fewer than the " + node.astype("Int64").astype(str)
                      + "-chip node the performance model assumes for a multi-node run")
    else:
        tp = df["tp"].astype(float) if "tp" in df else pd.Series(1.0, index=df.index)
        tp = tp.fillna(1.0)
        replicas = df["replicas"].astype(float) if "replicas" in df else chips / tp
        replicas = replicas.fillna(chips / tp)
        per_inst = np.floor(cpi / tp)
        instances = np.where(per_inst >= 1, np.ceil(replicas / np.maximum(per_inst, 1)), replicas * np.ceil(tp / cpi))
        bad = tp > cpi
        shape[bad] = ("instance: a replica needs " + tp.astype(int).astype(str) + " chips in one instance (tensor "
                      "parallel); " + df["instance"].astype(str) + " has " + cpi.astype("Int64").astype(str))
    df["instances"] = instances
    df["shape_reason"] = shape
    df["kind"] = df["pricing_model"].map(KIND)

    # porting cost and framework fit, per accelerator (decision owns the rules)
    fit = decision.framework_fit(s, perf["accelerator"])
    df = df.merge(fit[["accelerator", "porting_usd", "framework_reason"]], on="accelerator", how="left")

    # recipe for the bill: used hours, duty cycle, horizon, spot exposure, fixed costs
    if training:
        wall_h = df["training_days"].astype(float) * HOURS_PER_DAY
        df["used_instance_hours"] = df["instances"] * wall_h
        df["duty"] = 1.0
        df["horizon_eff_months"] = np.maximum(p.horizon_months, wall_h / HOURS_PER_MONTH)
        df["spot_n"] = df["instances"]
        df["spot_k_h"] = p.checkpoint_interval_min / 60.0 / 2.0 + p.restart_min / 60.0
        df["spot_availability_target"] = np.nan
        df["fixed_usd"] = df["porting_usd"].fillna(0.0)
        df["fixed_per_month_usd"] = p.storage_tb * p.storage_usd_per_tb_month + p.egress_tb_per_month * p.egress_usd_per_tb
        df["base_days"] = df["training_days"].astype(float)
    else:
        hpd = s.workload.hours_per_day
        df["used_instance_hours"] = df["instances"] * hpd * DAYS_PER_MONTH  # per month
        df["duty"] = hpd / HOURS_PER_DAY
        df["horizon_eff_months"] = float(p.horizon_months)
        df["spot_n"] = 1.0
        df["spot_k_h"] = p.restart_min / 60.0
        if is_latency_bound(s):
            df["spot_availability_target"] = np.where(df["kind"] == "spot", p.spot_availability_target, np.nan)
        df["fixed_usd"] = df["porting_usd"].fillna(0.0) / p.horizon_months  # per month
        df["fixed_per_month_usd"] = p.storage_tb * p.storage_usd_per_tb_month + p.egress_tb_per_month * p.egress_usd_per_tb
        df["base_days"] = np.nan
        df["tokens_per_month"] = df["demand_tokens_per_s"].astype(float) * 3600.0 * hpd * DAYS_PER_MONTH
    if "spot_availability_target" not in df:
        df["spot_availability_target"] = np.nan
    # spare spot instances of a latency-bound fleet at the point interruption rate (0: not applicable)
    lat = df["spot_availability_target"].notna().to_numpy()
    df["spare_instances"] = 0.0
    if lat.any():
        df.loc[lat, "spare_instances"] = spare_instances(df.loc[lat, "instances"].to_numpy(float),
                                                         p.spot_interruptions_per_hour, p.restart_min / 60.0,
                                                         p.spot_availability_target)

    res = bill(df, training, eff=np.ones(len(df)), price_mult=np.ones(len(df)), utilization=p.utilization,
               interruptions_per_hour=p.spot_interruptions_per_hour)
    lo = bill(df, training, eff=df["band_lo"].to_numpy(float), price_mult=np.ones(len(df)),
              utilization=p.utilization, interruptions_per_hour=p.spot_interruptions_per_hour)
    hi = bill(df, training, eff=df["band_hi"].to_numpy(float), price_mult=np.ones(len(df)),
              utilization=p.utilization, interruptions_per_hour=p.spot_interruptions_per_hour)
    df["paid_per_used_hour"] = res["factor"]
    cpi_safe = df["chips_per_instance"].astype(float)
    df["usd_per_chip_hour_effective"] = (df["usd_per_instance_hour"] * res["factor"]
                                         + df["energy_usd_per_instance_hour"]) / cpi_safe
    if training:
        for sfx, r in (("", res), ("_low", lo), ("_high", hi)):
            df[f"cost_usd{sfx}"] = r["cost"]
            df[f"time_days{sfx}"] = r["days"]
        df["metric"] = "cost_usd"
    else:
        for sfx, r in (("", res), ("_low", lo), ("_high", hi)):
            df[f"usd_per_month{sfx}"] = r["cost"]
            df[f"usd_per_million_tokens{sfx}"] = r["cost"] / df["tokens_per_month"] * 1e6
            df[f"usd_total{sfx}"] = r["cost"] * p.horizon_months
        df["metric"] = "usd_per_million_tokens"
    # the other task's figures exist as blank columns, so readers need not branch on the task
    other = (["usd_per_million_tokens", "usd_per_month", "usd_total"] if training else ["cost_usd", "time_days"])
    for c in other:
        for sfx in ("", "_low", "_high"):
            df[c + sfx] = np.nan
    df["option"] = (df["accelerator"].astype(str) + " | " + df["offering"].fillna("-").astype(str) + " | "
                    + df["pricing_model"].astype(str))
    df["excluded_reason"] = decision.apply_constraints(s, df)
    order = {m: i for i, m in enumerate(PRICING_MODELS)}
    df["_o"] = df["pricing_model"].map(order)
    metric = "cost_usd" if training else "usd_per_million_tokens"
    df = df.sort_values(["accelerator", "_o", metric], kind="stable").drop(columns="_o").reset_index(drop=True)
    front = ["option", "accelerator", "offering", "provider", "region", "instance", "pricing_model", "instances",
             "spare_instances", "chips_per_instance", "usd_per_instance_hour", "usd_per_chip_hour_effective"]
    front += (["cost_usd", "cost_usd_low", "cost_usd_high", "time_days", "time_days_low", "time_days_high"] if training
              else ["usd_per_million_tokens", "usd_per_million_tokens_low", "usd_per_million_tokens_high",
                    "usd_per_month", "usd_per_month_low", "usd_per_month_high", "usd_total"])
    front += ["excluded_reason", "price_basis", "as_of", "source"]
    return df[front + [c for c in df.columns if c not in front]]


def bill(rec: pd.DataFrame | dict, training: bool, eff, price_mult, utilization, interruptions_per_hour,
         spot_price_mult=None) -> dict:
    """Evaluate the bill of every option for given draws (vectorised; the one formula that
    ``price_options``, ``monte_carlo`` and ``tornado`` share).

    ``rec`` holds per-option arrays (shape (M,)): used_instance_hours, usd_per_instance_hour,
    energy_usd_per_instance_hour, kind, duty, term_months, horizon_eff_months, spot_n, spot_k_h,
    fixed_usd, fixed_per_month_usd, base_days; optional ``instances`` and ``spot_availability_target``
    (set on spot rows of latency-bound serving: those pay ``spot_spares_factor`` for the point fleet
    size, with the spares re-derived for each interruption rate drawn, instead of the lost hours). ``eff`` (efficiency multiplier on hours), ``price_mult``
    (on every price), ``utilization`` and ``interruptions_per_hour`` broadcast against shape (M,) or
    (M, N); ``spot_price_mult`` (optional, shape (spot rows, N)) varies spot prices only. Returns
    ``cost`` (training: USD per run; serving: USD per month), ``days`` (training run length) and
    ``factor`` (paid hours per used hour). Large draws are evaluated in place: few temporaries."""
    nd = max(np.ndim(eff), np.ndim(price_mult), np.ndim(utilization), np.ndim(interruptions_per_hour), 1)

    def col(name, dtype=float):
        v = np.asarray(rec[name], dtype=dtype)
        return v if v.ndim == 0 else v.reshape((-1,) + (1,) * (nd - 1))

    kind = np.asarray(rec["kind"], dtype=object)
    m = len(kind)
    shape = np.broadcast_shapes((m,) + (1,) * (nd - 1), np.shape(eff), np.shape(price_mult), np.shape(utilization),
                                np.shape(interruptions_per_hour))
    sp = np.flatnonzero(kind == "spot")
    rs = np.flatnonzero(kind == "reserved")
    lam = np.asarray(interruptions_per_hour, dtype=float)
    u = np.asarray(utilization, dtype=float)

    def rows(a, idx):
        a = np.asarray(a, dtype=float)
        return a if a.ndim == 0 or a.shape[0] == 1 else a[idx]

    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.ones(shape)
        spot_f = None
        if len(sp):
            loss = rows(lam, sp) * col("spot_n")[sp] * col("spot_k_h")[sp]
            spot_f = np.where(loss < 1.0, 1.0 / (1.0 - loss), np.inf)
            if "spot_availability_target" in rec:
                target = col("spot_availability_target")[sp]
                lat = np.flatnonzero(np.isfinite(target.reshape(-1)))
                if len(lat):
                    spot_f = np.broadcast_to(spot_f, (len(sp),) + shape[1:]).copy()
                    n_lat = col("instances")[sp][lat]
                    lam_lat = rows(lam, sp)
                    lam_lat = lam_lat if np.ndim(lam_lat) == 0 or lam_lat.shape[0] == 1 else lam_lat[lat]
                    spot_f[lat] = spot_spares_factor(n_lat, lam_lat, col("spot_k_h")[sp][lat], target[lat])
            factor[sp] = spot_f
        if len(rs):
            factor[rs] = reserved_factor(rows(u, rs), col("duty")[rs], col("term_months")[rs], col("horizon_eff_months")[rs])
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
    """A break-even utilisation above 1 cannot be reached: inf ("never")."""
    return np.where(np.asarray(u, dtype=float) > 1.0, np.inf, u)


def breakeven(s: Scenario, priced: pd.DataFrame) -> pd.DataFrame:
    """Per accelerator, against its cheapest on-demand chip-hour: months of use after which each
    commitment or purchase beats on-demand, the utilisation at which it does over the scenario's
    horizon, and for spot the interruption rate and useful fraction at which it stops paying."""
    p = s.pricing
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
            model = r["pricing_model"]
            price = r["usd_per_chip_hour"]
            entry = {"accelerator": acc, "pricing_model": model, "offering": r["offering"],
                     "usd_per_chip_hour": price, "on_demand_offering": od_best["offering"],
                     "on_demand_usd_per_chip_hour": od_price, "price_ratio": price / od_price,
                     "months_to_beat_on_demand": np.nan, "utilization_to_beat_on_demand": np.nan,
                     "max_interruptions_per_hour": np.nan, "min_useful_fraction": np.nan}
            if model in ("commit_1y", "commit_3y", "monthly"):
                entry["months_to_beat_on_demand"] = float(breakeven_months_commit(price, od_price, r["term_months"], p.utilization))
                entry["utilization_to_beat_on_demand"] = float(_or_never(breakeven_utilization_commit(
                    price, od_price, r["term_months"], p.horizon_months)))
            elif model == "purchase":
                cpi = r["chips_per_instance"]
                entry["months_to_beat_on_demand"] = float(breakeven_months_purchase(
                    r["usd_per_instance_hour"] * r["term_months"] * HOURS_PER_MONTH, od_price * cpi,
                    r["energy_usd_per_instance_hour"], p.utilization))
                entry["utilization_to_beat_on_demand"] = float(_or_never(breakeven_utilization_commit(
                    price + r["energy_usd_per_instance_hour"] / cpi, od_price, r["term_months"], p.horizon_months)))
            elif model == "spot":
                n = r["spot_n"] if "spot_n" in r and pd.notna(r["spot_n"]) else 1.0
                k_ckpt = p.checkpoint_interval_min / 60.0 if is_training(s) else 0.0
                if pd.notna(r.get("spot_availability_target", np.nan)) and pd.notna(r.get("instances", np.nan)):
                    entry["max_interruptions_per_hour"] = breakeven_interruptions_spot_spares(
                        price, od_price, p.restart_min / 60.0, r["instances"], r["spot_availability_target"])
                else:
                    entry["max_interruptions_per_hour"] = float(breakeven_interruptions_spot(
                        price, od_price, k_ckpt, p.restart_min / 60.0, n))
                entry["min_useful_fraction"] = float(spot_goodput_breakeven(price, od_price))
            rows.append(entry)
    cols = ["accelerator", "pricing_model", "offering", "usd_per_chip_hour", "on_demand_offering",
            "on_demand_usd_per_chip_hour", "price_ratio", "months_to_beat_on_demand",
            "utilization_to_beat_on_demand", "max_interruptions_per_hour", "min_useful_fraction"]
    out = pd.DataFrame(rows, columns=cols)
    # keep the best (cheapest per chip-hour) offering per accelerator x model
    if len(out):
        out = out.sort_values("usd_per_chip_hour").groupby(["accelerator", "pricing_model"], sort=True).head(1)
        out = out.sort_values(["accelerator", "pricing_model"]).reset_index(drop=True)
    return out


def breakeven_curves(s: Scenario, priced: pd.DataFrame, accelerator: str | None = None,
                     max_months: int | None = None) -> pd.DataFrame:
    """Cumulative cost of one chip used ``utilization`` of the time, month by month, for each way
    to pay (cheapest offering of each): where a line crosses on-demand is the break-even month."""
    p = s.pricing
    ok = priced[priced["usd_per_instance_hour"].notna()].copy()
    if accelerator is None:
        ranked = ok[ok["excluded_reason"].isna()] if "excluded_reason" in ok else ok
        metric = "cost_usd" if is_training(s) else "usd_per_million_tokens"
        ranked = ranked.dropna(subset=[metric])
        accelerator = (ranked.loc[ranked[metric].idxmin(), "accelerator"] if len(ranked)
                       else ok["accelerator"].iloc[0] if len(ok) else None)
    if accelerator is None:
        return pd.DataFrame(columns=["accelerator", "pricing_model", "month", "cumulative_usd_per_chip"])
    g = ok[ok["accelerator"] == accelerator].copy()
    g["usd_per_chip_hour"] = g["usd_per_instance_hour"] / g["chips_per_instance"]
    g["energy_per_chip_hour"] = g["energy_usd_per_instance_hour"] / g["chips_per_instance"]
    best = g.sort_values("usd_per_chip_hour").groupby("pricing_model", sort=False).head(1)
    horizon = max_months or int(max(48, math.ceil(p.horizon_months) + 12))
    months = np.arange(0, horizon + 1, dtype=float)
    u = p.utilization
    rows = []
    for _, r in best.iterrows():
        model = r["pricing_model"]
        price = r["usd_per_chip_hour"]
        if model == "on_demand":
            y = months * HOURS_PER_MONTH * u * price
        elif model == "spot" and pd.notna(r.get("spot_availability_target", np.nan)):
            f = float(r["paid_per_used_hour"])  # latency-bound serving: spare instances, (n + k) / n
            y = months * HOURS_PER_MONTH * u * price * f
        elif model == "spot":
            f = float(spot_overhead_factor(p.spot_interruptions_per_hour, p.checkpoint_interval_min / 60.0 if is_training(s) else 0.0,
                                           p.restart_min / 60.0, 1))
            y = months * HOURS_PER_MONTH * u * price * f
        elif model == "purchase":
            capex = price * r["term_months"] * HOURS_PER_MONTH
            y = np.where(months > 0, capex, 0.0) + months * HOURS_PER_MONTH * u * r["energy_per_chip_hour"]
        else:
            term = r["term_months"]
            # a new term starts when the previous one ends
            y = np.ceil(np.maximum(months, 1e-9) / term) * term * HOURS_PER_MONTH * price
            y = np.where(months > 0, y, 0.0)
        rows.append(pd.DataFrame({"accelerator": accelerator, "pricing_model": model, "offering": r["offering"],
                                  "month": months, "cumulative_usd_per_chip": y}))
    return pd.concat(rows, ignore_index=True)


# --- Monte Carlo ---------------------------------------------------------------------------------

def _feasible(priced: pd.DataFrame) -> pd.DataFrame:
    metric = priced["metric"].iloc[0] if len(priced) and "metric" in priced else "cost_usd"
    ok = priced[priced[metric].notna()]
    if "excluded_reason" in ok:
        ok = ok[ok["excluded_reason"].isna()]
    return ok


def mc_draws(s: Scenario, priced: pd.DataFrame, n: int = 10000, seed: int = 0) -> dict:
    """Draw ``n`` joint scenarios for the options in ``priced`` (all rows passed in) and evaluate
    their bills. Uncertain inputs, each a P10/P90 band:

    - efficiency: perf's ``_low``/``_high`` band (a log-normal), one draw per accelerator shared by
      all its offerings and ways to pay;
    - spot price: log-normal around the catalog price with P90/P10 = ``spot_price_p90_over_p10``,
      one draw per spot option;
    - utilisation: normal with P10/P90 = utilization -/+ ``utilization_spread`` (clipped to 0.01-1),
      shared by all options;
    - interruption rate: log-normal with P10/P90 = rate / and x ``interruption_spread``, shared.

    Returns arrays (options x draws): ``cost`` (training USD per run, serving USD per month),
    ``metric`` (the ranking figure: cost per run or USD per million tokens), ``days``."""
    p = s.pricing
    training = is_training(s)
    rng = np.random.default_rng(seed)
    accs, acc_idx = np.unique(priced["accelerator"].to_numpy(str), return_inverse=True)
    z_acc = rng.standard_normal((len(accs), n))
    mu, sig = lognormal_from_band(priced["band_lo"].to_numpy(float), priced["band_hi"].to_numpy(float))
    eff = np.exp(mu[:, None] + sig[:, None] * z_acc[acc_idx])
    spot = np.flatnonzero((priced["kind"] == "spot").to_numpy())
    s_sig = math.log(p.spot_price_p90_over_p10) / (2 * Z90)
    spot_mult = np.exp(s_sig * rng.standard_normal((len(spot), n))) if len(spot) else None
    u = np.clip(p.utilization + p.utilization_spread / Z90 * rng.standard_normal((1, n)), 0.01, 1.0)
    lam = p.spot_interruptions_per_hour * np.exp(math.log(p.interruption_spread) / Z90 * rng.standard_normal((1, n)))
    out = bill(priced, training, eff=eff, price_mult=1.0, utilization=u, interruptions_per_hour=lam,
               spot_price_mult=spot_mult)
    cost = out["cost"]
    metric = cost if training else cost / priced["tokens_per_month"].to_numpy(float)[:, None] * 1e6
    return {"cost": cost, "metric": metric, "days": out["days"], "options": priced["option"].to_numpy(),
            "accelerators": priced["accelerator"].to_numpy(), "utilization": u[0], "interruptions_per_hour": lam[0]}


def _percentiles(x: np.ndarray) -> np.ndarray:
    """P10/P50/P90 per row; a draw that never finishes (NaN) counts as infinitely expensive, so a
    percentile that reaches such draws is NaN ("unbounded")."""
    with np.errstate(invalid="ignore"):
        q = np.percentile(np.where(np.isnan(x), np.inf, x), [10, 50, 90], axis=1)
    return np.where(np.isfinite(q), q, np.nan)


def monte_carlo(s: Scenario, priced: pd.DataFrame, n: int = 10000, seed: int = 0) -> pd.DataFrame:
    """P10/P50/P90 of cost and time for every option not ruled out, and the probability that each
    is the cheapest (``p_cheapest``) and that its accelerator has the cheapest option
    (``p_cheapest_accelerator``); with a budget, ``p_within_budget``; with a deadline,
    ``p_meets_deadline``. Vectorised: one (options x draws) array per quantity."""
    if n < 1:
        raise InputError(f"monte_carlo: n: expected a positive number of draws, got {n}")
    training = is_training(s)
    ok = _feasible(priced).reset_index(drop=True)
    cols = ["option", "accelerator", "offering", "provider", "pricing_model", "metric", "p10", "p50", "p90",
            "p_cheapest", "p_cheapest_accelerator"]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    d = mc_draws(s, ok, n=n, seed=seed)
    metric = d["metric"]
    filled = np.where(np.isnan(metric), np.inf, metric)
    winner = np.argmin(filled, axis=0)
    p_cheapest = np.bincount(winner, minlength=len(ok)) / n
    accs, acc_idx = np.unique(ok["accelerator"].to_numpy(str), return_inverse=True)
    p_acc = np.bincount(acc_idx[winner], minlength=len(accs)) / n
    q = _percentiles(metric)
    out = ok[["option", "accelerator", "offering", "provider", "pricing_model"]].copy()
    out["metric"] = "cost_usd" if training else "usd_per_million_tokens"
    out["p10"], out["p50"], out["p90"] = q[0], q[1], q[2]
    if training:
        tq = _percentiles(d["days"])
        out["days_p10"], out["days_p50"], out["days_p90"] = tq[0], tq[1], tq[2]
    else:
        cq = _percentiles(d["cost"])
        out["usd_per_month_p10"], out["usd_per_month_p50"], out["usd_per_month_p90"] = cq[0], cq[1], cq[2]
    out["p_cheapest"] = p_cheapest
    out["p_cheapest_accelerator"] = p_acc[acc_idx]
    c = s.constraints
    if c.budget_usd is not None:
        total = d["cost"] if training else d["cost"] * s.pricing.horizon_months
        out["p_within_budget"] = np.mean(total <= c.budget_usd, axis=1)
    if training and c.deadline_days is not None:
        out["p_meets_deadline"] = np.mean(d["days"] <= c.deadline_days, axis=1)
    return out.sort_values("p50", kind="stable").reset_index(drop=True)


def mc_histogram(s: Scenario, priced: pd.DataFrame, options: list[str] | None = None, n: int = 10000, seed: int = 0,
                 bins: int = 40, top: int = 5) -> pd.DataFrame:
    """Binned Monte Carlo distribution of the ranking figure for a few options (default: the
    ``top`` by median), ready to chart: option, bin_start, bin_end, share."""
    ok = _feasible(priced).reset_index(drop=True)
    if ok.empty:
        return pd.DataFrame(columns=["option", "bin_start", "bin_end", "share"])
    if options is None:
        mc = monte_carlo(s, priced, n=n, seed=seed)
        best = mc.sort_values("p50").drop_duplicates(["accelerator", "pricing_model"])
        options = list(best["option"].head(top))
    sub = ok[ok["option"].isin(options)].reset_index(drop=True)
    d = mc_draws(s, sub, n=n, seed=seed)
    vals = d["metric"]
    finite = vals[np.isfinite(vals)]
    lo, hi = np.percentile(finite, [0.5, 99.5]) if finite.size else (0.0, 1.0)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    rows = []
    for i, opt in enumerate(sub["option"]):
        counts, _ = np.histogram(np.clip(vals[i][np.isfinite(vals[i])], edges[0], edges[-1]), bins=edges)
        rows.append(pd.DataFrame({"option": opt, "bin_start": edges[:-1], "bin_end": edges[1:], "share": counts / n}))
    return pd.concat(rows, ignore_index=True)


# --- tornado -------------------------------------------------------------------------------------

def _commit_ratio_range(model: str) -> tuple[float, float] | None:
    """Range of published commit/on-demand ratios in offerings.csv (for a derived committed price)."""
    off = catalog.offerings()
    col = f"{model}_usd_per_hour"
    both = off[off[col].notna() & off["on_demand_usd_per_hour"].notna() & ~_is_superseded(off)]
    if both.empty:
        return None
    r = both[col] / both["on_demand_usd_per_hour"]
    return float(r.min()), float(r.max())


def _option_row(priced: pd.DataFrame, option) -> pd.Series:
    if isinstance(option, str):
        hit = priced[priced["option"] == option]
        if hit.empty:
            raise InputError(f"tornado: option: unknown option {option!r}{catalog._suggest(option, priced['option'])}")
        return hit.iloc[0]
    return priced.loc[option]


def tornado(s: Scenario, priced: pd.DataFrame, option=None) -> pd.DataFrame:
    """How far each uncertain input, moved across its P10-P90 band with the others at their point
    values, moves one option's ranking figure (cost per run or USD per million tokens). Sorted by
    swing, largest first. ``option`` is an ``option`` id or a row label of ``priced``; default: the
    cheapest option that passes the hard constraints."""
    p = s.pricing
    training = is_training(s)
    if option is None:
        ok = _feasible(priced)
        if ok.empty:
            return pd.DataFrame(columns=["input", "unit", "low", "high", "value_at_low", "value_at_high", "base",
                                         "swing", "option", "metric"])
        option = ok.loc[ok[ok["metric"].iloc[0]].idxmin(), "option"]
    row = _option_row(priced, option)
    one = pd.DataFrame([row])

    def value(eff=1.0, price_mult=1.0, u=p.utilization, lam=p.spot_interruptions_per_hour, rec=one):
        r = bill(rec, training, eff=np.array([eff]), price_mult=np.array([price_mult]), utilization=u,
                 interruptions_per_hour=lam)
        c = float(r["cost"][0])
        return c if training else c / float(rec["tokens_per_month"].iloc[0]) * 1e6

    base = value()
    sq = math.sqrt(p.spot_price_p90_over_p10)
    model = row["pricing_model"]
    inputs = [("efficiency (performance band)", "x", row["band_lo"], row["band_hi"],
               value(eff=row["band_lo"]), value(eff=row["band_hi"]))]
    if row["kind"] == "reserved":
        u_lo, u_hi = max(0.01, p.utilization - p.utilization_spread), min(1.0, p.utilization + p.utilization_spread)
        inputs.append(("utilisation", "fraction", u_lo, u_hi, value(u=u_lo), value(u=u_hi)))
    if model == "spot":
        lam = p.spot_interruptions_per_hour
        f = p.interruption_spread
        inputs.append(("spot interruptions per hour", "1/h", lam / f, lam * f, value(lam=lam / f), value(lam=lam * f)))
        inputs.append(("spot price", "x catalog", 1 / sq, sq, value(price_mult=1 / sq), value(price_mult=sq)))
    if model in ("commit_1y", "commit_3y") and "x (1 -" in str(row.get("price_basis", "")):
        rng = _commit_ratio_range(model)
        if rng is not None:
            disc = p.commit_1y_discount if model == "commit_1y" else p.commit_3y_discount
            od = row["usd_per_instance_hour"] / (1 - disc)
            vals = []
            for ratio in (rng[1], rng[0]):  # smallest discount first
                rec = one.copy()
                rec["usd_per_instance_hour"] = od * ratio
                vals.append(value(rec=rec))
            inputs.append(("commitment discount (published GCP range)", "fraction", 1 - rng[1], 1 - rng[0], vals[0], vals[1]))
    out = pd.DataFrame(inputs, columns=["input", "unit", "low", "high", "value_at_low", "value_at_high"])
    out["base"] = base
    out["swing"] = (out["value_at_high"] - out["value_at_low"]).abs()
    out["option"] = row["option"]
    out["metric"] = "cost_usd" if training else "usd_per_million_tokens"
    return out.sort_values("swing", ascending=False, kind="stable").reset_index(drop=True)
