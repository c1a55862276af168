"""The plan for people and scripts: ``plan_json`` (the ``plan --json`` object; keys ``months``,
``commitments``, ``total_usd``, ``all_on_demand_usd`` are a contract), ``plan_text`` and the tidy
``monthly`` frame the chart and the report read."""
from __future__ import annotations

import math

import pandas as pd

from ..analysis import jsonable, records
from ..terms import pricing_short, usd
from .demand import ENERGY_COLUMNS
from .fleet import ASSUMPTIONS, Plan

OFFER_KEYS = ["offering", "accelerator", "provider", "pricing_model"]


def monthly(plan: Plan) -> pd.DataFrame:
    """Cost and capacity per month, offering and way to pay (workloads summed): ``instances``
    (committed count, or the burst's peak), ``instance_hours`` used, ``cost_usd``, and the energy
    columns when the offers carry them."""
    extra = [c for c in ENERGY_COLUMNS if c in plan.rows]
    agg = {"instances": "sum", "instance_hours": "sum", "cost_usd": "sum",
           **{c: (lambda x: x.sum(min_count=1)) for c in extra}}  # unknown (no chip power) stays unknown
    agg["workload"] = lambda s: ", ".join(sorted(set(", ".join(s).split(", "))))
    out = plan.rows.groupby(["month", *OFFER_KEYS], as_index=False).agg(agg)
    out["way to pay"] = out["pricing_model"].map(pricing_short)
    return out


def _months(plan: Plan) -> list[dict]:
    m = monthly(plan)
    out = []
    for month in range(1, plan.portfolio.months + 1):
        g = m[m["month"] == month]
        entry = {"month": month, "cost_usd": float(g["cost_usd"].sum()),
                 "instance_hours": float(g["instance_hours"].sum()),
                 "by_offer": records(g.drop(columns=["month", "way to pay"]).rename(columns={"workload": "workloads"}))}
        for c in ENERGY_COLUMNS:  # a month's total only when every offer used that month has one
            if c in g:
                entry[c] = float(g[c].sum()) if g[c].notna().all() else None
        out.append(entry)
    return out


def plan_json(plan: Plan) -> dict:
    """The ``plan --json`` object."""
    pf = plan.portfolio
    saving = plan.savings_usd
    return jsonable({
        "portfolio": pf.name, "title": pf.title, "horizon_months": pf.months,
        "months": _months(plan),
        "commitments": records(plan.commitments),
        "total_usd": plan.total_usd,
        "all_on_demand_usd": plan.all_on_demand_usd,
        "savings_usd": saving,
        "savings_fraction": saving / plan.all_on_demand_usd if plan.all_on_demand_usd else None,   # NaN -> null
        "usd_after_horizon": float(plan.commitments["usd_after_horizon"].sum()) if len(plan.commitments) else 0.0,
        "workloads": records(plan.workloads),
        "commitment_alternatives": records(plan.alternatives) if plan.alternatives is not None else [],
        "assumptions": ASSUMPTIONS,
        "timing_s": {"analyse": plan.analyse_s, "optimise": plan.optimise_s},
    })


def headline(plan: Plan) -> str:
    """One sentence: the plan's total against all on-demand, and the commitments."""
    n = len(plan.commitments)
    k = int(plan.commitments["instances"].sum()) if n else 0
    what = (f"{n} commitment{'s' if n > 1 else ''} ({k} instance{'s' if k > 1 else ''})"
            if n else "no commitment (on the offers chosen, no committed price is cheaper than bursting)")
    return (f"{usd(plan.total_usd)} over {plan.portfolio.months} months with {what}, against "
            f"{usd(plan.all_on_demand_usd)} all on-demand (saves {usd(plan.savings_usd)}).")


def _table(df: pd.DataFrame) -> str:
    with pd.option_context("display.width", 200, "display.max_columns", None, "display.float_format", "{:,.0f}".format):
        return df.to_string(index=False, na_rep="-")


def plan_text(plan: Plan) -> str:
    """``plan``'s human-readable output: the headline, each workload's offering, the commitments and
    the cost per month by way to pay."""
    lines = [f"{plan.portfolio.name}: {plan.portfolio.title}", "", headline(plan), ""]
    lines += [_table(plan.workloads[["workload", "task", "offering", "burst_model", "instances_at_peak",
                                     "all_on_demand_offering"]]), ""]
    if len(plan.commitments):
        c = plan.commitments[["offering", "pricing_model", "instances", "start_month", "end_month", "cost_usd",
                              "utilization", "workloads"]].copy()
        c["utilization"] = c["utilization"].map(lambda u: f"{u:.0%}")   # share of the paid hours used
        lines += ["Commitments:", _table(c), ""]
    if plan.alternatives is not None and len(plan.alternatives):
        lines += ["Cheapest commitment per workload, planned alone (what it would cost more):",
                  _table(plan.alternatives), ""]
    m = monthly(plan).pivot_table(index="month", columns="way to pay", values="cost_usd", aggfunc="sum", fill_value=0.0)
    m["total"] = m.sum(axis=1)
    lines += ["Cost per month (USD) by way to pay:", _table(m.reset_index())]
    return "\n".join(lines)


def summary_table(plan: Plan) -> pd.DataFrame:
    """The figures a stakeholder asks first, one row each: the plan's total, all on-demand, the
    saving, the commitments and the hours paid after the horizon."""
    c = plan.commitments
    after = float(c["usd_after_horizon"].sum()) if len(c) else 0.0
    rows = [("plan, total over the horizon", usd(plan.total_usd)),
            ("all on-demand", usd(plan.all_on_demand_usd)),
            ("saving", f"{usd(plan.savings_usd)} ({plan.savings_usd / plan.all_on_demand_usd:.1%})"
             if plan.all_on_demand_usd and math.isfinite(plan.all_on_demand_usd) else usd(plan.savings_usd)),
            ("commitments", "; ".join(f"{int(r.instances)} x {r.offering}, {pricing_short(r.pricing_model)} from month "
                                      f"{r.start_month}" for r in c.itertuples()) if len(c) else "none"),
            ("paid after the horizon", usd(after))]
    return pd.DataFrame(rows, columns=["figure", "value"])


def assumptions() -> pd.DataFrame:
    """The plan's assumptions, one per row."""
    return pd.DataFrame({"assumption": ASSUMPTIONS})
