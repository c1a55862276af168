"""The evidence behind a decision: the assumptions ledger and the public claims tested on the scenario.

``assumptions`` lists every input the decision used, with its source and date, and flags stale
prices. The claims are in ``data/claims.csv`` (what was claimed, where, and the range that counts
as the claim holding); each row names a ``check``, one function below, that measures the same
quantity from the catalogs, the performance estimate and the priced options of the scenario. A
claim that the scenario cannot test (a serving claim on a training scenario, a chip not among the
candidates) is "not applicable", with the reason.
"""
from __future__ import annotations

import datetime as _dt
import math
import threading

import numpy as np
import pandas as pd

from .. import catalog, prices
from ..model import profile
from ..scenario import Scenario
from ..terms import HOURS_PER_MONTH, metric_unit, pricing_label, usd
from . import claim_checks
from .rules import PHYSICAL, needed_capabilities

STALE_DAYS = prices.STALE_AFTER_DAYS   # a price older than a year, or undated, is stale (issue 12)
HOLDS, FAILS, NA = "holds", "does not hold", "not applicable"


# --- assumptions ledger -------------------------------------------------------------------------------

def _flatten(prefix: str, obj, out: list):
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flatten(f"{prefix}.{k}" if prefix else k, v, out)
    else:
        out.append((prefix, obj))


def _field_description(s: Scenario, dotted: str) -> str | None:
    node = s
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = getattr(node, part, None)
        if node is None or not hasattr(type(node), "model_fields"):
            return None
    f = type(node).model_fields.get(parts[-1])
    return f.description if f is not None else None


def age_days(as_of, today: _dt.date) -> float:
    """Days from ``as_of`` (a date or its text) to ``today``; NaN when it is not a date."""
    try:
        d = pd.Timestamp(str(as_of)).date()
    except (ValueError, TypeError):
        return np.nan
    return float((today - d).days)



def _scenario_rows(s: Scenario) -> list[dict]:
    flat: list = []
    _flatten("", s.model_dump(exclude_none=True, exclude={"name", "title", "description"}), flat)
    rows = []
    for k, v in flat:
        desc = _field_description(s, k)
        rows.append({"category": "scenario", "item": k, "value": ", ".join(map(str, v)) if isinstance(v, list) else v,
                     "source": f"data/scenarios/{s.name}.yaml or the default" + (f": {desc}" if desc else ""),
                     "as_of": None})
    return rows


def _performance_rows(s: Scenario, perf_df: pd.DataFrame) -> list[dict]:
    keys = (["chips", "training_days", "mfu", "tokens_per_s"] if s.is_training
            else ["chips", "replicas", "tp", "ttft_ms", "tpot_ms", "output_tokens_per_s"])
    rows = []
    for _, r in perf_df.iterrows():
        vals = ", ".join(f"{k} {r[k]:,.4g}" for k in keys
                         if k in r and pd.notna(r[k]) and isinstance(r[k], (int, float, np.number)))
        rows.append({"category": "performance", "item": r["accelerator"], "value": vals,
                     "source": "workbook.model.estimate.compare (performance model)", "as_of": None})
    return rows


def price_valid_date(row):
    """When a priced row's price was valid: ``price_as_of`` (data/offerings.csv), or for a purchase
    (data/hardware.csv list prices) its ``as_of``; None when unknown."""
    if row.get("pricing_model") == "purchase":
        return prices.price_date(row.get("as_of"))
    return prices.price_date(row.get("price_as_of"))


