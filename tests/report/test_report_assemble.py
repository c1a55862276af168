"""From executed notebooks to one offline page, without kernels: cleaning, anchors, the offline
check and the headline box read from summary.json."""
from __future__ import annotations

import re

import nbformat
import pytest

from workbook.report import assemble


def executed_like() -> nbformat.NotebookNode:
    """An executed notebook with everything a report must drop."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"x": {}}}}
    md = nbformat.v4.new_markdown_cell("# 05 · Question\n\n## Part one")
    params = nbformat.v4.new_code_cell('scenario = "x"', metadata={"tags": ["parameters"]})
    injected = nbformat.v4.new_code_cell('scenario = "y"', metadata={"tags": ["injected-parameters"]})
    chart = nbformat.v4.new_code_cell("wb.charts.x(df)", outputs=[
        nbformat.v4.new_output("display_data", data={"image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'></svg>",
                                                     "text/plain": "alt.Chart(...)"}),
        nbformat.v4.new_output("stream", name="stderr", text="FutureWarning: something\n")])
    widget = nbformat.v4.new_code_cell("w(s)", metadata={"tags": ["widgets"]}, outputs=[
        nbformat.v4.new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                                                     "text/plain": "VBox()"})])
    stray = nbformat.v4.new_code_cell("live", outputs=[
        nbformat.v4.new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "y"},
                                                     "text/plain": "JupyterChart()"})])
    js = nbformat.v4.new_code_cell("js", outputs=[
        nbformat.v4.new_output("display_data", data={"application/javascript": "fetch('https://x')",
                                                     "text/plain": "<js>"})])
    silent = nbformat.v4.new_code_cell("import workbook as wb")
    try_it = nbformat.v4.new_markdown_cell("## Try it\nMove the weights.")
    nb.cells = [md, params, injected, silent, chart, widget, stray, js, try_it, widget.copy()]
    return nb


def test_cleaning_drops_widget_state_widget_cells_scripts_and_stderr():
    nb = executed_like()
    notes = assemble.clean_notebook(nb)
    assert "widgets" not in nb.metadata
    assert notes == ["cell 4 wrote to stderr: FutureWarning: something"]  # its number in the source notebook
    html = assemble.notebook_html(nb)
    assert "widget" not in html and "VBox" not in html and "JupyterChart" not in html
    assert "<script" not in html and "fetch(" not in html
    assert 'scenario = "' not in html and "import workbook" not in html and "FutureWarning" not in html
    assert len(re.findall(r'<img alt="Chart" src="data:image/svg\+xml;base64,', html)) == 1
    assert "&lt;js&gt;" in html  # the plain-text fallback of a script output stays
    assert "Try it" not in html  # a section holding only widgets goes with them


def test_stderr_notes_number_cells_as_the_source_notebook_after_removed_cells():
    nb = executed_like()
    nb.metadata["workbook"] = {"removed_cells": [2]}  # a cell before the chart was removed before execution
    assert assemble.clean_notebook(nb) == ["cell 5 wrote to stderr: FutureWarning: something"]


def test_widget_cells_are_the_tagged_cells_and_a_heading_that_holds_only_them():
    nb = executed_like()
    assert assemble.widget_cells(nb.cells) == {5, 8, 9}


def test_headings_get_section_ids_for_the_table_of_contents():
    nb = executed_like()
    assemble.clean_notebook(nb)
    fragment, heads = assemble._prefix_anchors(assemble.notebook_html(nb), "cost")
    # the notebook's number ("05 ·") is dropped from its title: the report has its own order
    assert [(h["level"], h["text"]) for h in heads] == [(1, "Question"), (2, "Part one")]
    assert heads[1]["id"] == "cost-Part-one" and heads[0]["id"].startswith("cost-")
    assert re.search(r"<h1[^>]*>Question<a", fragment)
    assert 'id="cost-Part-one"' in fragment and 'href="#cost-Part-one"' in fragment


@pytest.mark.parametrize("snippet, url", [
    ('<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>', "https://cdn.jsdelivr.net/npm/vega@5"),
    ("<link rel=stylesheet href=//fonts.googleapis.com/css>", "//fonts.googleapis.com/css"),
    ('<img src="http://example.com/a.png">', "http://example.com/a.png"),
    ("<style>@import url('https://x.org/a.css');</style>", "https://x.org/a.css"),
    ("<div style=\"background: url(https://x.org/b.png)\"></div>", "https://x.org/b.png"),
])
def test_external_resources_are_found(snippet, url):
    assert assemble.external_resources(f"<p>x</p>{snippet}") == [url]


def test_plain_links_and_embedded_images_are_not_external_resources():
    assert assemble.external_resources('<a href="https://arxiv.org/abs/2001.08361">Kaplan</a>'
                                       '<img src="data:image/svg+xml;base64,PHN2Zz4=">') == []


# ``external_resources``' pattern as it was, one alternation (the reference ``assemble._external_urls`` must match)
_EXTERNAL = re.compile(
    r"""<(?:script|link|img|iframe|source|video|audio|embed|object|image|use)\b[^>]*?"""
    r"""\b(?:src|href|data|xlink:href)\s*=\s*["']?\s*((?:https?:)?//[^"'\s>]+)"""
    r"""|@import\s+(?:url\()?["']?((?:https?:)?//[^"')\s]+)|url\(\s*["']?((?:https?:)?//[^"')\s]+)""",
    re.I)


