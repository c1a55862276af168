"""Every ipywidgets control of the workbook lives here (style: one module builds controls from the
current scenario so their starting values equal the report's, wires them with
``interactive_output``, and reuses the package's model and chart functions; sliders use
``continuous_update=False``; no global state).

Notebooks call one function per view, e.g. ``wb.widgets.profile_explorer(s)``; in batch runs
(Papermill, ``interactive=False``) notebooks skip these cells, and the report drops cells tagged
``widgets``.
"""
from __future__ import annotations

import ipywidgets as W

# --- section: profile & comparison (notebooks 01, 02) ---
# ``profile_explorer(s)`` (notebook 01): model, sequence length or prompt/answer lengths, batch,
# precision and recomputation; shows what the workload needs and its memory by component.
# ``comparison_explorer(s)`` (notebook 02): precision, batch and the candidate set; re-runs
# ``perf.compare`` (the same multi-chip layout search as the report, cached per process) and redraws
# the comparison with its P10/P90 bands.

def _with(s, changes: dict):
    """The scenario with dotted-key overrides, or the InputError's lines."""
    from .errors import InputError
    from .scenario import with_overrides

    try:
        return with_overrides(s, **changes), None
    except InputError as e:
        return None, e.problems


def profile_explorer(s) -> W.VBox:
    """Controls for notebook 01, starting at the scenario's values; the output is
    ``perf.workload_summary`` and ``charts.perf.memory_breakdown`` for the changed workload."""
    from IPython.display import Markdown, display

    from . import catalog, perf
    from .charts import perf as cp

    w = s.workload
    style = {"description_width": "150px"}
    lay = W.Layout(width="440px")
    controls = {}
    if w.model is not None:
        controls["workload.model"] = W.Dropdown(options=list(catalog.models()["model"]), value=w.model,
                                                description="Model", style=style, layout=lay)
    precisions = ["fp32", "bf16", "fp16", "fp8", "int8", "int4"] if w.task == "inference" else ["fp32", "bf16", "fp16", "fp8"]
    controls["workload.precision"] = W.Dropdown(options=precisions, value=w.precision, description="Precision",
                                                style=style, layout=lay)
    if w.task == "inference":
        controls["workload.input_tokens"] = W.IntSlider(value=w.input_tokens or 1024, min=16, max=131072, step=16,
                                                        description="Prompt tokens", continuous_update=False, style=style, layout=lay)
        controls["workload.output_tokens"] = W.IntSlider(value=w.output_tokens or 256, min=1, max=32768, step=1,
                                                         description="Answer tokens", continuous_update=False, style=style, layout=lay)
        batch = W.IntSlider(value=w.concurrency or 8, min=1, max=1024, description="Batch (requests)",
                            continuous_update=False, style=style, layout=lay)
    else:
        controls["workload.seq_len"] = W.IntSlider(value=w.seq_len, min=128, max=131072, step=128, description="Sequence length",
                                                   continuous_update=False, style=style, layout=lay)
        controls["workload.recompute"] = W.Dropdown(options=["auto", "none", "selective", "full"], value=w.recompute,
                                                    description="Recomputation", style=style, layout=lay)
        batch = W.IntSlider(value=1, min=1, max=64, description="Micro-batch (sequences)", continuous_update=False,
                            style=style, layout=lay)
    for k, c in controls.items():
        c.add_class(f"wb-profile-{k.split('.')[-1].replace('_', '-')}")
    batch.add_class("wb-profile-batch")
    keys = list(controls)

    def show(batch, **values):
        changes = {k: values[k.replace(".", "__")] for k in keys}
        s2, problems = _with(s, changes)
        if s2 is None:
            display(Markdown("**Cannot use these values:** " + "; ".join(problems)))
            return
        display(perf.workload_summary(s2))
        display(cp.memory_breakdown(perf.memory_breakdown(s2, batch=batch)))

    out = W.interactive_output(show, {"batch": batch, **{k.replace(".", "__"): c for k, c in controls.items()}})
    box = W.VBox([W.VBox(list(controls.values()) + [batch]), out])
    box.add_class("wb-profile-explorer")
    return box


def comparison_explorer(s) -> W.VBox:
    """Controls for notebook 02: precision, batch (global batch tokens for training, concurrency for
    serving; 0 = the scenario's own choice) and the candidate set; the output is the comparison chart
    with bands and the table of ``perf.compare`` (the report's own estimate, with the parallel layout
    of each training option)."""
    from IPython.display import Markdown, display

    from . import perf
    from .charts import perf as cp

    w = s.workload
    style = {"description_width": "150px"}
    lay = W.Layout(width="440px")
    start = perf.candidate_accelerators(s)
    every = sorted(set(perf._acc_records()) | set(start))
    prec_w = W.Dropdown(options=["fp32", "bf16", "fp16", "fp8", "int8", "int4"] if w.task == "inference"
                        else ["fp32", "bf16", "fp16", "fp8"], value=w.precision, description="Precision", style=style, layout=lay)
    if w.task == "inference":
        batch_w = W.IntSlider(value=w.concurrency or 0, min=0, max=4096, description="Concurrency (0 = auto)",
                              continuous_update=False, style=style, layout=lay)
        key = "workload.concurrency"
    else:
        batch_w = W.IntSlider(value=int(w.global_batch_tokens or 0), min=0, max=64_000_000, step=262_144,
                              description="Global batch tokens (0 = auto)", continuous_update=False, style=style, layout=lay)
        key = "workload.global_batch_tokens"
    cand_w = W.SelectMultiple(options=every, value=tuple(start), rows=8, description="Candidates", style=style, layout=lay)
    for c, cls in ((prec_w, "precision"), (batch_w, "batch"), (cand_w, "candidates")):
        c.add_class(f"wb-compare-{cls}")
    cols = (["accelerator", "chips", "fits", "training_days", "training_days_low", "training_days_high", "mfu",
             "tp", "pp", "dp", "ep", "cp", "zero", "recompute", "micro_batch", "reason"]
            if w.task != "inference" else
            ["accelerator", "chips", "fits", "tp", "replicas", "batch", "ttft_ms", "tpot_ms", "output_tokens_per_s",
             "output_tokens_per_s_low", "output_tokens_per_s_high", "meets_slo", "reason"])

    def show(precision, batch, candidates):
        changes = {"workload.precision": precision, key: (batch or None), "candidates.accelerators": list(candidates) or None}
        if w.task == "inference" and precision != w.precision:
            changes["workload.kv_cache_precision"] = None
        s2, problems = _with(s, changes)
        if s2 is None:
            display(Markdown("**Cannot use these values:** " + "; ".join(problems)))
            return
        df = perf.compare(s2)
        display(cp.comparison(df))
        display(df[cols])

    out = W.interactive_output(show, {"precision": prec_w, "batch": batch_w, "candidates": cand_w})
    box = W.VBox([W.VBox([prec_w, batch_w, cand_w]), out])
    box.add_class("wb-compare-explorer")
    return box
