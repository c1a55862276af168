"""The offers: one row per (offering, pricing model) evaluated, what it buys, how long and how
reliably it runs, what it costs and where it ranks; the excluded ones with ``excluded_reason``.

Every offer that passes the hard constraints is ranked (``rank.rank``: providers can be compared
offering by offering), on the point estimate (``cost_usd`` / ``usd_per_million_tokens``); the Monte
Carlo median is given beside it as ``cost_p50_monte_carlo`` and labelled so.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..scenario import Scenario
from .balance import balance_table
from .rank import break_ties, metric_of, rank

OFFER_KEYS = ["rank", "offering", "provider", "region", "accelerator", "instance", "pricing_model", "chips",
              "chips_billed", "instances", "hosts", "inter_node_bytes_per_s", "fabric", "network_basis",
              "training_days", "training_days_low", "training_days_high", "usd_per_million_tokens",
              "usd_per_million_tokens_low", "usd_per_million_tokens_high", "p_meets_deadline", "cost_usd",
              "cost_usd_low", "cost_usd_high", "cost_p50_monte_carlo", "usd_per_chip_hour", "price_as_of",
              "price_basis", "price_age_days", "price_doubt_low", "price_doubt_high", "duplicate_of", "shape_confirmed",
              "interruptions_per_hour", "goodput", "checkpoint_write_s", "checkpoint_interval_min", "start_days",
              "start_days_source", "contract_usd", "porting_usd", "ops_usd_per_month", "hosting_usd", "user_rtt_ms",
              "ttft_ms_at_slo_percentile", "energy_kwh", "co2_kg", "energy_kwh_per_month", "co2_kg_per_month",
              "grid_gco2e_per_kwh", "score", "tie", "excluded_reason", "host_warnings", "host_checks"]


def offers_table(s: Scenario, priced: pd.DataFrame, mc: pd.DataFrame | None = None,
                 tied: list[str] | None = None, reorder: list[str] | None = None,
                 ranked: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every priced (offering, pricing model) with the issue-11 keys (``OFFER_KEYS``): ranked ones
    first by rank, then the excluded ones with their reason (a duplicate row's price kept as evidence:
    ``duplicate_of``). ``price_basis``, ``price_age_days`` (None undated) and ``price_doubt_low``/``_high``
    (P10/P90 multipliers on the price, ``cost.doubt``) say how firm the price is; ``shape_confirmed``
    false marks a shape no source confirms. ``usd_per_chip_hour`` is the sticker
    price per chip-hour (after negotiated discount); ``contract_usd`` is set on commitments and
    purchases (the whole term the run pays for). ``tied``: the options tied with the top one
    (``Recommendation.ties``), ordered by the tie-breakers as the recommendation orders them;
    ``tie`` marks them and the top one; ``reorder``: those the tie-breakers reorder (``rank.reorderable``;
    default: all of ``tied``); ``ranked``: that ranking already made for these ``priced`` and ``mc`` (its
    ``option``, ``rank`` and ``score``: ``Recommendation.ranked``), else ranked here."""
    metric = metric_of(s)
    df = priced[priced["offering"].notna()].copy()
    df["usd_per_chip_hour"] = df["usd_per_instance_hour"] / df["chips_per_instance"].astype(float)
    if "network_bytes_per_s_per_chip" in df:  # per instance, as the plan ran it (the chip's, when unpublished)
        df["inter_node_bytes_per_s"] = df["inter_node_bytes_per_s"].where(
            df["inter_node_bytes_per_s"].notna(),
            df["network_bytes_per_s_per_chip"] * df["chips_per_instance"].astype(float))
    if ranked is None:
        ranked = break_ties(rank(s, priced, mc), list(tied or []) if reorder is None else list(reorder))
    df["tie"] = False
    if tied and len(ranked):
        df["tie"] = df["option"].isin([*tied, ranked["option"].iloc[0]])
    if len(ranked):
        df = df.merge(ranked[["option", "rank", "score"]], on="option", how="left")
    else:
        df["rank"], df["score"] = np.nan, np.nan
    if mc is not None and len(mc) and "p50" in mc:
        df["cost_p50_monte_carlo"] = df["option"].map(mc.set_index("option")["p50"])
    df[["host_warnings", "host_checks"]] = balance_table(s, df)
    for k in OFFER_KEYS:
        if k not in df:
            df[k] = np.nan
    if "contract_usd" in df:
        df.loc[df["kind"] != "reserved", "contract_usd"] = np.nan
    df = df.sort_values(["rank", metric], na_position="last", kind="stable")
    return df[OFFER_KEYS].reset_index(drop=True)