def _scan_everything(page: str) -> list[str]:
    """``external_resources`` as it was: the whole page scanned, data URIs included."""
    return [next(g for g in m.groups() if g) for m in _EXTERNAL.finditer(page)]


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_PIECES = ['<img alt="Chart: a" src="data:image/svg+xml;base64,{b}">', "<img src='data:image/png;base64,{b}'>",
           '<img src="data:image/svg+xml;base64,{b}" href=//x.org/a.png>', '<p>{b}</p>', " //y.org/b ",
           '<script src="https://cdn.org/v.js"></script>', "<style>@import url('https://x.org/a.css');</style>",
           '<img src="data:text/plain;base64,{b}" data-x="1" src=https://z.org/c>', '<a href="https://ok.org">a</a>',
           '<div style="background: url(//w.org/d.png)">', '<image xlink:href="//v.org/e.svg"/>', '<img src=',
           '"data:image/svg+xml;base64,{b}', "<link href=", ">", '"']


def _payload(rng) -> str:
    b = "".join(rng.choice(_B64) for _ in range(rng.randint(0, 40)))
    tail = rng.choice(["", "=", "==", "/src=", "+href=", "/data=", "src=//u.org/f"])
    return b + tail + rng.choice(["", "", '" //t.org/g', "' src=//s.org/h"])


def test_external_resources_skips_data_payloads_and_finds_the_same_urls():
    """The payloads of data URIs are cut before the scan: the same URLs as a scan of the whole page,
    on 2,000 random pages of data URIs (with padding, keywords and URLs at their ends), tags and URLs."""
    import random

    rng = random.Random(30)
    found = 0
    for _ in range(2000):
        page = "".join(rng.choice(_PIECES).replace("{b}", _payload(rng)) for _ in range(rng.randint(1, 8)))
        expected = _scan_everything(page)
        assert assemble.external_resources(page) == expected, page
        assert assemble._cut_payloads(page) == assemble._DATA_PAYLOAD.sub(r"\1\2", page), page
        found += bool(expected)
    assert found > 500


