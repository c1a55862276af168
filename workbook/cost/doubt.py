"""One price per offer, and how far to doubt it.

**Duplicates.** Rows of ``data/offerings.csv`` that sell the same thing, one (provider, instance,
region) on one way to pay, are one offer: its price is the newest dated one (``price_as_of``;
undated counts as oldest); among equally dated prices the firmer basis (``BASIS_ORDER``), then the
row read last (``as_of``), then the dearer price (a doubtful low price must not win by default) is
kept. The others stay in the frame as evidence (``duplicate_of`` names the offering whose price is
kept; ``decision.rules`` rules them out with code ``duplicate``, never ranked). Rows marked
superseded (``catalog.is_superseded``: a known older vintage) are evidence too, but they do not
widen the spread: their price moved, and the age term holds moves.

**Doubt.** Each offer's price is read as a log-normal around the kept price whose P10/P90 are
``price_doubt_low``/``price_doubt_high`` = exp(-/+ h), with the half-width h (on ln price) the
quadrature sum of three independent parts:

- basis (``BASIS_HALF_WIDTH``): how the number reached the catalog;
- age (``AGE_HALF_WIDTH_PER_SQRT_MONTH`` x sqrt(months since ``price_as_of``)): prices move like a
  random walk, so the spread of a move grows with the square root of the time; an undated price
  is as old as ``UNDATED_AGE_DAYS`` or the oldest dated price of the catalog, whichever is older;
- duplicate spread: ln(max / min) of the prices the live duplicates give for the same offer;
- region spread, only for a row whose region is not stated (``unspecified`` or blank; ``all``, a price
  that holds in every region, is stated): ln(max / min) of its own price and the live prices the catalog
  gives for the same (provider, instance, way to pay) in named regions. Such a copy carries the price
  of some region the reader cannot name (issue 29's Azure rows: the same size costs up to 2x more in
  Brazil South than in East US, anycloud-sh/catalog azure/vms.csv @62ff0a9). A row in a named region
  is its own offer: other regions' prices never enter its doubt (a regional difference is a
  different offer, not doubt about one).

The widths are constants with their evidence below; ``price_moves`` measures that evidence from the
catalog itself (the tests check the constants against it). The Monte Carlo (``uncertainty.mc_draws``)
draws one standard normal per instance (provider | instance, ``uncertainty.stream_keys``), shared by its
ways to pay and its regions, scaled by each option's own sigma = h / Z90: each offer keeps its own band,
and the regions of one instance err in the same direction (common random numbers).
"""
from __future__ import annotations

import datetime as _dt

import numpy as np
import pandas as pd

from .. import catalog
from .rates import Z90

BASES = ("catalog", "provider_page", "transcription", "secondary")
# firmer first: the provider's own page, a maintained machine-read catalog, a third party's copy, a note
BASIS_ORDER = {"provider_page": 0, "catalog": 1, "transcription": 2, "secondary": 3}
BASIS_LABEL = {"catalog": "a maintained catalog", "provider_page": "the provider's page",
               "transcription": "a third party's transcription", "secondary": "a secondary note"}

