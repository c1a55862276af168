"""Uncertainty of the bill: Monte Carlo draws and their summaries, a histogram, a tornado.

Each uncertain input is a P10/P90 band (``workbook.cost.rates.lognormal_from_band`` for the
multiplicative ones); the draws are evaluated by the one bill formula (``workbook.cost.bill.bill``)
as (options x draws) arrays.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import catalog
from ..errors import InputError
from ..scenario import Scenario
from . import mcgroups
from .bill import bill
from .mcspares import MC_SPARES, mc_spares
from .rates import Z90, lognormal_from_band


def _feasible(priced: pd.DataFrame) -> pd.DataFrame:
    return priced[_feasible_mask(priced)]


def _feasible_mask(priced: pd.DataFrame) -> np.ndarray:
    """The rows ``_feasible`` keeps (a figure in the scenario's metric, not excluded), as a boolean array:
    callers that filter further take them without copying the 116 priced columns first."""
    metric = priced["metric"].iloc[0] if len(priced) and "metric" in priced else "cost_usd"
    ok = priced[metric].notna().to_numpy()
    if "excluded_reason" in priced:
        ok = ok & priced["excluded_reason"].isna().to_numpy()
    return ok


def price_draws(priced: pd.DataFrame, z: np.ndarray) -> np.ndarray | float:
    """Multipliers on each option's price (shape (options, draws)) from one standard normal per
    offer (``z``: (``offer_keys`` in sorted order, draws)), scaled by the option's ``price_sigma``
    (``cost.doubt``): every way to pay of one offer moves together, whichever catalog row priced it,
    offers independently. 1.0 where the frame carries no doubt."""
    if "price_sigma" not in priced:
        return 1.0
    sig = np.nan_to_num(priced["price_sigma"].to_numpy(float))
    _, idx = np.unique(offer_keys(priced), return_inverse=True)
    return np.exp(sig[:, None] * z[idx])


def offer_keys(priced: pd.DataFrame) -> np.ndarray:
    """One key per offer: provider | instance | region (``cost.doubt.KEY``), else the offering id."""
    return _joined_keys(priced, ("provider", "instance", "region"))


def stream_keys(priced: pd.DataFrame) -> np.ndarray:
    """The key of an option's own random streams in the Monte Carlo (its price doubt and its spot
    price): provider | instance, the offer without its region, else the offering id. The regions of
    one instance draw common random numbers: the same standard normals, each option scaled by its
    own sigma, so regions that differ only in price are compared on the same draws (common random
    numbers: Law, "Simulation Modeling and Analysis", 5th ed., 11.2) and share one evaluation."""
    return _joined_keys(priced, ("provider", "instance"))


def _text(v) -> str:
    """A cell as ``Series.fillna("-").astype(str)`` gives it: "-" where missing, else its ``str``."""
    return v if type(v) is str else "-" if pd.isna(v) else str(v)


def _joined_keys(priced: pd.DataFrame, cols: tuple) -> np.ndarray:
    """``offer_keys``/``stream_keys``: the columns ``cols`` (missing as "-", stripped, lower case) joined by "|" where
    the row names an instance, else its offering id (missing as "-"); an object array. The pandas expression it
    replaces, ``parts = [priced[k].fillna("-").astype(str).str.strip().str.lower() for k in cols]``, ``"|"``-joined,
    ``.where(priced["instance"].notna(), priced["offering"].fillna("-").astype(str)).to_numpy()``, a row at a time
    in Python (the same ``str.strip`` and ``str.lower``): a Monte Carlo of a few options makes it in microseconds."""
    offering = [_text(v) for v in priced["offering"].tolist()]
    if not all(k in priced for k in cols):
        return np.array(offering, dtype=object)
    parts = [[_text(v).strip().lower() for v in priced[k].tolist()] for k in cols]
    named = priced["instance"].notna().to_numpy()
    out = np.empty(len(priced), dtype=object)
    out[:] = ["|".join(p) if ok else o for p, ok, o in zip(zip(*parts), named, offering)]
    return out


def mc_draws(s: Scenario, priced: pd.DataFrame, n: int = 10000, seed: int = 0, price_doubt: bool = True) -> dict:
    """Draw ``n`` joint scenarios for the options in ``priced`` (all rows passed in) and evaluate
    their bills. Uncertain inputs, each a P10/P90 band:

    - efficiency: perf's ``_low``/``_high`` band (a log-normal), one draw per accelerator shared by
      all its offerings and ways to pay;
    - spot price: log-normal around the catalog price with P90/P10 = ``spot_price_p90_over_p10``,
      one draw per spot instance (``stream_keys``: its regions share it);
    - utilization: normal with P10/P90 = utilization -/+ ``utilization_spread`` (clipped to 0.01-1),
      shared by all options;
    - interruption rate: log-normal with P10/P90 = rate / and x ``interruption_spread``, shared;
    - the price itself (``price_doubt``): log-normal around the catalog price with P10/P90 =
      ``price_doubt_low``/``_high`` (``cost.doubt``: basis, age, duplicate spread, times
      ``price_doubt_scale``), one standard normal per instance (``stream_keys``) shared by its ways to
      pay and its regions, scaled by each option's own sigma.

    Returns arrays (options x draws): ``cost`` (training USD per run, serving USD per month),
    ``metric`` (the ranking figure: cost per run or USD per million tokens), ``days``."""
    return _drawn(_draws(s, priced, n, seed, price_doubt))


def _drawn(g: dict) -> dict:
    """``mc_draws``' answer for the draws ``g`` (``_draws``) of the whole frame."""
    priced = g["priced"]
    out = _evaluate(g, 0, len(priced))
    return {"cost": out["cost"], "metric": out["metric"], "days": out["days"], "options": priced["option"].to_numpy(),
            "accelerators": priced["accelerator"].to_numpy(), "utilization": g["u"][0],
            "interruptions_per_hour": g["lam"][0]}