def test_images_without_alt_found_as_by_the_greedy_lookahead():
    """``_IMG_WITHOUT_ALT`` (a lazy ``[^>]*?`` in its lookahead) makes the same replacements as the
    greedy pattern it replaced, on 2,000 random pages of images with and without ``alt=`` (anywhere in
    the tag, in a data URI, after a ``>``), and is not slower on a chart-sized data URI."""
    import random
    import re
    import time

    greedy = re.compile(r"<img(?![^>]*\balt=)")
    pieces = _PIECES + ['<img src="data:x;base64,{b}" alt="A">', "<img alt=x>", "<imgalt=>", "<img\nalt='y'/>",
                        '<img data-alt="1" src={b}>', "<img src=a>alt=", "<img ALT=z>", "<img", " alt=", "<im"]
    rng = random.Random(31)
    for _ in range(2000):
        page = "".join(rng.choice(pieces).replace("{b}", _payload(rng)) for _ in range(rng.randint(1, 8)))
        assert assemble._IMG_WITHOUT_ALT.sub('<img alt="Image"', page) == greedy.sub('<img alt="Image"', page), page
    chart = '<img alt="Chart: a" src="data:image/svg+xml;base64,' + "A" * 1_000_000 + '">'
    t0 = time.process_time()
    assert assemble._IMG_WITHOUT_ALT.sub('<img alt="Image"', chart) == chart
    t1 = time.process_time()
    greedy.sub('<img alt="Image"', chart)
    assert t1 - t0 < (time.process_time() - t1) / 3   # 0.3 ms against 10 ms, measured


def test_external_urls_by_alternative_are_the_alternations_matches():
    """``_external_urls`` (each alternative of ``_EXTERNAL`` searched on its own, the leftmost taken) finds
    what ``_EXTERNAL.finditer`` finds, on 3,000 random texts of overlapping tags, ``@import`` and ``url(``
    in mixed case, with the characters IGNORECASE folds onto the tag names' first letters (``ſ``, ``ı``,
    ``İ``, the Kelvin sign) and pieces that run into each other."""
    import random

    pieces = ["<img src=", "<IMG SRC=", "<ſcript src=", "<ıframe src=", "<İmg src=", "<\u212aink href=", "<Link href=",
              "<use xlink:href=", "<td>", "</tr>", "<div ", "<a href=", "<image data=", "<video src = '", "<object data=\"",
              "//x.org/a", "https://y.org/b", "http://z.org/c ", "@import ", "@IMPORT url(", "url(", "URL( '", "uRl(\"",
              '"', "'", ">", " ", ")", "src=", "<script", "//", "url(//u.org/d)", "<img alt=a src=//i.org/e>",
              "@import url(//w.org/f.css)", "<embed src=//e.org/g url(//h.org/h)", "<source\nsrc=//s.org/k>"]
    rng = random.Random(32)
    found = 0
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        expected = [next(g for g in m.groups() if g) for m in _EXTERNAL.finditer(text)]
        assert assemble._external_urls(text) == expected, text
        found += len(expected) > 1
    assert found > 300


