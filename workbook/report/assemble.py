"""From executed notebooks to one offline HTML page: cleaning, nbconvert, anchors, the offline check,
``summary.json`` and the headline box (also the index row)."""
from __future__ import annotations

import copy
import datetime as _dt
import functools
import hashlib
import html
import json
import math
import re
import sys
import threading
from pathlib import Path

from .. import analysis, catalog, paths
from ..terms import usd as _usd
from ..jsontext import dumps_indented
from ..paths import TEMPLATE_DIR
from ..scenario import load_scenario
from ..terms import chips_billed_label, pricing_label
from ..views import buyer
from .jobs import Job
from .templatecache import template_cache

WIDGETS_TAG = "widgets"
# Cells that never reach a report: widget cells, the parameters (and Papermill's injected copy),
# Papermill's error banners, and the common "remove this cell" tags.
REMOVE_CELL_TAGS = (WIDGETS_TAG, "parameters", "injected-parameters", "papermill-error-cell-tag",
                    "remove-cell", "remove_cell")
# Output types that are interactive or need a script to show; a static report drops them.
DROP_MIMETYPES = ("application/vnd.jupyter.widget-view+json", "application/javascript",
                  "application/vnd.jupyter.widget-state+json")
_BANNER, _INJECTED = "papermill-error-cell-tag", "injected-parameters"


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def first_line(source: str) -> str:
    """The first non-blank line of ``source``, at most 80 characters (for one-line messages)."""
    for line in source.splitlines():
        if line.strip():
            return line.strip()[:80]
    return ""


def source_numbers(nb) -> list[int | None]:
    """Each cell's 1-based number in the source notebook: None for Papermill's injected parameters
    and error banners; the numbers of the cells removed before execution
    (``metadata.workbook.removed_cells``, see ``execute.batch_notebook``) are skipped."""
    removed = set(nb.metadata.get("workbook", {}).get("removed_cells", []))
    numbers, n = [], 0
    for cell in nb.cells:
        if {_BANNER, _INJECTED} & set(_tags(cell)):
            numbers.append(None)
            continue
        n += 1
        while n in removed:
            n += 1
        numbers.append(n)
    return numbers


def _is_heading(cell) -> bool:
    return cell.cell_type == "markdown" and cell.source.lstrip().startswith("#")


def _widget_intros(cells) -> set[int]:
    """Indexes of markdown cells that open a section holding nothing but ``widgets`` cells."""
    out = set()
    for i, cell in enumerate(cells):
        if not _is_heading(cell):
            continue
        j = i + 1
        while j < len(cells) and WIDGETS_TAG in _tags(cells[j]):
            j += 1
        if j > i + 1 and (j == len(cells) or _is_heading(cells[j])):
            out.add(i)
    return out


def widget_cells(cells) -> set[int]:
    """Indexes of the cells only a live notebook shows: those tagged ``widgets``, and the heading of
    a section that holds nothing else (a "## Try it" with nothing to try)."""
    return {i for i, c in enumerate(cells) if WIDGETS_TAG in _tags(c)} | _widget_intros(cells)


def _clean_outputs(cell, number, notes: list[str]) -> list:
    outputs = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream" and o.get("name") == "stderr":
            if not set(_tags(cell)) & set(REMOVE_CELL_TAGS):
                notes.append(f"cell {number} wrote to stderr: {first_line(o.get('text', ''))}")
            continue
        data = o.get("data")
        if data is not None:
            if "application/vnd.jupyter.widget-view+json" in data:
                continue
            for m in DROP_MIMETYPES:
                data.pop(m, None)
            if not data:
                continue
            if "image/svg+xml" in data:
                o.setdefault("metadata", {}).setdefault("image/svg+xml", {})["alt"] = _chart_alt(data["image/svg+xml"])
        outputs.append(o)
    return outputs


