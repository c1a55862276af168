"""Each tab of the stakeholder app as HTML, from a scenario and its ``Analysis``: the recommendation
card, the decision's ranking and exclusions, the workload, the comparison, scaling and cost.

Words and tables come from ``views.text``, charts from ``views.charts`` (drawn to static SVG by
vl-convert inside ``<img>``: offline, no Vega from a CDN), labels from ``terms``. A ``memo`` (the
page's own dict) keeps slow results that only some inputs change.
"""
from __future__ import annotations

import base64
import json
import sys
import traceback

import pandas as pd
import yaml

from .. import analysis as pipeline
from .. import cost
from ..model import tables
from ..analysis import Analysis
from ..decision import offers_summary as summary_offers
from ..scenario import Scenario
from ..terms import ESTIMATE_COLUMNS, RANKING_LABELS, pricing_short
from ..views import buyer, text
from ..views.charts import cost as cost_charts
from ..views.charts import perf as perf_charts
from ..views.charts import scaling as scaling_charts
from ..views.charts.converter import long_lived_converter

TABS = ("Decision", "Workload", "Comparison", "Scaling", "Cost")
PERF_COLUMNS = {
    "training": ["accelerator", "chips", "fits", "training_days", "tokens_per_s", "mfu", "step_time_s", "chip_hours",
                 "meets_deadline", "calibrated", "reason"],
    "inference": ["accelerator", "chips", "fits", "ttft_ms", "ttft_ms_p50", "ttft_ms_p99", "tpot_ms", "output_tokens_per_s",
                  "max_batch", "replicas", "tp", "meets_slo", "calibrated", "reason"],
}
EXCLUDED_LABELS = {"accelerator": "Accelerator", "pricing_model": "Pay with", "offerings": "Offerings",
                   "constraint": "Why"}
KEPT_CHARTS = 16      # SVGs remembered per page
KEPT_CURVES = 4       # scaling curves remembered per page


def log_exception() -> None:
    """The full traceback goes to the kernel's stderr (Voila's server log), not to the page."""
    traceback.print_exc(file=sys.__stderr__)


def message(title: str, lines=(), kind: str = "error") -> str:
    """A sentence (and its details) in a box: red for an error, orange for a note."""
    items = "".join(f"<li>{text.esc(x)}</li>" for x in lines)
    cls = "wb-msg" + (" wb-note" if kind == "note" else "")
    return (f'<div class="{cls}" role="{"alert" if kind == "error" else "note"}"><b>{text.esc(title)}</b>'
            + (f"<ul>{items}</ul>" if items else "") + "</div>")


def _remember(memo: dict, prefix: str, key: str, make, keep: int):
    key = prefix + key
    if key not in memo:
        for old in [k for k in memo if k.startswith(prefix)][:-keep]:
            memo.pop(old)
        memo[key] = make()
    return memo[key]


def chart_html(chart, alt_text: str, memo: dict) -> str:
    """A chart as a static SVG ``<img>``; an unchanged chart is not drawn again. The spec is not
    validated against the Vega-Lite schema on every update (the same as validated: tests/views check
    each chart function's spec)."""
    spec = chart.to_dict(validate=False)
    data = _remember(memo, "svg:", json.dumps(spec, sort_keys=True, default=str),
                     lambda: base64.b64encode(long_lived_converter().vegalite_to_svg(spec).encode()).decode(), KEPT_CHARTS)
    return f'<div class="wb-chart"><img alt="{text.esc(alt_text)}" src="data:image/svg+xml;base64,{data}"></div>'


def charts_html(charts, memo: dict) -> str:
    """``(what it shows, make_chart)`` pairs as images; a chart that fails is said in words (and logged)."""
    out = []
    for what, make in charts:
        try:
            out.append(chart_html(make(), what, memo))
        except Exception as e:   # one broken chart must not hide the rest of the tab
            log_exception()
            out.append(message(f"The chart '{what}' failed (logged on the server):", [f"{type(e).__name__}: {e}"]))
    return "".join(out)


def recommendation(a: Analysis | None) -> str:
    """The recommendation card (``views.text.recommendation_html``)."""
    if a is None or a.recommendation is None:
        return message("No recommendation: the analysis gave no decision.", [], "note")
    d = a.recommendation.as_dict()
    if not d.get("accelerator"):
        return text.recommendation_html(d)
    # the report header's words (views.buyer): the price's basis and age, tie or lead, every caveat
    won = a.offers[(a.offers["offering"] == d["offering"]) & (a.offers["pricing_model"] == d["pricing_model"])] \
        if a.offers is not None and "offering" in a.offers else pd.DataFrame()
    summary = {"recommendation": d, "offers": json.loads(won.head(1).to_json(orient="records", date_format="iso"))}
    d.update(price_text=buyer.winner_price_text(summary), tie_text=buyer.tie_text(summary),
             warnings=buyer.caveats(summary))
    return text.recommendation_html(d)


