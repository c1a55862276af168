"""Batch decision reports (``python -m workbook report``): offline HTML, summary.json, index, and
the batch behaviour (validation first, failures isolated, atomic replacement, skip, Dask).

Tests marked ``slow`` start kernels. The report path runs once on two shipped scenarios with the
real notebooks (module fixture ``real``); the batch behaviour runs on the small fixture notebooks in
``tests/fixtures/notebooks`` (same conventions: parameters cell, a chart through
``workbook.charts``, a ``widgets`` cell)."""
from __future__ import annotations

import argparse
import base64
import csv
import json
import re
from html import unescape
from pathlib import Path

import nbformat
import pytest

from workbook import report
from workbook.errors import InputError
from workbook.paths import SCENARIO_DIR

FIXTURE_NOTEBOOKS = Path(__file__).parent / "fixtures" / "notebooks"
BAD_PARAMS = Path(__file__).parent / "fixtures" / "notebooks_bad_params"
TWO = ["small-model-cheap", "llama-8b-finetune"]  # an inference and a training scenario


def run_report(*argv: str) -> int:
    """The ``report`` sub-command as the CLI runs it (its own parser, InputError -> exit 2)."""
    p = argparse.ArgumentParser()
    report.add_arguments(p)
    try:
        return report.run(p.parse_args(list(argv)))
    except InputError:
        return 2


def copy_scenario(tmp_path: Path, name: str, edit=None) -> Path:
    """A scenario file outside data/scenarios (passed to the notebooks as a path)."""
    text = (SCENARIO_DIR / f"{name}.yaml").read_text()
    p = tmp_path / f"{name}.yaml"
    p.write_text(edit(text) if edit else text)
    return p


def without_catalog_model(text: str) -> str:
    """Still a valid scenario (an explicit architecture instead of a catalog model id), but the
    fixture workload notebook looks the model up in the catalog, so its run fails in a cell."""
    arch = ("  architecture: {layers: 16, hidden: 2048, ffn_hidden: 8192, heads: 32, kv_heads: 8, "
            "vocab: 128256, tied_embeddings: true}")
    return re.sub(r"(?m)^  model: .*$", arch, text)


# --- the report path on the real notebooks --------------------------------------------------------

@pytest.fixture(scope="module")
def real(tmp_path_factory):
    present, _missing = report.available_sections()
    if not present:
        pytest.fail("no report notebook in notebooks/ (expected at least 05_decision.ipynb)")
    out = tmp_path_factory.mktemp("reports")
    code = run_report(*TWO, "--out", str(out), "--jobs", "2")
    return {"out": out, "code": code, "sections": present}


def page(out: Path, name: str) -> str:
    return (out / name / "report.html").read_text()


@pytest.mark.slow
def test_two_scenarios_render_with_exit_status_0(real):
    assert real["code"] == 0
    for name in TWO:
        folder = real["out"] / name
        assert (folder / "report.html").is_file()
        assert (folder / "summary.json").is_file()
        kept = sorted(p.name for p in folder.glob("*.ipynb"))
        assert kept == sorted(s.notebook for s in real["sections"])


@pytest.mark.slow
def test_report_sections_appear_in_report_order_with_a_table_of_contents(real):
    html = page(real["out"], TWO[0])
    order = [m.group(1) for m in re.finditer(r'<section class="report-section" id="[^"]*" data-section="([^"]+)"', html)]
    assert order == [s.key for s in real["sections"]]
    assert order[0] == "decision"
    toc = html[html.index('<nav class="toc">'):html.index("</nav>")]
    for anchor in re.findall(r'<section class="report-section" id="([^"]+)"', html):
        assert f'href="#{anchor}"' in toc


@pytest.mark.slow
def test_report_loads_nothing_from_a_network(real):
    for name in TWO:
        html = page(real["out"], name)
        assert "<script" not in html  # a static page: no script at all, so no CDN script
        assert not re.search(r"<link[^>]+href=[\"']?(https?:)?//", html)
        assert not re.search(r"\bsrc=[\"']?(https?:)?//", html)
        assert report.external_resources(html) == []