def _price_rows(priced: pd.DataFrame) -> list[dict]:
    """One row per offering and way to pay. The columns are read once as lists (the values a row of
    ``iterrows`` holds: Python floats and ints, the strings and blanks as they are), not a Series per
    row: 1,400 offers cost 0.15 s through ``iterrows``."""
    cols = ["offering", "pricing_model", "usd_per_instance_hour", "chips_per_instance", "price_derivation", "price_basis",
            "source", "as_of", "price_as_of"]
    used = priced.loc[priced["offering"].notna().to_numpy(), [c for c in cols if c in priced]]
    used = used.drop_duplicates(["offering", "pricing_model"])
    n = len(used)

    def col(c):
        return used[c].tolist() if c in used else [None] * n

    rows = []
    dates: dict = {}    # a date string's (valid date, its ISO text), parsed once: most dates repeat
    for offering, model, hourly, chips, derivation, basis, source, as_of, price_as_of in zip(
            col("offering"), col("pricing_model"), col("usd_per_instance_hour"), col("chips_per_instance"),
            col("price_derivation"), col("price_basis"), col("source"), col("as_of"), col("price_as_of")):
        when = as_of if model == "purchase" else price_as_of     # what price_valid_date reads
        if type(when) is str and when in dates:
            valid, iso = dates[when]
        else:
            valid = price_valid_date({"pricing_model": model, "as_of": as_of, "price_as_of": price_as_of})
            iso = valid.isoformat() if valid else None
            if type(when) is str:
                dates[when] = valid, iso
        rows.append({"category": "price", "item": f"{offering} {model}",
                     "value": f"{usd(hourly)} per instance-hour ({chips:.0f} "
                              f"chips; {derivation}; basis {basis})",
                     "source": source, "as_of": iso,
                     "_date_unknown": valid is None})
    return rows


def _catalog_rows(s: Scenario, perf_df: pd.DataFrame) -> list[dict]:
    """The accelerators compared and the software support of their platforms."""
    rows = []
    acc = catalog.accelerators_by_id()
    for a in pd.unique(perf_df["accelerator"]):
        if a in acc.index:
            r = acc.loc[a]
            rows.append({"category": "accelerator", "item": a,
                         "value": f"{r['memory_bytes'] / 1e9:.0f} GB, {r['memory_bytes_per_s'] / 1e12:.2f} TB/s, "
                                  f"platform {r['platform']}",
                         "source": r["source"], "as_of": r["as_of"]})
    sw = catalog.software()
    plats = set(acc.loc[[a for a in pd.unique(perf_df["accelerator"]) if a in acc.index], "platform"])
    caps = set(list(s.constraints.frameworks or [s.workload.framework]) + needed_capabilities(s)
               + ["multi_cloud", "on_prem"])
    for _, r in sw[sw["platform"].isin(plats) & sw["capability"].isin(caps)].iterrows():
        rows.append({"category": "software", "item": f"{r['platform']} {r['capability']}", "value": r["support"],
                     "source": r["source"], "as_of": r["as_of"]})
    return rows


def _hardware_rows(priced: pd.DataFrame) -> list[dict]:
    if not (priced["pricing_model"] == "purchase").any():
        return []
    return [{"category": "hardware", "item": r["system"],
             "value": f"{usd(r['purchase_usd'])} for {r['chips_per_system']} x {r['accelerator']}",
             "source": r["source"], "as_of": r["as_of"]} for _, r in catalog.hardware().iterrows()]


