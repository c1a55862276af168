"""Running notebooks for a report: ``widgets`` cells are removed from the NotebookNode before
Papermill sees it, and a failure names the cell as the source notebook numbers it."""
from __future__ import annotations

import json
import re

import nbformat
import pytest
from report_helpers import FIXTURE_NOTEBOOKS, copy_scenario, without_catalog_model

from workbook.report import batch, execute


def test_widgets_cells_and_their_heading_are_removed_before_execution():
    nb = execute.batch_notebook(FIXTURE_NOTEBOOKS / "05_decision.ipynb")
    source = nbformat.read(FIXTURE_NOTEBOOKS / "05_decision.ipynb", as_version=4)
    assert [c.source for c in source.cells][-2:] == ["## Try it\n\nOnly a live notebook shows this section.",
                                                     'raise RuntimeError("a widgets cell ran in a batch")']
    assert not [c for c in nb.cells if "widgets" in c.metadata.get("tags", [])]
    assert [c.source for c in nb.cells] == [c.source for c in source.cells[:-2]]
    assert nb.metadata.workbook.removed_cells == [len(source.cells) - 1, len(source.cells)]
    assert nb.metadata.workbook.section.key == "decision"  # the rest of the metadata stays


def test_a_notebook_without_widgets_cells_is_run_as_it_is():
    nb = execute.batch_notebook(FIXTURE_NOTEBOOKS.parent / "notebooks_bad_params" / "05_decision.ipynb")
    assert "removed_cells" not in nb.metadata.workbook


def test_source_cell_number_ignores_injected_and_banner_cells():
    nb = nbformat.v4.new_notebook()
    tag = lambda t: {"tags": [t]}  # noqa: E731
    nb.cells = [nbformat.v4.new_markdown_cell("banner", metadata=tag("papermill-error-cell-tag")),
                nbformat.v4.new_markdown_cell("# q"), nbformat.v4.new_code_cell("p", metadata=tag("parameters")),
                nbformat.v4.new_code_cell("i", metadata=tag("injected-parameters")),
                nbformat.v4.new_markdown_cell("anchor", metadata=tag("papermill-error-cell-tag")),
                nbformat.v4.new_code_cell("boom")]
    # Papermill's index 3 counts the injected cell but not its banners: the 3rd cell of the source
    assert execute._source_cell_number(nb, 3) == 3


