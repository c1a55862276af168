"""Ranking the options that pass the hard constraints, and what would flip the choice.

- cost: cheapest / this option's cost (training: USD per run; serving: USD per million output
  tokens), the point estimate (one price per offer everywhere; the Monte Carlo median is shown
  beside it as ``cost_p50_monte_carlo``), so 1 is the cheapest;
- time: fastest / this option's time (training days; serving time per output token);
- ecosystem: mean support of the capabilities the workload needs on the chip's platform
  (``software.csv``), on an equally spaced scale native 1, supported 2/3, partial 1/3, none 0;
- portability: mean support of ``multi_cloud`` and ``on_prem`` on the same scale;
- supply risk: provider-regions offering the chip in ``offerings.csv`` / the most any candidate
  has (more places to buy = less risk of waiting for capacity).

The score is the weight-averaged criterion score (0-1); the Pareto front of cost vs time is marked.
Flip conditions are solved exactly where the score is linear (a weight), by bisection where it is
not (a price), and from the break-even formulas of ``workbook.cost.rates``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import cost
from ..terms import usd
from ..scenario import Scenario
from ..terms import pricing_label
from .rules import framework_fit, percent_text, supply_scores

CRITERIA = ("cost", "time", "ecosystem", "portability", "supply_risk")


def describe(r: pd.Series) -> str:
    """An option in words: "H100 on spot (AWS, p5.48xlarge, us-east-1)"."""
    where = ", ".join(str(x) for x in (r.get("provider"), r.get("instance"), r.get("region")) if pd.notna(x) and x)
    return f"{r['accelerator']} on {pricing_label(r['pricing_model'])} ({where})"


def metric_of(s: Scenario) -> str:
    """The ranking figure's column: cost per run (training) or USD per million output tokens."""
    return "cost_usd" if s.is_training else "usd_per_million_tokens"


def weights(s: Scenario) -> dict[str, float]:
    """The scenario's criterion weights, by criterion."""
    return s.weights.model_dump()


def _positions(keys: pd.Series, wanted) -> np.ndarray | None:
    """The position in ``keys`` of each of ``wanted``, when ``keys`` are unique and hold every one; else None
    (the caller then takes pandas' general path: a merge, a map)."""
    index = pd.Index(keys)
    if not index.is_unique:
        return None
    at = index.get_indexer(wanted)
    return at if (at >= 0).all() else None


def _values_at(col: pd.Series, at: np.ndarray):
    """``col``'s values at the positions ``at``, its dtype kept (a numpy array, or the extension array)."""
    return col.take(at).to_numpy() if isinstance(col.dtype, np.dtype) else col.array.take(at)


def _criteria(s: Scenario, feasible: pd.DataFrame, mc: pd.DataFrame | None) -> pd.DataFrame:
    training = s.is_training
    metric = "cost_usd" if training else "usd_per_million_tokens"
    df = feasible.copy()
    df["cost_value"] = df[metric].astype(float)
    if mc is not None and len(mc) and "p50" in mc:
        # one price per offer: the point estimate ranks; the Monte Carlo median is shown, labelled
        pairs = [("cost_p50_monte_carlo", "p50"), ("p_cheapest", "p_cheapest")]
        if "p_cheapest_accelerator" in mc:
            pairs.append(("p_cheapest_accelerator", "p_cheapest_accelerator"))
        if training and "days_p50" in mc:
            pairs.append(("training_days_p50", "days_p50"))
        options = pd.Index(mc["option"])
        if options.is_unique and all(mc[c].dtype == np.float64 for _, c in pairs):
            # ``df["option"].map(mc.set_index("option")[c])`` with one lookup of the options for every column:
            # the float of the option's row, NaN where the Monte Carlo has none
            at = options.get_indexer(df["option"])
            found = at >= 0
            for name, c in pairs:
                df[name] = np.where(found, mc[c].to_numpy()[at], np.nan)
        else:
            by_option = mc.set_index("option")
            for name, c in pairs:
                df[name] = df["option"].map(by_option[c])
    if training:
        df["time_value"] = df["training_days"].astype(float)
    else:
        df["time_value"] = df["tpot_ms"].astype(float) if "tpot_ms" in df else np.nan
    fit = framework_fit(s, df["accelerator"].unique())
    fit_cols = ["ecosystem_score", "portability_score", "framework", "framework_support", "needs_porting", "porting_why"]
    at = _positions(fit["accelerator"], df["accelerator"])
    if at is not None and not any(c in df for c in fit_cols):
        # the left merge on a key every row finds once: the rows in order (index 0..n-1), each fit column taken
        # at its accelerator's row (its dtype kept, as the merge keeps it when every row matches)
        df = df.reset_index(drop=True)
        for c in fit_cols:
            df[c] = _values_at(fit[c], at)
    else:
        df = df.merge(fit[["accelerator", *fit_cols]], on="accelerator", how="left")
    df["supply_score"] = df["accelerator"].map(supply_scores(df["accelerator"].unique()))
    return df