def _convention_rows(s: Scenario) -> list[dict]:
    conv = [
        ("hours per month", HOURS_PER_MONTH, "8,760 h / 12: the billing month (offerings' committed hourly = monthly / 730)"),
        ("spot work lost per interruption", "checkpoint interval / 2 + restart",
         "Young 1974 (CACM 17(9)); Daly 2006 (FGCS 22(3))"),
        ("job interruption rate", "instances x rate per instance", "a job stops when any of its instances is reclaimed"),
        ("spot spares (latency-bound serving)",
         f"smallest k with P(N > k) <= 1 - {s.pricing.spot_availability_target:g} (pricing.spot_availability_target, "
         "a planning choice), N ~ Poisson((instances + k) x rate x restart); k spares paid",
         "M/G/inf: number in service is Poisson(arrival rate x mean service time) (Gross & Harris, Fundamentals "
         "of Queueing Theory); workbook.cost.rates.spare_instances"),
        ("reserved capacity", "paid hours = max(1, duty/u) / duty x max(term, horizon) / horizon per used hour",
         "workbook.cost.rates.reserved_factor"),
        ("on-demand serving", "pays serving hours only (ideal autoscaling)", "workbook.cost.bill module docstring"),
        ("support scale", "native 1, supported 2/3, partial 1/3, none 0",
         "equally spaced ordinal scale (workbook.decision.rules.SUPPORT_SCORE)"),
        ("performance band", "perf _low/_high read as P10/P90 of a log-normal",
         "data/efficiency.csv band_p10_*/band_p90_* rows: P10 and P90 of observed / predicted over "
         "data/reference_runs.csv; drawn by workbook.cost.uncertainty.mc_draws"),
        ("Monte Carlo", "10,000 draws, seed 0", "workbook.cost.uncertainty.monte_carlo"),
    ]
    return [{"category": "model convention", "item": item, "value": v, "source": src, "as_of": None}
            for item, v, src in conv]


def _flag(r) -> str | None:
    f = []
    if r["category"] == "price" and pd.notna(r["age_days"]) and r["age_days"] > STALE_DAYS:
        f.append(f"stale: older than {STALE_DAYS} days")
    if r["category"] == "price" and r.get("_date_unknown") is True:
        f.append("stale: price date unknown (price_as_of blank in data/offerings.csv)")
    return "; ".join(f) if f else None


def assumptions(s: Scenario, perf_df: pd.DataFrame, priced: pd.DataFrame, today: _dt.date | None = None) -> pd.DataFrame:
    """Every input the decision used: the scenario's values, the catalog rows (prices with their
    sources and dates, chips, software support), the performance estimates and the model's own
    conventions. A price row's ``as_of`` is when the price was valid (``price_as_of``); ``flag`` marks
    prices older than ``STALE_DAYS`` (365, relative to ``today``) and undated prices."""
    today = today or _dt.date.today()
    rows = (_scenario_rows(s) + _performance_rows(s, perf_df) + _price_rows(priced) + _catalog_rows(s, perf_df)
            + _convention_rows(s) + _hardware_rows(priced))
    df = pd.DataFrame(rows)
    if "_date_unknown" not in df:
        df["_date_unknown"] = False
    ages: dict = {}     # most dates repeat (one per price update): parse each once

    def age(a):
        if a is None or (isinstance(a, float) and np.isnan(a)):
            return np.nan
        if not isinstance(a, str):
            return age_days(a, today)
        if a not in ages:
            ages[a] = age_days(a, today)
        return ages[a]

    df["age_days"] = [age(a) for a in df["as_of"]]
    df["flag"] = [_flag({"category": c, "age_days": d, "_date_unknown": u})
                  for c, d, u in zip(df["category"].tolist(), df["age_days"].tolist(), df["_date_unknown"].tolist())]
    df["value"] = df["value"].map(lambda v: v if isinstance(v, str) else (f"{v:g}" if isinstance(v, float) else str(v)))
    return df[["category", "item", "value", "source", "as_of", "age_days", "flag"]]


# --- public claims ------------------------------------------------------------------------------------

def claims() -> pd.DataFrame:
    """``data/claims.csv``, validated."""
    return catalog.load("claims")


_MEMO = threading.local()   # .tables during check_claims: {(what, priced's id): result}, so two checks share a table


def _memo(what, priced: pd.DataFrame, make):
    """``make()``, once per ``check_claims`` call for the same ``what`` and frame (``_servable`` and
    ``_pair_savings``: read by several claims; the spot and 3-year pairs twice)."""
    memo = getattr(_MEMO, "tables", None)
    if memo is None:
        return make()
    key = (what, id(priced))
    if key not in memo:
        memo[key] = (priced, make())    # the frame kept alive with it, so its id is not reused
    return memo[key][1]


def _servable(priced: pd.DataFrame) -> pd.DataFrame:
    """Options that can physically do the work (fit, meet latency, instance shape, a price),
    whatever the budget, deadline or framework preference says."""
    return _memo("servable", priced, lambda: _servable_rows(priced))


