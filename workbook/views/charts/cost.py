"""Cost and decision charts: ways to pay side by side, every offer ranked, break-even curves, the
Monte Carlo distribution, the tornado and the Pareto front of cost vs time. Each function takes a tidy frame
from ``workbook.cost`` or ``workbook.decision`` and returns an ``alt.Chart``."""
from __future__ import annotations

import altair as alt
import pandas as pd

from ...terms import PRICING_MODEL_IDS, pricing_short
from .base import Chart, empty, keep, one_value_axis, quiet
from .data import straight_runs_thinned


def _metric(df: pd.DataFrame) -> tuple[str, str]:
    if "cost_usd" in df and df["cost_usd"].notna().any():
        return "cost_usd", "Cost of the run (USD)"
    return "usd_per_million_tokens", "USD per million output tokens"


@quiet
def pricing_models(priced: pd.DataFrame) -> alt.Chart:
    """The cheapest feasible offering of each accelerator for each way to pay, with the
    performance band as an error bar; options ruled out by a hard constraint are left out."""
    metric, title = _metric(priced)
    tips = ["accelerator", "way to pay", "provider", "offering", "instances",
            alt.Tooltip(f"{metric}:Q", format=",.3~s", title=title),
            alt.Tooltip(f"{metric}_low:Q", format=",.3~s", title="low"),
            alt.Tooltip(f"{metric}_high:Q", format=",.3~s", title="high"), "price_derivation", "price_basis"]
    ok = keep(priced[priced["excluded_reason"].isna() & priced[metric].notna()], "pricing_model", tips)
    if ok.empty:
        return empty("Every option is ruled out by a hard constraint (see the exclusions table).")
    best = ok.sort_values(metric).drop_duplicates(["accelerator", "pricing_model"])
    best = best.assign(**{"way to pay": best["pricing_model"].map(pricing_short)})
    order = [pricing_short(m) for m in PRICING_MODEL_IDS if m in set(best["pricing_model"])]
    base = Chart(best).encode(
        y=alt.Y("accelerator:N", title=None, sort=alt.EncodingSortField(metric, op="min")),
        yOffset=alt.YOffset("way to pay:N", sort=order),
        color=alt.Color("way to pay:N", sort=order, title="Way to pay"),
        tooltip=tips)
    bars = base.mark_bar().encode(x=alt.X(f"{metric}:Q", title=title))
    band = base.mark_rule(color="#333").encode(x=f"{metric}_low:Q", x2=f"{metric}_high:Q")
    return (bars + band).properties(title="Ways to pay, cheapest offering of each (band: performance estimate)",
                                    width=520, height=alt.Step(9))


@quiet
def offers(offers_frame: pd.DataFrame, top: int = 25) -> alt.Chart:
    """The ``top`` ranked offers (``decision.offers_table``: one per offering and way to pay) by
    their point-estimate cost, with the performance band as an error bar; offers tied with the
    first are marked; the tooltip carries time, deadline odds, goodput, start days, contract, porting,
    hosting and the users' round trip."""
    metric, title = _metric(offers_frame)
    extras = ("training_days", "p_meets_deadline", "goodput", "start_days", "contract_usd", "porting_usd",
              "hosting_usd", "user_rtt_ms")
    d = keep(offers_frame[offers_frame["rank"].notna() & offers_frame[metric].notna()],
             "rank", "offering", "pricing_model", "tie", "provider", "chips", "instances", metric, f"{metric}_low",
             f"{metric}_high", extras).sort_values("rank").head(top).copy()
    if d.empty:
        return empty("No offer passes the hard constraints (see the exclusions table).")
    d["way to pay"] = d["pricing_model"].map(pricing_short)
    d["offer"] = d["rank"].astype(int).astype(str) + ". " + d["offering"] + " · " + d["way to pay"]
    d["tied"] = d["tie"].fillna(False).map({True: "tied with the first", False: "-"})
    shown = [c for c in extras if c in d and d[c].notna().any()]
    d = d.drop(columns=["pricing_model", "tie", *(c for c in extras if c in d and c not in shown)])
    extra = [alt.Tooltip(f"{c}:Q", format=",.3~g") for c in shown]
    base = Chart(d).encode(
        y=alt.Y("offer:N", title=None, sort=alt.EncodingSortField("rank", op="min")),
        tooltip=["offering", "provider", "way to pay", "chips", "instances", "tied",
                 alt.Tooltip(f"{metric}:Q", format=",.3~s", title=title), *extra])
    bars = base.mark_bar().encode(x=alt.X(f"{metric}:Q", title=title + ", point estimate"),
                                  color=alt.Color("way to pay:N", title="Way to pay"),
                                  opacity=alt.Opacity("tied:N", title="Tie", scale=alt.Scale(range=[0.6, 1.0])))
    band = base.mark_rule(color="#333").encode(x=f"{metric}_low:Q", x2=f"{metric}_high:Q")
    return (bars + band).properties(title=f"Every offer ranked (first {len(d)}; band: performance estimate)",
                                    width=520, height=alt.Step(14))