# --- end: profile & comparison ---

# --- section: scaling (notebook 03) ---
# ``scaling_explorer(s)``: chips, interconnect and parallelism limits for the scenario's candidates;
# every change re-runs ``scaling.search`` (vectorised, well under a second) and redraws the fastest
# layouts as stacked bars (SVG inside an Output: offline in JupyterLab and Voila).

def _scaling_pow2(lo: int, hi: int) -> list[int]:
    from .scaling import powers_of_two

    return powers_of_two(lo, hi)


def scaling_explorer(s, efficiency=None) -> W.VBox:
    """Controls for one scenario: accelerator, chip count, fast domain (NVLink domain / TPU slice
    option from data/topology.csv), network bandwidth per chip, and caps on TP and PP, ZeRO stage
    and recomputation; the output shows the fastest configurations that fit (or, for an inference
    scenario, throughput and latency against tensor-parallel size)."""
    import pandas as pd
    from IPython.display import Markdown, display

    from . import catalog, comm, scaling
    from .charts import scaling as sc
    from .errors import InputError
    from .profile import workload_profile
    from .scenario import Parallelism

    w = s.workload
    p = workload_profile(w)
    names = [a for a in scaling._candidates(s) if scaling._usable(catalog.accelerator(a), w.precision)]
    if not names:
        return W.VBox([W.HTML(f"<b>No candidate accelerator has a {w.precision} peak in the catalog.</b>")])
    style = {"description_width": "150px"}
    lay = W.Layout(width="440px")
    acc_w = W.Dropdown(options=names, value=names[0], description="Accelerator", style=style, layout=lay)
    start = (s.cluster.chips if s.cluster and s.cluster.chips else None) or s.constraints.max_chips or 1024
    counts = _scaling_pow2(1, max(16384, int(start)))
    chips_w = W.SelectionSlider(options=counts, value=min(counts, key=lambda c: abs(c - start)), description="Chips",
                                continuous_update=False, style=style, layout=lay)
    domain_w = W.Dropdown(description="Fast domain", style=style, layout=lay)
    net_w = W.FloatLogSlider(min=-1, max=3, step=0.05, description="Network GB/s per chip", readout_format=".3g",
                             continuous_update=False, style=style, layout=lay)
    tp_w = W.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128], value=128, description="Max tensor parallel",
                             continuous_update=False, style=style, layout=lay)
    pp_w = W.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128], value=128, description="Max pipeline parallel",
                             continuous_update=False, style=style, layout=lay)
    zero_w = W.Dropdown(options=[("any", None), ("0 (none)", 0), ("1 (optimizer)", 1), ("2 (+ gradients)", 2),
                                 ("3 (FSDP)", 3)], value=None, description="ZeRO stage", style=style, layout=lay)
    rc_w = W.Dropdown(options=[("any", None), ("none", "none"), ("selective", "selective"), ("full", "full")],
                      value=None, description="Recomputation", style=style, layout=lay)
    for c, cls in ((acc_w, "accelerator"), (chips_w, "chips"), (domain_w, "domain"), (net_w, "network"),
                   (tp_w, "max-tp"), (pp_w, "max-pp"), (zero_w, "zero"), (rc_w, "recompute")):
        c.add_class(f"wb-scaling-{cls}")

    def _set_acc(*_):
        acc = catalog.accelerator(acc_w.value)
        opts = comm.topology_options(acc)
        domains = list(opts["domain"]) if len(opts) else ["catalog default"]
        default = opts[opts["default"].astype(bool)]["domain"].iloc[0] if len(opts) and opts["default"].any() else domains[0]
        domain_w.options = domains
        domain_w.value = default
        inter = acc.get("inter_node_bytes_per_s")
        # no network figure in the catalog: start at 50 GB/s (one 400 Gb/s NIC per chip) for the what-if
        net_w.value = float(inter) / 1e9 if inter is not None and not pd.isna(inter) else 50.0

    _set_acc()
    acc_w.observe(_set_acc, "value")

    def show(accelerator, chips, domain, network, max_tp, max_pp, zero, recompute):
        acc = catalog.accelerator(accelerator)
        try:
            if w.task == "inference":
                topo = comm.topology(acc, None, None if domain == "catalog default" else domain)
                df = scaling.inference_tp_curve(p, acc, w, efficiency=efficiency, topology=topo,
                                                memory_headroom=s.constraints.min_memory_headroom)
                display(sc.tp_curves(df))
                return
            topo = comm.topology(acc, chips, None if domain == "catalog default" else domain,
                                 inter_node_bytes_per_s=network * 1e9)
            pins = (s.cluster.parallelism.model_dump(exclude_none=True) if s.cluster and s.cluster.parallelism else {})
            pins.update({k: v for k, v in (("zero", zero), ("recompute", recompute)) if v is not None})
            table = scaling.search(p, acc, chips, w, Parallelism(**pins), efficiency, topology=topo,
                                   memory_headroom=s.constraints.min_memory_headroom, max_tp=max_tp, max_pp=max_pp)
        except InputError as e:
            display(Markdown("**Cannot price this:** " + "; ".join(e.problems)))
            return
        except ImportError as e:
            display(Markdown(f"**The efficiency model is missing:** {e}"))
            return
        if table.empty:
            display(Markdown(f"**Nothing fits** on {chips:,} x {accelerator} with these limits."))
            return
        best = {k: scaling._py(v) for k, v in table.iloc[0].to_dict().items()}
        best.update(chips=chips, accelerator=accelerator, task=w.task, topology=topo.describe())
        if w.tokens:
            best["time_to_train_days"] = w.tokens / best["tokens_per_s"] / 86400.0
        display(Markdown(scaling.explain(best)))
        display(sc.configurations_breakdown(table))

    out = W.interactive_output(show, {"accelerator": acc_w, "chips": chips_w, "domain": domain_w, "network": net_w,
                                      "max_tp": tp_w, "max_pp": pp_w, "zero": zero_w, "recompute": rc_w})
    controls = [acc_w, domain_w] if w.task == "inference" else [acc_w, chips_w, domain_w, net_w, tp_w, pp_w, zero_w, rc_w]
    box = W.VBox([W.VBox(controls), out])
    box.add_class("wb-scaling-explorer")
    return box