def mc_draws_both(s: Scenario, priced: pd.DataFrame, n: int = 10000, seed: int = 0) -> tuple[dict, dict]:
    """(``mc_draws(..., price_doubt=True)``, ``mc_draws(..., price_doubt=False)``) from one set of draws: the
    generator gives the efficiency, spot, utilization and interruption draws first and the price draws last
    (``_draws``), so the draws without price doubt are those with it less the price draws; the same arrays as two
    calls (one evaluation where no price carries a doubt; the spares of the spot fleets, ``cost.mcspares``, made once
    for both)."""
    g = _draws(s, priced, n, seed, True)
    if g["z_price"] is None:
        with_doubt = _drawn(g)
        return with_doubt, with_doubt
    # both evaluations price the same latency-bound spot fleets at the same rate draws: their spares once (cost.mcspares)
    spares = MC_SPARES.set(mc_spares(priced, g["lam"]))
    try:
        return _drawn(g), _drawn(dict(g, arrays={}, z_price=None, price_rows=None, price_sigma=None))
    finally:
        MC_SPARES.reset(spares)


class _Rows:
    """Rows ``a:b`` of a priced frame as the bill reads them (``rec[name]``, ``name in rec``): each
    column turned into an array once and sliced per block of rows."""

    def __init__(self, arrays: dict, frame: pd.DataFrame, a: int, b: int):
        self._arrays, self._frame, self._a, self._b = arrays, frame, a, b

    def __contains__(self, name) -> bool:
        return name in self._frame

    def __getitem__(self, name):
        if name not in self._arrays:
            self._arrays[name] = self._frame[name].to_numpy()
        return self._arrays[name][self._a:self._b]