def _random_json(rng, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice(["", "a", 'q"uote', "back\\slash", "new\nline", "·…é", "\u2028", "tab\t", "{[,]}: "])
    if kind == 1:
        return rng.choice([0, 1, -7, 2**70, True, False])
    if kind == 2:
        return rng.choice([0.0, -0.0, 0.1, 1e-7, 1e22, 2.5e-300, 1 / 3, 123456.789])
    if kind in (3, 4, 5):
        return None if kind == 3 else rng.random() * 10 ** rng.randint(-5, 9)
    n = rng.randint(0, 5)
    if kind == 6:
        return [_random_json(rng, depth + 1) for _ in range(n)]
    if kind == 7:
        return tuple(_random_json(rng, depth + 1) for _ in range(n))
    keys = [rng.choice(["k", "a b", "é", 'x"y', "", 1, 2.5, True, None, "k2", "offers"]) for _ in range(n)]
    return {k: _random_json(rng, depth + 1) for k in keys}


def test_dumps_indented_writes_what_json_dumps_writes():
    """``dumps_indented`` against ``json.dumps(indent=2, allow_nan=False)``: 3,000 random nested values
    (flat and nested dicts, lists and tuples, empty ones, odd keys, floats, big ints, escapes), indents
    1-4, and json's own errors for NaN and for an object json cannot encode."""
    import json
    import random

    rng = random.Random(30)
    for i in range(3000):
        value, indent = _random_json(rng), 1 + i % 4
        assert assemble.dumps_indented(value, indent) == json.dumps(value, indent=indent, allow_nan=False)
    for bad, error in (({"a": [1, float("nan")]}, ValueError), ({"a": {"b": object()}}, TypeError)):
        with pytest.raises(error) as got:
            assemble.dumps_indented(bad)
        with pytest.raises(error) as expected:
            json.dumps(bad, indent=2, allow_nan=False)
        assert str(got.value) == str(expected.value)


def test_dumps_indented_writes_lists_of_flat_dicts_as_json_dumps_does():
    """The one-call path of ``dumps_indented`` (a list of non-empty dicts holding no container, as the
    summary's ``offers`` and ``monte_carlo``): 2,000 random such lists, alone and inside dicts and lists,
    with strings that look like the text it edits (``},\n  {``), and beside the cases it leaves to the
    walk (an empty dict, a dict holding a list, a dict subclass, a tuple of dicts)."""
    import collections
    import json
    import random

    rng = random.Random(31)
    odd = ["}, {", "},\n    {", "}\n{", '"},\n      {"', "{", "}", "\n", ",\n  "]

    def record():
        n = rng.randint(1, 6)
        return {rng.choice(["a", "b", "}", "{", "x y", 1, None]): rng.choice(
            [rng.choice(odd), rng.random(), rng.randint(-5, 5), True, None, 1e22]) for _ in range(n)}

    for i in range(2000):
        rows = [record() for _ in range(rng.randint(1, 5))]
        if i % 5 == 1:
            rows.insert(rng.randrange(len(rows) + 1), {})
        if i % 7 == 2:
            rows[0]["nested"] = [1, {"k": "v"}]
        if i % 11 == 3:
            rows[-1] = collections.OrderedDict(rows[-1])
        value = rng.choice([rows, tuple(rows), {"offers": rows, "n": 1}, [rows, {"mc": rows}], {"a": {"b": rows}}])
        indent = 1 + i % 4
        assert assemble.dumps_indented(value, indent) == json.dumps(value, indent=indent, allow_nan=False)


def test_headline_reads_a_training_recommendation():
    summary = {"scenario": "s", "title": "T", "report": {"generated_utc": "2026-01-01T00:00:00Z"},
               "recommendation": {"accelerator": "H100-SXM5-80GB", "provider": "AWS", "offering": "p5.48xlarge",
                                  "pricing_model": "commit_1y", "metric": "cost_usd",
                                  "runner_up": {"accelerator": "MI300X", "score": 0.7012},
                                  "figures": {"cost_usd": 1.234e6, "cost_usd_low": 1.1e6, "cost_usd_high": 1.5e6,
                                              "training_days": 3.0, "score": 0.74, "p_beats_runner_up": 0.51,
                                              "p_cheapest": 0.32}}}
    h = assemble.headline(summary)
    assert h["recommendation"] == "H100-SXM5-80GB on a 1-year commitment (AWS, p5.48xlarge)"
    assert h["cost"] == "$1.23M per run ($1.10M to $1.50M)"
    assert h["time"] == "3.0 days"
    assert h["confidence"] == ("score 0.740 vs 0.701 for the runner-up; beats the runner-up in 51% of Monte Carlo "
                               "draws; cheapest in 32% of Monte Carlo draws")
    assert (h["cost_value"], h["training_days"], h["p_cheapest"]) == (1.234e6, 3.0, 0.32)
    assert assemble.headline({"scenario": "s", "estimate_error": "boom"})["recommendation"] is None


def test_headline_reads_an_inference_recommendation_with_latency_from_its_option():
    summary = {"scenario": "s", "options": [{"accelerator": "L4", "ttft_ms": 120.0, "tpot_ms": 20.4},
                                            {"accelerator": "T4", "ttft_ms": 300.0, "tpot_ms": 45.0}],
               "recommendation": {"accelerator": "L4", "provider": "GCP", "offering": "g2-standard-4",
                                  "pricing_model": "spot", "metric": "usd_per_million_tokens",
                                  "figures": {"usd_per_million_tokens": 0.35, "usd_per_million_tokens_low": 0.3,
                                              "usd_per_million_tokens_high": 0.42, "usd_per_month": 2500.0}}}
    h = assemble.headline(summary)
    assert h["cost"] == "$0.35 per million output tokens ($0.3 to $0.42); $2,500 per month"
    assert h["time"] == "20 ms per output token, first token 120 ms unloaded"
    assert h["confidence"] is None


def test_headline_of_a_generic_service_gives_its_request_latency():
    """An encoder has no output tokens: the header's time is the request latency at the SLO percentile
    (embedding-service's header had no time at all)."""
    summary = {"scenario": "s", "recommendation": {
        "accelerator": "H100-SXM5-80GB", "provider": "X", "offering": "o", "pricing_model": "on_demand",
        "metric": "usd_per_million_tokens", "unit": "per million requests",
        "figures": {"usd_per_million_tokens": 0.72, "ttft_ms_at_slo_percentile": 4.93, "ttft_slo_percentile": 99.0}}}
    assert assemble.headline(summary)["time"] == "4.9 ms per request at P99 under load"


def test_headline_text_is_the_decision_modules_own_headline():
    pd = pytest.importorskip("pandas")
    decision = pytest.importorskip("workbook.decision")

    def rec(**kw):
        parts = dict(scenario="s", accelerator=None, offering=None, provider=None, pricing_model=None, reasons=[],
                     runner_up=None, flip_conditions=[], ranking=pd.DataFrame(), excluded=pd.DataFrame())
        return decision.Recommendation(**{**parts, **kw})

    for r in (rec(accelerator="MI300X", offering="nd-mi300x-v5", provider="Azure", pricing_model="commit_3y",
                  metric="cost_usd", figures={"cost_usd": 1.0}), rec()):
        assert assemble.headline({"recommendation": r.as_dict()})["recommendation"] == r.headline()


def test_the_stylesheet_is_inlined_unescaped():
    """The CSS is the package's own file: jinja's autoescape must not turn its ``>`` selectors into
    ``&gt;`` (which silently drops those rules)."""
    from workbook.report.assemble import jinja_env, report_css

    css = report_css()
    assert ">" in css
    for name in ("index_page.html.j2", "report_page.html.j2"):
        src = jinja_env().loader.get_source(jinja_env(), name)[0]
        assert "{{ css | safe }}" in src, name


def test_the_page_templates_are_compiled_once_per_process_and_reloaded_when_changed():
    from workbook.report.assemble import jinja_env

    env = jinja_env()
    assert jinja_env() is env and env.auto_reload
    assert env.get_template("report_page.html.j2") is env.get_template("report_page.html.j2")


def test_template_cache_keeps_compiled_templates_and_never_fails(tmp_path, monkeypatch):
    """``template_cache``: a template compiled once is loaded from ``$WORKBOOK_CACHE_DIR/templates`` by a
    new environment (no compilation), renders the same, is compiled again when its source changes or
    when another environment's settings would compile it differently; a corrupt file or a cache folder
    that cannot be made only costs the compilation. (The package's folder for compiled code is made
    unwritable here: ``cache_folder`` then falls back to the cache folder.)"""
    import jinja2

    from workbook.report import templatecache

    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(templatecache, "PACKAGE_COMPILED_DIR", tmp_path / "a-file" / "compiled")
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "t").mkdir()
    page = tmp_path / "t" / "p.html.j2"
    page.write_text("{% for x in xs %}\n<b>{{ x }}</b>\n{% endfor %}")

    compiled = []

    def env(**kw):
        e = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path / "t")), autoescape=True,
                               bytecode_cache=assemble.template_cache(), **kw)
        compile_ = e.compile
        e.compile = lambda *a, **k: compiled.append(a[1]) or compile_(*a, **k)
        return e

    first = env().get_template("p.html.j2").render(xs=["<1>", 2])
    assert compiled == ["p.html.j2"] and len(list((tmp_path / "cache" / "templates").glob("*.jinja"))) == 1
    assert env().get_template("p.html.j2").render(xs=["<1>", 2]) == first == "\n<b>&lt;1&gt;</b>\n\n<b>2</b>\n"
    assert compiled == ["p.html.j2"]                      # loaded, not compiled
    trimmed = env(trim_blocks=True).get_template("p.html.j2").render(xs=["<1>", 2])
    assert trimmed == "<b>&lt;1&gt;</b>\n<b>2</b>\n" and len(compiled) == 2   # other settings: its own code
    page.write_text("{{ xs | length }}")
    assert env().get_template("p.html.j2").render(xs=[1, 2]) == "2" and len(compiled) == 3
    for f in (tmp_path / "cache" / "templates").glob("*.jinja"):
        f.write_bytes(f.read_bytes()[:12] + b"garbage")
    assert env().get_template("p.html.j2").render(xs=[1]) == "1" and len(compiled) == 4
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "file"))
    assert env().get_template("p.html.j2").render(xs=[]) == "0" and len(compiled) == 5