@pytest.mark.slow
def test_report_has_no_code_no_widgets_and_no_error_banner(real):
    out = real["out"]
    for name in TWO:
        html = page(out, name)
        assert "import workbook" not in html and "jp-InputArea-editor" not in html
        assert "widget-state" not in html and "widget-view" not in html
        assert "interactive = " not in html and "papermill-error" not in html
        assert "Traceback" not in html
        for nb_path in (out / name).glob("*.ipynb"):
            nb = nbformat.read(nb_path, as_version=4)
            assert nb.metadata.papermill.parameters == {"scenario": name, "interactive": False}


@pytest.mark.slow
def test_every_chart_of_the_notebooks_is_an_embedded_svg_image(real):
    out = real["out"]
    for name in TWO:
        html = page(out, name)
        images = re.findall(r'<img[^>]+src="data:image/svg\+xml;base64,([^"]+)"', html)
        charts = 0
        for nb_path in (out / name).glob("*.ipynb"):
            nb = nbformat.read(nb_path, as_version=4)
            for cell in nb.cells:
                if "widgets" in cell.metadata.get("tags", []):
                    continue
                charts += sum("image/svg+xml" in o.get("data", {}) for o in cell.get("outputs", []))
        assert charts >= 1
        assert len(images) == charts
        assert all(base64.b64decode(i).lstrip().startswith((b"<svg", b"<?xml")) for i in images)


@pytest.mark.slow
def test_headline_recommendation_equals_summary_json(real):
    for name in TWO:
        summary = json.loads((real["out"] / name / "summary.json").read_text())
        head = report.headline(summary)
        assert summary["scenario"] == name
        assert summary["report"]["scenario_sha256"] and summary["report"]["catalog_versions"]
        assert [n["notebook"] for n in summary["report"]["notebooks"]] == [s.notebook for s in real["sections"]]
        html = page(real["out"], name)
        shown = re.search(r'data-field="recommendation">([^<]*)<', html).group(1)
        if "estimate_error" in summary:
            pytest.fail(f"estimate failed for {name}: {summary['estimate_error']}")
        assert head["recommendation"] and unescape(shown) == head["recommendation"]
        # the decision notebook, run in the kernel, recommends what summary.json (estimate) says
        decision = re.search(r'data-section="decision">(.*?)</section>', html, re.S).group(1)
        assert head["recommendation"] in unescape(re.sub(r"<[^>]+>", "", decision))


@pytest.mark.slow
def test_index_lists_each_scenario_with_a_link_and_a_csv(real):
    out = real["out"]
    index = (out / "index.html").read_text()
    rows = list(csv.DictReader((out / "index.csv").open()))
    assert [r["scenario"] for r in rows] == sorted(TWO)
    for r in rows:
        assert f'href="{r["scenario"]}/report.html"' in index
        summary = json.loads((out / r["scenario"] / "summary.json").read_text())
        assert r["recommendation"] == (report.headline(summary)["recommendation"] or "")
        assert r["status"] == "ok"
    assert report.external_resources(index) == []


# --- batch behaviour on the fixture notebooks --------------------------------------------------------