def _data_link(cls: str, filename: str, mime: str, payload: str, label: str) -> str:
    """A download link that needs no server round trip: the file inside a data: URI (works offline)."""
    b64 = base64.b64encode(payload.encode()).decode()
    return (f'<a class="wb-download {cls}" download="{text.esc(filename)}" '
            f'href="data:{mime};charset=utf-8;base64,{b64}">{text.esc(label)}</a>')


def downloads(s: Scenario, a: Analysis | None) -> str:
    """Links to download the scenario as edited in the page (YAML, loadable by every command) and the
    ranking of the current analysis (CSV, one row per option). The summary (``estimate --json``, a few
    MB) has its own link, made when asked for (``summary_download``): inside every update it was the
    bulk of what the kernel sent to the browser."""
    scen = yaml.safe_dump(s.model_dump(mode="json", exclude_none=True), sort_keys=False)
    links = [_data_link("wb-download-yaml", f"{s.name}.yaml", "application/x-yaml", scen, "scenario (YAML)")]
    if a is not None:
        rank = a.recommendation.ranking if a.recommendation is not None else pd.DataFrame()
        links.append(_data_link("wb-download-csv", f"{s.name}-ranking.csv", "text/csv", rank.to_csv(index=False),
                                "ranking (CSV)"))
    return '<div class="wb-downloads">Download: ' + " · ".join(links) + "</div>"


def summary_download(s: Scenario, a: Analysis) -> str:
    """The link to download the current summary: the ``estimate --json`` object of ``a`` as JSON
    (``analysis.summary_json``), inside the link (a data: URI)."""
    return ('<div class="wb-downloads">'
            + _data_link("wb-download-json", f"{s.name}-summary.json", "application/json",
                         json.dumps(pipeline.summary_json(a), indent=2), "summary (JSON): save") + "</div>")


# --- Decision --------------------------------------------------------------------------------------

def ranking(rec, top: int = 12) -> str:
    """The decision's ranking table, with money as money and the cost band next to the cost."""
    full = rec.ranking
    df = full.head(top).copy()
    for m in ("cost_usd", "usd_per_million_tokens"):
        if m in df:
            if f"{m}_low" in df and f"{m}_high" in df:
                df["band"] = [f"{text.money(lo)}–{text.money(hi)}" for lo, hi in zip(df[f"{m}_low"], df[f"{m}_high"])]
            df[m] = df[m].map(text.money)
    if "usd_per_month" in df:
        df["usd_per_month"] = df["usd_per_month"].map(text.money)
    if "pricing_model" in df:
        df["pricing_model"] = df["pricing_model"].map(pricing_short)
    if "p_cheapest" in df:
        df["p_cheapest"] = df["p_cheapest"].map(lambda v: text.BLANK if pd.isna(v) else f"{v:.0%}")
    note = (f"<p class='wb-sub'>Top {len(df)} of {len(full)} options (accelerator x way to pay).</p>"
            if len(full) > len(df) else "")
    return text.table_html(df, list(RANKING_LABELS), labels=RANKING_LABELS, highlight_first=True) + note


def runs_note(name: str, a: Analysis | None) -> str:
    """Under the upload control: how many of the team's runs are near the workload, and which chips
    they re-calibrate (``Analysis.own_runs``, ``used``)."""
    if a is None or a.own_runs is None:
        return message(f"{name} is loaded; the analysis did not run on it.", [], "note")
    runs = a.own_runs
    n, used = runs["run"].nunique(), runs[runs["used"].astype(bool)]
    if used.empty:
        return message(f"{name}: none of its {n} runs is near this workload (same chip, kind and precision, a model "
                       "within 4x): the estimates keep the published calibration.", [], "note")
    chips = ", ".join(sorted(set(used["accelerator"])))
    return (f'<p class="wb-sub wb-runs-used">{text.esc(name)}: {used["run"].nunique()} of {n} runs near this '
            f"workload re-calibrate {text.esc(chips)}. The Decision tab shows the decision with and without them.</p>")