def _score(df: pd.DataFrame, w: dict[str, float], cost_values=None) -> pd.DataFrame:
    cv = df["cost_value"].to_numpy(float) if cost_values is None else cost_values
    tv = df["time_value"].to_numpy(float)
    n = len(df)
    time_score = np.nanmin(tv) / tv if np.isfinite(tv).any() else np.full(n, 1.0)
    cols = {"cost_score": np.nanmin(cv) / cv, "time_score": np.where(np.isnan(time_score), 0.0, time_score),
            "ecosystem_score": df["ecosystem_score"].to_numpy(float), "portability_score": df["portability_score"].to_numpy(float),
            "supply_risk_score": df["supply_score"].to_numpy(float)}
    total = sum(w.values())
    # the weighted sum in the order of CRITERIA, as the Series sum added it (0 + w·s + ...)
    cols["score"] = sum(w[k] * cols[f"{k}_score"] for k in CRITERIA) / total
    return pd.DataFrame(cols, index=df.index)


def pareto_front(cost_values, time_values) -> np.ndarray:
    """True where no other option is at least as cheap and as fast and strictly better in one (an
    option with a NaN figure is neither dominated nor dominating). One sort (Kung, Luccio and
    Preparata 1975, two criteria): in order of cost, then time, an option is dominated when a
    cheaper one is at least as fast, or one as cheap is faster."""
    c = np.asarray(cost_values, dtype=float).reshape(-1)
    t = np.asarray(time_values, dtype=float).reshape(-1)
    dominated = np.zeros(len(c), dtype=bool)
    known = np.flatnonzero(~np.isnan(c) & ~np.isnan(t))
    if len(known):
        order = known[np.lexsort((t[known], c[known]))]
        cs, ts = c[order], t[order]
        new_cost = np.r_[True, cs[1:] != cs[:-1]]  # the first (fastest) of each cost
        fastest_here = np.maximum.accumulate(np.where(new_cost, np.arange(len(cs)), 0))
        best_before = np.r_[np.inf, np.minimum.accumulate(ts)[:-1]]  # the fastest of every option before
        cheaper_best = best_before[fastest_here]  # ... of the strictly cheaper ones
        dominated[order] = ((fastest_here > 0) & (cheaper_best <= ts)) | (ts > ts[fastest_here])
    return ~dominated


