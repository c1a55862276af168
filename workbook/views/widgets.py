"""One explorer per notebook (ipywidgets). Each builds its controls from the scenario, so that their
starting values equal the report's; every control is keyed by a scenario path (``pricing.utilization``,
``weights.cost``, ...); a change re-validates the scenario with ``with_overrides`` and recomputes
through the one pipeline, ``analysis.analyse`` (the profile and scaling explorers show model-level
tables only). Sliders use ``continuous_update=False``; there is no module-level state.

Notebooks call one function per view, e.g. ``wb.widgets.cost_explorer(s, a)``; the batch runner
removes the cells tagged ``widgets`` before it executes a notebook.
"""
from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import ipywidgets as W
import pandas as pd
from IPython.display import HTML, Markdown, display

from .. import catalog, cost, inputs, paths
from ..model import comm, estimate, search, serving, tables
from ..analysis import Analysis, analyse, with_and_without_measurements
from ..calibrate import own as own_runs
from ..errors import InputError
from ..model.profile import workload_profile
from ..scenario import Parallelism, Scenario, with_overrides
from ..terms import PRECISIONS
from . import text
from .charts import cost as cost_charts
from .charts import perf as perf_charts
from .charts import scaling as scaling_charts

STYLE = {"description_width": "150px"}
LAYOUT = {"width": "440px"}
TRAINING_PRECISIONS = ("fp32", "bf16", "fp16", "fp8")
WEIGHTS = ("cost", "time", "ecosystem", "portability", "supply_risk")


def _precisions(w) -> tuple:
    return PRECISIONS if w.task == "inference" else TRAINING_PRECISIONS


def _cannot(problems) -> None:
    display(Markdown("**Cannot use these values:** " + "; ".join(problems)))


def _pipeline(s: Scenario, a: Analysis | None = None, keep: int = 8):
    """``run(changes) -> (scenario, Analysis)`` through ``analyse(with_overrides(s, **changes))``,
    remembering the last ``keep`` results; ``a`` (the notebook's own analysis) serves the changes
    that leave the scenario as it is. Raises InputError for values that make no valid scenario."""
    memo: dict[str, tuple] = {}

    def run(changes: dict):
        key = json.dumps(changes, sort_keys=True, default=str)
        if key not in memo:
            s2 = with_overrides(s, **changes) if changes else s
            memo[key] = (s2, a if a is not None and s2 == s else analyse(s2))
            for old in list(memo)[:-keep]:
                memo.pop(old)
        return memo[key]

    return run


# --- notebook 01: the workload ---------------------------------------------------------------------

def _profile_controls(s: Scenario) -> tuple[dict, W.Widget]:
    w = s.workload
    kw = dict(style=STYLE, layout=W.Layout(**LAYOUT))
    slider = dict(continuous_update=False, **kw)
    controls = {}
    if w.model is not None:
        controls["workload.model"] = W.Dropdown(options=list(catalog.models()["model"]), value=w.model,
                                                description="Model", **kw)
    controls["workload.precision"] = W.Dropdown(options=_precisions(w), value=w.precision, description="Precision", **kw)
    if w.task == "inference":
        controls["workload.input_tokens"] = W.IntSlider(value=w.input_tokens or 1024, min=16, max=131072, step=16,
                                                        description="Prompt tokens", **slider)
        controls["workload.output_tokens"] = W.IntSlider(value=w.output_tokens or 256, min=1, max=32768, step=1,
                                                         description="Answer tokens", **slider)
        batch = W.IntSlider(value=w.concurrency or 8, min=1, max=1024, description="Batch (requests)", **slider)
    else:
        controls["workload.seq_len"] = W.IntSlider(value=w.seq_len, min=128, max=131072, step=128,
                                                   description="Sequence length", **slider)
        controls["workload.recompute"] = W.Dropdown(options=["auto", "none", "selective", "full"], value=w.recompute,
                                                    description="Recomputation", **kw)
        batch = W.IntSlider(value=1, min=1, max=64, description="Micro-batch (sequences)", **slider)
    for k, c in controls.items():
        c.add_class(f"wb-profile-{k.split('.')[-1].replace('_', '-')}")
    batch.add_class("wb-profile-batch")
    return controls, batch