def _servable_rows(priced: pd.DataFrame) -> pd.DataFrame:
    return priced[_servable_mask(priced)]


def _servable_mask(priced: pd.DataFrame) -> np.ndarray:
    """Which rows can physically do the work: they have the ranking figure and no physical exclusion code."""
    metric = priced["metric"].iloc[0] if len(priced) else "cost_usd"
    has = priced[metric].notna().to_numpy()
    codes = priced["excluded_codes"].to_numpy(dtype=object)
    return np.array([h and not any(c in PHYSICAL for c in cs) for h, cs in zip(has.tolist(), codes.tolist())],
                    dtype=bool)


def _result(row, status, measured, why, by=None):
    return {"claim_id": row["claim_id"], "claim": row["claim"], "status": status, "measured": measured,
            "claimed": _claimed_text(row), "by_how_much": by, "why": why, "source": row["source"],
            "as_of": row["as_of"]}


def _claimed_text(row) -> str:
    lo, hi, unit = row["claimed_low"], row["claimed_high"], row["unit"]
    if unit == "fraction":
        if hi >= 1:
            return f"at least {lo:.0%}"
        return f"{lo:.0%}-{hi:.0%}"
    if unit == "ratio":
        return f"at most {hi:g}x" if lo <= 0 else f"{lo:g}-{hi:g}x"
    if unit == "flops_per_s":
        return f"{(lo + hi) / 2 / 1e12:.0f} TFLOP/s"
    if pd.isna(lo) or pd.isna(hi):
        return "as stated"
    if unit == "bytes_per_s":
        return f"{(lo + hi) / 2 * 8 / 1e9:,.0f} Gb/s"
    return f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"


def _within(x, row) -> bool:
    return bool(row["claimed_low"] <= x <= row["claimed_high"])


def _pct_gap(x, row) -> str:
    """How far a measured fraction is from the claimed range, in percentage points."""
    if x < row["claimed_low"]:
        return f"{(row['claimed_low'] - x) * 100:.0f} points below"
    if x > row["claimed_high"]:
        return f"{(x - row['claimed_high']) * 100:.0f} points above"
    return "within the claimed range"


# --- checks ----------------------------------------------------------------------------------------

def _peak_bf16(row, s, perf_df, priced):
    acc = catalog.accelerator(row["subject"])
    v = float(acc["peak_bf16_flops_per_s"])
    int8 = acc.get("peak_int8_flops_per_s")
    ok = _within(v, row)
    why = f"{row['subject']} peaks at {v / 1e12:.0f} TFLOP/s in BF16 (accelerators.csv: {acc['source'].split(' ;')[0]})"
    if not ok and pd.notna(int8) and _within(float(int8), row):
        why += f"; {float(int8) / 1e12:.0f} is its INT8 peak"
    return _result(row, HOLDS if ok else FAILS, v, why + ".", f"{v / ((row['claimed_low'] + row['claimed_high']) / 2):.2f}x the claim")


