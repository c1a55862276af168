"""The report path on the real notebooks: two shipped scenarios (an inference and a training one)
rendered once (module fixture ``real``), then the offline HTML, summary.json and index checked.
Tests marked ``slow`` start kernels."""
from __future__ import annotations

import base64
import csv
import json
import re
from html import unescape

import nbformat
import pytest
from report_helpers import TWO, page, run_report

from workbook.report import assemble, batch


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    present, _missing = batch.available_sections()
    if not present:
        pytest.fail("no report notebook in notebooks/ (expected at least 05_decision.ipynb)")
    out = tmp_path_factory.mktemp("reports")
    code = run_report(*TWO, "--out", str(out), "--jobs", "2")
    return {"out": out, "code": code, "sections": present}


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
        assert assemble.external_resources(html) == []


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
            assert nb.metadata.papermill.parameters == {"scenario": name}
            # the widgets cells were removed before execution: none was run, none is kept
            assert not [c for c in nb.cells if "widgets" in c.metadata.get("tags", [])]
            assert nb.metadata.workbook.removed_cells


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
        head = assemble.headline(summary)
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
        assert r["recommendation"] == (assemble.headline(summary)["recommendation"] or "")
        assert r["status"] == "ok"
        # the headline the worker handed over with the files (Result.headline) is the file's own
        remembered = batch._HEADLINES[str(out / r["scenario"] / "summary.json")][1]
        assert remembered == assemble.headline(summary)
    assert assemble.external_resources(index) == []


@pytest.mark.slow
def test_header_shows_the_winners_price_source_and_age_and_says_tie_when_it_is_one(real):
    for name in TWO:
        summary = json.loads((real["out"] / name / "summary.json").read_text())
        rec = summary["recommendation"]
        html = page(real["out"], name)
        if not rec.get("accelerator"):
            continue
        price = unescape(re.search(r'data-field="price">([^<]*)<', html).group(1))
        assert "source: " in price and (" old" in price or "undated" in price), price
        lead = unescape(re.search(r'data-field="(?:tie or lead)">([^<]*)<', html).group(1))
        assert lead.startswith("Tie:") == bool(rec.get("ties")), lead
        assert '<details class="wb-appendix">' in html            # the ledger, collapsed
        assert 'class="wb-more"' in html                           # the rest of a table behind "more columns"