def profile_explorer(s: Scenario) -> W.VBox:
    """Notebook 01: model, sequence length or prompt/answer lengths, batch, precision and
    recomputation; shows the workload summary and the memory by component for the changed workload."""
    controls, batch = _profile_controls(s)
    names = {k: k.replace(".", "__") for k in controls}

    def show(batch, **values):
        try:
            s2 = with_overrides(s, **{k: values[n] for k, n in names.items()})
        except InputError as e:
            _cannot(e.problems)
            return
        display(tables.workload_summary(s2))
        display(perf_charts.memory_breakdown(tables.memory_breakdown(s2, batch=batch)))

    out = W.interactive_output(show, {"batch": batch, **{names[k]: c for k, c in controls.items()}})
    box = W.VBox([W.VBox(list(controls.values()) + [batch]), out])
    box.add_class("wb-profile-explorer")
    return box


# --- notebook 02: the comparison -------------------------------------------------------------------

COMPARISON_COLUMNS = {
    "training": ["accelerator", "chips", "fits", "training_days", "training_days_low", "training_days_high", "mfu",
                 "tp", "pp", "dp", "ep", "cp", "zero", "recompute", "micro_batch", "reason"],
    "inference": ["accelerator", "chips", "fits", "tp", "replicas", "layout", "prefill_chips", "decode_chips", "batch",
                  "ttft_ms", "ttft_ms_p99", "tpot_ms", "output_tokens_per_s", "output_tokens_per_s_low",
                  "output_tokens_per_s_high", "meets_slo", "reason"],
}


def comparison_explorer(s: Scenario, a: Analysis | None = None) -> W.VBox:
    """Notebook 02: precision, batch (global batch tokens for training, concurrency for serving;
    0 = the scenario's own choice) and the candidate set; shows the comparison chart with its bands
    and the table of the analysis' performance estimate (with each training option's layout)."""
    w = s.workload
    kw = dict(style=STYLE, layout=W.Layout(**LAYOUT))
    start = estimate.candidate_accelerators(s)
    every = sorted(set(catalog.accelerators()["accelerator"]) | set(start))
    prec_w = W.Dropdown(options=_precisions(w), value=w.precision, description="Precision", **kw)
    if w.task == "inference":
        batch_w = W.IntSlider(value=w.concurrency or 0, min=0, max=4096, description="Concurrency (0 = auto)",
                              continuous_update=False, **kw)
        key = "workload.concurrency"
    else:
        batch_w = W.IntSlider(value=int(w.global_batch_tokens or 0), min=0, max=64_000_000, step=262_144,
                              description="Global batch tokens (0 = auto)", continuous_update=False, **kw)
        key = "workload.global_batch_tokens"
    cand_w = W.SelectMultiple(options=every, value=tuple(start), rows=8, description="Candidates", **kw)
    for c, cls in ((prec_w, "precision"), (batch_w, "batch"), (cand_w, "candidates")):
        c.add_class(f"wb-compare-{cls}")
    cols = COMPARISON_COLUMNS["inference" if w.task == "inference" else "training"]
    run = _pipeline(s, a)

    def show(precision, batch, candidates):
        changes = {"workload.precision": precision, key: (batch or None), "candidates.accelerators": list(candidates) or None}
        if w.task == "inference" and precision != w.precision:
            changes["workload.kv_cache_precision"] = None
        try:
            _, a2 = run(changes)
        except InputError as e:
            _cannot(e.problems)
            return
        display(perf_charts.comparison(a2.perf))
        display(a2.perf[[c for c in cols if c in a2.perf]])

    out = W.interactive_output(show, {"precision": prec_w, "batch": batch_w, "candidates": cand_w})
    box = W.VBox([W.VBox([prec_w, batch_w, cand_w]), out])
    box.add_class("wb-compare-explorer")
    return box