def clean_notebook(nb) -> list[str]:
    """Make an executed notebook fit for a static report, in place; returns notes on what was dropped.

    Drops widget state (``metadata.widgets``), widget views, JavaScript, stderr (logged as notes,
    e.g. library warnings), code cells left without output, and the heading cell of a section whose
    only content is widgets. Cells with a ``REMOVE_CELL_TAGS`` tag are removed by nbconvert's
    TagRemovePreprocessor in ``notebook_html``. (In a batch the ``widgets`` cells and their headings
    were removed before execution already; this also cleans a notebook executed elsewhere.)"""
    notes = []
    nb.metadata.pop("widgets", None)
    intros = _widget_intros(nb.cells)
    keep = []
    for i, (cell, number) in enumerate(zip(nb.cells, source_numbers(nb))):
        if i in intros:
            continue
        if cell.cell_type == "code":
            cell.outputs = _clean_outputs(cell, number, notes)
            if not cell.outputs:
                continue
        keep.append(cell)
    nb.cells = keep
    return notes


_SVG_TITLE = re.compile(r'role-title-text[^>]*>.*?<text[^>]*>([^<]+)</text>', re.S)


def _chart_alt(svg) -> str:
    """Alternative text for a chart image: its title as Vega drew it, else 'Chart'."""
    m = _SVG_TITLE.search(svg if isinstance(svg, str) else "".join(svg))
    return f"Chart: {html.unescape(m.group(1)).strip()}" if m else "Chart"


_LOCAL = threading.local()  # one exporter per thread: from_notebook_node re-registers filters


def _exporter():
    """nbconvert's HTMLExporter with the ``report_cells`` template: cells only, no code, no prompts."""
    if getattr(_LOCAL, "exporter", None) is None:
        from nbconvert import HTMLExporter
        from nbconvert.exporters.templateexporter import TemplateExporter
        from nbconvert.filters.highlight import Highlight2HTML
        from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
        from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, TagRemovePreprocessor
        import nbformat

        class CellsExporter(HTMLExporter):
            """HTMLExporter without its final BeautifulSoup pass (about 0.1 s per notebook, half the
            export time): that pass adds a placeholder alt text to images without one (``clean_notebook``
            gives every chart one, ``notebook_html`` any other image) and ``tabindex`` to ``.jp-Notebook`` input/output wrappers, which the
            ``report_cells`` template does not emit (checked: the report had no ``tabindex`` with it)."""

            def from_notebook_node(self, nb, resources=None, **kw):
                lexer = nb.metadata.get("language_info", {}).get("pygments_lexer")
                resources = self._init_resources(resources)
                self.register_filter("highlight_code", self.filters.get(
                    "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
                self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                    notebook_metadata=self._nb_metadata, parent=self, resources=resources))
                return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

            def _preprocess(self, nb, resources):
                """nbconvert's ``Exporter._preprocess`` without two of its three copies of the notebook (2-3 ms
                each): ``nb`` is this export's own copy already (``Exporter.from_notebook_node``'s), and
                ``nbformat.validator.normalize`` (which copies) is called only when it would change the notebook
                (``_needs_normalizing``); the resources are copied, preprocessed and validated as there."""
                resc = copy.deepcopy(resources)
                _, nb = nbformat.validator.normalize(nb) if _needs_normalizing(nb) else (0, nb)
                for preprocessor in self._preprocessors:
                    nb, resc = preprocessor(nb, resc)
                    if not self.optimistic_validation:
                        self._validate_preprocessor(nb, preprocessor)
                if self.optimistic_validation:
                    self._validate_preprocessor(nb, preprocessor)
                return nb, resc

            def _validate_preprocessor(self, nbc, preprocessor):
                """nbconvert's check of the notebook after the preprocessors (nbformat's schema with any
                extra property allowed), made by the strict schema first: its validator is built
                already (nbformat validates each notebook it writes and reads), the relaxed one costs
                0.03 s to build, once per process. A notebook the strict schema accepts, the relaxed one
                accepts (it only lifts ``additionalProperties``; the v4 schema's ``oneOf`` choices are
                told apart by ``cell_type`` and ``output_type`` values); both normalise the notebook
                alike (``relax_add_props`` only matters when stripping metadata, not done here). A
                notebook it refuses is checked by nbconvert's own rule, which raises as before."""
                import nbformat

                try:
                    nbformat.validate(nbc)
                except nbformat.ValidationError:
                    super()._validate_preprocessor(nbc, preprocessor)

        # optimistic_validation: validate the notebook once after the preprocessors rather than after
        # each of the 13 (twelve schema validations per notebook saved; the result is the same)
        ex = CellsExporter(template_name="report_cells", extra_template_basedirs=[str(TEMPLATE_DIR)],
                           exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True,
                           optimistic_validation=True)
        ex.register_preprocessor(TagRemovePreprocessor(remove_cell_tags=set(REMOVE_CELL_TAGS)), enabled=True)
        # off: pygments' CSS for a page header that report_cells empties (its conf.json's "off" is ignored); 1.4 ms
        for p in ex._preprocessors:
            if isinstance(p, CSSHTMLHeaderPreprocessor):
                p.enabled = False
        ex.environment.bytecode_cache = template_cache()
        _LOCAL.exporter = ex
    return _LOCAL.exporter