# Half-width h of the P10-P90 band on ln(price), by basis. Evidence (data/offerings.csv at the commit
# that set these, measured by ``price_moves`` and ``copy_checks``; the tests check the widths against them):
# - catalog, provider_page 0.03: the same offer read from two machine catalogs of one vintage agrees
#   to the cent on on-demand (TPU v5e/v4 1.20 / 12.88 per chip-hour in SkyPilot and gpuhunt: the 3
#   same-vintage on-demand pairs differ by 0%; AWS p5/p4d 55.04 / 21.96 in SkyPilot v8 and in the
#   data-receipts copy); 3% covers rounding and currency conversion (Tencent, Alibaba CNY -> USD).
# - transcription 0.10: a third party's copy of a price. The 5 copies the catalog can check against a
#   firm price of the same instance (``copy_checks``: same region, any region for a copy naming none)
#   agree to the cent (Azure ND96isr H100 v5 98.32 = anycloud East US; 4 GCP TPU v6e notes = us-central1;
#   the tests check each copy against its band). 0.10 was first set above the upper quartile of the regional spread (5.7% on the catalog of
#   session 5), as the risk of a copy that omits its region; with every Azure region in the catalog
#   (anycloud-sh/catalog @62ff0a9) that spread has upper quartile ln 0.16 and maximum ln 0.69 (Brazil
#   South 2x West US 2/3), far wider than any copying error, so the region risk is now its own term
#   (``region_spread``, rows that do not name their region) and 0.10 is a copy's margin only: kept,
#   not narrowed, as no checkable copy has yet disagreed.
# - secondary 0.40: the one secondary price we could check against its provider was wrong by x2.16
#   (Vultr MI300X 1.85/GPU-h in a research note = the plan's preemptible rate; its standard rate is
#   31.92/8 = 3.99), and public MI300X quotes run 14-96% above the note's TensorWave 1.50 (issue 29);
#   exp(0.40) = 1.49 puts the band's P90 at +49%, the middle of that range. (It no longer covers the
#   largest regional spread; a secondary row that names no region carries that as ``region_spread``.)
BASIS_HALF_WIDTH = {"catalog": 0.03, "provider_page": 0.03, "transcription": 0.10, "secondary": 0.40}

# Age: h_age = k sqrt(months). Evidence: the 7 dated moves of one offer at least a month apart that
# the catalog records (``price_moves`` "dated": AWS p5.48xlarge 98.32 (2025-05-31) -> 55.04
# (2026-11-09), ln 0.58 in 17 months; p4d/p4de ln 0.40 in 17 months; p5en on-demand ln 0.29 and spot
# ln 0.11-0.54 in 14 months) run 0.030-0.144 per sqrt(month): lower quartile 0.078, median 0.096.
# Outside the catalog, one H100 pod went 3.29 -> 3.49 -> 3.99 in three months (ln 0.19, 0.11 per
# sqrt(month); issue 29). Most list prices do not move in a given month (GCP's TPU v5e 1.20 per
# chip-hour unchanged from Dec 2023 to Feb 2025), so the recorded moves are the large ones: k = 0.08,
# between their lower quartile and median, puts the AWS cut of a year-old price near the band's P90
# (0.08 sqrt(12) = 0.28) and the H100 pod's quarter near it too (0.08 sqrt(3) = 0.14).
AGE_HALF_WIDTH_PER_SQRT_MONTH = 0.08
# An undated price is older than any dated one: the undated rows are SkyPilot/gpuhunt snapshots whose
# dates could only be bounded (the old SkyPilot AWS snapshot predates 2025-06; Nebius's undated file
# predates 2026-09-25 by its H100 price), so at least two years: h = 0.08 sqrt(24) = 0.39.
UNDATED_AGE_DAYS = 730
DAYS_PER_MONTH = 30.4375

KEY = ["provider", "instance", "region"]
# the catalog column that prices each rented way to pay (purchase: data/hardware.csv, no duplicates)
PRICE_COLUMN = {"on_demand": "on_demand_usd_per_hour", "spot": "spot_usd_per_hour",
                "commit_1y": "commit_1y_usd_per_hour", "commit_3y": "commit_3y_usd_per_hour",
                "monthly": "monthly_usd", "capacity_block": "other_usd_per_hour"}


def _norm(s: pd.Series) -> pd.Series:
    return s.fillna("").astype(str).str.strip().str.lower()


def basis_of(off: pd.DataFrame) -> pd.Series:
    """Each row's ``price_basis`` (a frame without the column, e.g. an old test fixture: ``catalog``)."""
    if "price_basis" not in off:
        return pd.Series("catalog", index=off.index, dtype=object)
    return off["price_basis"].fillna("catalog").astype(str)


def _price_dates(off: pd.DataFrame) -> pd.Series:
    col = off["price_as_of"] if "price_as_of" in off else pd.Series(None, index=off.index, dtype=object)
    return pd.to_datetime(col.astype(str).where(col.notna(), None), errors="coerce")