# --- notebook 03: scaling --------------------------------------------------------------------------

def _scaling_controls(s: Scenario, names: list[str]) -> dict[str, W.Widget]:
    kw = dict(style=STYLE, layout=W.Layout(**LAYOUT))
    start = (s.cluster.chips if s.cluster and s.cluster.chips else None) or s.constraints.max_chips or 1024
    counts = tables.powers_of_two(1, max(16384, int(start)))
    sizes = [1, 2, 4, 8, 16, 32, 64, 128]
    c = {
        "accelerator": W.Dropdown(options=names, value=names[0], description="Accelerator", **kw),
        "chips": W.SelectionSlider(options=counts, value=min(counts, key=lambda n: abs(n - start)), description="Chips",
                                   continuous_update=False, **kw),
        "domain": W.Dropdown(description="Fast domain", **kw),
        "network": W.FloatLogSlider(min=-1, max=3, step=0.05, description="Network GB/s per chip", readout_format=".3g",
                                    continuous_update=False, **kw),
        "max_tp": W.SelectionSlider(options=sizes, value=128, description="Max tensor parallel", continuous_update=False, **kw),
        "max_pp": W.SelectionSlider(options=sizes, value=128, description="Max pipeline parallel", continuous_update=False, **kw),
        "zero": W.Dropdown(options=[("any", None), ("0 (none)", 0), ("1 (optimizer)", 1), ("2 (+ gradients)", 2),
                                    ("3 (FSDP)", 3)], value=None, description="ZeRO stage", **kw),
        "recompute": W.Dropdown(options=[("any", None), ("none", "none"), ("selective", "selective"), ("full", "full")],
                                value=None, description="Recomputation", **kw),
    }
    for k, w in c.items():
        w.add_class(f"wb-scaling-{k.replace('_', '-')}")
    return c


def _follow_accelerator(c: dict) -> None:
    """Set the fast-domain options and the network bandwidth from the chosen accelerator's catalog row."""
    acc = catalog.accelerator(c["accelerator"].value)
    opts = comm.topology_options(acc)
    domains = list(opts["domain"]) if len(opts) else ["catalog default"]
    default = opts[opts["default"].astype(bool)]["domain"].iloc[0] if len(opts) and opts["default"].any() else domains[0]
    c["domain"].options = domains
    c["domain"].value = default
    inter = acc.get("inter_node_bytes_per_s")
    # no network figure in the catalog: start at 50 GB/s (one 400 Gb/s NIC per chip) for the what-if
    c["network"].value = float(inter) / 1e9 if inter is not None and not pd.isna(inter) else 50.0


def _scaling_view(s: Scenario, efficiency, v: dict) -> None:
    w, p = s.workload, workload_profile(s.workload)
    acc = catalog.accelerator(v["accelerator"])
    domain = None if v["domain"] == "catalog default" else v["domain"]
    headroom = s.constraints.min_memory_headroom
    if w.task == "inference":
        display(scaling_charts.tp_curves(serving.tp_curve(p, acc, w, efficiency=efficiency, memory_headroom=headroom)))
        return
    topo = comm.topology(acc, v["chips"], domain, inter_node_bytes_per_s=v["network"] * 1e9)
    pins = s.cluster.parallelism.model_dump(exclude_none=True) if s.cluster and s.cluster.parallelism else {}
    pins.update({k: v[k] for k in ("zero", "recompute") if v[k] is not None})
    table = search.search(p, acc, v["chips"], w, Parallelism(**pins), efficiency, topology=topo,
                           memory_headroom=headroom, max_tp=v["max_tp"], max_pp=v["max_pp"])
    if table.empty:
        display(Markdown(f"**Nothing fits** on {v['chips']:,} x {v['accelerator']} with these limits."))
        return
    best = {k: (x.item() if hasattr(x, "item") else x) for k, x in table.iloc[0].to_dict().items()}
    best.update(chips=v["chips"], accelerator=v["accelerator"], task=w.task, topology=topo.describe())
    if w.tokens:
        best["training_days"] = w.tokens / best["tokens_per_s"] / 86400.0
    display(text.explain_layout(best))
    display(scaling_charts.configurations_breakdown(table))