def _cost_ratio(row, s, perf_df, priced):
    if s.is_training:
        return _result(row, NA, None, "A serving claim; this scenario trains.")
    subj = row["subject"]
    od = _memo("servable on-demand", priced, lambda: _servable_on_demand(priced))
    mine = od[od["accelerator"] == subj]
    if mine.empty:
        why = (f"{subj} is not among this scenario's candidates." if subj not in set(priced["accelerator"])
               else f"{subj} cannot serve this load on-demand here ({_first_reason(priced, subj)}).")
        return _result(row, NA, None, why)
    if row["baseline"] == "gpu":
        kinds = catalog.accelerators_by_id()["kind"]
        base = od[od["accelerator"].map(kinds) == "gpu"]
        base_name = "the cheapest GPU"
    else:
        names = [b.strip() for b in str(row["baseline"]).split(";")]
        base = od[od["accelerator"].isin(names)]
        base_name = " or ".join(names)
    if base.empty:
        return _result(row, NA, None, f"No {base_name} option can serve this load on-demand here.")
    # the claims compare the hardware: the bill without the team's porting cost (spread over the horizon)
    mine, base = (d.assign(hw=(d["usd_per_month"] - d["porting_usd"].fillna(0.0) / s.pricing.horizon_months)
                           / d["tokens_per_month"] * 1e6) for d in (mine, base))
    a = mine.loc[mine["hw"].idxmin()]
    b = base.loc[base["hw"].idxmin()]
    ratio = float(a["hw"] / b["hw"])
    why = (f"At your load, {subj} on-demand ({a['offering']}) costs {usd(a['hw'])} "
           f"{metric_unit(False, s.workload.generic is not None)} (hardware, porting left out) vs {usd(b['hw'])} for "
           f"{b['accelerator']} ({b['offering']}): "
           f"{ratio:.2f}x.")
    return _result(row, HOLDS if _within(ratio, row) else FAILS, ratio, why,
                   f"{1 - ratio:.0%} cheaper" if ratio < 1 else f"{ratio - 1:.0%} more expensive")


def _servable_on_demand(priced: pd.DataFrame) -> pd.DataFrame:
    """``_servable`` rows that pay on-demand with the few columns ``_cost_ratio`` reads (not all ~116 priced
    columns), taken by position: no filtered copy of every priced column."""
    od = priced["pricing_model"].to_numpy(dtype=object) == "on_demand"
    cols = ["accelerator", "offering", "usd_per_month", "porting_usd", "tokens_per_month"]
    return priced[[c for c in cols if c in priced]].take(np.flatnonzero(_servable_mask(priced) & od))


def _first_reason(priced, acc):
    r = priced.loc[priced["accelerator"] == acc, "excluded_reason"].dropna()
    return r.iloc[0] if len(r) else "no price"


def _pair_savings(priced: pd.DataFrame, model: str) -> pd.DataFrame:
    """Per offering with both prices: sticker saving and effective saving (whole bill, after
    interruptions or idle hours) of ``model`` over on-demand."""
    return _memo(("pairs", model), priced, lambda: _pairs(priced, model))


def _pairs(priced: pd.DataFrame, model: str) -> pd.DataFrame:
    metric = "cost_usd" if priced["metric"].iloc[0] == "cost_usd" else "usd_per_month"
    # the rows as positions from numpy arrays (``==`` on the object array is the Series' elementwise test, a
    # missing way to pay is unequal to every name), then a take of the few columns read: the rows and values of
    # ``priced.loc[mask, cols]``
    hourly, pm = priced["usd_per_instance_hour"].notna().to_numpy(), priced["pricing_model"].to_numpy(dtype=object)
    od = _memo("on-demand prices", priced,
               lambda: priced[["offering", "usd_per_instance_hour", metric]].take(np.flatnonzero((pm == "on_demand") & hourly)))
    # the columns read below and by the claims (the savings), not every priced column
    cols = [c for c in dict.fromkeys(["offering", "usd_per_instance_hour", "sticker_usd_per_instance_hour", metric])
            if c in priced]
    other = priced[cols].take(np.flatnonzero((pm == model) & hourly))
    keys = od["offering"]
    if keys.notna().all() and keys.is_unique:
        # one on-demand row per offering: the inner merge on "offering" is a lookup (left rows in order)
        at = pd.Index(keys).get_indexer(other["offering"])
        pair = other[at >= 0].reset_index(drop=True)
        at = at[at >= 0]
        pair["usd_per_instance_hour_od"] = od["usd_per_instance_hour"].to_numpy()[at]
        pair[f"{metric}_od"] = od[metric].to_numpy()[at]
    else:
        pair = other.merge(od, on="offering", suffixes=("", "_od"))
    pair["sticker_saving"] = 1 - pair["sticker_usd_per_instance_hour"] / pair["usd_per_instance_hour_od"]
    pair["effective_saving"] = 1 - pair[metric] / pair[f"{metric}_od"]
    return pair