# --- end: scaling ---

# --- section: cost & decision (notebooks 04, 05) ---

def _cost_controls(s):
    """Sliders for the pricing inputs, starting at the scenario's values (keys = scenario keys)."""
    p = s.pricing
    common = {"continuous_update": False, "style": {"description_width": "170px"},
              "layout": W.Layout(width="460px")}
    return {
        "pricing.utilization": W.FloatSlider(value=p.utilization, min=0.05, max=1.0, step=0.05,
                                             description="utilisation", **common),
        "pricing.spot_interruptions_per_hour": W.FloatLogSlider(
            value=max(p.spot_interruptions_per_hour, 1e-4), base=10, min=-4, max=0, step=0.1,
            description="spot interruptions / h", readout_format=".3g", **common),
        "pricing.negotiated_discount": W.FloatSlider(value=p.negotiated_discount, min=0.0, max=0.6, step=0.05,
                                                     description="negotiated discount", **common),
        "pricing.horizon_months": W.IntSlider(value=int(round(p.horizon_months)), min=1, max=60, step=1,
                                              description="horizon (months)", **common),
        "pricing.electricity_usd_per_kwh": W.FloatSlider(value=p.electricity_usd_per_kwh, min=0.0, max=0.5,
                                                         step=0.01, description="electricity ($/kWh)", **common),
    }


def cost_explorer(s, perf_df=None):
    """Notebook 04: move utilisation, interruption rate, discount, horizon and electricity price and
    see the ways to pay, the break-even curves and the break-even table update (the performance
    estimate is computed once; prices are re-run with ``with_overrides``)."""
    from IPython.display import display

    from . import cost, perf
    from .charts import cost as cost_charts
    from .errors import InputError
    from .scenario import with_overrides

    perf_df = perf.compare(s) if perf_df is None else perf_df
    controls = _cost_controls(s)
    names = {k: k.split(".")[-1] for k in controls}
    out = W.Output()

    def update(**values):
        out.clear_output(wait=True)
        with out:
            try:
                s2 = with_overrides(s, **{k: values[names[k]] for k in controls})
            except InputError as e:
                print("\n".join(e.problems))
                return
            priced = cost.price_options(s2, perf_df)
            display(cost_charts.pricing_models(priced))
            display(cost_charts.breakeven_chart(cost.breakeven_curves(s2, priced)))
            display(cost.breakeven(s2, priced))

    W.interactive_output(update, {names[k]: w for k, w in controls.items()})  # runs update once now
    return W.VBox([W.HTML("<b>Pricing inputs</b>"), *controls.values(), out])


def decision_explorer(s, perf_df=None):
    """Notebook 05: move the weights and see the recommendation, its reasons and the ranking change."""
    from IPython.display import HTML, display

    from . import cost, decision, perf
    from .charts import cost as cost_charts
    from .errors import InputError
    from .scenario import with_overrides

    perf_df = perf.compare(s) if perf_df is None else perf_df
    priced = cost.price_options(s, perf_df)
    mc = cost.monte_carlo(s, priced)
    w = s.weights
    common = {"continuous_update": False, "min": 0.0, "max": 1.0, "step": 0.05,
              "style": {"description_width": "120px"}, "layout": W.Layout(width="420px")}
    sliders = {k: W.FloatSlider(value=getattr(w, k), description=k.replace("_", " "), **common)
               for k in ("cost", "time", "ecosystem", "portability", "supply_risk")}
    out = W.Output()

    def update(**values):
        out.clear_output(wait=True)
        with out:
            try:
                s2 = with_overrides(s, **{f"weights.{k}": v for k, v in values.items()})
            except InputError as e:
                print("\n".join(e.problems))
                return
            rec = decision.recommend(s2, perf_df, priced, mc)
            display(HTML(rec._repr_html_()))
            display(rec.ranking.drop(columns=["option"], errors="ignore").head(12))
            display(cost_charts.pareto_chart(rec.ranking))

    W.interactive_output(update, sliders)  # runs update once now
    return W.VBox([W.HTML("<b>Weights</b> (relative; the score divides by their sum)"), *sliders.values(), out])

# --- end: cost & decision ---

# --- section: app (the stakeholder app) ---
# The stakeholder app (notebooks/app.ipynb, served by ``python -m workbook.app``). One function,
# ``app(scenario)``, builds the page: scenario picker, recommendation card, controls, and tabs for
# the decision, workload, comparison, scaling and cost. Every control is a scenario key; a change
# re-validates the scenario (``with_overrides``), re-runs ``analysis.analyse`` and redraws.
# Charts are static SVG from vl-convert inside ``<img>`` (offline; no Vega from a CDN). Expected
# mistakes (InputError) and missing modules appear as sentences in the page, never tracebacks.

import base64 as _base64
import html as _html
import importlib as _importlib
import math as _math
import sys as _sys
import time as _time
import traceback as _traceback
from typing import get_args as _get_args

_APP_TABS = ("Decision", "Workload", "Comparison", "Scaling", "Cost")
_APP_WEIGHTS = ("cost", "time", "ecosystem", "portability", "supply_risk")