def scaling_explorer(s: Scenario, efficiency=None) -> W.VBox:
    """Notebook 03: accelerator, chip count, fast domain (NVLink domain / TPU slice option from
    data/topology.csv), network bandwidth per chip, caps on TP and PP, ZeRO stage and recomputation;
    shows the fastest configurations that fit (or, for an inference scenario, throughput and latency
    against tensor-parallel size). Every change re-runs the vectorised layout search."""
    w = s.workload
    names = [a for a in estimate.candidate_accelerators(s)
             if catalog.peak_flops_per_s(catalog.accelerator(a), w.precision) is not None
             and not pd.isna(catalog.peak_flops_per_s(catalog.accelerator(a), w.precision))]
    if not names:
        return W.VBox([W.HTML(f"<b>No candidate accelerator has a {w.precision} peak in the catalog.</b>")])
    c = _scaling_controls(s, names)
    _follow_accelerator(c)
    c["accelerator"].observe(lambda _change: _follow_accelerator(c), "value")

    def show(**v):
        try:
            _scaling_view(s, efficiency, v)
        except InputError as e:
            display(Markdown("**Cannot price this:** " + "; ".join(e.problems)))

    out = W.interactive_output(show, c)
    shown = ["accelerator", "domain"] if w.task == "inference" else list(c)
    box = W.VBox([W.VBox([c[k] for k in shown]), out])
    box.add_class("wb-scaling-explorer")
    return box


# --- notebooks 04 and 05: cost and decision --------------------------------------------------------