def test_template_cache_keeps_apart_code_compiled_for_filters_that_take_the_context_and_for_others(tmp_path, monkeypatch):
    """Jinja compiles a filter's call with the context when the filter registered then asks for it
    (``pass_context``): a template compiled with such a filter, then used where the same-named filter
    takes no context (or the other way round), is compiled again, not loaded (it would fail)."""
    import jinja2

    from workbook.report import templatecache

    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(templatecache, "PACKAGE_COMPILED_DIR", tmp_path / "a-file" / "compiled")
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "p.j2").write_text("{{ x | shout }}")

    @jinja2.pass_context
    def with_context(context, value):
        return f"{value}!{context['x']}"

    def plain(value):
        return f"{value}!"

    def env(shout):
        e = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path / "t")), bytecode_cache=assemble.template_cache())
        e.filters["shout"] = shout
        return e

    assert env(with_context).get_template("p.j2").render(x="a") == "a!a"
    assert env(plain).get_template("p.j2").render(x="a") == "a!"
    assert env(with_context).get_template("p.j2").render(x="b") == "b!b"
    assert len(list((tmp_path / "cache" / "templates").glob("*.jinja"))) == 2


def test_template_cache_folder_in_the_package_unless_unwritable_or_no_bytecode(tmp_path, monkeypatch):
    """``cache_folder``: compiled templates go to the package's ``__pycache__/compiled`` (as Python's
    bytecode), so a new ``$WORKBOOK_CACHE_DIR`` does not compile them again; to the cache folder when
    that folder cannot be written or the process writes no bytecode (``-B``). Neither the inputs
    digest nor the package data take files from ``__pycache__``."""
    import os
    import sys

    from workbook import paths
    from workbook.report import templatecache

    from workbook.report.digest import package_files

    assert templatecache.PACKAGE_COMPILED_DIR == paths.PACKAGE_DIR / "__pycache__" / "compiled"
    assert not any("__pycache__" in p.parts for p in package_files())
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "cache"))
    own = tmp_path / "templates" / "__pycache__" / "compiled"
    monkeypatch.setattr(templatecache, "PACKAGE_COMPILED_DIR", own)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "templates").mkdir()
    assert templatecache.cache_folder() == own
    sys.dont_write_bytecode = True
    assert templatecache.cache_folder() == tmp_path / "cache" / "templates"
    sys.dont_write_bytecode = False
    if os.geteuid() != 0:   # root writes anywhere
        (tmp_path / "templates").chmod(0o555)
        try:
            assert templatecache.cache_folder() == tmp_path / "cache" / "templates"
        finally:
            (tmp_path / "templates").chmod(0o755)


