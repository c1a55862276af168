"""The plan as one offline HTML page (``plan PORTFOLIO --html OUT``): what a stakeholder asks first
(the total against all on-demand, the commitments to sign), then the monthly chart (inline SVG
through vl-convert, no script), each workload's offering, the months and the assumptions."""
from __future__ import annotations

import os
from pathlib import Path

from ..paths import TEMPLATE_DIR
from ..plan.fleet import ASSUMPTIONS, Plan
from ..plan.output import headline, monthly
from ..terms import usd
from ..views.charts import plan as plan_charts
from ..views.charts.converter import converter
from ..views.text import esc, table_html

COMMIT_COLUMNS = ["offering", "pricing_model", "instances", "start_month", "end_month", "usd_per_instance_hour",
                  "cost_usd", "usd_after_horizon", "utilization", "workloads"]
WORKLOAD_COLUMNS = ["workload", "task", "offering", "accelerator", "burst_model", "instances_at_peak",
                    "porting_usd", "all_on_demand_offering"]


def _boxes(plan: Plan) -> str:
    items = [("Plan, total", usd(plan.total_usd)), ("All on-demand", usd(plan.all_on_demand_usd)),
             ("Saving", usd(plan.savings_usd)), ("Commitments", str(len(plan.commitments))),
             ("Horizon", f"{plan.portfolio.months} months")]
    return "<div class='headline'>" + "".join(
        f"<div><span class='label'>{esc(k)}</span><span class='value'>{esc(v)}</span></div>" for k, v in items) + "</div>"


def _months_table(plan: Plan) -> str:
    m = monthly(plan).pivot_table(index="month", columns="way to pay", values="cost_usd", aggfunc="sum", fill_value=0.0)
    m["total"] = m.sum(axis=1)
    return table_html(m.round(0))


def plan_html(plan: Plan) -> str:
    """The whole page, self-contained (inline CSS and SVG)."""
    pf = plan.portfolio
    svg = converter().vegalite_to_svg(plan_charts.monthly_cost(monthly(plan), plan.all_on_demand_usd).to_dict())
    commits = (table_html(plan.commitments, COMMIT_COLUMNS) if len(plan.commitments)
               else "<p>No commitment: on the offers chosen, no committed price is cheaper than bursting.</p>")
    if plan.alternatives is not None and len(plan.alternatives):
        commits += ("<p>The cheapest commitment for each workload, planned alone, and what it would cost more than "
                    "the plan's choice:</p>" + table_html(plan.alternatives))
    css = (TEMPLATE_DIR / "report.css").read_text()
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(pf.title)}</title><style>{css}</style></head>
<body><header class="report"><p class="kicker">Fleet plan · {esc(pf.name)}</p><h1>{esc(pf.title)}</h1>
<p class="description">{esc(pf.description or '')}</p>{_boxes(plan)}<p>{esc(headline(plan))}</p></header>
<main><section class="report-section"><h2>Commitments to sign</h2>{commits}</section>
<section class="report-section"><h2>Cost per month</h2><div>{svg}</div>{_months_table(plan)}</section>
<section class="report-section"><h2>Where each workload runs</h2>{table_html(plan.workloads, WORKLOAD_COLUMNS)}</section>
<section class="report-section"><h2>Assumptions</h2><ul>{''.join(f'<li>{esc(a)}</li>' for a in ASSUMPTIONS)}</ul>
</section></main></body></html>
"""


def write_plan_html(plan: Plan, out: str | Path) -> Path:
    """Write the page to ``out`` (a file; its folder is created) through a temporary file and a
    rename, so a failed write never replaces a good page."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(plan_html(plan))
    os.replace(tmp, out)
    return out