def cost_controls(s: Scenario) -> dict[str, W.Widget]:
    """Sliders for the pricing inputs, starting at the scenario's values (keys = scenario paths)."""
    p = s.pricing
    common = {"continuous_update": False, "style": {"description_width": "170px"}, "layout": W.Layout(width="460px")}
    return {
        "pricing.utilization": W.FloatSlider(value=p.utilization, min=0.05, max=1.0, step=0.05,
                                             description="utilization", **common),
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


def _explorer(s: Scenario, a: Analysis | None, controls: dict[str, W.Widget], draw, title: str) -> W.VBox:
    """Controls keyed by scenario paths -> ``analyse(with_overrides(...))`` -> ``draw(s2, a2)`` in an Output."""
    run = _pipeline(s, a)
    names = {k: k.replace(".", "__") for k in controls}
    out = W.Output()

    def update(**values):
        out.clear_output(wait=True)
        with out:
            try:
                s2, a2 = run({k: values[n] for k, n in names.items()})
            except InputError as e:
                print("\n".join(e.problems))
                return
            draw(s2, a2)

    W.interactive_output(update, {names[k]: w for k, w in controls.items()})  # runs update once now
    return W.VBox([W.HTML(title), *controls.values(), out])


def _draw_cost(s2: Scenario, a2: Analysis) -> None:
    display(cost_charts.pricing_models(a2.priced))
    display(cost_charts.breakeven_chart(cost.breakeven_curves(s2, a2.priced)))
    display(cost.breakeven(s2, a2.priced))


def cost_explorer(s: Scenario, a: Analysis | None = None) -> W.VBox:
    """Notebook 04: move utilization, interruption rate, discount, horizon and electricity price and
    see the ways to pay, the break-even curves and the break-even table update."""
    return _explorer(s, a, cost_controls(s), _draw_cost, "<b>Pricing inputs</b>")


def _draw_decision(s2: Scenario, a2: Analysis) -> None:
    rec = a2.recommendation
    display(HTML(text.recommendation_html(rec)))
    display(rec.ranking.drop(columns=["option"], errors="ignore").head(12))
    display(cost_charts.pareto_chart(rec.ranking))


def decision_explorer(s: Scenario, a: Analysis | None = None) -> W.VBox:
    """Notebook 05: move the weights and see the recommendation, its reasons and the ranking change."""
    common = {"continuous_update": False, "min": 0.0, "max": 1.0, "step": 0.05,
              "style": {"description_width": "120px"}, "layout": W.Layout(width="420px")}
    sliders = {f"weights.{k}": W.FloatSlider(value=getattr(s.weights, k), description=k.replace("_", " "), **common)
               for k in WEIGHTS}
    return _explorer(s, a, sliders, _draw_decision, "<b>Weights</b> (relative; the score divides by their sum)")


# --- the team's own runs (notebook 05 and the app) ------------------------------------------------

MAX_UPLOAD_BYTES = own_runs.MAX_BYTES   # a measurements CSV is a few rows; anything bigger is not one


def upload_name(raw) -> str:
    """A safe file name for an upload: its last path part, letters, digits and ``._-`` only, no
    leading dot (``..``, ``.bashrc``), at most 100 characters; ``runs.csv`` when nothing is left."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", Path(str(raw or "")[-300:]).name).lstrip(".")[:100]
    return name or "runs.csv"


def save_measurements(upload_value, folder: str | Path) -> tuple[str, str, int]:
    """The CSV of a ``FileUpload`` (its ``value``: a tuple of ``{name, content, ...}``) saved in
    ``folder`` and validated as the scenario key ``measurements`` is (``calibrate.own.read_measurements``),
    except that its ``model`` column may name catalog models only (never a file of the server):
    ``(path, uploaded name, number of runs)``. Raises InputError, one line per problem, naming the
    uploaded file (not the saved copy); the size is checked before the content is looked at."""
    if not upload_value:
        raise InputError("no file uploaded (expected a measurements CSV)")
    f = upload_value[0]
    name = upload_name(f.get("name"))
    size = int(f.get("size") or 0) or len(f.get("content") or b"")
    if size > MAX_UPLOAD_BYTES:
        raise InputError(f"{name}: {inputs.size_words(size)}, larger than a measurements CSV can be "
                         f"(limit {inputs.size_words(MAX_UPLOAD_BYTES)}); nothing was read")
    content = bytes(f.get("content") or b"")
    if not content.strip():
        raise InputError(f"{name}: empty file (expected a measurements CSV: a header row, then one row per run)")
    path = Path(folder) / name
    path.write_bytes(content)
    try:
        runs = own_runs.read_measurements(path, label=name, model_paths=False)
    except InputError:
        path.unlink()
        raise
    return str(path), name, len(runs)


def _draw_own_runs(s2: Scenario, a2: Analysis) -> None:
    display(with_and_without_measurements(s2, a2))
    if a2.adjustments is not None:
        display(a2.adjustments)


def own_runs_explorer(s: Scenario, a: Analysis | None = None, folder: str | Path | None = None) -> W.VBox:
    """Notebook 05: upload a CSV of the team's runs (README "Your own measurements") and see the
    decision with and without them. ``folder``: where the upload is saved (default: a temporary one)."""
    keep = tempfile.TemporaryDirectory(prefix="wb-runs-") if folder is None else None
    folder = keep.name if keep is not None else folder
    upload = W.FileUpload(accept=".csv", multiple=False, description="Own runs (CSV)")
    upload.add_class("wb-upload")
    out = W.Output()

    def on_upload(change):
        out.clear_output(wait=True)
        with out:
            try:
                path = save_measurements(change["new"], folder)[0]
                s2 = with_overrides(s, measurements=path)
            except InputError as e:
                print("\n".join(e.problems))
                return
            _draw_own_runs(s2, analyse(s2))

    upload.observe(on_upload, "value")
    box = W.VBox([W.HTML("<b>The team's runs</b> (a measurements CSV)"), upload, out])
    box._workbook_folder = keep   # the temporary folder is removed with the widget
    return box
