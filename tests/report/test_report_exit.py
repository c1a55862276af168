"""How a ``python -m workbook report`` process ends (issue 30): ``cli.exit_now`` skips the interpreter's
teardown only after every ``atexit`` handler ran and both streams are flushed, with the exit status
kept, and returns (the normal exit follows) while another thread still works or a stream cannot be
flushed; the pool's forkserver freezes its heap at exit (``command.freeze_at_exit``); a real pooled
batch leaves no temporary folder and says nothing more."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from report_helpers import FIXTURE_NOTEBOOKS, copy_scenario

from workbook import paths


def _python(code: str, tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``python -c code *args`` outside a report run (no ``WORKBOOK_REPORT_BATCH``), this checkout first on its
    path, with ``env`` added to its environment."""
    env = {k: v for k, v in os.environ.items() if k != "WORKBOOK_REPORT_BATCH"} | {"PYTHONPATH": str(paths.ROOT)} | env
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)


def test_exit_now_runs_the_atexit_handlers_flushes_and_keeps_the_status(tmp_path):
    code = ("import atexit, sys\n"
            "from workbook import cli\n"
            "atexit.register(lambda: open('atexit.txt', 'w').write('ran'))\n"
            "sys.stdout.write('buffered, no newline')\n"
            "sys.stderr.write('to stderr')\n"
            "cli.exit_now(3)\n"
            "print('not reached')\n")
    done = _python(code, tmp_path)
    assert done.returncode == 3
    assert done.stdout == "buffered, no newline"
    assert done.stderr == "to stderr"
    assert (tmp_path / "atexit.txt").read_text() == "ran"


@pytest.mark.parametrize("setup,after", [
    ("t = threading.Thread(target=lambda: (time.sleep(0.5), open('thread.txt', 'w').write('done')))\nt.start()\n", ""),
    ("sys.setprofile(lambda *a: None)\n", "sys.setprofile(None)\n"),
], ids=["another thread works", "under a profiler"])
def test_exit_now_returns_when_the_normal_exit_is_needed(tmp_path, setup, after):
    """exit_now returns (the normal exit follows) while another thread works, which the normal exit
    joins, and under ``python -m cProfile`` (pyinstrument, coverage, a debugger), which writes its
    results after the module returns."""
    code = "import sys, threading, time\nfrom workbook import cli\n" + setup + "cli.exit_now(0)\n" + after + "print('returned')\n"
    done = _python(code, tmp_path)
    assert (done.returncode, done.stdout) == (0, "returned\n")
    if "thread" in setup:
        assert (tmp_path / "thread.txt").read_text() == "done"


def test_exit_now_returns_when_stdout_cannot_be_flushed(tmp_path):
    code = ("import io, sys\n"
            "from workbook import cli\n"
            "class Full(io.RawIOBase):\n"
            "    def writable(self):\n"
            "        return True\n"
            "    def write(self, b):\n"
            "        raise OSError(28, 'No space left on device')\n"
            "sys.stdout = io.TextIOWrapper(io.BufferedWriter(Full()))\n"
            "sys.stdout.write('x' * 10)\n"
            "cli.exit_now(0)\n"
            "sys.stderr.write('returned')\n")
    done = _python(code, tmp_path)
    assert done.stderr.startswith("returned")
    assert done.returncode == 120   # Python's own exit status when the streams cannot be flushed


def test_only_a_report_process_freezes_its_heap_at_exit(tmp_path):
    code = ("import atexit, gc, workbook.report.command\n"
            "print(atexit._ncallbacks())\n")
    counts = []
    for batch_env in ("1", None):
        env = {k: v for k, v in os.environ.items() if k != "WORKBOOK_REPORT_BATCH"}
        env["PYTHONPATH"] = str(paths.ROOT)
        if batch_env:
            env["WORKBOOK_REPORT_BATCH"] = batch_env
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        counts.append(int(done.stdout))
    assert counts[0] == counts[1] + 1