def _needs_normalizing(nb) -> bool:
    """Would ``nbformat.validator.normalize`` change ``nb`` (or raise): a v4.5+ notebook with a cell without an
    ``id`` or two with one id, as nbformat 5's ``_normalize`` repairs by default (an unhashable id: left to it)."""
    from nbformat.reader import get_version
    if get_version(nb) < (4, 5):
        return False
    cells = nb.get("cells", [])
    try:
        return any("id" not in cell for cell in cells) or len({cell["id"] for cell in cells}) != len(cells)
    except TypeError:
        return True


def notebook_html(nb, name: str = "notebook") -> str:
    """The cells of an executed, cleaned notebook as an HTML fragment."""
    body, _ = _exporter().from_notebook_node(nb, resources={"metadata": {"name": name}})
    return _NUMERIC_ENTITY.sub(_entity_char, _IMG_WITHOUT_ALT.sub('<img alt="Image"', body))


# ``*?``: the lookahead finds an ``alt=`` near the tag's start without first running to the end of a chart's
# 100 kB data URI and back (the same matches: whether some ``alt=`` lies before the ``>`` does not depend on
# the order tried; 17 -> 1.4 ms over chat-70b-realtime's notebooks)
_IMG_WITHOUT_ALT = re.compile(r"<img(?![^>]*?\balt=)")
_NUMERIC_ENTITY = re.compile(r"&#(x[0-9a-fA-F]+|[0-9]+);")


def _entity_char(m) -> str:
    """A numeric character reference as its character (``&#183;`` -> ``·``), as the BeautifulSoup
    pass of HTMLExporter wrote them; markup characters stay escaped."""
    code = int(m.group(1)[1:], 16) if m.group(1)[0] in "xX" else int(m.group(1))
    ch = chr(code) if 0 < code < 0x110000 else ""
    return m.group(0) if not ch or ch in "<>&\"'" or not ch.isprintable() else ch


_NOTEBOOK_NUMBER = re.compile(r"^\s*\d{1,2}\s*[·.:\-–—]\s*")
_HEADING = re.compile(r'<h([1-6]) id="([^"]*)"[^>]*>(.*?)</h\1>', re.S)


def _prefix_anchors(fragment: str, prefix: str) -> tuple[str, list[dict]]:
    """Give headings section-unique ids (two notebooks may both have a 'Summary'), and list them."""
    heads = []

    def sub(m):
        level, hid, inner = m.group(1), m.group(2), m.group(3)
        new = f"{prefix}-{hid}"
        if level == "1":  # "05 · The decision": the notebook's file number means nothing in the report
            inner = _NOTEBOOK_NUMBER.sub("", inner)
        inner = inner.replace(f'href="#{hid}"', f'href="#{new}"')
        text = html.unescape(re.sub(r"<[^>]+>", "", re.sub(r'<a class="anchor-link".*?</a>', "", inner))).strip()
        heads.append({"level": int(level), "id": new, "text": text})
        return f'<h{level} id="{new}">{inner}</h{level}>'

    return _HEADING.sub(sub, fragment), heads