def test_export_is_the_same_with_a_warm_template_cache_and_checks_the_notebook(tmp_path, monkeypatch):
    """The nbconvert export with its templates loaded from the cache writes the same HTML; the check
    after the preprocessors still accepts an extra property (nbconvert's relaxed schema) and still
    refuses a notebook its schema refuses."""
    import copy
    import threading

    nb = executed_like()
    assemble.clean_notebook(nb)   # drops the copied widget cell (a duplicate id: nbconvert draws a new one)

    def export():
        out = {}
        t = threading.Thread(target=lambda: out.update(html=assemble.notebook_html(copy.deepcopy(nb))))
        t.start()
        t.join()   # a new thread: its own exporter, its templates loaded through a new environment
        return out.get("html")

    import sys

    from workbook.report import templatecache

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "templates").mkdir()
    monkeypatch.setattr(templatecache, "PACKAGE_COMPILED_DIR", tmp_path / "templates" / "compiled")
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "cache"))
    cold = export()
    assert list((tmp_path / "templates" / "compiled").glob("*.jinja"))
    assert not (tmp_path / "cache").exists()
    assert export() == cold and cold
    nb = executed_like()
    assemble.clean_notebook(nb)   # as above: no duplicate id for nbformat to correct (and warn about)
    nb.cells[0]["metadata"]["extra"] = 1
    nb.cells[0]["unknown_field"] = True                   # refused by the strict schema only
    assert "Question" in assemble.notebook_html(nb)
    nb.cells[0]["cell_type"] = "bogus"
    with pytest.raises(nbformat.ValidationError):
        assemble.notebook_html(nb)