_APP_CSS = """<style>
.wb-app { max-width: 1600px; font-size: 14px; }
.wb-app .wb-sub { color: #555; margin: 0 0 8px 0; }
.wb-app .wb-controls { border-right: 1px solid #ddd; padding-right: 12px; }
.wb-app .wb-controls h4 { margin: 10px 0 4px 0; }
.wb-app .wb-rec { border: 2px solid #2ca02c; border-radius: 6px; padding: 10px 14px; background: #f4fbf4; }
.wb-app .wb-rec.wb-none { border-color: #d62728; background: #fdf3f3; }
.wb-app .wb-rec-label { text-transform: uppercase; font-size: 11px; letter-spacing: .06em; color: #2a6b2a; }
.wb-app .wb-rec-headline { font-size: 20px; font-weight: 600; margin: 2px 0 6px 0; }
.wb-app .wb-rec ul { margin: 4px 0 4px 18px; padding: 0; }
.wb-app .wb-figures { display: flex; flex-wrap: wrap; gap: 8px; margin: 6px 0 10px 0; }
.wb-app .wb-figure { background: #fff; border: 1px solid #cfe6cf; border-radius: 4px; padding: 4px 10px; line-height: 1.3; }
.wb-app .wb-figure b { display: block; font-size: 17px; }
.wb-app .wb-figure span { font-size: 11.5px; color: #555; }
.wb-app .wb-msg { border-left: 4px solid #d62728; background: #fdf3f3; padding: 8px 12px; margin: 6px 0; }
.wb-app .wb-msg.wb-note { border-left-color: #ff7f0e; background: #fff8ef; }
.wb-app .wb-msg ul { margin: 4px 0 0 18px; padding: 0; }
.wb-app .wb-status { color: #777; font-size: 12px; }
.wb-app table.wb-table { border-collapse: collapse; font-size: 12.5px; margin: 4px 0 10px 0; }
.wb-app table.wb-table th, .wb-app table.wb-table td { padding: 3px 8px; border-bottom: 1px solid #e5e5e5; text-align: right; white-space: nowrap; }
.wb-app table.wb-table .wb-str, .wb-app table.wb-table th.wb-text { text-align: left; }
.wb-app table.wb-table td.wb-text { text-align: left; white-space: normal; min-width: 180px; }
.wb-app table.wb-table th { background: #f5f5f5; }
.wb-app table.wb-table td:first-child, .wb-app table.wb-table th:first-child { text-align: left; }
.wb-app table.wb-table tr.wb-best td { font-weight: 600; background: #f4fbf4; }
.wb-app .wb-chart img { max-width: 100%; height: auto; margin: 6px 0; }
.wb-app .wb-pane { overflow-x: auto; }
.wb-app .widget-label { min-width: 0; }
</style>"""


def _app_esc(v) -> str:
    return _html.escape("" if v is None else str(v))


def _app_fmt(v) -> str:
    """A number for people: 3 significant digits, thousands separators; blanks stay blank."""
    if v is None or (isinstance(v, float) and not _math.isfinite(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int,)) and not isinstance(v, bool):
        return f"{v:,}"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not _math.isfinite(x):
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 1e15:
        return f"{x:.3g}"
    for size, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if abs(x) >= size:
            return f"{x / size:.3g} {word}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _app_message(title: str, lines=(), kind: str = "error") -> str:
    items = "".join(f"<li>{_app_esc(x)}</li>" for x in lines)
    cls = "wb-msg" + (" wb-note" if kind == "note" else "")
    return (f'<div class="{cls}" role="{"alert" if kind == "error" else "note"}"><b>{_app_esc(title)}</b>'
            + (f"<ul>{items}</ul>" if items else "") + "</div>")


def _app_cell(v) -> str:
    """One table cell's text: lists joined, blanks as a dash, numbers readable."""
    import pandas as pd

    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v))
    if isinstance(v, str):
        return v
    if v is None or pd.isna(v):
        return "–"
    return _app_fmt(v.item() if hasattr(v, "item") else v)


def _app_table(df, columns=None, highlight_first: bool = False, labels: dict | None = None) -> str:
    """An HTML table of a DataFrame: escaped text, readable numbers (right-aligned), words
    left-aligned (long ones wrap), the first row optionally highlighted."""
    if df is None or len(df) == 0:
        return "<p><i>No rows.</i></p>"
    cols = [c for c in (columns or list(df.columns)) if c in df.columns]
    labels = labels or {}
    words = {c: df[c].map(lambda v: isinstance(v, str)).mean() > 0.5 for c in cols}
    long = {c: words[c] and df[c].map(lambda v: len(v) if isinstance(v, str) else 0).max() > 32 for c in cols}
    kind = {c: ' class="wb-text"' if long[c] else (' class="wb-str"' if words[c] else "") for c in cols}
    head = "".join(f"<th{kind[c]}>{_app_esc(labels.get(c, c))}</th>" for c in cols)
    rows = []
    for i, rec in enumerate(df[cols].to_dict("records")):
        cells = "".join(f"<td{kind[c]}>{_app_esc(_app_cell(rec[c]))}</td>" for c in cols)
        best = ' class="wb-best"' if highlight_first and i == 0 else ""
        rows.append(f"<tr{best}>{cells}</tr>")
    return f'<table class="wb-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _app_chart_html(chart, alt_text: str, memo: dict | None = None) -> str:
    """A chart as a static SVG ``<img>`` (vl-convert; no script, no CDN). With a ``memo`` (the
    page's own), an unchanged chart is not drawn again."""
    import json

    import vl_convert as vlc

    spec = chart.to_dict()
    key = "svg:" + json.dumps(spec, sort_keys=True, default=str) if memo is not None else None
    if key is not None and key in memo:
        data = memo[key]
    else:
        data = _base64.b64encode(vlc.vegalite_to_svg(spec).encode()).decode()
        if key is not None:
            for old in [k for k in memo if k.startswith("svg:")][:-16]:   # keep the last few charts
                memo.pop(old)
            memo[key] = data
    return (f'<div class="wb-chart"><img alt="{_app_esc(alt_text)}" '
            f'src="data:image/svg+xml;base64,{data}"></div>')


def _app_module(name: str):
    """Import ``workbook.<name>``; a missing module is reported in words, not hidden."""
    try:
        return _importlib.import_module(f"workbook.{name}"), None
    except ImportError as e:
        return None, f"workbook.{name} is not available yet ({e})."


def _app_log_exception() -> None:
    """The full traceback goes to the kernel's stderr (Voila's server log), not to the page."""
    _traceback.print_exc(file=_sys.__stderr__)


def _app_scenario_label(name: str) -> str:
    from .scenario import load_scenario
    from .errors import InputError

    try:
        return f"{load_scenario(name).title}"
    except InputError:
        return f"{name} (invalid file)"


def _app_pricing_label(pm: str) -> str:
    """A way to pay in words, as the charts' legends name it."""
    from .charts.cost import MODEL_NAMES

    return MODEL_NAMES.get(pm, pm)