# The tags, ``@import`` and ``url(`` that fetch a URL, three patterns scanned one at a time (``_external_urls``; their
# alternation, searched at every position, was 2.5x slower; tests keep it as the reference): the first
# with a lookahead for the first letters its tag names may have (under IGNORECASE, as the names are
# matched: ``ſ`` for ``s``, ``ı`` for ``i``), so that the 44,000 ``<`` of a report's page that open other
# tags (``td``, ``div``, ``/tr``) fail on one character class instead of eleven case-folded names
_EXTERNAL_ALTERNATIVES = [re.compile(p, re.I) for p in (
    r"""<(?=[slivaeou])(?:script|link|img|iframe|source|video|audio|embed|object|image|use)\b[^>]*?"""
    r"""\b(?:src|href|data|xlink:href)\s*=\s*["']?\s*((?:https?:)?//[^"'\s>]+)""",
    r"""@import\s+(?:url\()?["']?((?:https?:)?//[^"')\s]+)""",
    r"""url\(\s*["']?((?:https?:)?//[^"')\s]+)""")]


def _external_urls(text: str) -> list[str]:
    """The URL of each match of the alternation of ``_EXTERNAL_ALTERNATIVES`` in ``text``, as ``finditer``
    finds them (left to right, no overlap, the first alternative that matches at a position wins), from its
    alternatives searched
    separately (``_EXTERNAL_ALTERNATIVES``): the next match is the leftmost of each alternative's next
    match (the earlier alternative on a tie), whose own match is the alternation's there (nothing follows
    the alternation); an alternative whose next match started before the end of the one taken is searched
    again from that end. 0.020 -> 0.008 s on chat-70b-realtime's page (the IGNORECASE alternation tried
    all three at every position)."""
    found, nxt = [], [rx.search(text) for rx in _EXTERNAL_ALTERNATIVES]
    while True:
        best = None
        for m in nxt:
            if m is not None and (best is None or m.start() < best.start()):
                best = m
        if best is None:
            return found
        found.append(best.group(1))
        end = best.end()
        nxt = [m if m is None or m.start() >= end else rx.search(text, end)
               for m, rx in zip(nxt, _EXTERNAL_ALTERNATIVES)]


# A quoted base64 data URI's payload but its last 8 characters (and padding): what ``external_resources``
# need not scan (see there).
_DATA_PAYLOAD = re.compile(r"""(["']data:[^"'\s>,;]*;base64,)[A-Za-z0-9+/]+([A-Za-z0-9+/]{8}={0,2}["'])""")


def _cut_payloads(page: str) -> str:
    """``_DATA_PAYLOAD.sub(r"\1\2", page)``, with the match tried only where ``data:`` follows a quote (where
    each of its matches starts; ``str.find`` skips the rest of the page faster than the pattern's own
    search for a quote): the same matches, left to right, without overlap. 0.011 -> 0.004 s on
    chat-70b-realtime's page."""
    parts, pos = [], 0
    i = page.find("data:", 1)
    while i != -1:
        m = _DATA_PAYLOAD.match(page, i - 1) if i - 1 >= pos and page[i - 1] in "\"'" else None
        if m:
            parts += (page[pos:m.start()], m.group(1), m.group(2))
            pos = m.end()
            i = page.find("data:", pos + 1)
        else:
            i = page.find("data:", i + 1)
    parts.append(page[pos:])
    return "".join(parts)


def external_resources(page: str) -> list[str]:
    """URLs that a browser would fetch to show ``page`` (scripts, styles, images, fonts, frames).
    Plain links (``<a href>``) are not fetched and are allowed.

    The payloads of the quoted base64 data URIs (the charts: half of a report's 2 MB) are cut to their
    last 8 characters before the scan, which then takes a third of the time (0.04 s instead of 0.12 s
    for chat-70b-realtime's page). The same URLs are found: a URL cannot start inside a payload (it
    follows ``src``/``href``/``data``/``xlink:href``, ``=``, an optional quote; a payload holds no
    quote, and ``=`` only as padding at its end, kept with the 8 characters before it, which hold
    any keyword and the word boundary before it) nor run through one (a URL holds no quote and the
    payload is quoted); ``@import`` and ``url(`` need characters a payload lacks."""
    return _external_urls(_cut_payloads(page))


# --- summary.json and the headline ------------------------------------------------------------------

def run_estimate(s) -> tuple[dict | None, str | None]:
    """``analysis.summary_json(analysis.analyse(s))``, or the reason it failed."""
    try:
        return analysis.summary_json(analysis.analyse(s)), None
    except Exception as e:
        return None, f"{e.__class__.__name__}: {e}"