def test_source_cell_number_skips_the_cells_removed_before_execution():
    nb = nbformat.v4.new_notebook()
    nb.metadata["workbook"] = {"removed_cells": [3, 4]}  # e.g. a "## Try it" heading and its widgets cell
    nb.cells = [nbformat.v4.new_markdown_cell("# q"), nbformat.v4.new_code_cell("p", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("i", metadata={"tags": ["injected-parameters"]}),
                nbformat.v4.new_code_cell("ok"), nbformat.v4.new_code_cell("boom")]
    assert execute._source_cell_number(nb, 3) == 5 and execute._source_cell_number(nb, 4) == 6


@pytest.mark.slow
def test_a_failure_after_a_removed_widgets_cell_names_the_source_cell(tmp_path):
    d = tmp_path / "nb"
    d.mkdir()
    (d / "05_decision.ipynb").write_bytes((FIXTURE_NOTEBOOKS / "05_decision.ipynb").read_bytes())
    nb = json.loads((FIXTURE_NOTEBOOKS / "01_workload_profile.ipynb").read_text())
    widgets = nb["cells"].pop()  # cell 8 becomes cell 4: the catalog look-up moves from cell 7 to 8
    nb["cells"].insert(3, widgets)
    (d / "01_workload_profile.ipynb").write_text(json.dumps(nb, indent=1))
    broken = copy_scenario(tmp_path, "small-model-cheap", without_catalog_model)
    [job], _, _ = batch.plan([str(broken)], tmp_path, d)
    try:
        res = execute.render_scenario(job)
    finally:
        execute.shutdown_kernels()
    assert not res.ok
    assert re.search(r"01_workload_profile\.ipynb: cell 8 \(`wb\.catalog\.model", res.error), res.error
    kept = nbformat.reads(res.files["01_workload_profile.ipynb"].decode(), as_version=4)
    assert kept.metadata.workbook.removed_cells == [4]
    assert kept.metadata.papermill.input_path == str(d / "01_workload_profile.ipynb")
    assert not [c for c in kept.cells if "widgets" in c.metadata.get("tags", [])]


def _notebooks_with_cell(tmp_path, code: str):
    """The fixture notebooks with ``code`` as a new cell 4 of 01_workload_profile (after the imports)."""
    d = tmp_path / "nb"
    d.mkdir()
    (d / "05_decision.ipynb").write_bytes((FIXTURE_NOTEBOOKS / "05_decision.ipynb").read_bytes())
    nb = json.loads((FIXTURE_NOTEBOOKS / "01_workload_profile.ipynb").read_text())
    nb["cells"].insert(3, nbformat.v4.new_code_cell(code))   # nbformat's own cell: with an id, as v4.5 wants
    (d / "01_workload_profile.ipynb").write_text(json.dumps(nb, indent=1))
    return d


@pytest.mark.parametrize("code,ename,engine", [
    ("import time\nif 'llama' in scenario: time.sleep(600)", "CellTimeoutError", "in-process"),
    ("import time\nif 'llama' in scenario: time.sleep(600)", "CellTimeoutError", "kernel"),
    ("import os\nif 'llama' in scenario: os._exit(1)", "DeadKernelError", "kernel"),
])
def test_a_cell_past_its_timeout_or_a_dead_kernel_fails_that_scenario_alone_naming_the_cell(tmp_path, code, ename,
                                                                                            engine):
    """Issue 28: a batch report once hung 14.6 min on one cell. Every cell has the batch's timeout;
    a cell past it, or a kernel that dies, fails its scenario with the cell named, and the next
    scenario runs in a fresh kernel (a notebook that ends its process in-process: see
    ``test_a_notebook_ending_its_worker_fails_that_scenario_alone``)."""
    import time

    d = _notebooks_with_cell(tmp_path, code)
    hung = copy_scenario(tmp_path, "llama-8b-finetune")
    fine = copy_scenario(tmp_path, "small-model-cheap")
    jobs, problems, _ = batch.plan([str(hung), str(fine)], tmp_path / "out", d, timeout_s=8, engine=engine)
    assert not problems
    t0 = time.monotonic()
    try:
        results = [execute.render_scenario(job) for job in jobs]
    finally:
        execute.shutdown_kernels()
    assert time.monotonic() - t0 < 240
    bad, good = results
    assert not bad.ok and good.ok, (bad.error, good.error)
    assert re.search(rf"01_workload_profile\.ipynb: cell 4 \(`import \w+`\): {ename}", bad.error), bad.error
    assert bad.error_detail["cell"] == 4


@pytest.mark.slow
def test_a_notebook_ending_its_worker_fails_that_scenario_alone(tmp_path):
    """In-process, ``os._exit`` in a cell ends the pool worker and breaks the pool: the scenario that
    ran it fails with its cell named (from the worker's progress file), the scenarios the pool
    stopped with it, or had not started, are rendered again in a new pool and written."""
    d = _notebooks_with_cell(tmp_path, "import os\nif 'llama' in scenario: os._exit(3)")
    names = ["llama-8b-finetune", "small-model-cheap", "nightly-batch-8b"]
    jobs, problems, _ = batch.plan([str(copy_scenario(tmp_path, n)) for n in names], tmp_path / "out", d,
                                   engine="in-process")
    assert not problems
    lines = []
    results = {r.scenario: r for r in batch.run_batch(jobs, tmp_path / "out", workers=2, progress=False,
                                                      echo=lines.append)}
    bad = results.pop("llama-8b-finetune")
    assert not bad.ok
    assert re.search(r"01_workload_profile\.ipynb: cell 4 \(`import os`\): WorkerDied: the process running the "
                     r"notebook ended \(exit code 3\)$", bad.error), bad.error
    assert bad.error_detail["cell"] == 4
    assert all(r.ok for r in results.values()), [r.error for r in results.values()]
    for name in results:
        assert (tmp_path / "out" / name / "report.html").is_file()
    assert (tmp_path / "out" / "_failed" / "llama-8b-finetune" / "error.txt").is_file()


def test_every_planned_job_has_a_cell_timeout_and_no_widget_cell_reaches_the_kernel():
    """Issue 28: a batch waited 14.6 min on notebook 02's widget cell. A job always carries a cell
    timeout (also when the API caller gives none), and every code cell that builds a widget in the
    shipped notebooks is tagged ``widgets``, so the batch removes it before the kernel sees it."""
    from workbook.paths import NOTEBOOK_DIR
    from workbook.report.jobs import CELL_TIMEOUT_S

    jobs, problems, _ = batch.plan(["small-model-cheap"], "/nonexistent-out", timeout_s=None)
    assert not problems and jobs[0].timeout_s == CELL_TIMEOUT_S
    for path in sorted(NOTEBOOK_DIR.glob("0*.ipynb")):
        kept = execute.batch_notebook(path)
        for c in kept.cells:
            if c.cell_type == "code":
                assert not re.search(r"widgets\.|ipywidgets|JupyterChart|interact\(", c.source), (path.name, c.source)