class _App:
    """State of one app page (one per kernel; no module-level state)."""

    def __init__(self, scenario: str | None):
        from .scenario import scenario_names

        names = scenario_names()
        if scenario not in names:
            scenario = names[0] if names else None
        self.version = 0
        self.quiet = False
        self.base = None            # the validated scenario as loaded from its file
        self.scenario = None        # the scenario with the controls' changes, as last analysed
        self.analysis = None
        self.stale = set()
        self.memo: dict = {}        # slow results that only some inputs change (scaling curves)
        self.css = W.HTML(_APP_CSS)
        self.picker = W.Dropdown(options=[(_app_scenario_label(n), n) for n in names], value=scenario,
                                 description="Scenario", layout=W.Layout(width="100%", max_width="900px"),
                                 style={"description_width": "70px"})
        self.picker.add_class("wb-scenario")
        self.about = W.HTML()
        self.rec = W.HTML()
        self.rec.add_class("wb-recommendation")
        self.status = W.HTML()
        self.status.add_class("wb-status-box")
        # controls: every one is a scenario key
        sl = dict(continuous_update=False, style={"description_width": "110px"}, layout=W.Layout(width="300px"))
        self.utilization = W.FloatSlider(min=0.05, max=1.0, step=0.05, readout_format=".0%",
                                         description="Utilisation", **sl)
        self.utilization.add_class("wb-utilization")
        self.pricing_model = W.Dropdown(description="Pricing model", style=sl["style"], layout=W.Layout(width="300px"),
                                        tooltip="Which way to pay to consider")
        self.pricing_model.add_class("wb-pricing-model")
        self.load = W.BoundedFloatText(min=1e-6, max=1e12, step=1, description="Load", continuous_update=False,
                                       style=sl["style"], layout=W.Layout(width="300px"))
        self.load.add_class("wb-load")
        self.load_key = None
        self.load_scale = 1.0
        self.weights = {k: W.FloatSlider(min=0, max=1, step=0.05, description=k.replace("_", " ").capitalize(),
                                         readout_format=".2f", **sl) for k in _APP_WEIGHTS}
        for k, w in self.weights.items():
            w.add_class(f"wb-weight-{k}")
        self.candidates = W.GridBox(layout=W.Layout(grid_template_columns="repeat(2, 165px)", max_height="340px",
                                                    overflow="auto"))
        self.candidates.add_class("wb-candidates")
        self.checks: dict[str, W.Checkbox] = {}
        self.reset = W.Button(description="Reset to the scenario's values", layout=W.Layout(width="300px"))
        self.reset.add_class("wb-reset")
        controls = W.VBox([
            W.HTML("<h4>Pricing</h4>"), self.utilization, self.pricing_model,
            W.HTML("<h4>Load</h4>"), self.load,
            W.HTML("<h4>What matters (weights)</h4>"), *self.weights.values(),
            W.HTML("<h4>Candidates</h4>"), self.candidates,
            self.reset,
        ], layout=W.Layout(width="330px", min_width="330px"))
        controls.add_class("wb-controls")
        self.panes = [W.HTML() for _ in _APP_TABS]
        for name, pane in zip(_APP_TABS, self.panes):
            pane.add_class(f"wb-pane-{name.lower()}")
            pane.add_class("wb-pane")
        self.tabs = W.Tab(children=self.panes)
        for i, name in enumerate(_APP_TABS):
            self.tabs.set_title(i, name)
        self.tabs.add_class("wb-tabs")
        main = W.VBox([self.rec, self.status, self.tabs], layout=W.Layout(flex="1 1 auto", padding="0 0 0 14px"))
        self.box = W.VBox([self.css, self.picker, self.about,
                           W.HBox([controls, main], layout=W.Layout(align_items="flex-start"))])
        self.box.add_class("wb-app")
        # wiring
        self.picker.observe(self._on_scenario, "value")
        for w in (self.utilization, self.pricing_model, self.load, *self.weights.values()):
            w.observe(self._on_control, "value")
        self.tabs.observe(self._on_tab, "selected_index")
        self.reset.on_click(lambda _b: self._load_scenario())
        self._load_scenario()

    # --- scenario -> controls ---------------------------------------------------------------------
    def _load_scenario(self) -> None:
        from .errors import InputError
        from .scenario import load_scenario

        name = self.picker.value
        self.base = None
        if name is None:
            self._show_error("No scenario files found in data/scenarios/.", [])
            return
        try:
            s = load_scenario(name)
        except InputError as e:
            self.about.value = ""
            self._show_error(f"The scenario {name} cannot be used:", e.problems)
            return
        self.base = s
        self.about.value = f'<p class="wb-sub">{_app_esc(s.description or "")}</p>'
        self.quiet = True
        try:
            self._set_controls(s)
        finally:
            self.quiet = False
        self._recompute()

    def _set_controls(self, s) -> None:
        from . import catalog
        from .scenario import PricingModel

        self.utilization.value = s.pricing.utilization
        self.pricing_model.options = [("all of the scenario's", "")] + [(_app_pricing_label(m), m) for m in _get_args(PricingModel)]
        self.pricing_model.value = ""
        w = s.workload
        if w.task == "inference" and w.requests_per_s is not None:
            self.load_key, self.load_scale, label, value = "workload.requests_per_s", 1.0, "Requests/s", w.requests_per_s
        elif w.task == "inference" and w.concurrency is not None:
            self.load_key, self.load_scale, label, value = "workload.concurrency", 1.0, "Concurrent users", w.concurrency
        elif w.task != "inference" and w.tokens is not None:
            self.load_key, self.load_scale, label, value = "workload.tokens", 1e9, "Tokens (billions)", w.tokens / 1e9
        else:
            self.load_key, self.load_scale, label, value = None, 1.0, "Load", 1.0
        self.load.description = label
        self.load.value = value
        self.load.disabled = self.load_key is None
        for k, sw in self.weights.items():
            sw.value = getattr(s.weights, k)
        ids = s.candidates.accelerators or catalog.accelerators()["accelerator"].tolist()
        for c in self.checks.values():       # the previous scenario's boxes: unwired and closed
            c.unobserve(self._on_control, "value")
            c.close()
        self.checks = {a: W.Checkbox(value=True, description=a, indent=False, layout=W.Layout(width="160px"))
                       for a in ids}
        for a, c in self.checks.items():
            c.add_class("wb-candidate")
            c.observe(self._on_control, "value")
        self.candidates.children = list(self.checks.values())

    # --- controls -> overrides --------------------------------------------------------------------
    def overrides(self) -> dict:
        """The scenario keys the controls change, relative to the scenario file."""
        s, out = self.base, {}
        if abs(self.utilization.value - s.pricing.utilization) > 1e-9:
            out["pricing.utilization"] = round(self.utilization.value, 4)
        if self.pricing_model.value:
            out["pricing.models"] = [self.pricing_model.value]
            if s.candidates.pricing_models:
                out["candidates.pricing_models"] = [self.pricing_model.value]
        if self.load_key is not None:
            current = self.load.value * self.load_scale
            base = _app_get(s, self.load_key)
            if base is None or abs(current - base) > 1e-9 * max(1.0, abs(base)):
                out[self.load_key] = int(round(current)) if self.load_key == "workload.concurrency" else current
        for k, sw in self.weights.items():
            if abs(sw.value - getattr(s.weights, k)) > 1e-9:
                out[f"weights.{k}"] = round(sw.value, 4)
        chosen = [a for a, c in self.checks.items() if c.value]
        if len(chosen) != len(self.checks):
            out["candidates.accelerators"] = chosen
        return out

    def _on_scenario(self, change) -> None:
        self._load_scenario()

    def _on_control(self, change) -> None:
        if not self.quiet:
            self._recompute()

    def _on_tab(self, change) -> None:
        i = change["new"]
        if i is not None and i in self.stale:
            self.panes[i].value = f"<p class='wb-sub'>Computing the {_APP_TABS[i].lower()} view…</p>"
            self._render_tab(i)

    # --- compute and draw -------------------------------------------------------------------------
    def _recompute(self) -> None:
        from .errors import InputError
        from .scenario import with_overrides

        if self.base is None:
            return
        t0 = _time.perf_counter()
        self.analysis = None
        changes = self.overrides()
        if "candidates.accelerators" in changes and not changes["candidates.accelerators"]:
            self._show_error("Tick at least one candidate accelerator.", [])
            return
        try:
            s = with_overrides(self.base, **changes) if changes else self.base
        except InputError as e:
            self._show_error("These settings are not a valid scenario:", e.problems)
            return
        pipeline, missing = _app_module("analysis")
        analysis, problem = None, None
        if pipeline is not None:
            try:
                analysis = pipeline.analyse(s)
            except InputError as e:
                problem = ("The analysis cannot run on these inputs:", e.problems)
            except ImportError as e:
                problem = ("A part of the workbook is missing, so there is no analysis yet:", [str(e)])
            except Exception as e:  # an unexpected failure: say what failed; the traceback goes to the log
                _app_log_exception()
                problem = ("The analysis failed (a bug in the workbook, logged on the server):",
                           [f"{type(e).__name__}: {e}"])
        else:
            problem = ("A part of the workbook is missing, so there is no analysis yet:", [missing])
        self.scenario = s
        self.analysis = analysis
        if problem:
            self.rec.value = _app_message(*problem)
        else:
            self.rec.value = _app_recommendation_html(analysis)
        self.stale = set(range(len(_APP_TABS)))
        self._render_tab(self.tabs.selected_index or 0)
        took = f" (computed in {_time.perf_counter() - t0:.2f} s)"
        self._set_status((f"Showing the scenario with changed: {', '.join(changes)}{took}" if changes
                          else f"Showing the scenario file's own values{took}"), "error" if problem else "ok")

    def _render_tab(self, i: int) -> None:
        from .errors import InputError

        name = _APP_TABS[i]
        try:
            html = _APP_RENDERERS[name](self.scenario, self.analysis, self.memo)
        except InputError as e:
            html = _app_message(f"The {name.lower()} view cannot be drawn for these inputs:", e.problems)
        except Exception as e:
            _app_log_exception()
            html = _app_message(f"The {name.lower()} view failed (logged on the server):", [f"{type(e).__name__}: {e}"])
        self.panes[i].value = html
        self.stale.discard(i)

    def _show_error(self, title: str, lines) -> None:
        self.analysis = None
        self.rec.value = _app_message(title, lines)
        for p in self.panes:
            p.value = ""
        self.stale = set()
        self._set_status("Not updated: see the message above.", "error")

    def _set_status(self, text: str, state: str) -> None:
        self.version += 1
        self.status.value = (f'<span class="wb-status" data-version="{self.version}" data-state="{state}">'
                             f"{_app_esc(text)}</span>")