@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Run 1: two good scenarios. Run 2: the first one is now broken (fails in a notebook cell), the
    second still good."""
    tmp = tmp_path_factory.mktemp("batch")
    out = tmp / "reports"
    good = copy_scenario(tmp, "small-model-cheap")
    other = copy_scenario(tmp, "nightly-batch-8b")
    code1 = run_report(str(good), str(other), "--out", str(out), "--jobs", "1", "--notebooks", str(FIXTURE_NOTEBOOKS))
    before = {p.name: p.read_bytes() for p in (out / "small-model-cheap").iterdir()}
    other_before = json.loads((out / "nightly-batch-8b" / "summary.json").read_text())
    good.write_text(without_catalog_model(good.read_text()))
    code2 = run_report(str(good), str(other), "--out", str(out), "--jobs", "1", "--notebooks", str(FIXTURE_NOTEBOOKS))
    return {"out": out, "code1": code1, "code2": code2, "before": before, "other_before": other_before}


@pytest.mark.slow
def test_one_broken_scenario_fails_alone_with_a_clear_error_and_exit_1(batch, capsys):
    assert batch["code1"] == 0
    assert batch["code2"] == 1
    out = batch["out"]
    error = (out / "_failed" / "small-model-cheap" / "error.txt").read_text()
    # file, cell and message: cell 7 of the fixture looks the model up in the catalog
    assert re.search(r"fixtures/notebooks/01_workload_profile\.ipynb: cell 7 \(`wb\.catalog\.model\(s\.workload\.model\)"
                     r"[^`]*`\): InputError: unknown model id None$", error.strip()), error
    assert (out / "_failed" / "small-model-cheap" / "01_workload_profile.ipynb").is_file()
    # the other scenario of the batch was rendered again
    summary = json.loads((out / "nightly-batch-8b" / "summary.json").read_text())
    assert summary["report"]["generated_utc"] >= batch["other_before"]["report"]["generated_utc"]
    assert (out / "nightly-batch-8b" / "report.html").is_file()
    status = {r["scenario"]: r["status"] for r in csv.DictReader((out / "index.csv").open())}
    assert status["nightly-batch-8b"] in ("ok",) or status["nightly-batch-8b"].startswith("estimate error")
    assert status["small-model-cheap"].startswith("latest run failed: ")
    assert "01_workload_profile.ipynb: cell 7" in status["small-model-cheap"]


@pytest.mark.slow
def test_failed_rerun_leaves_the_previous_report_intact(batch):
    out = batch["out"]
    after = {p.name: p.read_bytes() for p in (out / "small-model-cheap").iterdir()}
    assert after == batch["before"]
    assert not [p for p in out.iterdir() if p.name.startswith((".staging-", ".old-"))]


@pytest.mark.slow
def test_skip_unchanged_renders_nothing_when_inputs_are_the_same(tmp_path, capsys, monkeypatch):
    # the hash itself is tested below; here, inputs stay the same even if someone edits the tree
    monkeypatch.setattr(report, "inputs_sha256", lambda *a, **k: "same inputs")
    out = tmp_path / "reports"
    args = ["small-model-cheap", "--out", str(out), "--notebooks", str(FIXTURE_NOTEBOOKS), "--skip-unchanged"]
    assert run_report(*args) == 0
    first = (out / "small-model-cheap" / "report.html").stat().st_mtime_ns
    capsys.readouterr()
    assert run_report(*args) == 0
    assert "skip    small-model-cheap" in capsys.readouterr().err
    assert (out / "small-model-cheap" / "report.html").stat().st_mtime_ns == first
    monkeypatch.setattr(report, "inputs_sha256", lambda *a, **k: "other inputs")
    jobs, _, skipped = report.plan(["small-model-cheap"], out, FIXTURE_NOTEBOOKS, skip_unchanged=True)
    assert [j.scenario for j in jobs] == ["small-model-cheap"] and skipped == []


@pytest.mark.slow
def test_dask_cluster_renders_through_its_executor(tmp_path):
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "reports"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        code = run_report("small-model-cheap", "nightly-batch-8b", "--out", str(out), "--notebooks",
                          str(FIXTURE_NOTEBOOKS), "--scheduler", cluster.scheduler_address)
        with distributed.Client(cluster) as client:
            assert sum(client.run(report.shutdown_kernels).values()) == 0  # the runner stopped them
    assert code == 0
    for name in ("small-model-cheap", "nightly-batch-8b"):
        html = page(out, name)
        assert 'data-section="workload"' in html and "data:image/svg+xml;base64," in html


# --- checks before any kernel starts ---------------------------------------------------------------

def test_unknown_notebook_parameter_is_rejected_before_any_kernel_starts(tmp_path, monkeypatch):
    def no_kernel(*a, **k):
        raise AssertionError("a kernel was started")

    monkeypatch.setattr(report, "_start_kernel", no_kernel)
    with pytest.raises(InputError) as e:
        report.plan(["small-model-cheap"], tmp_path, BAD_PARAMS)
    [line] = e.value.problems
    assert line.endswith("05_decision.ipynb: parameters cell: unknown parameter(s) scenario, interactive "
                         "(declared: scenario_name; expected scenario, interactive)")
    assert run_report("small-model-cheap", "--out", str(tmp_path), "--notebooks", str(BAD_PARAMS)) == 2
    assert not (tmp_path / "small-model-cheap").exists()


def test_invalid_scenario_is_reported_and_the_valid_ones_still_planned(tmp_path):
    bad = copy_scenario(tmp_path, "nightly-batch-8b", lambda t: t.replace("output_tokens: 300", "output_tokens: many"))
    jobs, problems, skipped = report.plan(["small-model-cheap", str(bad)], tmp_path, FIXTURE_NOTEBOOKS)
    assert [j.scenario for j in jobs] == ["small-model-cheap"]
    assert problems == [f"{bad}: workload.output_tokens: expected an integer, got 'many'"]
    assert jobs[0].parameter == "small-model-cheap"  # shipped scenarios are passed by name


def test_a_path_scenario_is_passed_to_the_notebooks_as_its_absolute_path(tmp_path):
    p = copy_scenario(tmp_path, "small-model-cheap")
    [job], _, _ = report.plan([str(p)], tmp_path, FIXTURE_NOTEBOOKS)
    assert job.parameter == str(p.resolve())


def test_missing_notebooks_are_skipped_and_the_rest_keep_report_order(tmp_path):
    present, missing = report.available_sections(FIXTURE_NOTEBOOKS)
    assert [s.key for s in present] == ["decision", "workload"]
    assert [s.key for s in missing] == ["comparison", "scaling", "cost"]
    with pytest.raises(InputError, match="no report notebook found"):
        report.plan(["small-model-cheap"], tmp_path, tmp_path)


def test_inputs_hash_changes_with_the_scenario_and_the_notebooks(tmp_path):
    s = copy_scenario(tmp_path, "small-model-cheap")
    nb = tmp_path / "05_decision.ipynb"
    nb.write_bytes((FIXTURE_NOTEBOOKS / "05_decision.ipynb").read_bytes())
    h0 = report.inputs_sha256(s, [nb])
    assert report.inputs_sha256(s, [nb]) == h0
    s.write_text(s.read_text().replace("utilization: 0.6", "utilization: 0.5"))
    h1 = report.inputs_sha256(s, [nb])
    nb.write_text(nb.read_text().replace("# Decision", "# The decision"))
    assert len({h0, h1, report.inputs_sha256(s, [nb])}) == 3


# --- cleaning and assembling, without kernels ------------------------------------------------------

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
    widget = nbformat.v4.new_code_cell("if interactive: w(s)", metadata={"tags": ["widgets"]}, outputs=[
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
    notes = report.clean_notebook(nb)
    assert "widgets" not in nb.metadata
    assert notes == ["cell 4 wrote to stderr: FutureWarning: something"]  # its number in the source notebook
    html = report.notebook_html(nb)
    assert "widget" not in html and "VBox" not in html and "JupyterChart" not in html
    assert "<script" not in html and "fetch(" not in html
    assert 'scenario = "' not in html and "import workbook" not in html and "FutureWarning" not in html
    assert len(re.findall(r'<img alt="Chart" src="data:image/svg\+xml;base64,', html)) == 1
    assert "&lt;js&gt;" in html  # the plain-text fallback of a script output stays
    assert "Try it" not in html  # a section holding only widgets goes with them


def test_headings_get_section_ids_for_the_table_of_contents():
    nb = executed_like()
    report.clean_notebook(nb)
    fragment, heads = report._prefix_anchors(report.notebook_html(nb), "cost")
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
    assert report.external_resources(f"<p>x</p>{snippet}") == [url]


def test_plain_links_and_embedded_images_are_not_external_resources():
    assert report.external_resources('<a href="https://arxiv.org/abs/2001.08361">Kaplan</a>'
                                     '<img src="data:image/svg+xml;base64,PHN2Zz4=">') == []


def test_headline_reads_a_training_recommendation():
    summary = {"scenario": "s", "title": "T", "report": {"generated_utc": "2026-01-01T00:00:00Z"},
               "recommendation": {"accelerator": "H100-SXM5-80GB", "provider": "AWS", "offering": "p5.48xlarge",
                                  "pricing_model": "commit_1y", "metric": "cost_usd",
                                  "runner_up": {"accelerator": "MI300X", "score": 0.7012},
                                  "figures": {"cost_usd": 1.234e6, "cost_usd_low": 1.1e6, "cost_usd_high": 1.5e6,
                                              "time_days": 3.0, "score": 0.74, "p_beats_runner_up": 0.51,
                                              "p_cheapest": 0.32}}}
    h = report.headline(summary)
    assert h["recommendation"] == "H100-SXM5-80GB on a 1-year commitment (AWS, p5.48xlarge)"
    assert h["cost"] == "$1.23M per run ($1.10M to $1.50M)"
    assert h["time"] == "3.0 days"
    assert h["confidence"] == ("score 0.740 vs 0.701 for the runner-up; beats the runner-up in 51% of Monte Carlo "
                               "draws; cheapest in 32% of Monte Carlo draws")
    assert (h["cost_value"], h["time_days"], h["p_cheapest"]) == (1.234e6, 3.0, 0.32)
    assert report.headline({"scenario": "s", "estimate_error": "boom"})["recommendation"] is None


def test_headline_reads_an_inference_recommendation_with_latency_from_its_option():
    summary = {"scenario": "s", "options": [{"accelerator": "L4", "ttft_ms": 120.0, "tpot_ms": 20.4},
                                            {"accelerator": "T4", "ttft_ms": 300.0, "tpot_ms": 45.0}],
               "recommendation": {"accelerator": "L4", "provider": "GCP", "offering": "g2-standard-4",
                                  "pricing_model": "spot", "metric": "usd_per_million_tokens",
                                  "figures": {"usd_per_million_tokens": 0.35, "usd_per_million_tokens_low": 0.3,
                                              "usd_per_million_tokens_high": 0.42, "usd_per_month": 2500.0}}}
    h = report.headline(summary)
    assert h["cost"] == "$0.35 per million output tokens ($0.3 to $0.42); $2,500 per month"
    assert h["time"] == "20 ms per output token, first token 120 ms"
    assert h["confidence"] is None


def test_headline_text_is_the_decision_modules_own_headline():
    pd = pytest.importorskip("pandas")
    decision = pytest.importorskip("workbook.decision")
    def rec(**kw):
        parts = dict(scenario="s", accelerator=None, offering=None, provider=None, pricing_model=None, reasons=[],
                     runner_up=None, flip_conditions=[], ranking=pd.DataFrame(), excluded=pd.DataFrame())
        return decision.Recommendation(**{**parts, **kw})

    for r in (rec(accelerator="MI300X", offering="nd-mi300x-v5", provider="Azure", pricing_model="commit_3y",
                  metric="cost_usd", figures={"cost_usd": 1.0}), rec()):
        assert report.headline({"recommendation": r.as_dict()})["recommendation"] == r.headline()


def test_install_replaces_a_report_folder_whole(tmp_path):
    old = report.Result(scenario="s", ok=True, files={"report.html": b"old", "stale.ipynb": b"x"})
    report.install(old, tmp_path)
    new = report.Result(scenario="s", ok=True, files={"report.html": b"new"})
    report.install(new, tmp_path)
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["report.html"]
    assert (tmp_path / "s" / "report.html").read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["s"]


def test_install_keeps_the_old_report_when_the_new_one_cannot_be_written(tmp_path, monkeypatch):
    report.install(report.Result(scenario="s", ok=True, files={"report.html": b"old"}), tmp_path)
    real_rename = report.os.rename

    def failing_rename(src, dst):
        if Path(src).name.startswith(".staging-"):
            raise OSError("disk full")
        return real_rename(src, dst)

    monkeypatch.setattr(report.os, "rename", failing_rename)
    with pytest.raises(OSError):
        report.install(report.Result(scenario="s", ok=True, files={"report.html": b"new"}), tmp_path)
    assert (tmp_path / "s" / "report.html").read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["s"]


def test_source_cell_number_ignores_injected_and_banner_cells():
    nb = nbformat.v4.new_notebook()
    tag = lambda t: {"tags": [t]}  # noqa: E731
    nb.cells = [nbformat.v4.new_markdown_cell("banner", metadata=tag("papermill-error-cell-tag")),
                nbformat.v4.new_markdown_cell("# q"), nbformat.v4.new_code_cell("p", metadata=tag("parameters")),
                nbformat.v4.new_code_cell("i", metadata=tag("injected-parameters")),
                nbformat.v4.new_markdown_cell("anchor", metadata=tag("papermill-error-cell-tag")),
                nbformat.v4.new_code_cell("boom")]
    # Papermill's index 3 counts the injected cell but not its banners: the 3rd cell of the source
    assert report._source_cell_number(nb, 3) == 3


def test_recover_puts_back_a_report_a_killed_run_moved_aside(tmp_path):
    dead = 4194305  # above Linux's largest pid: no such process
    aside = tmp_path / f".old-small-model-cheap-{dead}-1a2b3c4d"
    aside.mkdir()
    (aside / "report.html").write_text("good")
    (tmp_path / f".staging-small-model-cheap-{dead}-x_9k").mkdir()
    (tmp_path / f".staging-other-{report.os.getpid()}-abc").mkdir()  # a live run's: left alone
    done = report.recover(tmp_path)
    assert (tmp_path / "small-model-cheap" / "report.html").read_text() == "good"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".staging-other-{report.os.getpid()}-abc", "small-model-cheap"]
    assert len(done) == 2


# --- caches on the report path: keyed by content, never stale ---------------------------------------

def _clear_data_caches():
    from workbook import calibrate, catalog, perf

    for f in (catalog.load, catalog.resolve_map, calibrate._runs_cached, perf._param_file):
        f.cache_clear()


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A private copy of data/*.csv as the catalog folder, a private cache folder, empty caches."""
    from workbook import calibrate, paths

    data = tmp_path / "data"
    data.mkdir()
    for p in paths.DATA_DIR.glob("*.csv"):
        (data / p.name).write_bytes(p.read_bytes())
    monkeypatch.setattr(paths, "DATA_DIR", data)
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(calibrate, "_TABLES", {})
    _clear_data_caches()
    yield data
    _clear_data_caches()