ADJUSTMENT_LABELS = {"accelerator": "Accelerator", "parameter": "Parameter", "before": "Published", "after": "Own runs",
                     "runs": "Runs", "median_abs_error_before": "Error before", "median_abs_error_after": "Error after"}


def own_runs(s: Scenario, a: Analysis) -> str:
    """The decision with the published calibration only and with the team's runs
    (``analysis.with_and_without_measurements``), and the efficiency the runs changed."""
    both = pipeline.with_and_without_measurements(s, a)
    metric = a.recommendation.metric if a.recommendation is not None else None
    if metric in both:   # the recommendation's money figure (cost_usd or usd_per_million_tokens)
        both[metric] = both[metric].map(text.money)
    out = ("<h4 class='wb-own-runs'>With and without the team's runs</h4>"
           + text.table_html(both.drop(columns=["accelerator"], errors="ignore"),
                             labels={c: c.replace("_", " ") for c in both.columns}))
    if a.adjustments is not None and len(a.adjustments):
        adj = a.adjustments.copy()
        for c in ("median_abs_error_before", "median_abs_error_after"):
            adj[c] = adj[c].map(lambda v: f"{v:.0%}")
        out += text.table_html(adj, list(ADJUSTMENT_LABELS), labels=ADJUSTMENT_LABELS)
    return out


def decision(s: Scenario, a: Analysis | None, memo: dict) -> str:
    if a is None:
        return ""
    rec = a.recommendation
    # a copy: the chart adds its label columns to the frame it is given (the downloads read the ranking)
    out = [charts_html([("Cost against time of every ranked option",
                         lambda: cost_charts.pareto_chart(rec.ranking.copy()))], memo)]
    if rec.ranking is not None and len(rec.ranking):
        out.append("<h4>Ranking</h4>" + ranking(rec))
    excluded = rec.excluded
    if excluded is not None and len(excluded):
        excluded = excluded.copy()
        if "pricing_model" in excluded:
            excluded["pricing_model"] = excluded["pricing_model"].map(pricing_short)
        out.append("<h4>Ruled out by a hard constraint</h4>"
                   + text.table_html(excluded, list(EXCLUDED_LABELS), labels=EXCLUDED_LABELS))
    if s.measurements:
        out.insert(0, own_runs(s, a))
    return "".join(out)


# --- Workload --------------------------------------------------------------------------------------

def _inputs(s: Scenario) -> pd.DataFrame:
    w = s.workload
    rows = [("Task", w.task), ("Model", text.model_label(w)),
            ("Precision", w.precision)]
    if w.task == "inference":
        rows += [("Prompt tokens per request", w.input_tokens), ("Answer tokens per request", w.output_tokens),
                 ("Requests per second", w.requests_per_s), ("Concurrent users", w.concurrency),
                 ("Time to first token target (ms)", w.ttft_slo_ms), ("Time per output token target (ms)", w.tpot_slo_ms),
                 ("Batch window (hours)", w.batch_window_hours), ("Hours per day", w.hours_per_day)]
    else:
        rows += [("Training tokens", w.tokens), ("Samples", w.samples), ("Sequence length", w.seq_len),
                 ("Global batch (tokens)", w.global_batch_tokens), ("Framework", w.framework)]
    c = s.constraints
    rows += [("Deadline (days)", c.deadline_days), ("Budget", text.money(c.budget_usd) if c.budget_usd else None),
             ("Max chips", c.max_chips),
             ("Utilization", f"{s.pricing.utilization:.0%}"), ("Horizon (months)", s.pricing.horizon_months),
             ("Pricing models", ", ".join(pricing_short(m) for m in s.pricing.models)),
             ("Candidates", ", ".join(s.candidates.accelerators or ["every accelerator in the catalog"]))]
    # every value as text (full digits, left-aligned, wrapping): a right-aligned number in a column that a long
    # list of candidates widens would sit beyond the pane's edge, cut to its first digit ("Requests per second 2")
    return pd.DataFrame([(k, v if isinstance(v, str) else text.number(v)) for k, v in rows if v is not None],
                        columns=["Input", "Value"])


def workload(s: Scenario, a: Analysis | None, memo: dict) -> str:
    size = text.table_html(tables.workload_summary(s), ["quantity", "value", "unit", "formula"],
                           labels={"quantity": "Quantity", "value": "Value", "unit": "Unit", "formula": "How"})
    return "".join([f"<h4>{text.esc(s.title)}</h4>", text.table_html(_inputs(s)), "<h4>Size of the work</h4>", size,
                    charts_html([("Memory of one model copy by component",
                                  lambda: perf_charts.memory_breakdown(tables.memory_breakdown(s)))], memo)])