def _app_get(s, dotted: str):
    node = s
    for part in dotted.split("."):
        node = getattr(node, part, None)
    return node


def _app_usd(x) -> str:
    """Money for people (``narrative.usd``); blanks stay blank."""
    from .narrative import usd

    text = usd(x)
    return "–" if text == "n/a" else text


def _app_key_figures(rec) -> list[tuple[str, str]]:
    """The recommendation's few numbers, as (value, what it is) pairs."""
    f = getattr(rec, "figures", None) or {}
    out = []
    if "cost_usd" in f:
        out.append((_app_usd(f["cost_usd"]), f"for the run, point estimate (band {_app_usd(f.get('cost_usd_low'))}–"
                                             f"{_app_usd(f.get('cost_usd_high'))})"))
    if "usd_per_million_tokens" in f:
        out.append((_app_usd(f["usd_per_million_tokens"]),
                    f"per million output tokens, point estimate (band {_app_usd(f.get('usd_per_million_tokens_low'))}–"
                    f"{_app_usd(f.get('usd_per_million_tokens_high'))})"))
    if "usd_per_month" in f:
        out.append((_app_usd(f["usd_per_month"]), "a month"))
    if "time_days" in f:
        out.append((f"{f['time_days']:.1f} days", "to finish"))
    if "chips" in f:
        out.append((f"{f['chips']:,.0f}", "chips"))
    if "p_cheapest" in f:
        out.append((f"{f['p_cheapest']:.0%}", "chance it is the cheapest (Monte Carlo)"))
    if "score" in f:
        out.append((f"{f['score']:.2f}", "weighted score of 1"))
    return out


