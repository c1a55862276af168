"""The batch behaviour (``python -m workbook report``): validation before any kernel starts, failures
isolated, atomic replacement, recovery, skip, Dask. Runs on the small fixture notebooks in
``tests/fixtures/notebooks`` (same conventions as the real ones: a section in the notebook metadata,
a parameters cell, a chart through ``workbook.views.charts``, ``widgets`` cells). Tests marked ``slow``
start kernels."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from report_helpers import BAD_PARAMS, FIXTURE_NOTEBOOKS, copy_scenario, page, run_report, without_catalog_model

from workbook.errors import InputError
from workbook.report import assemble, batch, digest, execute

# --- batch behaviour on the fixture notebooks --------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
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
def test_one_broken_scenario_fails_alone_with_a_clear_error_and_exit_1(runs, capsys):
    assert runs["code1"] == 0
    assert runs["code2"] == 1
    out = runs["out"]
    error = (out / "_failed" / "small-model-cheap" / "error.txt").read_text()
    # file, cell and message: cell 7 of the fixture looks the model up in the catalog
    assert re.search(r"fixtures/notebooks/01_workload_profile\.ipynb: cell 7 \(`wb\.catalog\.model\(s\.workload\.model\)"
                     r"[^`]*`\): InputError: unknown model id None$", error.strip()), error
    assert (out / "_failed" / "small-model-cheap" / "01_workload_profile.ipynb").is_file()
    # the other scenario of the batch was rendered again
    summary = json.loads((out / "nightly-batch-8b" / "summary.json").read_text())
    assert summary["report"]["generated_utc"] >= runs["other_before"]["report"]["generated_utc"]
    assert (out / "nightly-batch-8b" / "report.html").is_file()
    status = {r["scenario"]: r["status"] for r in csv.DictReader((out / "index.csv").open())}
    assert status["nightly-batch-8b"] in ("ok",) or status["nightly-batch-8b"].startswith("estimate error")
    assert status["small-model-cheap"].startswith("latest run failed: ")
    assert "01_workload_profile.ipynb: cell 7" in status["small-model-cheap"]


@pytest.mark.slow
def test_failed_rerun_leaves_the_previous_report_intact(runs):
    out = runs["out"]
    after = {p.name: p.read_bytes() for p in (out / "small-model-cheap").iterdir()}
    assert after == runs["before"]
    assert not [p for p in out.iterdir() if p.name.startswith((".staging-", ".old-"))]


@pytest.mark.slow
def test_a_widgets_cell_that_would_raise_is_never_executed_in_a_batch(runs):
    # fixtures/notebooks/05_decision.ipynb's widgets cell raises RuntimeError: the report is still
    # written (run 1 exited 0), and neither the cell nor its "Try it" heading reaches the page
    assert runs["code1"] == 0
    html = page(runs["out"], "nightly-batch-8b")
    assert "Try it" not in html and "RuntimeError" not in html
    assert 'data-section="decision"' in html and "IntSlider" not in html


@pytest.mark.slow
def test_skip_unchanged_renders_nothing_when_inputs_are_the_same(tmp_path, capsys, monkeypatch):
    # the hash itself is tested below; here, inputs stay the same even if someone edits the tree
    monkeypatch.setattr(batch, "inputs_sha256", lambda *a, **k: "same inputs")
    out = tmp_path / "reports"
    args = ["small-model-cheap", "--out", str(out), "--notebooks", str(FIXTURE_NOTEBOOKS), "--skip-unchanged"]
    assert run_report(*args) == 0
    first = (out / "small-model-cheap" / "report.html").stat().st_mtime_ns
    capsys.readouterr()
    assert run_report(*args) == 0
    assert "skip    small-model-cheap" in capsys.readouterr().err
    assert (out / "small-model-cheap" / "report.html").stat().st_mtime_ns == first
    monkeypatch.setattr(batch, "inputs_sha256", lambda *a, **k: "other inputs")
    jobs, _, skipped = batch.plan(["small-model-cheap"], out, FIXTURE_NOTEBOOKS, skip_unchanged=True)
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
            assert sum(client.run(execute.shutdown_kernels).values()) == 0  # the runner stopped them
    assert code == 0
    for name in ("small-model-cheap", "nightly-batch-8b"):
        html = page(out, name)
        assert 'data-section="workload"' in html and "data:image/svg+xml;base64," in html


# --- checks before any kernel starts ---------------------------------------------------------------

def test_unknown_notebook_parameter_is_rejected_before_any_kernel_starts(tmp_path, monkeypatch):
    def no_kernel(*a, **k):
        raise AssertionError("a kernel was started")

    monkeypatch.setattr(execute, "_start_kernel", no_kernel)
    with pytest.raises(InputError) as e:
        batch.plan(["small-model-cheap"], tmp_path, BAD_PARAMS)
    [line] = e.value.problems
    assert line.endswith("05_decision.ipynb: parameters cell: unknown parameter(s) scenario "
                         "(declared: scenario_name; expected scenario)")
    assert run_report("small-model-cheap", "--out", str(tmp_path), "--notebooks", str(BAD_PARAMS)) == 2
    assert not (tmp_path / "small-model-cheap").exists()


def test_invalid_scenario_is_reported_and_the_valid_ones_still_planned(tmp_path):
    bad = copy_scenario(tmp_path, "nightly-batch-8b", lambda t: t.replace("output_tokens: 300", "output_tokens: many"))
    jobs, problems, skipped = batch.plan(["small-model-cheap", str(bad)], tmp_path, FIXTURE_NOTEBOOKS)
    assert [j.scenario for j in jobs] == ["small-model-cheap"]
    assert problems == [f"{bad}: workload.output_tokens: expected an integer, got 'many'"]
    assert jobs[0].parameter == "small-model-cheap"  # shipped scenarios are passed by name


def test_a_path_scenario_is_passed_to_the_notebooks_as_its_absolute_path(tmp_path):
    p = copy_scenario(tmp_path, "small-model-cheap")
    [job], _, _ = batch.plan([str(p)], tmp_path, FIXTURE_NOTEBOOKS)
    assert job.parameter == str(p.resolve())


def test_missing_notebooks_are_skipped_and_the_rest_keep_report_order(tmp_path):
    present, missing = batch.available_sections(FIXTURE_NOTEBOOKS)
    assert [s.key for s in present] == ["decision", "workload"]
    assert [s.key for s in missing] == ["comparison", "scaling", "cost"]
    with pytest.raises(InputError, match="no report notebook found"):
        batch.plan(["small-model-cheap"], tmp_path, tmp_path)


def test_inputs_hash_changes_with_the_scenario_and_the_notebooks(tmp_path):
    s = copy_scenario(tmp_path, "small-model-cheap")
    nb = tmp_path / "05_decision.ipynb"
    nb.write_bytes((FIXTURE_NOTEBOOKS / "05_decision.ipynb").read_bytes())
    h0 = batch.inputs_sha256(s, [nb])
    assert batch.inputs_sha256(s, [nb]) == h0
    s.write_text(s.read_text().replace("utilization: 0.6", "utilization: 0.5"))
    h1 = batch.inputs_sha256(s, [nb])
    nb.write_text(nb.read_text().replace("# Decision", "# The decision"))
    assert len({h0, h1, batch.inputs_sha256(s, [nb])}) == 3


def test_plan_hashes_the_shared_inputs_once_and_gets_each_scenarios_own_digest(tmp_path, monkeypatch):
    """``plan`` hashes the catalogs, notebooks and package once for all its scenarios (``shared_inputs``);
    each job's digest is what hashing every file in turn gives (the digest --skip-unchanged compares)."""
    import hashlib

    from workbook import paths

    calls = []
    real = batch.shared_inputs
    monkeypatch.setattr(batch, "shared_inputs", lambda *a, **k: calls.append(a) or real(*a, **k))
    jobs, problems, _ = batch.plan(["small-model-cheap", "chat-70b-realtime"], tmp_path / "out")
    assert not problems and len(jobs) == 2 and len(calls) == 1
    nbs = [Path(jobs[0].notebook_dir) / nb for _k, nb, _l in jobs[0].sections]
    for job in jobs:
        h = hashlib.sha256(f"workbook {paths.VERSION}\n".encode())
        for kind, p in ([("scenario", Path(job.scenario_file))] + [("catalog", p) for p in sorted(paths.DATA_DIR.glob("*.csv"))]
                        + [("notebook", p) for p in nbs] + [("package", p) for p in digest.package_files()]):
            h.update(f"{kind} {p.name} {assemble.sha256_file(p)}\n".encode())
        assert job.inputs_sha256 == h.hexdigest() == batch.inputs_sha256(job.scenario_file, nbs)