def _draws(s: Scenario, priced: pd.DataFrame, n: int, seed: int, price_doubt: bool) -> dict:
    """Every random draw of ``mc_draws``, in the order the generator gives them (so a Monte Carlo
    evaluated in blocks of rows draws exactly what one evaluated at once does), and the per-row
    indices that gather them."""
    p = s.pricing
    rng = np.random.default_rng(seed)
    accs, acc_idx = np.unique(priced["accelerator"].to_numpy(str), return_inverse=True)
    z_acc = rng.standard_normal((len(accs), n))
    mu, sig = lognormal_from_band(priced["hours_multiplier_low"].to_numpy(float),
                                  priced["hours_multiplier_high"].to_numpy(float))
    # one draw per (accelerator, band): the offers of a chip in many regions share it, computed once
    _, first, inverse = np.unique(np.column_stack([acc_idx, np.nan_to_num(mu, nan=-1e300), np.nan_to_num(sig, nan=-1e300)]),
                                  axis=0, return_index=True, return_inverse=True)
    eff = np.exp(mu[first, None] + sig[first, None] * z_acc[acc_idx[first]])
    spot = (priced["kind"] == "spot").to_numpy()
    streams = stream_keys(priced)
    spot_keys, spot_stream = np.unique(streams[spot], return_inverse=True)
    s_sig = math.log(p.spot_price_p90_over_p10) / (2 * Z90)
    spot_mult = np.exp(s_sig * rng.standard_normal((len(spot_keys), n))) if len(spot_keys) else None
    spot_rows = np.full(len(priced), -1)
    spot_rows[spot] = spot_stream.reshape(-1)
    u = np.clip(p.utilization + p.utilization_spread / Z90 * rng.standard_normal((1, n)), 0.01, 1.0)
    lam = p.spot_interruptions_per_hour * np.exp(math.log(p.interruption_spread) / Z90 * rng.standard_normal((1, n)))
    doubtful = price_doubt and "price_sigma" in priced and np.nan_to_num(priced["price_sigma"].to_numpy(float)).any()
    keys, price_rows = np.unique(streams, return_inverse=True) if doubtful else (None, None)
    n_off = len(keys) if doubtful else 0
    z_price = rng.standard_normal((n_off, n)) if n_off else None
    return {"priced": priced, "arrays": {}, "training": s.is_training, "eff": eff, "eff_rows": inverse.reshape(-1),
            "spot_rows": spot_rows, "spot_mult": spot_mult, "u": u, "lam": lam, "z_price": z_price,
            "price_rows": price_rows.reshape(-1) if n_off else None,
            "price_sigma": np.nan_to_num(priced["price_sigma"].to_numpy(float)) if n_off else None}


def _evaluate(g: dict, a: int, b: int, metric: bool = True) -> dict:
    """The bills of rows ``a:b`` under the draws ``g`` (``_draws``): ``cost``, ``metric``, ``days``;
    ``metric`` False (``monte_carlo``, which reads the costs only) leaves out serving's cost per million
    tokens, a (rows x draws) division it would not read."""
    priced = g["priced"]
    whole = a == 0 and b == len(priced)
    rec = priced if whole else _Rows(g["arrays"], priced, a, b)
    price_mult = 1.0
    if g["z_price"] is not None:  # price_draws: one standard normal per offer, scaled by the row's sigma
        price_mult = np.exp(g["price_sigma"][a:b, None] * g["z_price"][g["price_rows"][a:b]])
    spot_mult = g["spot_mult"]
    if spot_mult is not None:  # the draws of the spot rows in a:b, in their order (the bill's spot rows)
        at = g["spot_rows"][a:b]
        at = at[at >= 0]
        spot_mult = spot_mult[at] if len(at) else None
    out = bill(rec, g["training"], hours_multiplier=g["eff"][g["eff_rows"][a:b]], price_mult=price_mult,
               utilization=g["u"], interruptions_per_hour=g["lam"], spot_price_mult=spot_mult, outputs=("cost", "days"))
    cost = out["cost"]
    if g["training"]:
        return {"cost": cost, "metric": cost, "days": out["days"]}
    tokens = np.asarray(rec["tokens_per_month"], dtype=float)
    return {"cost": cost, "metric": cost / tokens[:, None] * 1e6 if metric else None, "days": out["days"],
            "tokens": tokens}


# rows of a Monte Carlo evaluated at once. Each row's bill, sort and percentiles depend on its own draws only and the
# running cheapest keeps the earlier row on a tie, so any block size gives the same summary to the bit
# (tests/cost/test_uncertainty.py). 16 rows x 10,000 draws make (rows x draws) arrays of 1.3 MB, about the 1 MB L2
# cache, where 48 made 3.8 MB ones: a first Monte Carlo in a process touched 2-3x as many fresh pages (chat-70b-realtime
# ~13,000 minor page faults -> ~5,000) and took 10-30% more CPU (issue 30, branch s14-analysis)
BLOCK_ROWS = 16


