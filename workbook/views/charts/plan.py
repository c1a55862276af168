"""The plan's charts: the cost of each month, stacked by offering and way to pay. Takes the tidy
frame of ``plan.output.monthly`` and returns an ``alt.Chart``."""
from __future__ import annotations

import altair as alt
import pandas as pd

from .base import Chart, empty, quiet


@quiet
def monthly_cost(monthly: pd.DataFrame, all_on_demand_usd: float | None = None) -> alt.Chart:
    """Cost per month stacked by offering x way to pay (commitments at the bottom); with
    ``all_on_demand_usd`` a dashed rule at its monthly mean for comparison."""
    if monthly.empty:
        return empty("Nothing to plan: no workload runs in the horizon.")
    d = monthly.copy()
    d["offer"] = d["offering"] + " · " + d["way to pay"]
    d["order"] = (~d["pricing_model"].str.startswith("commit")).astype(int)
    bars = Chart(d).mark_bar().encode(
        x=alt.X("month:O", title="Month"),
        y=alt.Y("sum(cost_usd):Q", title="Cost (USD)", stack="zero"),
        color=alt.Color("offer:N", title="Offering · way to pay", legend=alt.Legend(orient="bottom", columns=1, labelLimit=400)),
        order=alt.Order("order:Q"),
        tooltip=["month", "offering", "way to pay", "workload", alt.Tooltip("instances:Q", format=",.0f"),
                 alt.Tooltip("instance_hours:Q", format=",.0f", title="instance-hours"),
                 alt.Tooltip("cost_usd:Q", format="$,.0f", title="cost")])
    chart = bars
    if all_on_demand_usd is not None and all_on_demand_usd == all_on_demand_usd:
        mean = all_on_demand_usd / d["month"].nunique()
        rule = Chart(pd.DataFrame({"usd": [mean], "label": ["all on-demand, monthly mean"]})).mark_rule(
            strokeDash=[6, 4], color="#333").encode(y="usd:Q", tooltip=["label", alt.Tooltip("usd:Q", format="$,.0f")])
        chart = bars + rule
    return chart.properties(title="Cost per month by offering and way to pay (dashed: all on-demand)",
                            width=520, height=300)