def test_a_report_process_still_checks_chart_uris_and_imports_no_unused_format_checker(tmp_path):
    """The format checkers marked absent are for formats the Vega-Lite schema does not use; its ``uri``
    checker stays, so Altair still refuses a chart whose ``$schema`` is not a URI."""
    code = ("import os, sys; os.environ['WORKBOOK_REPORT_BATCH'] = '1'\n"
            "import workbook.report.command, altair as alt, nbconvert, jsonschema\n"
            "import pandas as pd\n"
            "chart = alt.Chart(pd.DataFrame({'a': [1]})).mark_point().encode(x='a:Q')\n"
            "chart.to_dict()\n"
            "bad = alt.Chart.from_dict({**chart.to_dict(), '$schema': 'not a uri'}, validate=False)\n"
            "try:\n"
            "    bad.to_dict()\n"
            "    print('accepted')\n"
            "except Exception as e:\n"
            "    print('refused', type(e).__name__)\n"
            "print(*sorted(m for m in ('arrow', 'isoduration', 'lark', 'webcolors', 'tornado.web',\n"
            "                          'nbconvert.postprocessors.serve') if sys.modules.get(m) is not None))\n")
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("refused")
    assert lines[1:] == [""]
    assert done.stderr == ""


def test_a_report_process_builds_its_models_without_scanning_for_pydantic_plugins(tmp_path):
    """``batch_process`` sets pydantic's ``PYDANTIC_DISABLE_PLUGINS`` (no entry-point scan when the scenario's
    models are built) unless the user set it; pydantic still honours that setting (an upgrade that drops
    it fails here: the scan would run)."""
    code = ("import os, sys\n"
            "import workbook.report.command as c\n"
            "c.batch_process()\n"
            "print(os.environ.get('PYDANTIC_DISABLE_PLUGINS'))\n"
            "import importlib.metadata as md\n"
            "seen = []\n"
            "real = md.entry_points\n"
            "md.entry_points = lambda **k: seen.append(k) or real(**k)\n"
            "import pydantic.plugin._loader as loader\n"
            "loader.entry_points = md.entry_points\n"
            "import workbook.scenario\n"
            "print(seen)\n")
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["__all__", "[]"]
    done = _python(code, tmp_path, PYDANTIC_DISABLE_PLUGINS="")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["", "[{'group': 'pydantic'}]"]   # the user's choice: plugins scanned