_PERCENTS = np.true_divide([10, 50, 90], 100)


def sorted_percentiles(y: np.ndarray, percents: np.ndarray = _PERCENTS) -> np.ndarray:
    """``np.percentile(y, percents * 100, axis=1)`` (the default "linear" method, Hyndman and Fan
    1996 type 7) of rows already sorted in ascending order, read at their ranks without another
    partition: the same virtual index (n - 1)·q, neighbours, bounds and interpolation (the
    two-sided ``_lerp`` of numpy 2.x), so the same floats. Shape (len(percents), rows)."""
    prev, nxt, t = mcgroups.rank_positions(y.shape[1], percents)
    return mcgroups.lerp_ranks(y[:, prev].T, y[:, nxt].T, t)


def _sorted(x: np.ndarray) -> np.ndarray:
    """Each row sorted, a draw that never finishes (NaN) as +inf (infinitely expensive)."""
    y = np.where(np.isnan(x), np.inf, x)  # a temporary
    y.sort(axis=1)  # numpy's vectorised sort: a third of the cost of np.percentile's partition at six ranks
    return y


def _percentiles_of_sorted(y: np.ndarray) -> np.ndarray:
    """P10/P50/P90 of rows from ``_sorted``; a percentile that reaches unfinished draws is NaN
    ("unbounded")."""
    with np.errstate(invalid="ignore"):
        q = sorted_percentiles(y)
    return np.where(np.isfinite(q), q, np.nan)


def _percentiles(x: np.ndarray) -> np.ndarray:
    """P10/P50/P90 per row; a draw that never finishes (NaN) counts as infinitely expensive, so a
    percentile that reaches such draws is NaN ("unbounded")."""
    return _percentiles_of_sorted(_sorted(x))