# --- writing: atomic install, recovery --------------------------------------------------------------

def test_install_replaces_a_report_folder_whole(tmp_path):
    old = batch.Result(scenario="s", ok=True, files={"report.html": b"old", "stale.ipynb": b"x"})
    batch.install(old, tmp_path)
    new = batch.Result(scenario="s", ok=True, files={"report.html": b"new"})
    batch.install(new, tmp_path)
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["report.html"]
    assert (tmp_path / "s" / "report.html").read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["s"]


def test_install_keeps_the_old_report_when_the_new_one_cannot_be_written(tmp_path, monkeypatch):
    batch.install(batch.Result(scenario="s", ok=True, files={"report.html": b"old"}), tmp_path)
    real_rename = batch.os.rename

    def failing_rename(src, dst):
        if Path(src).name.startswith(".staging-"):
            raise OSError("disk full")
        return real_rename(src, dst)

    monkeypatch.setattr(batch.os, "rename", failing_rename)
    with pytest.raises(OSError):
        batch.install(batch.Result(scenario="s", ok=True, files={"report.html": b"new"}), tmp_path)
    assert (tmp_path / "s" / "report.html").read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["s"]


def test_recover_puts_back_a_report_a_killed_run_moved_aside(tmp_path):
    dead = 4194305  # above Linux's largest pid: no such process
    aside = tmp_path / f".old-small-model-cheap-{dead}-1a2b3c4d"
    aside.mkdir()
    (aside / "report.html").write_text("good")
    (tmp_path / f".staging-small-model-cheap-{dead}-x_9k").mkdir()
    (tmp_path / f".staging-other-{batch.os.getpid()}-abc").mkdir()  # a live run's: left alone
    done = batch.recover(tmp_path)
    assert (tmp_path / "small-model-cheap" / "report.html").read_text() == "good"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".staging-other-{batch.os.getpid()}-abc", "small-model-cheap"]
    assert len(done) == 2