def _read_estimate(path: Path | None) -> tuple[dict | None, str | None] | None:
    try:
        data = json.loads(Path(path).read_text())
        return data["estimate"], data["error"]
    except (TypeError, OSError, ValueError, KeyError):
        return None


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def utc_now() -> str:
    """The current UTC time to the second, as ``2026-01-01T00:00:00Z``."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def build_summary(job: Job, durations: list[dict], estimate_file: Path | None = None,
                  estimate: tuple[dict | None, str | None] | None = None) -> dict:
    """``summary.json``: the estimate's keys at the top level, plus ``report`` metadata. The estimate
    is ``estimate`` (``run_estimate``'s pair, computed in this process by the in-process engine) when
    given, else read from ``estimate_file`` (``write_estimate`` in the kernel) when there is one, else
    computed."""
    s = load_scenario(job.scenario_file)
    est, err = estimate or _read_estimate(estimate_file) or run_estimate(s)
    meta = {
        "generated_utc": utc_now(),
        "package_version": paths.VERSION,
        "scenario_file": paths.rel(Path(job.scenario_file)),
        "scenario_sha256": sha256_file(Path(job.scenario_file)),
        "catalog_versions": catalog.catalog_versions(),
        "inputs_sha256": job.inputs_sha256,
        "notebooks": durations,
        "missing_sections": list(job.missing),
        "python": sys.version.split()[0],
    }
    summary = {"scenario": s.name, "title": s.title}
    if est is not None:
        est = {**est, "inputs": s.model_dump(mode="json", exclude={"name", "title", "description"})}  # for diff
        summary.update(est)
    else:
        summary["estimate_error"] = err
    summary["report"] = meta
    return summary


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _pick(d, *keys):
    """First present, non-null value among dotted ``keys`` of a nested dict."""
    for k in keys:
        node = d
        for part in k.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def _recommendation_text(rec: dict) -> str | None:
    """The sentence of ``Recommendation.headline()`` (``as_dict()["summary"]``; rebuilt from the
    parts for a summary.json written before that key existed)."""
    if rec.get("summary"):
        return str(rec["summary"])
    if not rec.get("accelerator"):
        return "No option passes the hard constraints."
    return (f"{rec['accelerator']} on {pricing_label(rec.get('pricing_model'))} "
            f"({rec.get('provider')}, {rec.get('offering')})")


def _cost_text(metric, value, low, high, per_month, words=None) -> str | None:
    if value is None:
        return None
    unit = {"cost_usd": " per run", "usd_per_million_tokens": " " + (words or "per million output tokens")}.get(metric, "")
    band = f" ({_usd(low)} to {_usd(high)})" if low is not None and high is not None else ""
    return f"{_usd(value)}{unit}{band}" + (f"; {_usd(per_month)} per month" if per_month is not None else "")


def _time_text(days, ttft, tpot, ttft_load=None, pct=None) -> str | None:
    """Training days, or serving latency: the time per output token and the first-token time at the SLO
    percentile under the scenario's request rate (the figure the latency target is checked on, the app's
    too), with the unloaded figure beside it, labelled, so the two never appear as one number."""
    if days is not None:
        return f"{days:,.1f} days" if days >= 1 else f"{days * 24:,.1f} hours"
    if tpot is not None:
        first = ""
        if ttft_load is not None:
            first = f", first token {ttft_load:,.0f} ms at P{pct or 99:g} under load" + (
                f" ({ttft:,.0f} ms unloaded)" if ttft is not None else "")
        elif ttft is not None:
            first = f", first token {ttft:,.0f} ms unloaded"
        return f"{tpot:,.0f} ms per output token{first}"
    if ttft_load is not None:   # a generic (non-transformer) service: one forward pass per request
        return f"{ttft_load:,.1f} ms per request at P{pct or 99:g} under load"
    return None


def _answer_text(fig: dict) -> str | None:
    """The scenario's own question answered: does the night's work fit the batch window, is the
    deadline met and how likely (``Recommendation.figures``)."""
    need, window = _num(fig.get("batch_hours_needed")), _num(fig.get("batch_window_hours"))
    if need is not None and window is not None:
        return (f"{'fits' if need <= window else 'does not fit'} the {window:g}-hour batch window "
                f"(the work takes {need:.1f} h)")
    days, dl, p = _num(fig.get("training_days")), _num(fig.get("deadline_days")), _num(fig.get("p_meets_deadline"))
    if days is not None and dl is not None:
        chance = f"; {p:.0%} chance within the performance band" if p is not None else ""
        return f"{'meets' if days <= dl else 'misses'} the {dl:g}-day deadline ({days:,.1f} days{chance})"
    return None


def _chips_text(fig: dict) -> str | None:
    used, billed = _num(fig.get("chips")), _num(fig.get("chips_billed"))
    if used is None:
        return None
    return f"{used:,.0f} {chips_billed_label(used, billed)}"


def _confidence_text(score, ru_score, p_ru, p) -> str | None:
    return "; ".join(x for x in (
        f"score {score:.3f} vs {ru_score:.3f} for the runner-up" if score is not None and ru_score is not None else "",
        f"beats the runner-up in {p_ru:.0%} of Monte Carlo draws" if p_ru is not None else "",
        f"cheapest in {p:.0%} of Monte Carlo draws" if p is not None else "") if x) or None


def headline(summary: dict) -> dict:
    """The report's headline box and the index row, read from ``summary.json``: display strings
    (``recommendation``, ``cost``, ``time``, ``confidence``) and plain numbers for the CSV.

    The one place that knows where the estimate keeps its headline figures (``recommendation`` of
    ``Recommendation.as_dict()``; latency from the recommended accelerator's entry in ``options``):
    adjust the key paths here when that JSON changes."""
    rec = summary.get("recommendation") if isinstance(summary.get("recommendation"), dict) else {}
    fig = rec.get("figures") or {}
    metric = rec.get("metric")
    option = next((o for o in summary.get("options") or [] if o.get("accelerator") == rec.get("accelerator")), {})
    value, low, high = (_num(fig.get(metric)), _num(fig.get(f"{metric}_low")), _num(fig.get(f"{metric}_high")))
    per_month, days, p = _num(fig.get("usd_per_month")), _num(fig.get("training_days")), _num(fig.get("p_cheapest"))
    ttft, tpot = _num(option.get("ttft_ms")), _num(option.get("tpot_ms"))
    p_ru, score = _num(fig.get("p_beats_runner_up")), _num(fig.get("score"))
    ru_score = _num((rec.get("runner_up") or {}).get("score"))
    batch = _num(fig.get("batch_hours_needed"))
    warnings = list(rec.get("warnings") or [])
    nearest = [n.get("text") for n in rec.get("nearest_changes") or [] if n.get("text")]
    ttft_load, pct = _num(fig.get("ttft_ms_at_slo_percentile")), _num(fig.get("ttft_slo_percentile"))
    tie = buyer.tie_facts(summary) if rec.get("accelerator") and "ties" in rec else {}
    warnings = buyer.caveats(summary)
    return {
        "scenario": summary.get("scenario"),
        "title": summary.get("title"),
        "recommendation": _recommendation_text(rec) if rec else None,
        "price": buyer.winner_price_text(summary), "price_short": buyer.winner_price_short(summary),
        "tie_short": buyer.tie_short(summary),
        "answer": _answer_text(fig),
        "cost": _cost_text(metric, value, low, high, per_month, rec.get("unit") if rec else None),
        "time": f"{batch:.1f} hours per batch" if batch is not None else _time_text(days, ttft, tpot, ttft_load, pct),
        "chips": _chips_text(fig),
        "warnings": " ".join(w if w.endswith(".") else w + "." for w in warnings) or None, "warning_list": warnings,
        "nearest_change": nearest[0] if nearest else None,
        "confidence": buyer.tie_text(summary) or _confidence_text(score, ru_score, p_ru, p),
        "tie": tie.get("tie"), "tie_share": tie.get("share"),
        "estimate_error": summary.get("estimate_error"),
        "generated_utc": _pick(summary, "report.generated_utc"),
        # plain values for index.csv
        "accelerator": rec.get("accelerator"), "pricing_model": rec.get("pricing_model"),
        "provider": rec.get("provider"), "offering": rec.get("offering"), "cost_metric": metric,
        "cost_value": value, "cost_low": low, "cost_high": high, "usd_per_month": per_month,
        "training_days": days, "ttft_ms": ttft, "tpot_ms": tpot, "score": score, "runner_up_score": ru_score,
        "p_beats_runner_up": p_ru, "p_cheapest": p, "chips_billed": _num(fig.get("chips_billed")),
    }


# --- the page ---------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def jinja_env():
    """The Jinja environment of ``workbook/templates`` (report and index pages), one per process: a
    template is compiled once (about 0.025 s for the report page) and recompiled only when its file
    changes (Jinja's ``auto_reload``), rather than for every report and index; its code is kept
    between processes (``template_cache``)."""
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
                              autoescape=jinja2.select_autoescape(["html", "j2"]), trim_blocks=True,
                              lstrip_blocks=True, bytecode_cache=template_cache())


def report_css() -> str:
    return (TEMPLATE_DIR / "report.css").read_text()


def _section(key: str, label: str, path: Path, notes: list[str], notebook: str, nb=None) -> dict:
    """One executed notebook as a report section: cleaned, exported, its headings prefixed. ``nb``: the
    notebook written at ``path``, in memory (changed here), else read from ``path``."""
    import nbformat

    if nb is None:
        nb = nbformat.read(path, as_version=4)
    notes += [f"{notebook}: {n}" for n in clean_notebook(nb)]
    fragment, heads = _prefix_anchors(notebook_html(nb, Path(path).stem), key)
    first = next((h for h in heads if h["level"] == 1), None)
    return {"key": key, "anchor": first["id"] if first else key, "label": label,
            "title": first["text"] if first else label, "html": fragment,
            "subheads": [h for h in heads if h["level"] == 2]}


def assemble_report(job: Job, executed: list[tuple[str, Path, float]], estimate_file: Path | None = None,
                    estimate: tuple[dict | None, str | None] | None = None,
                    notebooks: dict | None = None) -> tuple[dict[str, bytes], list[str], dict]:
    """The report folder's files: ``report.html``, ``summary.json`` and the executed notebooks, the
    notes, and the headline of the summary (``estimate``, ``estimate_file``: see ``build_summary``;
    ``notebooks``: executed notebook path -> the notebook in memory, which is not read back then:
    Papermill wrote that object, and reading its file gives it again, about 3 ms of JSON and
    validation per notebook).
    The headline is read from the summary as it is written: its values are JSON's own types (the
    estimate is JSON-ready, ``analysis.summary_json``, or read from JSON), so ``headline`` of the
    file read back gives the same."""
    labels = {key: label for key, _nb, label in job.sections}
    names = {key: nb for key, nb, _label in job.sections}
    files, notes, sections, durations = {}, [], [], []
    for key, path, seconds in executed:
        files[path.name] = path.read_bytes()
        durations.append({"section": key, "notebook": path.name, "duration_s": round(seconds, 2)})
        sections.append(_section(key, labels[key], path, notes, names[key], (notebooks or {}).get(path)))
    summary = build_summary(job, durations, estimate_file, estimate)
    head = headline(summary)
    items = [("Recommendation", head["recommendation"] or "(no recommendation)"),
             ("Nearest change", head["nearest_change"]), ("Price", head["price"]),
             ("Tie or lead" if head["tie"] is not None else "Confidence", head["confidence"]),
             ("Cost", head["cost"]), ("Answer", head["answer"]), ("Time", head["time"]), ("Chips", head["chips"])]
    page = jinja_env().get_template("report_page.html.j2").render(
        scenario=summary["scenario"], title=summary["title"], description=load_scenario(job.scenario_file).description,
        headline_items=[(k, v) for k, v in items if v is not None], estimate_error=summary.get("estimate_error"),
        warnings=head["warning_list"], feasible=bool(head["accelerator"]),
        sections=sections, missing=list(job.missing), meta=summary["report"], css=report_css())
    ext = external_resources(page)
    if ext:
        raise ValueError(f"the report would load {len(ext)} resource(s) from a network, e.g. {ext[0]} "
                         "(charts must be static: import workbook.views.charts, which enables the svg renderer)")
    files["report.html"] = page.encode()
    files["summary.json"] = (dumps_indented(summary) + "\n").encode()
    return files, notes, head