def test_a_section_from_the_notebook_in_memory_is_the_section_of_its_file(tmp_path):
    """``assemble_report`` takes the executed notebooks Papermill returned (``notebooks``) instead of
    reading back the files it wrote: the same section either way."""
    import copy

    nb = executed_like()
    assemble.clean_notebook(nb)                 # no duplicate cell id (nbconvert would draw a new one)
    nb.cells[2].outputs[0]["data"]["text/plain"] = "line one\nline two\n"   # written as a list of lines
    path = tmp_path / "05_decision.ipynb"
    nbformat.write(nb, path)                    # as Papermill's write_ipynb: validated, then written
    from_file = assemble._section("decision", "Decision", path, notes := [], "05_decision.ipynb")
    in_memory = assemble._section("decision", "Decision", path, notes2 := [], "05_decision.ipynb", copy.deepcopy(nb))
    assert in_memory == from_file and notes == notes2 and "Question" in from_file["html"]


def test_export_preprocesses_the_notebook_as_nbconvert_does_without_its_copies():
    """``CellsExporter._preprocess`` (one copy of the notebook, not three) against nbconvert's own
    ``Exporter._preprocess`` on the same exporter: equal notebooks and resources for a notebook with
    unique ids, one with a cell without id (nbformat repairs it), one with a repeated id, and a v4.4
    notebook without ids; the caller's notebook is left as it was; the CSS header is not made."""
    import copy
    import warnings

    from nbconvert.exporters.exporter import Exporter

    ex = assemble._exporter()
    base = executed_like()
    assemble.clean_notebook(base)
    missing, repeated, old = copy.deepcopy(base), copy.deepcopy(base), copy.deepcopy(base)
    del missing.cells[0]["id"]
    repeated.cells[1]["id"] = repeated.cells[0]["id"]
    old.nbformat_minor = 4
    for cell in old.cells:
        cell.pop("id", None)
    for nb in (base, missing, repeated, old):
        before = copy.deepcopy(nb)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours, ours_res = ex._preprocess(copy.deepcopy(nb), {"metadata": {"name": "x"}})
            theirs, theirs_res = Exporter._preprocess(ex, copy.deepcopy(nb), {"metadata": {"name": "x"}})
        for a, b in zip(ours.cells, theirs.cells):   # a repaired id is random: only its presence compares
            if a.get("id") != b.get("id"):
                assert nb is not base and a.get("id") and b.get("id")
                a["id"] = b["id"]
        assert ours == theirs and nb == before
        assert assemble._needs_normalizing(nb) == (nb is missing or nb is repeated)
        theirs_res.get("inlining", {}).pop("css", None)   # nbconvert's header CSS, off here
        assert ours_res == theirs_res
    before = copy.deepcopy(base)
    assert "Question" in assemble.notebook_html(base, "x") and base == before
