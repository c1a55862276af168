"""Batch faults (issue 13): a scenario that cannot be planned or whose report cannot be written fails
alone in one line (the other reports are still written, exit 1, no traceback); report names are
checked (reserved names, collisions with another file's report); one run at a time per output folder
(a lock file with the writer's PID, stale locks taken over); no loopback interface is one line before
any kernel starts. Rendering is replaced by a tiny fake (``fake_render``): no kernel starts here."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from report_helpers import FIXTURE_NOTEBOOKS, copy_scenario

from workbook import cli, netcheck, paths
from workbook.errors import InputError
from workbook.report import batch, execute, outfolder

DEAD_PID = 4194305  # above Linux's largest pid: no such process


def fake_render(job):
    """A finished report without a kernel: the files ``install`` writes and the index reads."""
    summary = {"scenario": job.scenario, "title": job.title,
               "report": {"scenario_file": paths.rel(Path(job.scenario_file)), "generated_utc": "2026-01-01T00:00:00Z"}}
    return batch.Result(scenario=job.scenario, ok=True, title=job.title,
                        files={"report.html": f"<p>{job.scenario}</p>".encode(),
                               "summary.json": json.dumps(summary).encode()})


@pytest.fixture
def no_kernels(monkeypatch):
    """Render with ``fake_render``; fail loudly if anything tries to start a kernel."""
    def no_kernel(*a, **k):
        raise AssertionError("a kernel was started")

    monkeypatch.setattr(batch, "render_scenario", fake_render)
    monkeypatch.setattr(execute, "_start_kernel", no_kernel)
    monkeypatch.setattr(netcheck, "loopback_problem", lambda *a, **k: None)


def report(capsys, *argv) -> tuple[int, list[str]]:
    """``python -m workbook report ARGV`` on the fixture notebooks, one job: (exit status, stderr lines)."""
    capsys.readouterr()
    code = cli.main(["report", *argv, "--jobs", "1", "--notebooks", str(FIXTURE_NOTEBOOKS)])
    return code, capsys.readouterr().err.splitlines()


def enospc_for(monkeypatch, scenario: str):
    """Writing any file into ``scenario``'s staging folder fails: no space left on the device."""
    real = Path.write_bytes

    def write_bytes(self, data):
        if self.parent.name.startswith(f".staging-{scenario}-"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)


# --- planning: one scenario's failure is its own -------------------------------------------------------

def test_a_scenario_raising_recursion_error_while_planned_fails_alone(tmp_path, monkeypatch):
    real = batch.load_scenario

    def load(arg):
        if "nightly" in str(arg):
            raise RecursionError("maximum recursion depth exceeded")
        return real(arg)

    monkeypatch.setattr(batch, "load_scenario", load)
    failures = []
    jobs, problems, _ = batch.plan(["nightly-batch-8b", "small-model-cheap"], tmp_path, FIXTURE_NOTEBOOKS,
                                   failures=failures)
    assert [j.scenario for j in jobs] == ["small-model-cheap"] and problems == []
    assert failures == ["nightly-batch-8b: cannot be planned (RecursionError: maximum recursion depth exceeded)"]


def test_a_symlink_loop_scenario_fails_alone_and_the_good_ones_are_written(tmp_path, capsys, no_kernels):
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    out = tmp_path / "reports"
    code, err = report(capsys, str(loop), "small-model-cheap", "llama-8b-finetune", "--out", str(out))
    assert code == 2      # an invalid input (issue 28: one line from workbook.inputs, no RuntimeError)
    [line] = [x for x in err if "loop.yaml" in x]
    assert "loop.yaml: a symbolic link that loops" in line
    assert (out / "small-model-cheap" / "report.html").is_file() and (out / "llama-8b-finetune" / "report.html").is_file()
    assert "report: 2 written" in err[-1] and "1 invalid" in err[-1]
    assert not [x for x in err if "Traceback" in x]


def test_yaml_nested_ten_thousand_deep_is_refused_and_the_rest_planned(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: deep\nworkload: " + "[" * 10_000 + "]" * 10_000 + "\n")
    jobs, problems, _ = batch.plan([str(deep), "small-model-cheap"], tmp_path, FIXTURE_NOTEBOOKS)
    assert [j.scenario for j in jobs] == ["small-model-cheap"]
    assert len(problems) == 1 and "nested deeper than 64 levels" in problems[0]


# --- names ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["index", "index.html", "index.csv", "_failed", ".hidden", "readme.md",
                                  "a/b", "..", "x" * 200, "Index.HTML", "ok."])
def test_reserved_or_unsafe_names_cannot_name_a_report_folder(name):
    assert outfolder.name_problem(name)