@quiet
def breakeven_chart(curves: pd.DataFrame) -> alt.Chart:
    """Cumulative cost per chip against months of use: where a line crosses on-demand is the
    break-even month. Each line is drawn through the ends of its straight runs only
    (``data.straight_runs_thinned``: the same lines)."""
    if curves is None or curves.empty:
        return empty("No on-demand price to break even against.")
    d = curves.copy()
    d["way to pay"] = d["pricing_model"].map(pricing_short)
    acc = d["accelerator"].iloc[0]
    # a line per way to pay (its colour), straight between the months where its cost changes pace
    d = straight_runs_thinned(d, "way to pay", "month", "cumulative_usd_per_chip")
    return Chart(d).mark_line().encode(
        x=alt.X("month:Q", title="Months of use"),
        y=alt.Y("cumulative_usd_per_chip:Q", title="Cumulative USD per chip"),
        color=alt.Color("way to pay:N", title="Way to pay"),
        tooltip=["way to pay", "offering", "month", alt.Tooltip("cumulative_usd_per_chip:Q", format=",.0f")],
    ).properties(title=f"Break-even: {acc}, at the scenario's utilization", width=520, height=260)


@quiet
def mc_distribution(hist: pd.DataFrame) -> alt.Chart:
    """Monte Carlo distribution (share of draws per bin) of the ranking figure, one colour per option."""
    if hist is None or hist.empty:
        return empty("No option passes the hard constraints.")
    return Chart(hist).mark_area(opacity=0.45, interpolate="step").encode(
        x=alt.X("bin_start:Q", title="Cost figure (USD per run, or per million output tokens)"),
        y=alt.Y("share:Q", title="Share of draws", stack=None, axis=alt.Axis(format="%")),
        color=alt.Color("option:N", title="Option", legend=alt.Legend(orient="bottom", columns=1, labelLimit=480)),
        tooltip=["option", alt.Tooltip("bin_start:Q", format=",.3~s"), alt.Tooltip("share:Q", format=".1%")],
    ).properties(title="Monte Carlo: how sure are the costs?", width=520, height=240)


@quiet
def tornado_chart(t: pd.DataFrame) -> alt.Chart:
    """Swing of the ranking figure when each input moves across its P10-P90 band."""
    if t is None or t.empty:
        return empty("No option to analyse.")
    cols = t[["input", "base"]]
    long = pd.concat([
        cols.assign(end="low", value=t["value_at_low"], setting=t["low"]),
        cols.assign(end="high", value=t["value_at_high"], setting=t["high"]),
    ])
    order = list(t["input"])
    base_value = float(t["base"].iloc[0])
    bars = Chart(long).mark_bar().encode(
        y=alt.Y("input:N", sort=order, title=None),
        x=alt.X("value:Q", title="Cost figure", scale=alt.Scale(zero=False),
                  axis=one_value_axis(pd.concat([long["value"], t["base"]]))),
        x2=alt.X2("base:Q"),
        color=alt.Color("end:N", title="Input at", scale=alt.Scale(domain=["low", "high"])),
        tooltip=["input", "end", alt.Tooltip("setting:Q", format=".3g"), alt.Tooltip("value:Q", format=",.3~s")])
    rule = Chart(pd.DataFrame({"base": [base_value]})).mark_rule(color="#333").encode(x="base:Q")
    return (bars + rule).properties(title=f"Tornado: {t['option'].iloc[0]}", width=520, height=alt.Step(26))


@quiet
def pareto_chart(ranking: pd.DataFrame) -> alt.Chart:
    """Cost against time for the ranked options (best offering per accelerator and way to pay);
    filled points are on the Pareto front (nothing is both cheaper and faster)."""
    if ranking is None or ranking.empty:
        return empty("No option passes the hard constraints.")
    metric, title = _metric(ranking)
    time_col, time_title = (("training_days", "Days to train") if "training_days" in ranking
                            else ("tpot_ms", "Time per output token (ms)"))
    d = keep(ranking, "rank", "accelerator", "offering", metric, time_col, "score")
    d = d.assign(**{"way to pay": ranking["pricing_model"].map(pricing_short),
                    "front": ranking["pareto"].map({True: "Pareto front", False: "dominated"})})
    return Chart(d).mark_point(size=110, filled=True).encode(
        x=alt.X(f"{metric}:Q", title=title, scale=alt.Scale(zero=False), axis=one_value_axis(d[metric])),
        y=alt.Y(f"{time_col}:Q", title=time_title, scale=alt.Scale(zero=False), axis=one_value_axis(d[time_col])),
        color=alt.Color("accelerator:N", title="Accelerator"),
        shape=alt.Shape("way to pay:N", title="Way to pay"),
        opacity=alt.Opacity("front:N", title=None, scale=alt.Scale(domain=["Pareto front", "dominated"],
                                                                   range=[1.0, 0.3])),
        tooltip=["rank", "accelerator", "way to pay", "offering", alt.Tooltip(f"{metric}:Q", format=",.3~s"),
                 alt.Tooltip(f"{time_col}:Q", format=",.1f"), alt.Tooltip("score:Q", format=".2f"), "front"],
    ).properties(title="Cost vs time (solid: Pareto front, faded: dominated)", width=520, height=300)
