"""The batch's local process pool: its start method (a forkserver that imports the heavy modules
once, started early), how many workers, and the order jobs are handed out (longest first)."""
from __future__ import annotations

import concurrent.futures as cf
import json
import os
from pathlib import Path

from .execute import worker_init
from .jobs import Job


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def pool_context(start: bool = False):
    """The process pool's start method. forkserver: workers fork from a clean single-threaded server
    that imported the heavy modules once (papermill and nbconvert take seconds to import), rather
    than importing them each. ``start``: start that server now, so that its imports (about 1.5 s of
    CPU) run while this process plans the batch rather than after."""
    import multiprocessing as mp

    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["workbook.report.batch", "papermill", "nbconvert", "jupyter_client",
                                    "workbook.analysis"])
        if start:
            from multiprocessing import forkserver

            forkserver.ensure_running()
    return ctx


def process_pool(workers: int) -> cf.Executor:
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=pool_context(), initializer=worker_init,
                                  initargs=(os.getpid(),))


def _expected_s(out: Path, name: str) -> float | None:
    """How long the scenario's last report took to run its notebooks (``summary.json``), if known."""
    try:
        data = json.loads((out / name / "summary.json").read_text())
        return float(sum(n["duration_s"] for n in data["report"]["notebooks"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def longest_first(jobs: list[Job], out: str | Path) -> list[Job]:
    """``jobs`` in the order a pool finishes soonest: the longest first (by the last report's time in
    ``out``; a scenario never rendered there counts as longest), ties in the given order."""
    known = {j.scenario: _expected_s(Path(out), j.scenario) for j in jobs}
    return sorted(jobs, key=lambda j: -(known[j.scenario] if known[j.scenario] is not None else float("inf")))