def _app_recommendation_html(analysis) -> str:
    rec = analysis.recommendation if analysis else None
    if rec is None:
        why = _app_module("decision")[1] or _app_module("cost")[1]
        return _app_message("No recommendation: the analysis gave performance figures but no prices or decision.",
                            [why] if why else [], "note")
    data = " ".join(f'data-{k.replace("_", "-")}="{_app_esc(getattr(rec, k, None) or "")}"'
                    for k in ("accelerator", "provider", "offering", "pricing_model"))
    headline = rec.headline() if hasattr(rec, "headline") else str(rec.accelerator)
    none = "" if rec.accelerator else " wb-none"
    parts = [f'<div class="wb-rec{none}" {data}><div class="wb-rec-label">Recommendation</div>',
             f'<div class="wb-rec-headline">{_app_esc(headline)}</div>']
    figs = _app_key_figures(rec) if rec.accelerator else []
    if figs:
        parts.append('<div class="wb-figures">' + "".join(
            f'<div class="wb-figure"><b>{_app_esc(v)}</b><span>{_app_esc(k)}</span></div>' for v, k in figs) + "</div>")
    reasons = "".join(f"<li>{_app_esc(r)}</li>" for r in (rec.reasons or []))
    if reasons:
        parts.append(f'<div class="wb-why"><b>Why</b><ul class="wb-reasons">{reasons}</ul></div>')
    runner = rec.runner_up
    if runner:
        text = runner.get("summary") if isinstance(runner, dict) else str(runner)
        parts.append(f'<div class="wb-runner-up"><b>Runner-up:</b> {_app_esc(text)}</div>')
    flips = rec.flip_conditions or []
    if flips:
        parts.append('<div class="wb-flip"><b>What would change the decision</b><ul>'
                     + "".join(f"<li>{_app_esc(x)}</li>" for x in flips) + "</ul></div>")
    parts.append("</div>")
    return "".join(parts)


_APP_RANKING_LABELS = {   # in the order shown: the decision's columns first, the long offering id last
    "rank": "#", "accelerator": "Accelerator", "pricing_model": "Pay with", "score": "Score",
    "cost_usd": "Cost of the run", "usd_per_million_tokens": "$ per M output tokens", "band": "band",
    "usd_per_month": "$ a month", "time_days": "Days", "tpot_ms": "ms per token", "p_cheapest": "P(cheapest)",
    "offering": "Offering",
}


def _app_ranking(rec, top: int = 12) -> str:
    """The decision's ranking table, with money as money and the cost band next to the cost."""
    import pandas as pd

    df = rec.ranking.head(top).copy()
    for m in ("cost_usd", "usd_per_million_tokens"):
        if m in df:
            if f"{m}_low" in df and f"{m}_high" in df:
                df["band"] = [f"{_app_usd(lo)}–{_app_usd(hi)}" for lo, hi in zip(df[f"{m}_low"], df[f"{m}_high"])]
            df[m] = df[m].map(_app_usd)
    if "usd_per_month" in df:
        df["usd_per_month"] = df["usd_per_month"].map(_app_usd)
    if "pricing_model" in df:
        df["pricing_model"] = df["pricing_model"].map(_app_pricing_label)
    if "p_cheapest" in df:
        df["p_cheapest"] = df["p_cheapest"].map(lambda v: "–" if pd.isna(v) else f"{v:.0%}")
    cols = [c for c in _APP_RANKING_LABELS if c in df]
    more = len(rec.ranking) - len(df)
    note = f"<p class='wb-sub'>Top {len(df)} of {len(rec.ranking)} options (accelerator x way to pay).</p>" if more > 0 else ""
    return _app_table(df, cols, highlight_first=True, labels=_APP_RANKING_LABELS) + note


# The key charts of each tab: (module, function, what it shows, arguments from (scenario, analysis)).
# The chart functions are the package's own (workbook/charts/*.py): tidy DataFrame in, alt.Chart out.
def _app_rec(analysis):
    return analysis.recommendation if analysis else None


def _app_winner_option(analysis):
    rec = _app_rec(analysis)
    if rec is None or rec.ranking is None or rec.ranking.empty or "option" not in rec.ranking:
        return None
    return rec.ranking["option"].iloc[0]


def _app_tornado_args(s, analysis):
    from . import cost

    option = _app_winner_option(analysis)
    return None if option is None else (cost.tornado(s, analysis.priced, option),)


def _app_breakeven_args(s, analysis):
    from . import cost

    rec = _app_rec(analysis)
    return (cost.breakeven_curves(s, analysis.priced, accelerator=rec.accelerator if rec else None),)


def _app_mc_args(s, analysis):
    from . import cost

    return (cost.mc_histogram(s, analysis.priced),)


def _app_roofline_args(s, analysis):
    from . import perf

    return (perf.roofline_lines(s), perf.operating_points(s, analysis.perf if analysis else None))


def _app_memory_args(s, analysis):
    from . import perf

    return (perf.memory_breakdown(s),)


_APP_CHARTS: dict[str, list[tuple]] = {
    "Workload": [("charts.perf", "memory_breakdown", "Memory of one model copy by component", _app_memory_args)],
    "Comparison": [("charts.perf", "comparison", "Each candidate side by side, with its band",
                    lambda s, a: (a["perf"],) if a else None),
                   ("charts.perf", "roofline", "Roofline: where the workload sits on each chip", _app_roofline_args)],
    "Decision": [("charts.cost", "pareto_chart", "Cost against time of every ranked option",
                  lambda s, a: (_app_rec(a).ranking,) if _app_rec(a) is not None else None)],
    "Cost": [("charts.cost", "pricing_models", "Ways to pay, cheapest offering of each accelerator",
              lambda s, a: (a["priced"],) if a.get("priced") is not None else None),
             ("charts.cost", "mc_distribution", "Monte Carlo distribution of the cost", _app_mc_args),
             ("charts.cost", "tornado_chart", "Which input moves the cost most", _app_tornado_args),
             ("charts.cost", "breakeven_chart", "When a commitment or a purchase pays off", _app_breakeven_args)],
}


def _app_charts(s, analysis, tab: str, memo: dict | None = None) -> str:
    """The tab's charts as static SVG images; a missing chart module or function is said in words."""
    out = []
    for module, function, what, make_args in _APP_CHARTS.get(tab, []):
        mod, missing = _app_module(module)
        fn = getattr(mod, function, None) if mod is not None else None
        if fn is None:
            out.append(_app_message(f"The chart '{what}' is not available:",
                                    [missing or f"workbook.{module} has no function {function}()."], "note"))
            continue
        try:
            args = make_args(s, analysis)
            if args is None:
                continue
            out.append(_app_chart_html(fn(*args), what, memo))
        except Exception as e:
            _app_log_exception()
            out.append(_app_message(f"The chart '{what}' failed (logged on the server):", [f"{type(e).__name__}: {e}"]))
    return "".join(out)