def resolve(off: pd.DataFrame) -> pd.DataFrame:
    """The duplicate resolution of every row x rented way to pay that has a price: a long frame
    indexed like ``off`` rows (column ``row``) with ``pricing_model``, ``duplicate_of`` (the offering
    whose price the group keeps; None where this row's price is kept), ``duplicates`` (live rows
    in the group, this one included), ``duplicate_spread`` (ln of max / min live price of the
    group; 0 alone) and ``region_spread`` (``_region_spread``: rows that do not name their region).
    On numpy arrays: one stable lexsort per way to pay (the order of the former pandas
    ``sort_values``: each key's missing values last) and the groups as integer codes of the
    normalised (provider, instance, region) (tests/cost/test_resolve_equivalence.py keeps the pandas
    sort-and-group-by as the reference)."""
    norm = {k: _norm(off[k]).to_numpy(object) for k in KEY}
    group = _codes(norm["provider"], norm["instance"], norm["region"])     # one code per (provider, instance, region)
    pair = _codes(norm["provider"], norm["instance"])                      # one per (provider, instance)
    unstated = np.isin(norm["region"], UNSTATED_REGIONS)
    when = _price_dates(off)
    read = pd.to_datetime(off["as_of"].astype(str), errors="coerce") if "as_of" in off else when
    when_i, when_nat = _date_key(when)
    read_i, read_nat = _date_key(read)
    order = basis_of(off).map(BASIS_ORDER).fillna(len(BASIS_ORDER)).to_numpy(float)
    old = (catalog.is_superseded(off) if "notes" in off else off["offering"].str.endswith("-superseded")).to_numpy(bool)
    offering = off["offering"].to_numpy(object)
    rows = off.index.to_numpy()
    parts = []
    for model, col in PRICE_COLUMN.items():
        if col not in off:
            continue
        price = pd.to_numeric(off[col], errors="coerce")
        if model == "capacity_block" and "other_price_model" in off:
            price = price.where(off["other_price_model"].fillna("").astype(str).str.startswith("capacity_block"))
        price = price.to_numpy(float)
        have = np.flatnonzero(~np.isnan(price))
        if not len(have):
            continue
        live = ~old[have]
        # kept first: live rows, newest valid date (undated last), firmest basis, read last, dearest
        # (np.lexsort: the last key is the primary one; stable, so equal rows keep the catalog's order)
        o = np.lexsort((-price[have], -read_i[have], read_nat[have], order[have],
                        -when_i[have], when_nat[have], ~live))
        g = have[o]
        live = live[o]
        p = price[g]
        with np.errstate(divide="ignore", invalid="ignore"):
            lp = np.where(live, np.log(p), np.nan)
        code = group[g]
        _, first_at, inverse = np.unique(code, return_index=True, return_inverse=True)
        kept = first_at[inverse] == np.arange(len(g))
        first = offering[g][first_at][inverse]
        n = np.bincount(inverse, weights=live, minlength=len(first_at)).astype(int)[inverse]
        spread = _group_spread(inverse, lp, len(first_at))[inverse]
        parts.append(pd.DataFrame({"row": rows[g], "pricing_model": model,
                                   "duplicate_of": np.where(kept, None, first),
                                   "duplicates": n,
                                   "duplicate_spread": np.nan_to_num(spread, nan=0.0, posinf=np.inf, neginf=-np.inf),
                                   "region_spread": _region_spread(pair[g], unstated[g], lp)}))
    if not parts:
        return pd.DataFrame(columns=RESOLVED)
    out = pd.concat(parts, ignore_index=True)
    out["duplicate_of"] = out["duplicate_of"].astype(object).where(out["duplicate_of"].notna(), None)
    return out


RESOLVED = ["row", "pricing_model", "duplicate_of", "duplicates", "duplicate_spread", "region_spread"]
# a region the row does not name (``_norm``: NaN -> ""); "all" names every region (one price everywhere)
UNSTATED_REGIONS = ("", "unspecified")