def _serving_percentiles(d: dict) -> tuple[np.ndarray, np.ndarray]:
    """(P10/P50/P90 of USD per million tokens, of USD per month) of a serving block. The cost per
    million tokens is the monthly cost / a positive per-row constant, a map that keeps the order, so
    the sorted monthly costs give the sorted metric (the same floats as sorting the metric) with one
    sort; rows with no positive token count are sorted on their own."""
    yc = _sorted(d["cost"])
    tokens = d["tokens"]
    ok = np.isfinite(tokens) & (tokens > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ym = yc / tokens[:, None] * 1e6 if ok.all() else None
    if ym is None:
        ym = _sorted(d["metric"])
    return _percentiles_of_sorted(ym), _percentiles_of_sorted(yc)


def _share_within(y: np.ndarray, scale: np.ndarray, shift: np.ndarray, horizon: float, budget_usd: float) -> np.ndarray:
    """The share of draws whose total, (scale x W + shift) x horizon, is within the budget, for rows
    whose sorted W are ``y`` (rows x draws): the total grows with W, so the count is the first
    rank that fails, found by bisection on the same floats."""
    lo, hi = np.zeros(len(y), dtype=np.intp), np.full(len(y), y.shape[1], dtype=np.intp)
    rows = np.arange(len(y))
    while (lo < hi).any():  # the first rank whose total is over the budget lies in [lo, hi]
        live = lo < hi
        mid = (lo + hi) // 2
        fits = (scale * y[rows, np.minimum(mid, y.shape[1] - 1)] + shift) * horizon <= budget_usd
        lo, hi = np.where(live & fits, mid + 1, lo), np.where(live & ~fits, mid, hi)
    return lo / y.shape[1]


def monte_carlo(s: Scenario, priced: pd.DataFrame, n: int = 10000, seed: int = 0) -> pd.DataFrame:
    """P10/P50/P90 of cost and time for every option not ruled out, and the probability that each
    is the cheapest (``p_cheapest``) and that its accelerator has the cheapest option
    (``p_cheapest_accelerator``); with a budget, ``p_within_budget``; with a deadline,
    ``p_meets_deadline``. Vectorised: one (options x draws) array per quantity."""
    if n < 1:
        raise InputError(f"monte_carlo: n: expected a positive number of draws, got {n}")
    training = s.is_training
    ok = _feasible(priced).reset_index(drop=True)
    cols = ["option", "accelerator", "offering", "provider", "pricing_model", "metric", "p10", "p50", "p90",
            "p_cheapest", "p_cheapest_accelerator"]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    g = _draws(s, ok, n, seed, True)
    c = s.constraints
    budget = c.budget_usd is not None
    deadline = training and c.deadline_days is not None
    R = len(ok)
    # one evaluation per group of options that differ only in price and fixed cost (cost.mcgroups)
    sigma = ok["price_sigma"].to_numpy(float) if "price_sigma" in ok else np.zeros(R)
    streams = [g["eff_rows"], g["spot_rows"], pd.factorize(pd.Series(sigma), use_na_sentinel=False)[0]]
    if g["price_rows"] is not None:
        streams.append(g["price_rows"])
    grp = mcgroups.option_groups(ok, training, streams)
    first, group, scale, shift = grp["first"], grp["group"], grp["scale"], grp["shift"]
    gu = dict(g, priced=mcgroups.unit_rows(ok, grp, training), arrays={}, eff_rows=g["eff_rows"][first],
              spot_rows=g["spot_rows"][first])
    if g["price_rows"] is not None:
        gu["price_rows"], gu["price_sigma"] = g["price_rows"][first], g["price_sigma"][first]
    G = len(first)
    prev, nxt, t = mcgroups.rank_positions(n, _PERCENTS)
    w_prev, w_next, q_days = np.empty((3, G)), np.empty((3, G)), np.empty((3, G))
    within, meets = np.empty(R), np.empty(G)
    tokens = None if training else ok["tokens_per_month"].to_numpy(float)
    cand = mcgroups.winners(grp)
    best, winner = np.full(n, np.inf), np.zeros(n, dtype=np.intp)
    horizon = 1.0 if training else s.pricing.horizon_months
    draws = np.arange(n)
    # the spares of the latency-bound spot fleets along the rate draws, once for every block (cost.mcspares)
    spares = MC_SPARES.set(mc_spares(gu["priced"], g["lam"]) if not training and G > BLOCK_ROWS else None)
    try:
        for a in range(0, G, BLOCK_ROWS):
            b = min(G, a + BLOCK_ROWS)
            d = _evaluate(gu, a, b, metric=False)
            w = d["cost"]  # the bill of the block's representatives at their unit price, no fixed cost
            rows = cand[(group[cand] >= a) & (group[cand] < b)]
            if len(rows):  # the draw-by-draw cheapest; a tie keeps the earlier row, as one argmin over every row does
                m = scale[rows, None] * w[group[rows] - a] + shift[rows, None]
                if not training:
                    m = m / tokens[rows, None] * 1e6
                filled = np.where(np.isnan(m), np.inf, m)
                i = np.argmin(filled, axis=0)
                mm, r = filled[i, draws], rows[i]
                lower = (mm < best) | ((mm == best) & (r < winner))
                best[lower], winner[lower] = mm[lower], r[lower]
            if deadline:
                meets[a:b] = np.mean(d["days"] <= c.deadline_days, axis=1)
            if training:
                q_days[:, a:b] = _percentiles(d["days"])
            y = _sorted(w)
            w_prev[:, a:b], w_next[:, a:b] = y[:, prev].T, y[:, nxt].T
            if budget:
                at = np.flatnonzero((group >= a) & (group < b))
                within[at] = _share_within(y[group[at] - a], scale[at], shift[at], horizon, c.budget_usd)
    finally:
        MC_SPARES.reset(spares)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = scale * w_prev[:, group] + shift
        hi = scale * w_next[:, group] + shift
        q2 = mcgroups.lerp_ranks(lo, hi, t)
        if training:
            q, q2 = q2, q_days[:, group]
        else:
            ok_tokens = np.isfinite(tokens) & (tokens > 0)
            q = np.where(ok_tokens, mcgroups.lerp_ranks(lo / tokens * 1e6, hi / tokens * 1e6, t), np.nan)
        q, q2 = np.where(np.isfinite(q), q, np.nan), np.where(np.isfinite(q2), q2, np.nan)
    meets = meets[group]
    p_cheapest = np.bincount(winner, minlength=len(ok)) / n
    accs, acc_idx = np.unique(ok["accelerator"].to_numpy(str), return_inverse=True)
    p_acc = np.bincount(acc_idx[winner], minlength=len(accs)) / n
    out = ok[["option", "accelerator", "offering", "provider", "pricing_model"]].copy()
    out["metric"] = "cost_usd" if training else "usd_per_million_tokens"
    out["p10"], out["p50"], out["p90"] = q[0], q[1], q[2]
    if training:
        out["days_p10"], out["days_p50"], out["days_p90"] = q2[0], q2[1], q2[2]
    else:
        out["usd_per_month_p10"], out["usd_per_month_p50"], out["usd_per_month_p90"] = q2[0], q2[1], q2[2]
    out["p_cheapest"] = p_cheapest
    out["p_cheapest_accelerator"] = p_acc[acc_idx]
    if budget:
        out["p_within_budget"] = within
    if deadline:
        out["p_meets_deadline"] = meets
    return out.sort_values("p50", kind="stable").reset_index(drop=True)


def mc_histogram(s: Scenario, priced: pd.DataFrame, options: list[str] | None = None, n: int = 10000, seed: int = 0,
                 bins: int = 40, top: int = 5, mc: pd.DataFrame | None = None) -> pd.DataFrame:
    """Binned Monte Carlo distribution of the ranking figure for a few options (default: the
    ``top`` by median), ready to chart: option, bin_start, bin_end, share. ``mc``: the
    ``monte_carlo`` of these ``priced`` rows with the same ``n`` and ``seed`` when already drawn
    (``Analysis.mc``), so the top options are not drawn twice."""
    feasible = _feasible_mask(priced)      # the rows of _feasible, filtered once with the options below
    if not feasible.any():
        return pd.DataFrame(columns=["option", "bin_start", "bin_end", "share"])
    if options is None:
        mc = monte_carlo(s, priced, n=n, seed=seed) if mc is None else mc
        best = mc.sort_values("p50").drop_duplicates(["accelerator", "pricing_model"])
        options = list(best["option"].head(top))
    sub = priced[feasible & priced["option"].isin(options).to_numpy()].reset_index(drop=True)
    d = mc_draws(s, sub, n=n, seed=seed)
    vals = d["metric"]
    finite = vals[np.isfinite(vals)]
    lo, hi = np.percentile(finite, [0.5, 99.5]) if finite.size else (0.0, 1.0)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    opts = sub["option"].tolist()
    if not opts:
        return pd.concat([], ignore_index=True)     # as the concatenation of no option's frame did (an error)
    shares = [np.histogram(np.clip(vals[i][np.isfinite(vals[i])], edges[0], edges[-1]), bins=edges)[0] / n
              for i in range(len(opts))]
    # one frame of the options' bins end to end: the rows, values and dtypes of a frame per option concatenated
    k = len(edges) - 1
    return pd.DataFrame({"option": pd.array([o for o in opts for _ in range(k)], dtype=pd.Series([opts[0]]).dtype),
                         "bin_start": np.tile(edges[:-1], len(opts)), "bin_end": np.tile(edges[1:], len(opts)),
                         "share": np.concatenate(shares)})


# --- tornado -------------------------------------------------------------------------------------

def _commit_ratio_range(model: str) -> tuple[float, float] | None:
    """Range of published commit/on-demand ratios in offerings.csv (for a derived committed price)."""
    off = catalog.offerings()
    col = f"{model}_usd_per_hour"
    both = off[off[col].notna() & off["on_demand_usd_per_hour"].notna() & ~catalog.is_superseded(off)]
    if both.empty:
        return None
    r = both[col] / both["on_demand_usd_per_hour"]
    return float(r.min()), float(r.max())


def _option_row(priced: pd.DataFrame, option) -> pd.Series:
    if isinstance(option, str):
        hit = np.flatnonzero((priced["option"] == option).to_numpy())   # the first match, no filtered copy
        if not len(hit):
            raise InputError(f"tornado: option: unknown option {option!r}{catalog._suggest(option, priced['option'])}")
        return priced.iloc[hit[0]]
    return priced.loc[option]


def _one(v) -> np.ndarray:
    """A one-element array of ``v``: numbers as numpy makes them, anything else (text, blanks, lists) as an object."""
    if isinstance(v, (int, float, np.number, np.bool_)):
        return np.array([v])
    a = np.empty(1, dtype=object)
    a[0] = v
    return a


def tornado(s: Scenario, priced: pd.DataFrame, option=None) -> pd.DataFrame:
    """How far each uncertain input, moved across its P10-P90 band with the others at their point
    values, moves one option's ranking figure (cost per run or USD per million tokens). Sorted by
    swing, largest first. ``option`` is an ``option`` id or a row label of ``priced``; default: the
    cheapest option that passes the hard constraints."""
    p = s.pricing
    training = s.is_training
    if option is None:
        feasible = _feasible_mask(priced)
        if not feasible.any():
            return pd.DataFrame(columns=["input", "unit", "low", "high", "value_at_low", "value_at_high", "base",
                                         "swing", "option", "metric"])
        figure = priced.loc[feasible, "metric"].iloc[0]
        option = priced.loc[priced.loc[feasible, figure].idxmin(), "option"]
    row = _option_row(priced, option)
    # the row as the bill reads it: each column a one-element array of its value (what a one-row frame's
    # column gives ``np.asarray``), without building a frame of the ~140 columns
    one = {c: _one(v) for c, v in row.items()}
    tokens = None if training else float(row["tokens_per_month"])

    def value(eff=1.0, price_mult=1.0, u=p.utilization, lam=p.spot_interruptions_per_hour, rec=one):
        r = bill(rec, training, hours_multiplier=np.array([eff]), price_mult=np.array([price_mult]), utilization=u,
                 interruptions_per_hour=lam)
        c = float(r["cost"][0])
        return c if training else c / tokens * 1e6

    base = value()
    sq = math.sqrt(p.spot_price_p90_over_p10)
    model = row["pricing_model"]
    lo, hi = row["hours_multiplier_low"], row["hours_multiplier_high"]
    inputs = [("efficiency (performance band)", "x", lo, hi, value(eff=lo), value(eff=hi))]
    if row["kind"] == "reserved":
        u_lo, u_hi = max(0.01, p.utilization - p.utilization_spread), min(1.0, p.utilization + p.utilization_spread)
        inputs.append(("utilization", "fraction", u_lo, u_hi, value(u=u_lo), value(u=u_hi)))
    if model == "spot":
        lam = p.spot_interruptions_per_hour
        f = p.interruption_spread
        inputs.append(("spot interruptions per hour", "1/h", lam / f, lam * f, value(lam=lam / f), value(lam=lam * f)))
        inputs.append(("spot price", "x catalog", 1 / sq, sq, value(price_mult=1 / sq), value(price_mult=sq)))
    lo_p, hi_p = row.get("price_doubt_low", np.nan), row.get("price_doubt_high", np.nan)
    if pd.notna(lo_p) and pd.notna(hi_p) and hi_p > lo_p:
        inputs.append((f"price doubt ({row.get('price_basis')}, cost.doubt)", "x catalog", lo_p, hi_p,
                       value(price_mult=lo_p), value(price_mult=hi_p)))
    if model in ("commit_1y", "commit_3y") and "x (1 -" in str(row.get("price_derivation", "")):
        rng = _commit_ratio_range(model)
        if rng is not None:
            disc = p.commit_1y_discount if model == "commit_1y" else p.commit_3y_discount
            od = row["usd_per_instance_hour"] / (1 - disc)
            vals = []
            for ratio in (rng[1], rng[0]):  # smallest discount first
                rec = dict(one, usd_per_instance_hour=np.array([od * ratio]))
                vals.append(value(rec=rec))
            inputs.append(("commitment discount (published GCP range)", "fraction", 1 - rng[1], 1 - rng[0], vals[0], vals[1]))
    out = pd.DataFrame(inputs, columns=["input", "unit", "low", "high", "value_at_low", "value_at_high"])
    out["base"] = base
    out["swing"] = (out["value_at_high"] - out["value_at_low"]).abs()
    out["option"] = row["option"]
    out["metric"] = "cost_usd" if training else "usd_per_million_tokens"
    return out.sort_values("swing", ascending=False, kind="stable").reset_index(drop=True)