def _app_view_decision(s, analysis, memo: dict) -> str:
    if analysis is None:
        return ""
    rec = analysis.recommendation
    if rec is None:
        return _app_message("The ranking needs the cost and decision modules:",
                            [x for x in (_app_module("cost")[1], _app_module("decision")[1]) if x] or
                            ["they returned nothing."], "note")
    out = [_app_charts(s, analysis, "Decision", memo)]
    if rec.ranking is not None and len(rec.ranking):
        out.append("<h4>Ranking</h4>" + _app_ranking(rec))
    excluded = rec.excluded
    if excluded is not None and len(excluded):
        excluded = excluded.copy()
        if "pricing_model" in excluded:
            excluded["pricing_model"] = excluded["pricing_model"].map(_app_pricing_label)
        cols = [c for c in ("accelerator", "pricing_model", "offerings", "constraint") if c in excluded]
        out.append("<h4>Ruled out by a hard constraint</h4>"
                   + _app_table(excluded, cols, labels={"accelerator": "Accelerator", "pricing_model": "Pay with",
                                                        "offerings": "Offerings", "constraint": "Why"}))
    return "".join(out)


def _app_view_workload(s, analysis, memo: dict) -> str:
    w = s.workload
    rows = [("Task", w.task), ("Model", w.model or ("custom architecture" if w.architecture else "generic model")),
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
    rows += [("Deadline (days)", c.deadline_days), ("Budget", _app_usd(c.budget_usd) if c.budget_usd else None),
             ("Max chips", c.max_chips),
             ("Utilisation", f"{s.pricing.utilization:.0%}"), ("Horizon (months)", s.pricing.horizon_months),
             ("Pricing models", ", ".join(_app_pricing_label(m) for m in s.pricing.models)),
             ("Candidates", ", ".join(s.candidates.accelerators or ["every accelerator in the catalog"]))]
    import pandas as pd

    inputs = pd.DataFrame([(k, v) for k, v in rows if v is not None], columns=["Input", "Value"])
    out = [f"<h4>{_app_esc(s.title)}</h4>", _app_table(inputs)]
    perf, missing = _app_module("perf")
    if perf is None:
        out.append(_app_message("The size of the work needs workbook.perf:", [missing], "note"))
    else:
        out.append("<h4>Size of the work</h4>" + _app_table(perf.workload_summary(s), ["quantity", "value", "unit", "formula"],
                                                            labels={"quantity": "Quantity", "value": "Value",
                                                                    "unit": "Unit", "formula": "How"}))
    out.append(_app_charts(s, analysis, "Workload", memo))
    return "".join(out)


_APP_PERF_LABELS = {
    "accelerator": "Accelerator", "chips": "Chips", "fits": "Fits", "reason": "Why not",
    "training_days": "Days to train", "tokens_per_s": "Tokens/s", "mfu": "MFU", "step_time_s": "Step (s)",
    "chip_hours": "Chip-hours", "meets_deadline": "Meets deadline",
    "ttft_ms": "TTFT (ms)", "tpot_ms": "ms per token", "output_tokens_per_s": "Output tokens/s",
    "max_batch": "Max batch", "replicas": "Replicas", "tp": "TP", "meets_slo": "Meets latency targets",
    "calibrated": "Calibrated",
}


def _app_view_comparison(s, analysis, memo: dict) -> str:
    if analysis is None:
        return ""
    perf = analysis.perf.copy()
    training = s.workload.task != "inference"
    cols = ["accelerator", "chips", "fits"]
    cols += (["training_days", "tokens_per_s", "mfu", "step_time_s", "chip_hours", "meets_deadline"] if training
             else ["ttft_ms", "tpot_ms", "output_tokens_per_s", "max_batch", "replicas", "tp", "meets_slo"])
    cols += ["calibrated", "reason"]
    if "mfu" in perf:
        perf["mfu"] = perf["mfu"].map(lambda v: "–" if v != v or v is None else f"{v:.0%}")
    out = [_app_charts(s, analysis, "Comparison", memo),
           "<h4>Performance by accelerator</h4><p class='wb-sub'>The performance model's estimate for each "
           "candidate, at the number of chips it needs for this workload. 'Why not' says why an accelerator "
           "cannot do the work.</p>",
           _app_table(perf, cols, labels=_APP_PERF_LABELS)]
    return "".join(out)


def _app_markdown(text: str) -> str:
    """The few Markdown forms the package's explanations use: '- ' bullets and **bold**."""
    import re

    items, paras = [], []
    for line in str(text).splitlines():
        html = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", _app_esc(line.strip()))
        if line.lstrip().startswith("- "):
            items.append(f"<li>{html[2:]}</li>")
        elif html:
            paras.append(f"<p>{html}</p>")
    return "".join(paras) + (f"<ul>{''.join(items)}</ul>" if items else "")


def _app_scaling_curves(mod, s, memo: dict):
    """``scaling.scenario_curves(s)``, remembered (in the page's own ``memo``) for the last few
    inputs it depends on (workload, cluster, candidates, constraints): prices, weights and
    utilisation do not change it."""
    import json

    raw = json.dumps(s.model_dump(include={"workload", "cluster", "candidates", "constraints"}), default=str)
    key = "curves:" + json.dumps(json.loads(raw, parse_int=float), sort_keys=True)   # 24 and 24.0: one input
    if key not in memo:
        for old in [k for k in memo if k.startswith("curves:")][:-4]:   # keep the last few
            memo.pop(old)
        memo[key] = mod.scenario_curves(s)
    return memo[key]


def _app_view_scaling(s, analysis, memo: dict) -> str:
    mod, missing = _app_module("scaling")
    charts, missing_charts = _app_module("charts.scaling")
    if mod is None or charts is None:
        return _app_message("The scaling view is not available:", [m for m in (missing, missing_charts) if m], "note")
    curves = _app_scaling_curves(mod, s, memo)
    out = [_app_chart_html(charts.scaling_curves(curves), "Scaling with the number of chips", memo)]
    out.append("<h4>Where scaling stops paying</h4>" + _app_markdown(mod.verdict(curves)))
    return "".join(out)


def _app_view_cost(s, analysis, memo: dict) -> str:
    if analysis is None or analysis.priced is None:
        return _app_message("The cost view needs the cost module:", [_app_module("cost")[1] or "no prices returned."], "note")
    return _app_charts(s, analysis, "Cost", memo)


_APP_RENDERERS = {"Decision": _app_view_decision, "Workload": _app_view_workload,
                  "Comparison": _app_view_comparison, "Scaling": _app_view_scaling, "Cost": _app_view_cost}


def app(scenario: str | None = None) -> W.VBox:
    """The stakeholder app's page for one scenario name (a file in data/scenarios/); the picker
    switches to the others. Returns the widget box (display it as a cell's last expression)."""
    return _App(scenario).box
# --- end: app ---