def test_calibration_table_cache_follows_the_reference_runs_file(data_copy, monkeypatch):
    from workbook import calibrate

    runs_csv = data_copy / "reference_runs.csv"
    first = calibrate.reference_runs().iloc[0]
    before = calibrate.calibration_table()
    assert len(list((data_copy.parent / "cache").glob("calibration-*.pkl"))) == 1
    # halve the first used run's published figure: its error must follow, not come from the cache
    original = runs_csv.read_text()
    old = f",{first['metric']},{first['value']},{first['split']},"
    assert original.count(old) == 1
    runs_csv.write_text(original.replace(old, f",{first['metric']},{first['value'] / 2},{first['split']},"))
    _clear_data_caches()
    after = calibrate.calibration_table()
    row = lambda t: t.set_index("run").loc[first["run"]]  # noqa: E731
    assert row(after)["value"] == pytest.approx(row(before)["value"] / 2)
    assert row(after)["error"] == pytest.approx(2 * (row(before)["error"] + 1) - 1)
    assert len(list((data_copy.parent / "cache").glob("calibration-*.pkl"))) == 2
    # a new process (empty memory) reads the table of the current files from disk, for either content
    monkeypatch.setattr(calibrate, "_TABLES", {})
    monkeypatch.setattr(calibrate, "_calibration_table", lambda runs: pytest.fail("recomputed"))
    assert calibrate.calibration_table().equals(after)
    runs_csv.write_text(original)
    _clear_data_caches()
    assert calibrate.calibration_table().equals(before)


def test_calibration_table_cache_key_follows_the_package_source(monkeypatch, tmp_path):
    from workbook import calibrate

    pkg = tmp_path / "workbook"
    pkg.mkdir()
    (pkg / "perf.py").write_text("A = 1\n")
    monkeypatch.setattr(calibrate, "__file__", str(pkg / "calibrate.py"))
    k1 = calibrate._table_cache_key()
    (pkg / "perf.py").write_text("A = 2\n")
    assert calibrate._table_cache_key() != k1