@pytest.mark.parametrize("name", ["small-model-cheap", "llama2-7b-pretrain", "a.b_c-1", "indexer"])
def test_ordinary_names_can(name):
    assert outfolder.name_problem(name) is None


def test_a_scenario_named_index_html_is_refused_before_any_kernel_starts(tmp_path):
    bad = copy_scenario(tmp_path, "small-model-cheap", lambda t: t.replace("name: small-model-cheap", "name: index.html"))
    jobs, problems, _ = batch.plan([str(bad), "llama-8b-finetune"], tmp_path / "out", FIXTURE_NOTEBOOKS)
    assert [j.scenario for j in jobs] == ["llama-8b-finetune"]
    assert problems == [f"{bad}: name: 'index.html' is reserved in the output folder (the batch writes index, "
                        "index.html, index.csv, _failed there); give the scenario another name"]


def test_a_file_named_like_a_shipped_scenario_does_not_replace_its_report(tmp_path, capsys, no_kernels):
    out = tmp_path / "reports"
    assert report(capsys, "small-model-cheap", "--out", str(out))[0] == 0
    shipped_page = (out / "small-model-cheap" / "report.html").read_bytes()
    other = tmp_path / "elsewhere"
    other.mkdir()
    impostor = copy_scenario(other, "small-model-cheap")
    code, err = report(capsys, str(impostor), "--out", str(out))
    assert code == 2
    assert (f"{impostor}: name: 'small-model-cheap' already names the report in {out / 'small-model-cheap'}/, "
            "made from the shipped scenario; refusing to replace it") in "\n".join(err)
    assert (out / "small-model-cheap" / "report.html").read_bytes() == shipped_page
    # the shipped file itself still replaces its own report, and the other file its own
    assert report(capsys, "small-model-cheap", "--out", str(out))[0] == 0
    assert report(capsys, str(impostor), "--out", str(tmp_path / "other-reports"))[0] == 0
    assert report(capsys, str(impostor), "--out", str(tmp_path / "other-reports"))[0] == 0
    # ... and the shipped scenario does not replace the other file's report either
    code, err = report(capsys, "small-model-cheap", "--out", str(tmp_path / "other-reports"))
    assert code == 2 and f"made from {impostor}" in "\n".join(err)


def test_a_recorded_failure_also_owns_its_name(tmp_path):
    out = tmp_path / "reports"
    mine = copy_scenario(tmp_path, "small-model-cheap")
    batch.record_failure(batch.Result(scenario="small-model-cheap", ok=False, error="boom"), out, str(mine))
    _, problems, _ = batch.plan(["small-model-cheap"], out, FIXTURE_NOTEBOOKS)
    assert len(problems) == 1 and f"made from {mine}" in problems[0]
    jobs, problems, _ = batch.plan([str(mine)], out, FIXTURE_NOTEBOOKS)
    assert problems == [] and [j.scenario for j in jobs] == ["small-model-cheap"]


# --- writing: disk full, read-only -----------------------------------------------------------------------

def test_disk_full_while_installing_fails_that_report_alone_and_keeps_its_previous_one(tmp_path, capsys, no_kernels,
                                                                                      monkeypatch):
    out = tmp_path / "reports"
    assert report(capsys, "small-model-cheap", "llama-8b-finetune", "--out", str(out))[0] == 0
    before = (out / "small-model-cheap" / "summary.json").read_bytes()
    (out / "llama-8b-finetune" / "report.html").unlink()  # so that a new one is visible
    enospc_for(monkeypatch, "small-model-cheap")
    code, err = report(capsys, "small-model-cheap", "llama-8b-finetune", "--out", str(out))
    assert code == 1
    [line] = [x for x in err if x.startswith("FAILED")]
    assert line == (f"FAILED  small-model-cheap: cannot write in {out}/: no space left on the device (ENOSPC) "
                    "(its previous report, if any, is kept)")
    assert (out / "small-model-cheap" / "summary.json").read_bytes() == before
    assert (out / "llama-8b-finetune" / "report.html").is_file()
    assert not [p for p in out.iterdir() if p.name.startswith((".staging-", ".old-", outfolder.LOCK_FILE))]
    assert "report: 1 written, 1 failed" in err[-1] and not [x for x in err if "Traceback" in x]


def test_a_write_error_while_renaming_into_place_fails_alone(tmp_path, no_kernels, monkeypatch):
    jobs, _, _ = batch.plan(["small-model-cheap", "llama-8b-finetune"], tmp_path, FIXTURE_NOTEBOOKS)
    real = batch.os.rename

    def rename(src, dst):
        if Path(src).name.startswith(".staging-small-model-cheap-"):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(src))
        return real(src, dst)

    monkeypatch.setattr(batch.os, "rename", rename)
    lines = []
    results = batch.run_batch(jobs, tmp_path, progress=False, echo=lines.append)
    assert [r.ok for r in results] == [False, True]
    assert results[0].error.startswith(f"cannot write in {tmp_path}/: permission denied (EACCES)")
    assert (tmp_path / "llama-8b-finetune" / "report.html").is_file()
    assert not (tmp_path / "small-model-cheap").exists()