def _spot(row, s, perf_df, priced):
    pair = _pair_savings(priced, "spot")
    if pair.empty:
        return _result(row, NA, None, "No offering of this scenario has both a spot and an on-demand price.")
    sticker = float(pair["sticker_saving"].median())
    eff = pair["effective_saving"]
    never = int(eff.isna().sum())
    if eff.notna().sum() == 0:
        return _result(row, FAILS, None,
                       f"Spot lists {sticker:.0%} below on-demand (median of {len(pair)} offerings), but every spot "
                       f"job here is interrupted so often that it never finishes "
                       f"({s.pricing.spot_interruptions_per_hour:g} interruptions per instance-hour).",
                       "spot cannot run this job")
    m = float(eff.median())
    why = (f"Median over {len(pair)} offerings: spot lists {sticker:.0%} below on-demand; after interruptions "
           f"({s.pricing.spot_interruptions_per_hour:g} per instance-hour) the bill is {m:.0%} lower.")
    if never:
        why += f" {never} spot option(s) never finish."
    return _result(row, HOLDS if _within(m, row) else FAILS, m, why, _pct_gap(m, row))


def _commit(row, s, perf_df, priced):
    pair = _pair_savings(priced, "commit_3y")
    if pair.empty:
        return _result(row, NA, None, "The scenario prices no 3-year commitment (pricing.models) or no offering has one.")
    sticker = float(pair["sticker_saving"].median())
    m = float(pair["effective_saving"].median())
    p = s.pricing
    why = (f"Median over {len(pair)} offerings: the 3-year price is {sticker:.0%} below on-demand; at "
           f"{p.utilization:.0%} utilization over a {p.horizon_months:g}-month horizon the bill is "
           f"{abs(m):.0%} {'lower' if m >= 0 else 'higher'}.")
    return _result(row, HOLDS if _within(m, row) else FAILS, m, why, _pct_gap(m, row))


def _mixed(row, s, perf_df, priced):
    best = {}
    for model in ("spot", "commit_1y", "commit_3y"):
        pair = _pair_savings(priced, model)
        if len(pair) and pair["effective_saving"].notna().any():
            best[model] = float(pair["effective_saving"].max())
    if not best:
        return _result(row, NA, None, "The scenario prices neither spot nor commitments with on-demand alongside.")
    top_model, top = max(best.items(), key=lambda kv: kv[1])
    def said(v):
        return f"saves {v:.0%}" if v >= 0 else f"costs {-v:.0%} more"

    why = ("A mix saves a weighted average of its parts, so at most the larger part. Best offering of each here: "
           + "; ".join(f"{pricing_label(k)} {said(v)}" for k, v in sorted(best.items(), key=lambda kv: -kv[1]))
           + " than on-demand.")
    return _result(row, HOLDS if top >= row["claimed_low"] else FAILS, top, why,
                   "possible here" if top >= row["claimed_low"] else _pct_gap(top, row))


def _checkpointing(row, s, perf_df, priced):
    if not s.is_training:
        return _result(row, NA, None, "A training claim; this scenario serves.")
    p = profile.workload_profile(s.workload)
    none = float(np.asarray(profile.activation_bytes_per_token_per_layer(p, s.workload.seq_len, "none")))
    full = float(np.asarray(profile.activation_bytes_per_token_per_layer(p, s.workload.seq_len, "full")))
    cut = 1 - full / none
    why = (f"For {p.name} at {s.workload.seq_len:,} tokens per sequence, full recomputation keeps only each layer's "
           f"input: {full:,.0f} of {none:,.0f} activation bytes per token per layer (Korthikanti et al. 2022, with "
           f"FlashAttention): {cut:.0%} less activation memory.")
    return _result(row, HOLDS if _within(cut, row) else FAILS, cut, why, _pct_gap(cut, row))