def _codes(*cols: np.ndarray) -> np.ndarray:
    """An integer code per row for the tuple of the (string) columns ``cols``: equal tuples, equal codes, numbered
    in order of first appearance (the codes of ``pd.MultiIndex.from_arrays(cols).factorize()``, or of
    ``pd.factorize`` for one column), from a dict of the tuples: ~0.6 ms for the catalog's ~1,450 rows instead of
    ~6 ms of pandas' MultiIndex set-up (``resolve`` reads them only as groups)."""
    if len(cols[0]) == 0:
        return np.zeros(0, dtype=np.intp)
    seen: dict = {}
    return np.fromiter((seen.setdefault(k, len(seen)) for k in zip(*cols)), dtype=np.intp, count=len(cols[0]))


def _date_key(d: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(the dates as int64 nanoseconds, 0 where missing; missing) for a lexsort that puts missing last."""
    nat = d.isna().to_numpy(bool)
    return np.where(nat, 0, d.to_numpy("datetime64[ns]").view(np.int64)), nat


def _group_spread(inverse: np.ndarray, lp: np.ndarray, n_groups: int) -> np.ndarray:
    """max - min of ``lp`` per group (missing values left out; NaN for a group with none), as pandas'
    group-by max and min give them."""
    ok = ~np.isnan(lp)
    hi = np.full(n_groups, -np.inf)
    lo = np.full(n_groups, np.inf)
    np.maximum.at(hi, inverse[ok], lp[ok])
    np.minimum.at(lo, inverse[ok], lp[ok])
    seen = np.bincount(inverse[ok], minlength=n_groups) > 0
    with np.errstate(invalid="ignore"):
        return np.where(seen, hi - lo, np.nan)


def _region_spread(pair: np.ndarray, unstated: np.ndarray, lp: np.ndarray) -> np.ndarray:
    """ln(max / min) of a region-unstated row's live price and the live prices of the same (provider,
    instance) in named regions (``pair``: the (provider, instance) code of each row of one way to pay,
    ``lp`` = ln live price); 0 for a row in a named region, for one whose instance is priced in no
    named region, and for evidence rows."""
    out = np.zeros(len(lp))
    if not unstated.any():
        return out
    has = ~np.isnan(lp)
    named = ~unstated & has
    size = int(pair.max()) + 1
    hi = np.full(size, -np.inf)
    lo = np.full(size, np.inf)
    np.maximum.at(hi, pair[named], lp[named])
    np.minimum.at(lo, pair[named], lp[named])
    seen = np.bincount(pair[named], minlength=size) > 0
    u = unstated & has & seen[pair]
    with np.errstate(invalid="ignore"):
        out[u] = np.maximum(hi[pair[u]], lp[u]) - np.minimum(lo[pair[u]], lp[u])
    return out


_CACHE: dict = {}


def resolution(off: pd.DataFrame) -> pd.DataFrame:
    """``resolve(off)``, computed once per catalog load for the shipped catalog (the cached frame of
    ``catalog.offerings``); other frames (tests, filtered copies) are resolved on each call."""
    shipped = catalog.offerings()
    if off is shipped:
        hit = _CACHE.get("shipped")
        if hit is not None and hit[0] is shipped:
            return hit[1]
        out = resolve(off)
        _CACHE["shipped"] = (shipped, out)
        return out
    return resolve(off)


def age_days(price_as_of: pd.Series, today: _dt.date | None = None) -> pd.Series:
    """Days from ``price_as_of`` to ``today`` (NaN when undated); a future date (an announced
    price) counts as 0."""
    today = pd.Timestamp(today or _dt.date.today())
    text = price_as_of.astype(str).where(price_as_of.notna(), None)
    # each distinct date once (a catalog's ~1,500 prices carry a few dozen), in order of first appearance: the
    # first one, from which pandas infers the format, is the column's first, so each value parses as before
    codes, uniques = pd.factorize(text)
    if len(uniques) * 4 > len(text):
        when = pd.to_datetime(text, errors="coerce")
        return ((today - when).dt.days.astype(float)).clip(lower=0.0)
    when = pd.to_datetime(pd.Series(np.asarray(uniques, dtype=object), dtype=object), errors="coerce")
    days = np.append(((today - when).dt.days.astype(float)).clip(lower=0.0).to_numpy(), np.nan)
    return pd.Series(days[codes], index=price_as_of.index, name=price_as_of.name)


_UNDATED: dict = {}   # the catalog frame, the day and the answer of ``undated_age_days`` last asked


def undated_age_days(off: pd.DataFrame, today: _dt.date | None = None) -> float:
    """The age an undated price counts as: ``UNDATED_AGE_DAYS`` or one day more than the oldest dated
    price of ``off``, whichever is more (undated is the oldest). Remembered for the very frame and day
    last asked (the pricing asks it of the whole offerings catalog once per scenario)."""
    day = today or _dt.date.today()
    if _UNDATED.get("frame") is off and _UNDATED.get("day") == day:
        return _UNDATED["value"]
    ages = age_days(off["price_as_of"], day) if "price_as_of" in off else pd.Series(dtype=float)
    oldest = float(ages.max()) if ages.notna().any() else 0.0
    value = max(float(UNDATED_AGE_DAYS), oldest + 1.0)
    _UNDATED.update(frame=off, day=day, value=value)
    return value


def half_width(basis, age, spread, undated_age: float = UNDATED_AGE_DAYS, region_spread=0.0) -> np.ndarray:
    """h = sqrt(h_basis^2 + (k sqrt(age / 30.44 d))^2 + spread^2 + region_spread^2), the P90 half-width
    on ln price (module docstring); ``age`` in days, NaN = undated (``undated_age``)."""
    b = pd.Series(basis).map(BASIS_HALF_WIDTH).fillna(BASIS_HALF_WIDTH["secondary"]).to_numpy(float)
    a = np.asarray(age, dtype=float)
    a = np.where(np.isnan(a), undated_age, a)
    h_age = AGE_HALF_WIDTH_PER_SQRT_MONTH * np.sqrt(np.maximum(a, 0.0) / DAYS_PER_MONTH)
    s = np.nan_to_num(np.asarray(spread, dtype=float))
    r = np.nan_to_num(np.asarray(region_spread, dtype=float))
    return np.sqrt(b ** 2 + h_age ** 2 + s ** 2 + r ** 2)


def doubt_columns(prices: pd.DataFrame, undated_age: float, today: _dt.date | None = None,
                  scale: float = 1.0) -> pd.DataFrame:
    """``price_age_days`` (NaN undated), ``price_doubt_low``/``price_doubt_high`` (P10/P90 multipliers on
    the price) and ``price_sigma`` (sigma of ln price, for the Monte Carlo) of priced rows carrying
    ``price_basis``, ``price_as_of``, ``duplicate_spread`` and ``region_spread``; ``scale`` multiplies every half-width
    (``pricing.price_doubt_scale``)."""
    age = age_days(prices["price_as_of"], today) if "price_as_of" in prices else pd.Series(np.nan, index=prices.index)
    spread = prices["duplicate_spread"] if "duplicate_spread" in prices else 0.0
    region = prices["region_spread"] if "region_spread" in prices else 0.0
    h = half_width(prices["price_basis"].to_numpy(object), age.to_numpy(float),
                   np.broadcast_to(np.asarray(spread, dtype=float), len(prices)), undated_age,
                   np.broadcast_to(np.asarray(region, dtype=float), len(prices))) * scale
    return pd.DataFrame({"price_age_days": age.to_numpy(float), "price_doubt_low": np.exp(-h),
                         "price_doubt_high": np.exp(h), "price_sigma": h / Z90}, index=prices.index)


def price_moves(off: pd.DataFrame | None = None) -> pd.DataFrame:
    """The evidence for the widths, measured on the catalog: every pair of prices for one way to pay
    of one instance, as ``kind`` "dated" (same provider, instance, region; both dated, different
    dates: ``months`` apart), "same_vintage" (same key, same date or both undated) and "region" (same
    provider and instance, another region, same date or both undated), with ``log_ratio`` = |ln a/b|."""
    off = catalog.offerings() if off is None else off
    when = _price_dates(off)
    rows = []
    base = pd.DataFrame({"provider": _norm(off["provider"]), "instance": _norm(off["instance"]),
                         "region": _norm(off["region"]), "offering": off["offering"], "when": when})
    for model, col in PRICE_COLUMN.items():
        if col not in off:
            continue
        p = pd.to_numeric(off[col], errors="coerce")
        b = base.assign(price=p)[p.notna()]
        m = b.merge(b, on=["provider", "instance"], suffixes=("_a", "_b"))
        m = m[m["offering_a"] < m["offering_b"]]
        same_region = m["region_a"] == m["region_b"]
        both_dated = m["when_a"].notna() & m["when_b"].notna()
        same_date = (m["when_a"] == m["when_b"]) | (m["when_a"].isna() & m["when_b"].isna())
        kind = np.select([same_region & both_dated & ~same_date, same_region & same_date, ~same_region & same_date],
                         ["dated", "same_vintage", "region"], default="")
        months = (m["when_a"] - m["when_b"]).dt.days.abs() / DAYS_PER_MONTH
        rows.append(pd.DataFrame({"kind": kind, "pricing_model": model, "a": m["offering_a"], "b": m["offering_b"],
                                  "log_ratio": np.abs(np.log(m["price_a"] / m["price_b"])),
                                  "months": np.where(kind == "dated", months, np.nan)}))
    out = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["kind", "pricing_model", "a", "b", "log_ratio", "months"])
    return out[out["kind"] != ""].reset_index(drop=True)


def copy_checks(off: pd.DataFrame | None = None) -> pd.DataFrame:
    """The evidence for the copy widths (transcription, secondary), measured on the catalog: every dated
    live copy whose price the catalog also has from a firm basis (catalog, provider page; dated, live)
    for the same (provider, instance, way to pay) in the same region, or, for a copy that does not name
    its region, in any region. One row per copy and way to pay: ``nearest`` (the firm row closest in
    price), ``log_ratio`` = |ln copy / nearest|, ``gap_days`` between their ``price_as_of`` and
    ``half_width``, the copy's band for its basis at that gap (no spread terms)."""
    off = catalog.offerings() if off is None else off
    live = ~catalog.is_superseded(off) if "notes" in off else ~off["offering"].str.endswith("-superseded")
    when = _price_dates(off)
    base = pd.DataFrame({"provider": _norm(off["provider"]), "instance": _norm(off["instance"]),
                         "region": _norm(off["region"]), "offering": off["offering"], "basis": basis_of(off),
                         "when": when})[live & when.notna()]
    firm = base["basis"].isin(["catalog", "provider_page"])
    copies = base["basis"].isin(["transcription", "secondary"])
    rows = []
    for model, col in PRICE_COLUMN.items():
        if col not in off:
            continue
        p = pd.to_numeric(off[col], errors="coerce").reindex(base.index)
        a = base[copies & p.notna()].assign(price=p)
        b = base[firm & p.notna()].assign(price=p)
        m = a.merge(b, on=["provider", "instance"], suffixes=("", "_f"))
        m = m[(m["region"] == m["region_f"]) | m["region"].isin(UNSTATED_REGIONS)]
        if not len(m):
            continue
        m = m.assign(log_ratio=np.abs(np.log(m["price"] / m["price_f"])))
        m = m.sort_values("log_ratio", kind="stable").drop_duplicates("offering")
        gap = (m["when"] - m["when_f"]).dt.days.abs().to_numpy(float)
        rows.append(pd.DataFrame({"copy": m["offering"].to_numpy(), "pricing_model": model,
                                  "basis": m["basis"].to_numpy(), "nearest": m["offering_f"].to_numpy(),
                                  "log_ratio": m["log_ratio"].to_numpy(float), "gap_days": gap,
                                  "half_width": half_width(m["basis"].to_numpy(object), gap, np.zeros(len(m)))}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["copy", "pricing_model", "basis", "nearest", "log_ratio", "gap_days", "half_width"])
