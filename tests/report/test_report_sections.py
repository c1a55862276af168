"""Report sections come from the notebooks themselves (``metadata.workbook.section``), not from a
table in the runner: discovery, report order, and one-line errors before any kernel starts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_helpers import FIXTURE_NOTEBOOKS

from workbook.errors import InputError
from workbook.paths import NOTEBOOK_DIR
from workbook.report import batch, execute, sections


def copy_notebooks(dest: Path, edit=None) -> Path:
    """The fixture notebooks in ``dest``; ``edit(name, metadata)`` may change each one's metadata."""
    dest.mkdir(exist_ok=True)
    for p in FIXTURE_NOTEBOOKS.glob("*.ipynb"):
        nb = json.loads(p.read_text())
        if edit:
            edit(p.name, nb["metadata"])
        (dest / p.name).write_text(json.dumps(nb, indent=1))
    return dest


def test_the_shipped_notebooks_declare_the_report_sections_decision_first():
    found = sections.discover_sections(NOTEBOOK_DIR)
    assert [(s.key, s.notebook, s.label) for s in found] == [
        ("decision", "05_decision.ipynb", "Decision"),
        ("workload", "01_workload_profile.ipynb", "Workload"),
        ("comparison", "02_accelerator_comparison.ipynb", "Accelerator comparison"),
        ("scaling", "03_scaling.ipynb", "Scaling"),
        ("cost", "04_cost_scenarios.ipynb", "Cost scenarios"),
    ]
    assert "app.ipynb" not in {s.notebook for s in found}  # no section declared: not a report notebook
    assert batch.available_sections() == (found, [])


def test_sections_order_and_labels_come_from_the_notebook_metadata(tmp_path):
    def edit(name, meta):
        if name == "01_workload_profile.ipynb":
            meta["workbook"]["section"].update(order=0, label="What the work needs")

    d = copy_notebooks(tmp_path / "nb", edit)
    (d / "notes.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    present, _missing = batch.available_sections(d)
    assert [(s.key, s.label) for s in present] == [("workload", "What the work needs"), ("decision", "Decision")]
    [job], _, _ = batch.plan(["small-model-cheap"], tmp_path, d)
    assert job.sections == (("workload", "01_workload_profile.ipynb", "What the work needs"),
                            ("decision", "05_decision.ipynb", "Decision"))


def test_a_notebook_without_a_section_is_not_part_of_the_report(tmp_path):
    def edit(name, meta):
        if name == "05_decision.ipynb":
            del meta["workbook"]

    present, missing = batch.available_sections(copy_notebooks(tmp_path / "nb", edit))
    assert [s.key for s in present] == ["workload"]
    assert "decision" in [s.key for s in missing]


def test_a_malformed_or_duplicate_section_is_an_error_before_any_kernel_starts(tmp_path, monkeypatch):
    def no_kernel(*a, **k):
        raise AssertionError("a kernel was started")

    def edit(name, meta):
        section = meta["workbook"]["section"]
        if name == "05_decision.ipynb":
            section.update(order="first", colour="red")
            del section["label"]
        else:
            section["key"] = "decision"

    monkeypatch.setattr(execute, "_start_kernel", no_kernel)
    d = copy_notebooks(tmp_path / "nb", edit)
    with pytest.raises(InputError) as e:
        batch.plan(["small-model-cheap"], tmp_path, d)
    problems = [p.split("nb/", 1)[1] for p in e.value.problems]
    assert problems == [
        "05_decision.ipynb: metadata.workbook.section.colour: unknown field (expected key, order, label)",
        "05_decision.ipynb: metadata.workbook.section.label: missing",
        "05_decision.ipynb: metadata.workbook.section.order: expected an integer, got 'first'",
    ]
    d2 = copy_notebooks(tmp_path / "nb2", lambda name, meta: meta["workbook"]["section"].update(key="decision", order=1))
    with pytest.raises(InputError) as e:
        batch.plan(["small-model-cheap"], tmp_path, d2)
    assert [p.split("nb2/", 1)[1] for p in e.value.problems] == [
        "05_decision.ipynb: metadata.workbook.section.key: 'decision' is also the key of 01_workload_profile.ipynb",
        "05_decision.ipynb: metadata.workbook.section.order: 1 is also the order of 01_workload_profile.ipynb",
    ]