def test_disk_full_while_writing_the_index_is_one_line_and_exit_1(tmp_path, capsys, no_kernels, monkeypatch):
    def replace(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(batch.os, "replace", replace)
    out = tmp_path / "reports"
    code, err = report(capsys, "small-model-cheap", "--out", str(out))
    assert code == 1
    assert f"FAILED  index: cannot write in {out}/: no space left on the device (ENOSPC) (the previous index, " \
           "if any, is kept)" in err
    assert (out / "small-model-cheap" / "report.html").is_file()
    assert "index: not written" in err[-1]


def test_a_read_only_output_folder_is_one_line_before_any_kernel_starts(tmp_path, capsys, no_kernels, monkeypatch):
    # tests run as root, where chmod does not stop writes: the file system refuses instead
    real = os.open

    def read_only(path, flags, *a, **k):
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real(path, flags, *a, **k)

    monkeypatch.setattr(outfolder.os, "open", read_only)
    out = tmp_path / "reports"
    code, err = report(capsys, "small-model-cheap", "--out", str(out))
    assert code == 2
    assert err == [f"{out}: cannot write in {out}/: read-only file system (EROFS)"]


def test_a_failure_that_cannot_be_recorded_still_lets_the_batch_go_on(tmp_path, monkeypatch, no_kernels):
    def broken_render(job):
        if job.scenario == "small-model-cheap":
            return batch.Result(scenario=job.scenario, ok=False, error="cell 3: boom")
        return fake_render(job)

    def record(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(batch, "render_scenario", broken_render)
    monkeypatch.setattr(batch, "record_failure", record)
    jobs, _, _ = batch.plan(["small-model-cheap", "llama-8b-finetune"], tmp_path, FIXTURE_NOTEBOOKS)
    lines = []
    results = batch.run_batch(jobs, tmp_path, progress=False, echo=lines.append)
    assert [r.ok for r in results] == [False, True]
    assert f"        the error could not be kept: cannot write in {tmp_path / '_failed'}/: no space left on the " \
           "device (ENOSPC)" in lines


# --- one run at a time -----------------------------------------------------------------------------------

def test_a_second_run_into_a_locked_folder_is_refused_with_the_holders_pid(tmp_path, capsys, no_kernels):
    out = tmp_path / "reports"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from workbook.report import outfolder\n"
         "with outfolder.output_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)", str(out)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(paths.ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        jobs, _, _ = batch.plan(["small-model-cheap"], out, FIXTURE_NOTEBOOKS)
        with pytest.raises(InputError, match=rf"another report run \(pid {holder.pid}\) is writing this folder"):
            batch.run_batch(jobs, out, progress=False, echo=lambda line: None)
        code, err = report(capsys, "small-model-cheap", "--out", str(out))
        assert code == 2 and len(err) == 1 and f"(pid {holder.pid})" in err[0]
        assert not (out / "small-model-cheap").exists()
    finally:
        holder.kill()
        holder.wait()
    # the holder was killed: its lock is stale and the next run takes it over
    code, err = report(capsys, "small-model-cheap", "--out", str(out))
    assert code == 0 and f"note: removed {outfolder.LOCK_FILE} of a run that no longer runs (pid {holder.pid})" in err
    assert not (out / outfolder.LOCK_FILE).exists()


def test_a_stale_lock_of_a_dead_pid_is_taken_over_and_released(tmp_path, no_kernels):
    (tmp_path / outfolder.LOCK_FILE).write_text(f"{DEAD_PID} {outfolder.socket.gethostname()}\n")
    jobs, _, _ = batch.plan(["small-model-cheap"], tmp_path, FIXTURE_NOTEBOOKS)
    lines = []
    [res] = batch.run_batch(jobs, tmp_path, progress=False, echo=lines.append)
    assert res.ok and lines[0] == f"note: removed {outfolder.LOCK_FILE} of a run that no longer runs (pid {DEAD_PID})"
    assert not (tmp_path / outfolder.LOCK_FILE).exists()


def test_a_lock_held_on_another_host_is_not_taken_over(tmp_path):
    (tmp_path / outfolder.LOCK_FILE).write_text(f"{DEAD_PID} some-other-host\n")
    with pytest.raises(InputError, match=f"pid {DEAD_PID} on some-other-host"):
        outfolder.acquire(tmp_path)


def test_the_lock_is_reentrant_within_a_run(tmp_path):
    with outfolder.output_lock(tmp_path):
        with outfolder.output_lock(tmp_path):
            pass
        assert (tmp_path / outfolder.LOCK_FILE).read_text().split()[0] == str(os.getpid())
    assert not (tmp_path / outfolder.LOCK_FILE).exists()


# --- no loopback interface ------------------------------------------------------------------------------

LOOPBACK_DOWN = ("cannot start a Jupyter kernel: this machine cannot connect to itself on 127.0.0.1 "
                 "(Network is unreachable); kernels talk to their client over the loopback interface, so bring "
                 "it up (e.g. `ip link set lo up`) and try again")


def test_no_loopback_is_one_line_and_exit_2_before_any_kernel_starts(tmp_path, capsys, no_kernels, monkeypatch):
    monkeypatch.setattr(netcheck, "loopback_problem", lambda *a, **k: LOOPBACK_DOWN)
    monkeypatch.setattr(batch, "render_scenario", execute.render_scenario)  # the real one: it would start one
    code, err = report(capsys, "small-model-cheap", "--out", str(tmp_path), "--engine", "kernel")
    assert code == 2 and [x for x in err if not x.startswith("note: section")] == [LOOPBACK_DOWN]
    assert not (tmp_path / "small-model-cheap").exists() and not (tmp_path / outfolder.LOCK_FILE).exists()


def test_a_worker_without_loopback_fails_its_scenario_at_once(tmp_path, monkeypatch):
    def no_kernel(*a, **k):
        raise AssertionError("a kernel was started")

    monkeypatch.setattr(execute, "_start_kernel", no_kernel)
    monkeypatch.setattr(netcheck, "loopback_problem", lambda *a, **k: LOOPBACK_DOWN)
    [job], _, _ = batch.plan(["small-model-cheap"], tmp_path, FIXTURE_NOTEBOOKS, engine="kernel")
    res = batch._safe_render(job)
    assert not res.ok and res.error == f"RuntimeError: {LOOPBACK_DOWN}"


@pytest.mark.slow
def test_the_in_process_engine_needs_no_loopback_and_starts_no_kernel(tmp_path, capsys, monkeypatch):
    def no_kernel(*a, **k):
        raise AssertionError("a kernel was started")

    monkeypatch.setattr(execute, "_start_kernel", no_kernel)
    monkeypatch.setattr(netcheck, "loopback_problem", lambda *a, **k: LOOPBACK_DOWN)
    monkeypatch.delenv("WORKBOOK_REPORT_ENGINE", raising=False)
    code, err = report(capsys, "small-model-cheap", "--out", str(tmp_path))
    assert code == 0, err
    assert 'data-section="workload"' in (tmp_path / "small-model-cheap" / "report.html").read_text()


def _kernels_in(folder: Path) -> list[int]:
    """Processes running notebooks in ``folder``: report kernels run in the notebook folder, and so
    does a worker while it runs notebooks in-process."""
    out = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and int(proc.name) != os.getpid() and os.readlink(proc / "cwd") == str(folder):
                out.append(int(proc.name))
        except OSError:
            continue
    return out


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["kernel", "in-process"])
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_a_killed_parallel_batch_leaves_no_kernel_behind(tmp_path, sig, engine):
    """Issue 28: ``report --jobs 2`` killed left 4 kernels (370 MB) alive for over 100 s. Killed with
    SIGTERM the runner stops its workers; killed with -9 each worker sees the runner gone within a
    second; either way the workers kill their kernels (or, in-process, end themselves)."""
    import signal
    import time

    d = tmp_path / "nb"
    d.mkdir()
    (d / "05_decision.ipynb").write_bytes((FIXTURE_NOTEBOOKS / "05_decision.ipynb").read_bytes())
    nb = json.loads((FIXTURE_NOTEBOOKS / "01_workload_profile.ipynb").read_text())
    nb["cells"].insert(3, {"cell_type": "code", "metadata": {}, "source": "import time\ntime.sleep(300)",
                           "outputs": [], "execution_count": None})
    (d / "01_workload_profile.ipynb").write_text(json.dumps(nb, indent=1))
    scenarios = [str(copy_scenario(tmp_path, n)) for n in ("small-model-cheap", "llama-8b-finetune")]
    proc = subprocess.Popen([sys.executable, "-m", "workbook", "report", *scenarios, "--jobs", "2",
                             "--notebooks", str(d), "--out", str(tmp_path / "out"), "--engine", engine],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(_kernels_in(d)) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
        assert len(_kernels_in(d)) == 2, "the two workers' kernels did not start"
        proc.send_signal(getattr(signal, sig))
        deadline = time.monotonic() + 15
        while _kernels_in(d) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _kernels_in(d) == [], f"kernels alive 15 s after {sig}"
    finally:
        for pid in _kernels_in(d):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
