"""Latency to the users: the network round trip from an offer's region to where the users are
(``workload.user_locations``), added to the time to first token of a serving option.

A request goes from the user to the region and its first token comes back: one round trip on a
connection already open (TCP and TLS handshakes and the users' access network are not counted).
The round trips are measured averages between data-centre metros (``data/latency.csv``: IBM Cloud's
published inter-region latency table); an offer's region is placed in a metro by
``data/regions.csv`` ``latency_metro``. Over several user locations the **worst** round trip counts
(the SLO must hold for every user group). A region in the users' own metro adds 0 (within a metro the
table's zones are about 1 ms apart). A region without a metro, or a metro pair the table lacks,
leaves ``user_rtt_ms`` blank: the latency target cannot be checked there and the option misses it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import catalog
from ..scenario import Scenario

TTFT_COLUMNS = ("ttft_ms", "ttft_ms_low", "ttft_ms_high", "ttft_ms_p50", "ttft_ms_p99", "ttft_ms_at_slo_percentile")


def metros() -> set[str]:
    """Metro codes the round-trip table knows."""
    lat = catalog.latency()
    return set(lat["from_metro"]) | set(lat["to_metro"])


def region_metro(providers: pd.Series, regions: pd.Series) -> pd.Series:
    """The latency metro of each (provider, region) from ``data/regions.csv`` (None where blank or absent)."""
    reg = catalog.regions()
    table = {(p, r): m for p, r, m in zip(reg["provider"], reg["region"], reg["latency_metro"])
             if isinstance(m, str) and m}
    return pd.Series([table.get((p, r)) for p, r in zip(providers, regions)], index=providers.index, dtype=object)


def worst_rtt_ms(server_metros: pd.Series, user_locations: list[str]) -> pd.Series:
    """Worst round trip (ms) from each server metro to the user locations: 0 in the same metro, the
    table's figure otherwise, NaN where the metro is unknown or a pair is not in the table."""
    lat = catalog.latency()
    rtt = {(f, t): float(v) for f, t, v in zip(lat["from_metro"], lat["to_metro"], lat["rtt_ms"])}

    def one(m):
        if not isinstance(m, str):
            return np.nan
        vals = [0.0 if m == u else rtt.get((m, u), np.nan) for u in user_locations]
        return float(np.max(vals)) if not np.isnan(vals).any() else np.nan
    return server_metros.map(one).astype(float)


def _basis(metro, rtt, region, users: str) -> str:
    if not isinstance(metro, str):
        return f"no latency metro for region {region} (data/regions.csv): round trip to {users} not known"
    if np.isnan(rtt):
        return f"no measured round trip from {metro} to every one of {users} (data/latency.csv)"
    return f"worst round trip {metro} -> {users}: {rtt:.0f} ms (data/latency.csv)"


def add_user_rtt(s: Scenario, df: pd.DataFrame) -> None:
    """Serving rows with ``workload.user_locations``, in place: ``user_rtt_ms`` (worst round trip from
    the offer's region), ``user_rtt_basis``, the TTFT columns (``TTFT_COLUMNS``) with the round trip
    added, and ``meets_slo`` re-checked: the TTFT the SLO is judged on (at ``ttft_slo_percentile``
    under a request rate, else unloaded) plus the round trip must be within ``ttft_slo_ms``; an
    unknown round trip misses it. Without user locations ``user_rtt_ms`` is blank and nothing moves."""
    w = s.workload
    df["user_rtt_ms"] = np.nan
    df["user_rtt_basis"] = None
    if s.is_training or not w.user_locations:
        return
    metro = region_metro(df["provider"], df["region"])
    rtt = worst_rtt_ms(metro, list(w.user_locations))
    users = ", ".join(w.user_locations)
    df["user_rtt_ms"] = rtt
    df["user_rtt_basis"] = [_basis(m, r, g, users) for m, r, g in zip(metro, rtt, df["region"])]
    for c in TTFT_COLUMNS:
        if c in df:
            df[c] = df[c].astype(float) + rtt.fillna(0.0)
    if w.ttft_slo_ms is None or "meets_slo" not in df:
        return
    judged = (df["ttft_ms_at_slo_percentile"].astype(float) if "ttft_ms_at_slo_percentile" in df
              and w.requests_per_s is not None else pd.Series(np.nan, index=df.index))
    judged = judged.fillna(df["ttft_ms"].astype(float))
    ok = (judged <= w.ttft_slo_ms) & rtt.notna()
    df["meets_slo"] = df["meets_slo"].astype("boolean").fillna(False) & ok