# --- Comparison ------------------------------------------------------------------------------------

def comparison(s: Scenario, a: Analysis | None, memo: dict) -> str:
    if a is None:
        return ""
    df = a.perf.copy()
    cols = PERF_COLUMNS["inference" if s.workload.task == "inference" else "training"]
    if "mfu" in df:
        df["mfu"] = df["mfu"].map(lambda v: text.BLANK if v is None or v != v else f"{v:.0%}")
    charts = [("Each candidate side by side, with its band", lambda: perf_charts.comparison(a.perf)),
              ("Roofline: where the workload sits on each chip",
               lambda: perf_charts.roofline(tables.roofline_lines(s), tables.operating_points(s, a.perf)))]
    return "".join([charts_html(charts, memo),
                    "<h4>Performance by accelerator</h4><p class='wb-sub'>The performance model's estimate for each "
                    "candidate, at the number of chips it needs for this workload. 'Why not' says why an accelerator "
                    "cannot do the work.</p>",
                    text.table_html(df, cols, labels={c: ESTIMATE_COLUMNS[c].label for c in cols})])


# --- Scaling ---------------------------------------------------------------------------------------

def _curves(s: Scenario, memo: dict) -> pd.DataFrame:
    """``scenario_curves(s)`` for the inputs it depends on (workload, cluster, candidates,
    constraints): prices, weights and utilization do not change it."""
    raw = json.dumps(s.model_dump(include={"workload", "cluster", "candidates", "constraints"}), default=str)
    key = json.dumps(json.loads(raw, parse_int=float), sort_keys=True)   # 24 and 24.0: one input
    return _remember(memo, "curves:", key, lambda: tables.scenario_curves(s), KEPT_CURVES)


def scaling_tab(s: Scenario, a: Analysis | None, memo: dict) -> str:
    curves = _curves(s, memo)
    return (charts_html([("Scaling with the number of chips", lambda: scaling_charts.scaling_curves(curves))], memo)
            + "<h4>Where scaling stops paying</h4>" + text.markdown_html(text.scaling_verdict(curves)))


# --- Cost ------------------------------------------------------------------------------------------

def _winner_option(a: Analysis):
    r = a.recommendation.ranking if a.recommendation is not None else None
    return None if r is None or r.empty or "option" not in r else r["option"].iloc[0]


def cost_tab(s: Scenario, a: Analysis | None, memo: dict) -> str:
    if a is None or a.priced is None:
        return message("The cost view has no prices for these inputs.", [], "note")
    rec, option = a.recommendation, _winner_option(a)
    charts = [("Ways to pay, cheapest offering of each accelerator", lambda: cost_charts.pricing_models(a.priced)),
              ("Monte Carlo distribution of the cost", lambda: cost_charts.mc_distribution(
                  cost.mc_histogram(s, a.priced, mc=a.mc)))]   # the analysis' draws (MC_DRAWS, seed 0): not drawn again
    if s.workload.task == "inference":   # the report's chart too (notebook 04): the same function, the same figures
        charts.insert(1, ("Throughput per chip against tokens per second per user, cost per million tokens at each "
                          "point", lambda: scaling_charts.interactivity(tables.interactivity_curve(s, a.offers))))
    if option is not None:
        charts.append(("Which input moves the cost most",
                       lambda: cost_charts.tornado_chart(cost.tornado(s, a.priced, option))))
    charts.append(("When a commitment or a purchase pays off", lambda: cost_charts.breakeven_chart(
        cost.breakeven_curves(s, a.priced, accelerator=rec.accelerator if rec else None))))
    return charts_html(charts, memo) + offers(s, a)


def offers(s: Scenario, a: Analysis, top: int = 20) -> str:
    """The offers table: every offering and way to pay, ranked (time, deadline odds, goodput, start
    days and the whole contract for training), then the excluded ones with the reason."""
    df = summary_offers(s, a.offers, top)
    return ("<h4 class='wb-offers'>Every offer, ranked</h4><p class='wb-sub'>One row per offering and way to pay, "
            "at the point estimate (the Monte Carlo median beside it, labelled); 'tie': within the model's noise of "
            "the first.</p>" + text.table_html(df, labels={c: c.replace("_", " ") for c in df.columns}))


RENDERERS = {"Decision": decision, "Workload": workload, "Comparison": comparison, "Scaling": scaling_tab,
             "Cost": cost_tab}
