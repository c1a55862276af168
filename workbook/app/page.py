"""The stakeholder app's page (notebooks/app.ipynb, served by ``python -m workbook.app``).

``app(scenario)`` builds the page: scenario picker, recommendation card, controls, and tabs for the
decision, workload, comparison, scaling and cost. Every control is a scenario path; a change
re-validates the scenario (``with_overrides``), re-runs ``analysis.analyse`` and redraws the card
and the open tab (the others when they are opened; ``app.panels`` draws each one). Expected
mistakes (InputError) appear as sentences in the page, never tracebacks.

What an update recomputes: only what its inputs change. Analyses are shared per kernel
(``analysis.shared_analyse``: inputs seen before are not analysed again; a weight alone re-runs the
decision only, not the prices or the Monte Carlo), and so are the views drawn from them
(``Page._views_of``); the summary download is made when asked for (``Page._prepare_summary``).
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import tempfile
import threading
import time

import ipywidgets as W
from ipywidgets.widgets.widget_bool import CheckboxStyle
from ipywidgets.widgets.widget_description import DescriptionStyle
from ipywidgets.widgets.widget_string import HTMLStyle

from .. import catalog, paths
from ..analysis import shared_analyse as analyse
from ..errors import InputError
from ..model.memo import Memo
from ..scenario import Scenario, load_scenario, scenario_names, with_overrides
from ..terms import PRICING_MODEL_IDS, pricing_short
from ..views import text, widgets
from . import panels

WEIGHTS = ("cost", "time", "ecosystem", "portability", "supply_risk")

CSS = """<style>
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
.wb-app .widget-html-content { white-space: normal; height: auto; }
.wb-app .wb-pane, .wb-app .wb-pane > .widget-html-content { min-width: 0; max-width: 100%; overflow-x: auto; }
.wb-app .wb-scroll { max-width: 100%; overflow-x: auto; border-right: 1px dashed #ccc; scrollbar-width: auto; }
.wb-app .wb-scroll::-webkit-scrollbar { height: 10px; }
.wb-app .wb-scroll::-webkit-scrollbar-thumb { background: #b0b4ba; border-radius: 5px; }
.wb-app table.wb-table th.wb-str, .wb-app table.wb-table td.wb-str { text-align: left; }
.wb-app .wb-warnings { border-left: 4px solid #f9ab00; background: #fef7e0; padding: 4px 10px; margin: 6px 0; }
.wb-app .wb-downloads { font-size: 12.5px; margin: 4px 0; }
.wb-app .wb-downloads a { margin: 0 4px; }
.wb-app .wb-prepare-summary { font-size: 12.5px; height: auto; padding: 0 4px; margin: 0; background: none;
                              box-shadow: none; color: #1a55a8; text-decoration: underline; }
.wb-app .widget-label { min-width: 0; }
.wb-app .wb-busy { position: fixed; top: 12px; right: 16px; z-index: 1000; background: #1f5fa8; color: #fff;
                   padding: 6px 14px; border-radius: 16px; font-size: 13px; box-shadow: 0 2px 6px rgba(0,0,0,.25); }
.wb-app .wb-spinner { display: inline-block; width: 11px; height: 11px; margin-right: 8px; vertical-align: -1px;
                      border: 2px solid rgba(255,255,255,.4); border-top-color: #fff; border-radius: 50%;
                      animation: wb-spin .8s linear infinite; }
@keyframes wb-spin { to { transform: rotate(360deg); } }
.wb-app .wb-updating .wb-recommendation, .wb-app .wb-updating .wb-tabs { opacity: .45; transition: opacity .2s; }
/* controls show their full values: descriptions may wrap, readouts are never cut */
.wb-app .widget-readout { min-width: 56px; overflow: visible; }
.wb-app .widget-text input { min-width: 90px; }
</style>"""
# in the widgets' own style only: the preview (``preview_html``) goes once the widgets are drawn
HIDE_PREVIEW = "<style>.wbp-app { display: none; }</style>"
PREVIEW_KEY = "workbook_preview"   # the preview output's metadata key: the app's Voila template draws it as HTML

class Page:
    """State of one app page (one per kernel; no module-level state)."""

    def __init__(self, scenario: str | None):
        names = scenario_names()
        if scenario not in names:
            scenario = names[0] if names else None
        self.version = 0
        self.quiet = False
        self.base = None            # the validated scenario as loaded from its file
        self.scenario = None        # the scenario with the controls' changes, as last analysed
        self.analysis = None
        self.stale = set()
        self.memo: dict = {}        # slow results that only some inputs change (scaling curves, SVGs)
        self.views = Memo(KEPT_VIEWS)   # what the page drew for the last KEPT_VIEWS inputs analysed
        self.shown: dict | None = None            # ... for the inputs shown (None: nothing kept)
        # One Layout and one style model per look, shared by the widgets that have that look and never
        # change it (ipywidgets lets widgets share a Layout or a style instance): otherwise each widget
        # brings two models of its own, which the browser creates on the first render (129 models for
        # 51 widgets, 65 shared), and a closed candidate's box left its two open (a widget's ``close``
        # does not close them) at each scenario switch.
        column = W.Layout(width="300px")   # the controls column's sliders, fields and buttons
        self.look = {"html": dict(layout=W.Layout(), style=HTMLStyle()),
                     "check": dict(layout=W.Layout(width="160px"), style=CheckboxStyle()),
                     "slider": dict(layout=column, style=W.SliderStyle(description_width="110px")),
                     "field": dict(layout=column, style=DescriptionStyle(description_width="110px")),
                     "button": dict(layout=column, style=W.ButtonStyle())}
        self.picker = W.Dropdown(options=[(_scenario_label(n), n) for n in names], value=scenario,
                                 description="Scenario", layout=W.Layout(width="100%", max_width="900px"),
                                 style={"description_width": "70px"})
        self.picker.add_class("wb-scenario")
        self.about = self._html()
        self.rec = self._html()
        self.rec.add_class("wb-recommendation")
        self.status = self._html()
        self.status.add_class("wb-status-box")
        self.downloads = self._html()   # the scenario and the ranking, inside their links
        self.downloads.add_class("wb-downloads-box")
        # the summary (estimate --json, a few MB) is made when asked for, not sent with every update
        self.summary_scenario = None
        self.summary_button = W.Button(description="summary (JSON)…", layout=W.Layout(width="auto"),  # its own: shown, hidden
                                       style=self.look["button"]["style"],
                                       tooltip="Make the estimate --json summary of these inputs, to download")
        self.summary_button.add_class("wb-prepare-summary")
        self.summary_button.on_click(lambda _b: self._prepare_summary())
        self.summary_link = self._html()
        self.summary_link.add_class("wb-summary-box")
        downloads = W.HBox([self.downloads, self.summary_button, self.summary_link],
                           layout=W.Layout(align_items="center"))
        self.busy = self._html()   # shown while an update runs (1-14 s); its own widget, so data-version counts updates only
        self.busy.add_class("wb-busy-box")
        controls = self._build_controls()
        self.panes = [self._html() for _ in panels.TABS]
        for name, pane in zip(panels.TABS, self.panes):
            pane.add_class(f"wb-pane-{name.lower()}")
            pane.add_class("wb-pane")
        self.tabs = W.Tab(children=self.panes)
        for i, name in enumerate(panels.TABS):
            self.tabs.set_title(i, name)
        self.tabs.add_class("wb-tabs")
        main = W.VBox([self.busy, self.rec, self.status, downloads, self.tabs],
                      layout=W.Layout(flex="1 1 auto", padding="0 0 0 14px"))
        self.main = main
        self.box = W.VBox([self._html(CSS + HIDE_PREVIEW), self.picker, self.about,
                           W.HBox([controls, main], layout=W.Layout(align_items="flex-start"))])
        self.box.add_class("wb-app")
        self.picker.observe(self._on_scenario, "value")
        for w in (self.utilization, self.pricing_model, self.load, *self.weights.values()):
            w.observe(self._on_control, "value")
        self.tabs.observe(self._on_tab, "selected_index")
        self.reset.on_click(lambda _b: self._load_scenario())
        self.upload.observe(self._on_upload, "value")
        self.forget.on_click(lambda _b: self._forget_runs())
        self._load_scenario()

    def _html(self, value: str = "") -> W.HTML:
        """An HTML widget with the page's shared layout and style (``look``)."""
        return W.HTML(value, **self.look["html"])

    def _build_controls(self) -> W.VBox:
        """The left column; every control is a scenario path (see ``overrides``)."""
        sl = dict(continuous_update=False, **self.look["slider"])
        self.utilization = W.FloatSlider(min=0.05, max=1.0, step=0.05, readout_format=".0%",
                                         description="Utilization", **sl)
        self.utilization.add_class("wb-utilization")
        self.pricing_model = W.Dropdown(description="Pricing model", **self.look["field"],
                                        tooltip="Which way to pay to consider")
        self.pricing_model.add_class("wb-pricing-model")
        self.load = W.BoundedFloatText(min=1e-6, max=1e12, step=1, description="Load", continuous_update=False,
                                       **self.look["field"])
        self.load.add_class("wb-load")
        self.load_key = None
        self.load_scale = 1.0
        self.weights = {k: W.FloatSlider(min=0, max=1, step=0.05, description=k.replace("_", " ").capitalize(),
                                         readout_format=".2f", **sl) for k in WEIGHTS}
        for k, w in self.weights.items():
            w.add_class(f"wb-weight-{k}")
        self.candidates = W.GridBox(layout=W.Layout(grid_template_columns="repeat(2, 165px)", max_height="340px",
                                                    overflow="auto"))
        self.candidates.add_class("wb-candidates")
        self.checks: dict[str, W.Checkbox] = {}
        self.reset = W.Button(description="Reset to the scenario's values", **self.look["button"])
        self.reset.add_class("wb-reset")
        own = self._build_own_runs()
        controls = W.VBox([
            self._html("<h4>Pricing</h4>"), self.utilization, self.pricing_model,
            self._html("<h4>Load</h4>"), self.load,
            self._html("<h4>What matters (weights)</h4>"), *self.weights.values(),
            self._html("<h4>Candidates</h4>"), self.candidates,
            *own, self.reset,
        ], layout=W.Layout(width="330px", min_width="330px"))
        controls.add_class("wb-controls")
        return controls

    def _build_own_runs(self) -> list:
        """Upload the team's runs (a measurements CSV, docs/how-to/own-runs.md); the page
        keeps the file in a temporary folder of its own for as long as the kernel lives."""
        self.runs_folder = tempfile.TemporaryDirectory(prefix="wb-app-runs-")
        self.runs_path = None       # the uploaded CSV, validated (scenario key ``measurements``)
        self.runs_name = None
        self.upload = W.FileUpload(accept=".csv", multiple=False, description="Load own runs (CSV)",
                                   **self.look["button"])
        self.upload.add_class("wb-upload")
        self.forget = W.Button(description="Forget own runs", disabled=True, **self.look["button"])
        self.forget.add_class("wb-forget-runs")
        self.runs_note = self._html()
        self.runs_note.add_class("wb-runs-note")
        return [self._html("<h4>The team's own runs</h4>"), self.upload, self.runs_note, self.forget]

    def _on_upload(self, change) -> None:
        if not change["new"]:
            return
        try:
            with time_limit(COMPUTE_LIMIT_S):
                path, name, _runs = widgets.save_measurements(change["new"], self.runs_folder.name)
        except (InputError, ComputeTimeout, OSError, ValueError) as e:
            kept = f" (the page keeps {self.runs_name})" if self.runs_path else ""
            lines = e.problems if isinstance(e, InputError) else [_words(e)]
            self.runs_note.value = panels.message(f"These runs cannot be used{kept}:", lines)
            self._set_status("Not updated: the uploaded runs cannot be used (see the message on the left).", "error")
            return
        finally:
            self.upload.value = ()      # the same file may be uploaded again after an edit
        self.runs_path, self.runs_name = path, name
        self.forget.disabled = False
        self._recompute()

    def _forget_runs(self, recompute: bool = True) -> None:
        self.runs_path = self.runs_name = None
        self.forget.disabled = True
        self.runs_note.value = ""
        if recompute:
            self._recompute()

    # --- scenario -> controls ---------------------------------------------------------------------
    def _load_scenario(self) -> None:
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
        self._forget_runs(recompute=False)
        self.about.value = f'<p class="wb-sub">{text.esc(s.description or "")}</p>'
        self.quiet = True
        try:
            self._set_controls(s)
        finally:
            self.quiet = False
        self._recompute()

    def _set_controls(self, s) -> None:
        self.utilization.value = s.pricing.utilization
        self.pricing_model.options = [("all of the scenario's", "")] + [(pricing_short(m), m) for m in PRICING_MODEL_IDS]
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
        self.checks = {a: W.Checkbox(value=True, description=a, indent=False, **self.look["check"])
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
            base = _get(s, self.load_key)
            if base is None or abs(current - base) > 1e-9 * max(1.0, abs(base)):
                out[self.load_key] = int(round(current)) if self.load_key == "workload.concurrency" else current
        for k, sw in self.weights.items():
            if abs(sw.value - getattr(s.weights, k)) > 1e-9:
                out[f"weights.{k}"] = round(sw.value, 4)
        chosen = [a for a, c in self.checks.items() if c.value]
        if len(chosen) != len(self.checks):
            out["candidates.accelerators"] = chosen
        if self.runs_path is not None:
            out["measurements"] = self.runs_path
        return out

    def _on_scenario(self, change) -> None:
        self._load_scenario()

    def _on_control(self, change) -> None:
        if not self.quiet:
            self._recompute()

    def _on_tab(self, change) -> None:
        i = change["new"]
        if i is not None and i in self.stale:
            self.panes[i].value = f"<p class='wb-sub'>Computing the {panels.TABS[i].lower()} view…</p>"
            self._render_tab(i)

    # --- compute and draw -------------------------------------------------------------------------
    def _recompute(self) -> None:
        if self.base is None:
            return
        self._busy(True)
        try:
            self._recompute_now()
        finally:
            self._busy(False)

    def _busy(self, on: bool) -> None:
        """The busy indicator: a badge pinned to the top of the window and the results dimmed while an update
        runs (the widget messages reach the browser before the computation blocks the kernel)."""
        self.busy.value = ('<div class="wb-busy" role="status" aria-live="polite"><span class="wb-spinner"></span>'
                           "Updating the analysis…</div>") if on else ""
        (self.main.add_class if on else self.main.remove_class)("wb-updating")

    def _recompute_now(self) -> None:
        t0 = time.perf_counter()
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
        analysis, problem = None, None
        try:
            with time_limit(COMPUTE_LIMIT_S):
                analysis = analyse(s)
        except InputError as e:
            problem = ("The analysis cannot run on these inputs:", e.problems)
        except (ComputeTimeout, MemoryError) as e:
            problem = ("The analysis was stopped:", [_words(e)])
        except Exception as e:  # an unexpected failure: say what failed; the traceback goes to the log
            panels.log_exception()
            problem = ("The analysis failed (a bug in the workbook, logged on the server):",
                       [f"{type(e).__name__}: {e}"])
        self.scenario = s
        self.analysis = analysis
        self.shown = None if problem else self._views_of(s)
        named = s.model_copy(update={"measurements": self.runs_name}) if self.runs_path else s  # not the temp path
        self.downloads.value = self._drawn("downloads", lambda: panels.downloads(named, analysis))
        self._summary_for(named if analysis is not None else None)
        if problem:
            self.rec.value = panels.message(*problem)
        else:
            self.rec.value = self._drawn("card", lambda: panels.recommendation(analysis))
        if self.runs_path is not None:
            self.runs_note.value = self._drawn("runs", lambda: panels.runs_note(self.runs_name, analysis))
        self.stale = set(range(len(panels.TABS)))
        self._render_tab(self.tabs.selected_index or 0)
        took = f" (computed in {time.perf_counter() - t0:.2f} s)"
        self._set_status((f"Showing the scenario with changed: {', '.join(changes)}{took}" if changes
                          else f"Showing the scenario file's own values{took}"), "error" if problem else "ok")

    def _views_of(self, s: Scenario) -> dict:
        """The views drawn for the analysis of ``s``, kept for the last ``KEPT_VIEWS`` inputs: keyed as the
        shared analysis is (``analysis.shared_analyse``: the scenario's content and the data files' state,
        the uploaded runs' included) and on the uploaded file's name, so a view is drawn again exactly
        when the analysis it shows can differ (a slider moved back to a value, Reset: no redraw)."""
        key = (s.model_dump_json(), paths.data_state([s.measurements] if s.measurements else []), self.runs_name)
        return self.views.get(key, dict)

    def _drawn(self, part: str, draw):
        """``draw()``, or what it gave for the inputs shown (``self.shown``)."""
        if self.shown is None:
            return draw()
        if part not in self.shown:
            self.shown[part] = draw()
        return self.shown[part]

    def _summary_for(self, named) -> None:
        """Offer the summary download of the analysis just shown (``named``: its scenario as the
        downloads name it; None: no analysis, nothing to offer); a link made for other inputs goes."""
        self.summary_scenario = named
        self.summary_link.value = ""
        self.summary_button.layout.display = None if named is not None else "none"
        self.summary_button.disabled = named is None

    def _prepare_summary(self) -> None:
        """The summary link of the analysis shown (``panels.summary_download``), in place of the button."""
        if self.summary_scenario is None or self.analysis is None:
            return
        try:
            with time_limit(COMPUTE_LIMIT_S):
                html = panels.summary_download(self.summary_scenario, self.analysis)
        except (ComputeTimeout, MemoryError) as e:
            html = panels.message("The summary was not made:", [_words(e)])
        except Exception as e:
            panels.log_exception()
            html = panels.message("The summary failed (logged on the server):", [f"{type(e).__name__}: {e}"])
        self.summary_link.value = html
        self.summary_button.layout.display = "none"

    def _render_tab(self, i: int) -> None:
        """Draw tab ``i`` for the inputs shown (a view that failed is not kept: it is tried again)."""
        name = panels.TABS[i]
        try:
            html = self._drawn(f"tab:{name}", lambda: panels.RENDERERS[name](self.scenario, self.analysis, self.memo))
        except InputError as e:
            html = panels.message(f"The {name.lower()} view cannot be drawn for these inputs:", e.problems)
        except Exception as e:
            panels.log_exception()
            html = panels.message(f"The {name.lower()} view failed (logged on the server):", [f"{type(e).__name__}: {e}"])
        self.panes[i].value = html
        self.stale.discard(i)

    def _show_error(self, title: str, lines) -> None:
        self.analysis = None
        self.shown = None
        self.downloads.value = ""
        self._summary_for(None)
        self.rec.value = panels.message(title, lines)
        for p in self.panes:
            p.value = ""
        self.stale = set()
        self._set_status("Not updated: see the message above.", "error")

    def _set_status(self, message: str, state: str) -> None:
        self.version += 1
        self.status.value = (f'<span class="wb-status" data-version="{self.version}" data-state="{state}">'
                             f"{text.esc(message)}</span>")


KEPT_VIEWS = 8          # inputs whose drawn views a page keeps (as many as the shared analyses, analysis._SHARED)
COMPUTE_LIMIT_S = 120   # one computation a visitor starts (an analysis, an upload); the slowest shipped scenario takes ~10 s


class ComputeTimeout(Exception):
    """A visitor's computation ran past ``COMPUTE_LIMIT_S``."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Stop the block with ``ComputeTimeout`` after ``seconds`` (SIGALRM: widget callbacks run on the
    kernel's main thread); elsewhere (another thread, no SIGALRM) the block runs unbounded."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def _stop(_signum, _frame):
        raise ComputeTimeout(f"it ran longer than {seconds:g} s, the app's limit for one computation")

    old = signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _words(e: BaseException) -> str:
    if isinstance(e, MemoryError):
        return "it needed more memory than the app has: ask for less (fewer chips, a lower load)"
    if isinstance(e, OSError):
        return f"the file could not be kept on the server ({(e.strerror or type(e).__name__).lower()})"
    return str(e) or type(e).__name__


def _get(s: Scenario, dotted: str):
    node = s
    for part in dotted.split("."):
        node = getattr(node, part, None)
    return node


def _scenario_label(name: str) -> str:
    try:
        return load_scenario(name).title
    except InputError:
        return f"{name} (invalid file)"


KERNEL_MEMORY_BYTES = 3 * 2 ** 30   # a visitor's kernel uses ~250 MB; WORKBOOK_APP_KERNEL_MEMORY_BYTES overrides


def limit_memory(limit: int | None = None) -> int | None:
    """Cap this process's data memory (``RLIMIT_DATA``: heap and anonymous mappings, where numpy
    arrays live) at ``limit`` bytes (default ``KERNEL_MEMORY_BYTES`` or the environment's
    ``WORKBOOK_APP_KERNEL_MEMORY_BYTES``; 0 = no cap), so that one visitor's computation fails with
    ``MemoryError`` (shown as a sentence) instead of taking the server's memory. Returns the cap set."""
    if limit is None:
        limit = int(os.environ.get("WORKBOOK_APP_KERNEL_MEMORY_BYTES") or KERNEL_MEMORY_BYTES)
    if not limit:
        return None
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        if soft == resource.RLIM_INFINITY or soft > cap:
            resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
        return cap
    except (ImportError, ValueError, OSError):   # not POSIX, or not allowed: no cap
        return None


def app(scenario: str | None = None) -> W.VBox:
    """The stakeholder app's page for one scenario name (a file in data/scenarios/); the picker
    switches to the others. Returns the widget box (display it as a cell's last expression). The
    kernel's memory is capped first (``limit_memory``)."""
    limit_memory()
    page = Page(scenario)
    show_preview(page)
    return page.box


def preview_html(card: str) -> str:
    """The recommendation card as plain HTML, for the page's first paint: Voila's page draws the
    widgets only once its JavaScript has loaded and fetched their state from the kernel (1.5-3.5 s
    of a first render, docs/performance.md), while a plain HTML output can be in the page as served
    (``workbook/app_share/voila/templates/workbook``). Its class names are the card's with ``wbp-``
    for ``wb-`` and its style a copy of the page's for them, so that the live page has no element
    twice (the tests and the benchmark find the widgets' card by its classes); the widgets' style
    (``HIDE_PREVIEW``) hides it once they are drawn. It has no ``data-`` attributes and no status line."""
    body = re.sub(r'\s+data-[a-z-]+="[^"]*"', "", card)
    body = re.sub(r'class="([^"]*)"', lambda m: 'class="%s"' % re.sub(r"\bwb-", "wbp-", m.group(1)), body)
    return (CSS.replace(".wb-", ".wbp-") + '<div class="wbp-app wbp-preview">' + body
            + '<p class="wbp-sub">The controls are loading…</p></div>')


def show_preview(page: Page) -> None:
    """Display ``preview_html`` of ``page``'s card as an HTML output marked ``PREVIEW_KEY`` (in a
    kernel only; elsewhere nothing)."""
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
    except ImportError:
        return
    if get_ipython() is not None:
        display(HTML(preview_html(page.rec.value)), metadata={PREVIEW_KEY: True})