SUMMARY_COLUMNS = {
    "training": ["rank", "offering", "provider", "accelerator", "pricing_model", "chips", "chips_billed", "instances",
                 "hosts", "inter_node_bytes_per_s", "training_days", "p_meets_deadline", "start_days", "goodput",
                 "checkpoint_interval_min", "cost_usd", "cost_p50_monte_carlo", "contract_usd", "porting_usd",
                 "hosting_usd", "energy_kwh", "co2_kg", "price_basis", "price_age_days", "tie", "excluded_reason"],
    "serving": ["rank", "offering", "provider", "region", "accelerator", "pricing_model", "chips", "chips_billed",
                "instances", "usd_per_million_tokens", "usd_per_million_tokens_low", "usd_per_million_tokens_high",
                "cost_p50_monte_carlo", "usd_per_chip_hour", "ttft_ms_at_slo_percentile", "user_rtt_ms",
                "porting_usd", "hosting_usd", "price_as_of", "price_basis", "co2_kg_per_month", "tie", "excluded_reason"],
}


def offers_summary(s: Scenario, offers: pd.DataFrame | None, top: int | None = None) -> pd.DataFrame:
    """The offers a person reads: the ``SUMMARY_COLUMNS`` of the scenario's kind (training: time,
    deadline odds, start days, goodput, cost and contract; serving: USD per million tokens), ranked
    first, then the excluded ones; at most ``top`` rows."""
    if offers is None:
        return pd.DataFrame(columns=SUMMARY_COLUMNS["training" if s.is_training else "serving"])
    cols = [c for c in SUMMARY_COLUMNS["training" if s.is_training else "serving"] if c in offers]
    out = offers[cols]
    return out.head(top).reset_index(drop=True) if top else out.reset_index(drop=True)



ENERGY_COLUMNS = ["offering", "provider", "region", "accelerator", "pricing_model", "instances", "chip_power_w",
                  "system_overhead", "pue", "grid_gco2e_per_kwh", "energy_kwh_per_instance_hour",
                  "co2_kg_per_instance_hour", "energy_kwh", "co2_kg", "energy_kwh_per_month", "co2_kg_per_month",
                  "carbon_usd", "energy_reason"]


def energy_summary(s: Scenario, priced: pd.DataFrame) -> pd.DataFrame:
    """Energy and CO2e of every offering that passes the hard constraints, on its cheapest way to pay
    (``workbook.cost.energy``: chip power x system overhead x utilization x PUE, x the region's grid
    intensity), lowest CO2e first (unknown last); training: the run, serving: a month and the horizon."""
    metric = metric_of(s)
    # the columns shown and sorted on, not every priced column through the filter and the two sorts
    keep = list(dict.fromkeys(c for c in (*ENERGY_COLUMNS, metric, "co2_kg", "energy_kwh") if c in priced))
    ok = priced.loc[priced["offering"].notna() & priced["excluded_reason"].isna() & priced[metric].notna(), keep]
    if ok.empty or "energy_kwh" not in ok:
        return pd.DataFrame(columns=ENERGY_COLUMNS)
    best = ok.sort_values(metric, kind="stable").drop_duplicates("offering")
    cols = [c for c in ENERGY_COLUMNS if c in best and (s.is_training is False or not c.endswith("_per_month"))]
    return best.sort_values(["co2_kg", "energy_kwh"], na_position="last", kind="stable")[cols].reset_index(drop=True)