def _spec(column):
    def check(row, s, perf_df, priced):
        acc = catalog.accelerator(row["subject"])
        v = acc[column]
        if pd.isna(v):
            return _result(row, NA, None, f"accelerators.csv has no {column} for {row['subject']}.")
        v = float(v)
        ok = _within(v, row)
        return _result(row, HOLDS if ok else FAILS, v,
                       f"accelerators.csv gives {row['subject']} {column} = {v:,.0f}.",
                       "as claimed" if ok else f"{v - row['claimed_low']:+,.0f}")
    return check


def _matmul(row, s, perf_df, priced):
    why = "Needs a matrix-multiplication benchmark; the workbook models whole steps."
    if "mfu" in perf_df and row["subject"] in set(perf_df["accelerator"]):
        mfu = perf_df.loc[perf_df["accelerator"] == row["subject"], "mfu"].iloc[0]
        if pd.notna(mfu):
            why += f" For context, the whole training step here runs at {float(mfu):.0%} of peak (MFU)."
    return _result(row, NA, None, why)


CHECKS = {
    "peak_bf16_flops_per_s": _peak_bf16,
    "cost_per_token_ratio": _cost_ratio,
    "spot_discount": _spot,
    "commit_3y_saving": _commit,
    "mixed_saving": _mixed,
    "checkpointing_activation_cut": _checkpointing,
    "fast_domain_chips": _spec("fast_domain_chips"),
    "chips_per_node": _spec("chips_per_node"),
    "matmul_fraction_of_peak": _matmul,
    "intra_node_bytes_per_s": _spec("intra_node_bytes_per_s"),
    **claim_checks.CHECKS,
}


def check_claims(s: Scenario, perf_df: pd.DataFrame, priced: pd.DataFrame, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per claim: ``status`` (holds / does not hold / not applicable), ``measured`` (the figure the
    scenario gives), ``claimed``, ``by_how_much``, ``why`` (a sentence with the numbers), ``source``."""
    table = claims() if table is None else table
    claim_rows = [r for _, r in table.iterrows()]
    _MEMO.tables = {}
    try:
        rows = [CHECKS[r["check"]](r, s, perf_df, priced) for r in claim_rows]
    finally:
        _MEMO.tables = None
    for out, r in zip(rows, claim_rows):
        out["claimed"] = out["claimed"] or _claimed_text(r)
    return pd.DataFrame(rows, columns=["claim_id", "claim", "status", "measured", "claimed", "by_how_much", "why",
                                       "source", "as_of"])


def price_words(win, today: _dt.date | None = None) -> str:
    """Where an option's price comes from and how old it is, in words: "price from the provider's
    page, 12 days old (doubt x0.95-x1.06 at P10-P90)" (``price_basis``, ``price_age_days``,
    ``price_doubt_low``/``_high`` of ``cost.doubt``)."""
    basis = win.get("price_basis")
    where = {"catalog": "price from a maintained catalog", "provider_page": "price from the provider's page",
             "transcription": "price from a third party's transcription",
             "secondary": "secondary note"}.get(basis, "price of unknown basis")
    valid = price_valid_date(win)
    age = (f"{age_days(valid, today or _dt.date.today()):,.0f} days old" if valid is not None else "undated")
    lo, hi = win.get("price_doubt_low"), win.get("price_doubt_high")
    band = f" (doubt x{lo:.2f}-x{hi:.2f} at P10-P90)" if pd.notna(lo) and pd.notna(hi) else ""
    n = win.get("duplicates")
    dup = (f"; {n:.0f} catalog rows price this offer, {math.exp(win['duplicate_spread']) - 1:.0%} apart"
           if pd.notna(n) and n > 1 else "")
    rs = win.get("region_spread")
    reg = (f"; region not stated, and the catalog prices this instance up to {math.exp(rs) - 1:.0%} apart "
           "across its regions" if pd.notna(rs) and rs > 0 else "")
    return f"{where}, {age}{band}{dup}{reg}"