@pytest.mark.slow
def test_a_pooled_batch_ends_at_once_leaving_no_temporary_folder_nor_warning(tmp_path):
    """``python -m workbook report`` of two scenarios on two jobs (pool, forkserver, resource tracker):
    status 0, both reports and the index written, nothing on stderr but the runner's lines (no leaked
    semaphore, no traceback), and multiprocessing's temporary folder removed."""
    d = tmp_path / "nb"
    d.mkdir()
    (d / "05_decision.ipynb").write_bytes((FIXTURE_NOTEBOOKS / "05_decision.ipynb").read_bytes())
    scenarios = [str(copy_scenario(tmp_path, n)) for n in ("small-model-cheap", "llama-8b-finetune")]
    tmp = Path(tempfile.mkdtemp(prefix="wb-", dir="/tmp" if os.path.isdir("/tmp") else None))  # short: the forkserver's socket lives there
    env = {k: v for k, v in os.environ.items() if k != "WORKBOOK_REPORT_BATCH"}
    env.update(PYTHONPATH=str(paths.ROOT), TMPDIR=str(tmp))
    done = subprocess.run([sys.executable, "-m", "workbook", "report", *scenarios, "--jobs", "2", "--notebooks", str(d),
                           "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=300,
                          cwd=paths.ROOT)
    assert done.returncode == 0, done.stderr
    for name in ("small-model-cheap", "llama-8b-finetune"):
        assert (tmp_path / "out" / name / "report.html").is_file()
    assert (tmp_path / "out" / "index.html").is_file()
    lines = done.stderr.splitlines()
    assert all(line.startswith(("report:", "ok ", "note: section ")) for line in lines), lines
    try:
        assert list(tmp.iterdir()) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_pool_spawns_where_the_forkservers_socket_path_would_be_too_long():
    """A deep TMPDIR (pytest's per-test folders under xdist) made the forkserver fail with "OSError:
    AF_UNIX path too long"; such a folder makes the pool spawn its workers instead."""
    from workbook.report.command import socket_dir_fits

    assert socket_dir_fits("/tmp/pymp-abcd1234")
    assert not socket_dir_fits("/tmp/pytest-of-root/pytest-117/popen-gw1/test_a_pooled_batch_ends_at_once_lea0/tmp/pymp-abcd1234")


def test_pool_workers_collect_garbage_and_skip_the_forkservers_frozen_imports(tmp_path):
    """The pool's forkserver imports with the garbage collector off and freezes what it imported
    (``command.preload_without_collections``, ``report.forkready``); each worker turns the collector on
    (``execute.worker_init``): a worker has it on, with the imports in the permanent generation."""
    script = (
        "import gc, os\n"
        "os.environ['WORKBOOK_REPORT_BATCH'] = '1'\n"
        "from workbook.report import pool\n"
        "with pool.process_pool(1) as ex:\n"
        "    print(ex.submit(gc.isenabled).result(), ex.submit(gc.get_freeze_count).result() > 10000)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=paths.ROOT,
                          env={**os.environ, "PYTHONPATH": str(paths.ROOT), "TMPDIR": "/tmp"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_a_report_process_freezes_its_imports_when_it_makes_the_batch_shell(tmp_path):
    """``inprocess._make_shell`` moves what the imports made to the collector's permanent generation in a
    report process (``jobs.BATCH_ENV`` set), and leaves another process's collector alone."""
    code = ("import gc, os, sys\n"
            "from workbook.report import inprocess, jobs\n"
            "before = gc.get_freeze_count()\n"
            "if sys.argv[1] == 'batch':\n"
            "    os.environ[jobs.BATCH_ENV] = '1'\n"
            "inprocess.shell()\n"
            "print(before == 0, gc.get_freeze_count() > 1000)\n")
    for mode, frozen in (("batch", "True"), ("library", "False")):
        done = _python(code, tmp_path, mode)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["True", frozen], mode


@pytest.mark.parametrize("argv,here", [
    (["a", "--jobs", "1"], True), (["a", "b", "--jobs", "1"], True), (["a", "--jobs", "2"], True),
    (["a", "b", "--jobs", "2"], False), (["a", "--jobs", "1", "--engine", "kernel"], False),
    (["a", "--jobs", "1", "--scheduler", "tcp://127.0.0.1:8786"], False),
], ids=["one", "two on one job", "one on two jobs", "a pool", "kernel engine", "dask"])
def test_the_runner_knows_when_it_renders_in_process(argv, here):
    import argparse

    from workbook.report import command

    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    assert command.renders_here(parser.parse_args(argv)) is here


def test_the_runner_of_a_report_collects_no_garbage_until_its_batch_shell_and_after_it_does(tmp_path):
    """``python -m workbook report`` rendering in its own process keeps the garbage collector off from its
    start to its batch shell (``jobs.hold_collector``; ``inprocess._freeze_imports`` freezes the imports
    and turns it on again), and a run that ends before any shell (an unknown scenario) turns it on too."""
    code = ("import gc, sys\n"
            "from workbook import cli\n"
            "from workbook.report import inprocess\n"
            "seen, full = [], []\n"
            "gc.callbacks.append(lambda phase, info: phase == 'start' and info['generation'] == 2 and full.append(1))\n"
            "freeze = inprocess._freeze_imports\n"
            "inprocess._freeze_imports = lambda: (seen.append((gc.isenabled(), len(full))), freeze())\n"
            "print(cli.main(['report', sys.argv[1], '--jobs', '1', '--notebooks', sys.argv[2], '--out', sys.argv[3]]),\n"
            "      seen, gc.isenabled())\n"
            "print(cli.main(['report', 'no-such-scenario', '--jobs', '1', '--out', sys.argv[3]]), gc.isenabled())\n")
    done = _python(code, tmp_path, str(copy_scenario(tmp_path, "small-model-cheap")), str(FIXTURE_NOTEBOOKS),
                   str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["0 [(False, 0)] True", "2 True"]