def rank(s: Scenario, priced: pd.DataFrame, mc: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every option that passes the hard constraints, scored and sorted (best first), with its
    criterion scores, weighted score and Pareto flag (cost vs time)."""
    metric = "cost_usd" if s.is_training else "usd_per_million_tokens"
    feasible = priced[priced["excluded_reason"].isna() & priced[metric].notna()]
    if feasible.empty:
        return pd.DataFrame()
    df = _criteria(s, feasible, mc)
    sc = _score(df, weights(s))
    df = pd.concat([df.drop(columns=[c for c in sc.columns if c in df]), sc], axis=1)
    df["pareto"] = pareto_front(df["cost_value"], df["time_value"].fillna(np.inf))
    df = df.sort_values(["score", "cost_value", "chips"], ascending=[False, True, True],
                        kind="stable").reset_index(drop=True)
    df.insert(0, "rank", np.arange(1, len(df) + 1))
    return df


# Ties: the offers whose score is within the model's noise of the top one. Candidates: the next
# TIE_CANDIDATES offers scoring within TIE_SCORE_WINDOW of the top (a bound on the work, not the rule).
TIE_CANDIDATES, TIE_SCORE_WINDOW = 6, 0.1
TIE_BREAKERS = ("lower point-estimate cost", "fewer chips")


def score_draws(s: Scenario, priced: pd.DataFrame, rows: pd.DataFrame, n: int, seed: int,
                price_doubt: bool = True) -> np.ndarray:
    """Weighted scores of ``rows`` (ranked rows; include the cheapest and the fastest) in ``n`` joint
    Monte Carlo draws (``cost.mc_draws``: efficiency shared per accelerator, spot price per instance,
    utilization and interruptions shared, each offer's price within its doubt): in each draw the cost
    score is the cheapest of ``rows`` / the row's cost (training: the time score likewise with the run
    length), the other criteria as at the point estimate; ``price_doubt`` False holds every price at the catalog's. Shape (rows, n)."""
    return _scores_of(s, rows, cost.mc_draws(s, _option_rows(priced, rows["option"]), n=n, seed=seed, price_doubt=price_doubt))


def score_draws_both(s: Scenario, priced: pd.DataFrame, rows: pd.DataFrame, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(``score_draws`` with the price doubt, without it) from one set of draws (``cost.mc_draws_both``): the same
    arrays as two calls."""
    both = cost.mc_draws_both(s, _option_rows(priced, rows["option"]), n=n, seed=seed)
    return _scores_of(s, rows, both[0]), _scores_of(s, rows, both[1])


def _option_rows(priced: pd.DataFrame, options) -> pd.DataFrame:
    """The first priced row of each of ``options`` (in their order; each must be in ``priced``), ``option`` the first
    column and the index 0..n-1: ``priced.drop_duplicates("option").set_index("option").loc[options].reset_index()``
    without copying every row of the wide frame first."""
    first: dict = {}
    for i, o in enumerate(priced["option"].tolist()):
        first.setdefault(o, i)
    # one take of the rows and the columns (``option`` first), not a take of every column and a second to reorder
    cols = list(priced.columns)
    at = cols.index("option")
    rows = [first[o] for o in options]
    if at == 0:  # the priced frame's own order (``cost.price_options``): a take of the rows only, the blocks kept
        return priced.take(rows).reset_index(drop=True)
    return priced.iloc[rows, [at, *(j for j in range(len(cols)) if j != at)]].reset_index(drop=True)


def _scores_of(s: Scenario, rows: pd.DataFrame, d: dict) -> np.ndarray:
    """``score_draws``' array from the draws ``d`` of ``rows`` (``cost.mc_draws``)."""
    w = weights(s)
    total = sum(w.values())
    out = (rows["score"].to_numpy(float) - w["cost"] / total * rows["cost_score"].to_numpy(float))[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = out + w["cost"] / total * np.nan_to_num(np.nanmin(d["metric"], axis=0) / d["metric"], nan=0.0)
        if s.is_training and d.get("days") is not None and w["time"] > 0:
            out += w["time"] / total * (np.nan_to_num(np.nanmin(d["days"], axis=0) / d["days"], nan=0.0)
                                        - rows["time_score"].to_numpy(float)[:, None])
    return out


def _within_price_doubt(ranked: pd.DataFrame) -> pd.Series:
    """Rivals whose cost at the low end of their price doubt is below the top option's at the high end
    of its own (``price_doubt_low``/``_high``, ``cost.doubt``): candidates for a tie on price."""
    rest = ranked.iloc[1:]
    if "price_doubt_high" not in ranked:
        return pd.Series(False, index=rest.index)
    top = ranked.iloc[0]
    hi = float(np.nan_to_num(top["price_doubt_high"], nan=1.0))
    lo = rest["price_doubt_low"].astype(float).fillna(1.0)
    return rest["cost_value"].astype(float) * lo <= float(top["cost_value"]) * hi


# the columns of the ranked frame that ``ties`` reads once its candidates are chosen
_TIE_COLUMNS = ("option", "score", "cost_score", "time_score", "cost_value", "time_value")


def ties(s: Scenario, priced: pd.DataFrame, ranked: pd.DataFrame, n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The offers tied with the top-ranked one: its score lead over them is within the model's noise
    and the doubt of the prices (``cost.doubt``), i.e. it does not lead in at least 90% of the joint
    Monte Carlo draws (the P10 of the score difference is not above 0). Candidates: the offers
    scoring within ``TIE_SCORE_WINDOW`` of the top or whose price doubts overlap its own
    (``_within_price_doubt``), at most ``TIE_CANDIDATES``. Rows: ``option``, ``score_gap`` (point),
    ``gap_p10``, ``gap_p90``, ``p_top_leads``, ``p_top_leads_fixed_prices`` (the same draws with every
    price held at the catalog's) and ``cause``: "price doubt" when the top option leads in at least
    90% of the draws at fixed prices (the tie comes from the doubt of the prices), else "model
    noise". The top option itself is not listed. Empty when nothing is tied."""
    cols = ["option", "score_gap", "gap_p10", "gap_p90", "p_top_leads", "p_top_leads_fixed_prices", "cause"]
    if len(ranked) < 2:
        return pd.DataFrame(columns=cols)
    top = ranked.iloc[0]
    close = ((top["score"] - ranked["score"].iloc[1:]) < TIE_SCORE_WINDOW) | _within_price_doubt(ranked)
    # the rows below read only these columns (the scores of ``_scores_of``, the option): the same rows of a
    # narrow frame instead of filters, a concat and a de-duplication of every column of the wide ranked frame
    ranked = ranked[[c for c in _TIE_COLUMNS if c in ranked]]
    near = ranked.iloc[1:][close].head(TIE_CANDIDATES)
    if near.empty:
        return pd.DataFrame(columns=cols)
    ends = ranked.loc[[ranked["cost_value"].idxmin(), ranked["time_value"].fillna(np.inf).idxmin()]]
    rows = pd.concat([ranked.iloc[:1], near, ends]).drop_duplicates("option")
    sd, fixed = score_draws_both(s, priced, rows, n, seed)
    gap = sd[0][None, :] - sd[1:len(near) + 1]
    gap_fixed = fixed[0][None, :] - fixed[1:len(near) + 1]
    out = pd.DataFrame({"option": near["option"].to_numpy(), "score_gap": top["score"] - near["score"].to_numpy(float),
                        "gap_p10": np.percentile(gap, 10, axis=1), "gap_p90": np.percentile(gap, 90, axis=1),
                        "p_top_leads": (gap > 0).mean(axis=1),
                        "p_top_leads_fixed_prices": (gap_fixed > 0).mean(axis=1)})
    out["cause"] = np.where(np.percentile(gap_fixed, 10, axis=1) > 0, "price doubt", "model noise")
    return out[out["gap_p10"] <= 0].reset_index(drop=True)


def reorderable(tied) -> list[str]:
    """The tied options the tie-breakers may reorder (``tied``: the ``ties`` frame or its records): those
    tied by the model's noise. A tie that only the doubt of the prices makes (``cause`` "price doubt") is
    stated but keeps the order of the point estimates: the catalog's price is the median of its doubt,
    and reordering by the lower point-estimate cost would reward the doubtful low price."""
    recs = tied.to_dict("records") if isinstance(tied, pd.DataFrame) else list(tied or [])
    return [t["option"] for t in recs if t.get("cause") != "price doubt"]


def break_ties(ranked: pd.DataFrame, tied: list[str]) -> pd.DataFrame:
    """``ranked`` with the top option and those ``tied`` with it ordered by the tie-breakers
    (``TIE_BREAKERS``: lower point-estimate cost, then fewer chips) at the head, ranks renumbered."""
    if not tied or ranked.empty:
        return ranked
    group = ranked["option"].isin([ranked["option"].iloc[0], *tied]).to_numpy()
    at = np.flatnonzero(group)
    # the group sorted as ``ranked[group].sort_values(...)`` orders it, then the rest in order: the rows of
    # that concatenation in one take of the wide frame instead of two filters and a concat
    keys = ranked[["cost_value", "chips"]].iloc[at].reset_index(drop=True)
    head = at[keys.sort_values(["cost_value", "chips"], kind="stable").index.to_numpy()]
    out = ranked.take(np.concatenate([head, np.flatnonzero(~group)])).reset_index(drop=True)
    out["rank"] = np.arange(1, len(out) + 1)
    return out


def _key(v):
    """A value as a set key: every kind of missing (None, NaN, NA) as None, as pandas groups them."""
    return None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v


def first_rows(df: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """``~df.duplicated(cols).to_numpy()`` (the first row of each combination of ``cols``, missing values alike)
    from the columns as lists and a set, without pandas' factorizing of each column (~1 ms for a few hundred
    rows)."""
    seen, out = set(), np.empty(len(df), dtype=bool)
    for i, key in enumerate(zip(*(df[c].tolist() for c in cols))):
        key = tuple(_key(v) for v in key)
        out[i] = key not in seen
        seen.add(key)
    return out


def ranking_table(ranked: pd.DataFrame, s: Scenario) -> pd.DataFrame:
    """The ranking a stakeholder reads: the best offering of each accelerator x way to pay."""
    if ranked.empty:
        return ranked
    training = s.is_training
    cols = ["rank", "accelerator", "pricing_model", "provider", "offering", "region"]
    cols += (["cost_usd", "cost_usd_low", "cost_usd_high", "training_days"] if training
             else ["usd_per_million_tokens", "usd_per_million_tokens_low", "usd_per_million_tokens_high",
                   "usd_per_month", "tpot_ms"])
    cols += [c for c in ("p_cheapest",) if c in ranked]
    cols += ["cost_score", "time_score", "ecosystem_score", "portability_score", "supply_risk_score", "score", "pareto",
             "option"]
    # the first row of each accelerator x way to pay (``drop_duplicates``), only the columns shown (not a copy of
    # every priced column first)
    first = first_rows(ranked, ["accelerator", "pricing_model"])
    best = ranked.loc[first, [c for c in cols if c in ranked and c != "rank"]].copy()
    best.insert(0, "rank", np.arange(1, len(best) + 1))
    return best.reset_index(drop=True)



def p_cheaper(s: Scenario, priced: pd.DataFrame, a: str, b: str, n: int = 10000, seed: int = 0) -> float:
    """Share of Monte Carlo draws in which option ``a`` is cheaper than option ``b``."""
    d = cost.mc_draws(s, _option_rows(priced, [a, b]), n=n, seed=seed)
    return float(np.mean(d["metric"][0] < d["metric"][1]))


def _weight_flips(s: Scenario, ranked: pd.DataFrame) -> list[str]:
    """For each criterion: the weight (others unchanged) at which another option overtakes the winner.
    The score difference is linear in one weight w_k: D(w_k') = D + (w_k' - w_k)·d_k."""
    w = weights(s)
    win_row = ranked.iloc[0]
    # the columns read below (the scores, and ``describe``'s) of the other accelerator x way to pay rows
    rivals = ranked.iloc[1:]
    other = ((rivals["accelerator"] != win_row["accelerator"]) | (rivals["pricing_model"] != win_row["pricing_model"]))
    rivals = rivals.loc[other, [c for c in ("accelerator", "pricing_model", "provider", "instance", "region",
                                            *[f"{k}_score" for k in CRITERIA]) if c in rivals]]
    if rivals.empty:
        return []
    sc = rivals[[f"{k}_score" for k in CRITERIA]].to_numpy(float)
    win = win_row[[f"{k}_score" for k in CRITERIA]].to_numpy(float)
    d = win[None, :] - sc  # per rival x criterion
    D = d @ np.array([w[k] for k in CRITERIA])
    out = []
    for j, k in enumerate(CRITERIA):
        dk = d[:, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            new = w[k] - D / dk
        # strictly inside (0, 1): at the threshold the two tie; beyond it the rival leads
        ok = np.isfinite(new) & (dk != 0) & (new > 1e-9) & (new < 1) & (D > 0)
        if not ok.any():
            continue
        i = int(np.argmin(np.where(ok, np.abs(new - w[k]), np.inf)))
        rival = rivals.iloc[i]
        direction = "rose" if new[i] > w[k] else "fell"
        name = k.replace("_", " ")
        digits = 2 if abs(new[i] - w[k]) >= 0.01 else 3 if abs(new[i] - w[k]) >= 0.001 else 4
        out.append(f"If the {name} weight {direction} from {w[k]:.{digits}f} to {new[i]:.{digits}f} (others "
                   f"unchanged), {describe(rival)} would rank first.")
    return out


def _price_flip(s: Scenario, ranked: pd.DataFrame, runner_idx: int) -> str | None:
    """The winner's cost increase at which the runner-up overtakes (bisection on a multiplier; only
    the cost score moves, so the rest of each score is computed once)."""
    w = weights(s)
    if w["cost"] <= 0:
        return None
    total = sum(w.values())
    cv = ranked["cost_value"].to_numpy(float)
    rest = (ranked[[f"{k}_score" for k in CRITERIA if k != "cost"]].to_numpy(float)
            @ np.array([w[k] for k in CRITERIA if k != "cost"]))
    others_min = np.nanmin(np.delete(cv, 0)) if len(cv) > 1 else np.inf

    def gap(mult):
        c0 = cv[0] * mult
        cmin = min(c0, others_min)
        s0 = (w["cost"] * cmin / c0 + rest[0]) / total
        sr = (w["cost"] * cmin / cv[runner_idx] + rest[runner_idx]) / total
        return s0 - sr

    if gap(1.0) <= 0:
        return None
    lo, hi = 1.0, 1.0
    for _ in range(60):
        hi *= 1.5
        if gap(hi) < 0:
            break
    else:
        return None
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
    return (f"If the recommended option cost {percent_text(hi - 1)} more than estimated, "
            f"{describe(ranked.iloc[runner_idx])} would rank first.")


def _utilization_flip(s: Scenario, winner: pd.Series, priced: pd.DataFrame) -> str | None:
    """Break-even utilization between a commitment and on-demand on the same offering, or the
    interruption rate at which spot stops paying."""
    p = s.pricing
    # the offering's priced rows, the columns read below
    same = priced.loc[(priced["offering"] == winner["offering"]) & priced["usd_per_instance_hour"].notna(),
                      [c for c in ("pricing_model", "usd_per_instance_hour", "term_months", "horizon_eff_months",
                                   "duty_fraction") if c in priced]]
    od = same[same["pricing_model"] == "on_demand"]
    if winner["kind"] == "reserved" and winner["pricing_model"] != "purchase" and len(od):
        u_star = float(cost.breakeven_utilization_commit(winner["usd_per_instance_hour"],
                                                         float(od["usd_per_instance_hour"].iloc[0]),
                                                         winner["term_months"], winner["horizon_eff_months"]))
        if u_star <= min(1.0, winner["duty_fraction"]):
            return (f"If utilization fell below {u_star:.0%} (you assume {p.utilization:.0%}), on-demand on the same "
                    f"instance would be cheaper than {pricing_label(winner['pricing_model'])}.")
    if winner["pricing_model"] == "on_demand":
        for model in ("commit_1y", "commit_3y"):
            c = same[same["pricing_model"] == model]
            if len(c):
                r = c.iloc[0]
                u_star = float(cost.breakeven_utilization_commit(r["usd_per_instance_hour"],
                                                                 winner["usd_per_instance_hour"], r["term_months"],
                                                                 r["horizon_eff_months"]))
                if u_star <= 1.0 and u_star <= r["duty_fraction"]:
                    return (f"If utilization rose above {u_star:.0%} (you assume {p.utilization:.0%}), "
                            f"{pricing_label(model)} on the same instance would be cheaper than on-demand.")
    if winner["pricing_model"] == "spot" and len(od):
        lam = cost.max_interruptions_per_hour(s, winner, winner["usd_per_instance_hour"],
                                              float(od["usd_per_instance_hour"].iloc[0]))
        return (f"If spot instances were interrupted more than {lam:.3g} times an hour (you assume "
                f"{p.spot_interruptions_per_hour:g}), on-demand on the same instance would be cheaper.")
    return None


def _first_by_score(s: Scenario, cand: pd.DataFrame) -> int:
    """The position in ``cand`` of the row that ``_score(_criteria(s, cand, None))`` ranks first, as
    ``sort_values("score", ascending=False).iloc[0]`` of those criteria picks it (the same quicksort of the
    same scores, ``nargsort`` being what that sort calls), without the criteria's copy of every column
    of ``cand`` and the sort of every column: only the five figures the score reads, built as
    ``_criteria`` builds them (the fit and the supply of ``cand``'s accelerators)."""
    from pandas.core.sorting import nargsort

    def first(figures: pd.DataFrame) -> int:
        return int(nargsort(_score(figures, weights(s))["score"].to_numpy(), kind="quicksort", ascending=False,
                            na_position="last")[0])

    metric = "cost_usd" if s.is_training else "usd_per_million_tokens"
    accs = cand["accelerator"]
    fit = framework_fit(s, accs.unique())
    at = _positions(fit["accelerator"], accs)
    if at is None:
        return first(_criteria(s, cand, None))     # the left merge's path, as it was
    if s.is_training:
        tv = cand["training_days"].astype(float).to_numpy()
    else:
        tv = cand["tpot_ms"].astype(float).to_numpy() if "tpot_ms" in cand else np.nan
    figures = pd.DataFrame({"cost_value": cand[metric].astype(float).to_numpy(), "time_value": tv},
                           index=range(len(cand)))
    for c in ("ecosystem_score", "portability_score"):
        figures[c] = _values_at(fit[c], at)
    figures["supply_score"] = accs.map(supply_scores(accs.unique())).to_numpy()
    return first(figures)


def _constraint_flips(s: Scenario, priced: pd.DataFrame, ranked: pd.DataFrame, mc) -> list[str]:
    """Options ruled out only by a limit the team could move (budget, deadline, chips) that would
    rank first if it moved."""
    c = s.constraints
    training = s.is_training
    metric = "cost_usd" if training else "usd_per_million_tokens"
    # the columns the criteria, the score and the sentences read, not every priced column
    cols = [c for c in ("option", "accelerator", "pricing_model", "provider", "instance", "region", metric, "cost_usd",
                        "usd_total", "training_days", "tpot_ms", "chips") if c in priced]
    cols = list(dict.fromkeys(cols))
    rows = priced["excluded_reason"].notna() & priced[metric].notna()
    codes = [tuple(c) for c in priced.loc[rows, "excluded_codes"]]
    ex = priced.loc[rows, cols]
    out, ranked_rows = [], None
    for key in ("budget", "deadline", "chips"):
        only = ex[np.array([c == (key,) for c in codes], dtype=bool)]
        if only.empty:
            continue
        if ranked_rows is None:  # the ranked options' priced rows, looked up once
            at = _positions(priced["option"], ranked["option"])
            if at is not None:   # each option's one row, by position (no dict of every option)
                ranked_rows = priced.loc[priced.index[at], cols]
            else:
                ranked_rows = priced.loc[ranked["option"].map(dict(zip(priced["option"], priced.index))), cols]
        cand = pd.concat([ranked_rows, only])
        cand = cand.drop_duplicates("option")
        top = cand.iloc[_first_by_score(s, cand)]
        if top["option"] not in set(only["option"]):
            continue
        if key == "budget":
            need = top["cost_usd"] if training else top["usd_total"]
            text = f"If the budget were {usd(need)} instead of {usd(c.budget_usd)}"
        elif key == "deadline":
            text = f"If the deadline were {top['training_days']:.0f} days instead of {c.deadline_days:g}"
        else:
            text = f"If up to {top['chips']:,.0f} chips were allowed instead of {c.max_chips:,}"
        out.append(f"{text}, {describe(top)} would rank first.")
    return out


def flip_conditions(s: Scenario, priced: pd.DataFrame, ranked: pd.DataFrame, mc, runner_idx: int | None) -> list[str]:
    """What would change the choice: the runner-up's price gap, the break-even utilization or
    interruption rate, each weight, and a limit the team could move."""
    flips: list[str] = []
    if runner_idx is not None:
        pf = _price_flip(s, ranked, runner_idx)
        if pf:
            flips.append(pf)
    uf = _utilization_flip(s, ranked.iloc[0], priced)
    if uf:
        flips.append(uf)
    if len(ranked) > 1:
        flips += _weight_flips(s, ranked)
    flips += _constraint_flips(s, priced, ranked, mc)
    if not flips:
        flips.append("Nothing within the scenario's ranges changes the choice (weights, prices, utilization).")
    return flips
