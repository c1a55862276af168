"""The batch's local process pool (its start method and size: ``command.pool_context``,
``command.default_jobs``), the order jobs are handed out (longest first), and what happens when a
worker dies (``pool_results``)."""
from __future__ import annotations

import concurrent.futures as cf
import json
import os
import signal
import tempfile
from pathlib import Path

from .. import paths
from .command import default_jobs, pool_context
from .execute import read_progress, stop_workers, worker_init
from .jobs import Job, Result


def process_pool(workers: int, progress_dir: str | None = None) -> cf.Executor:
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=pool_context(), initializer=worker_init,
                                  initargs=(os.getpid(), progress_dir))


def pool_results(jobs: list[Job], workers: int, render, failed):
    """(job, Result) as each finishes in a local process pool of ``workers``; ``render(job)`` runs in a
    worker, ``failed(job, exc, prefix)`` makes a failed Result.

    A worker that dies (a notebook calling ``os._exit``, a crash, the out-of-memory killer) breaks the
    pool: every job not yet finished gets ``BrokenProcessPool``. Each job's progress file
    (``execute.read_progress``) tells them apart: the job whose worker died in a cell fails, that
    cell named; the jobs whose workers the pool stopped afterwards (their files end with "stopped")
    and the jobs not yet started run again in a new pool. When no job can be blamed, those jobs fail
    as before ("worker failed: BrokenProcessPool"). When it ends, the durations of the reports it
    rendered are remembered for the next batch's order (``remember_durations``)."""
    done: list[Result] = []
    try:
        for job, res in _pool_results(jobs, workers, render, failed):
            done.append(res)
            yield job, res
    finally:
        remember_durations(done)


def _pool_results(jobs: list[Job], workers: int, render, failed):
    todo = list(jobs)
    with tempfile.TemporaryDirectory(prefix="workbook-report-progress-") as progress:
        while todo:
            ex = process_pool(min(workers, len(todo)), progress)
            broken = []
            try:
                futures = {ex.submit(render, job): job for job in todo}
                procs = {p.pid: p for p in list((getattr(ex, "_processes", None) or {}).values())}
                for fut in cf.as_completed(futures):
                    job = futures[fut]
                    try:
                        yield job, fut.result()
                    except cf.process.BrokenProcessPool as e:
                        broken.append((job, e))
                    except Exception as e:  # the worker itself failed (lost, unpicklable result)
                        yield job, failed(job, e, "worker failed: ")
            except BaseException:  # interrupted (Ctrl-C, SIGTERM): stop the workers, whose kernels go with them
                stop_workers(ex)
                raise
            finally:
                ex.shutdown(wait=True, cancel_futures=True)
            todo = []
            blamed = [(job, _died(job, progress, procs)) for job, _ in broken]
            if broken and not any(res for _, res in blamed):
                for job, e in broken:
                    yield job, failed(job, e, "worker failed: ")
                continue
            for job, res in blamed:
                if res is None:
                    todo.append(job)
                else:
                    yield job, res


def _died(job: Job, progress: str, procs: dict) -> Result | None:
    """The failed Result of ``job`` when its worker died running one of its cells, else None."""
    where = read_progress(progress, job.scenario)
    if where is None or where.get("stopped"):
        return None
    proc = procs.get(where["pid"])
    code = getattr(proc, "exitcode", None)
    how = ("" if code is None else f" (exit code {code})" if code >= 0
           else f" (killed by {signal.Signals(-code).name})" if -code in signal.valid_signals() else f" ({code})")
    rel = paths.rel(Path(job.notebook_dir) / where["notebook"])
    error = f"{rel}: cell {where['cell']} (`{where['source']}`): WorkerDied: the process running the notebook ended{how}"
    return Result(scenario=job.scenario, ok=False, title=job.title, error=error,
                  error_detail={"notebook": rel, "cell": where["cell"], "source": where["source"],
                                "ename": "WorkerDied", "evalue": f"the process running the notebook ended{how}"})


def _notebooks_s(summary: str | bytes) -> float | None:
    """The seconds a report's notebooks ran, from its ``summary.json`` text; None if unreadable."""
    try:
        return float(sum(n["duration_s"] for n in json.loads(summary)["report"]["notebooks"]))
    except (ValueError, KeyError, TypeError):
        return None


def _expected_s(out: Path, name: str) -> float | None:
    """How long the scenario's last report took to run its notebooks (``summary.json``), if known."""
    try:
        return _notebooks_s((out / name / "summary.json").read_bytes())
    except OSError:
        return None


DURATIONS_FILE = "report-durations.json"


def _durations_path() -> Path:
    """Where this machine keeps how long each scenario's last report took (``remember_durations``),
    beside the drawn-chart and calibration caches (``paths.cache_dir``)."""
    return paths.cache_dir() / DURATIONS_FILE


def _remembered() -> dict[str, float]:
    try:
        data = json.loads(_durations_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, (int, float))}


def remember_durations(results: list[Result]) -> None:
    """Keep how long each rendered report's notebooks ran (its ``summary.json``) in the cache folder (scenario name -> seconds, the newest
    run winning), so that the next batch orders its jobs even when it writes into another folder (a
    scheduled run into a dated folder has no earlier ``summary.json`` there). Written atomically (a
    temporary file, then a rename); an unwritable cache only costs the ordering."""
    times = {r.scenario: _notebooks_s(r.files["summary.json"]) for r in results if r.ok and "summary.json" in r.files}
    times = {k: round(v, 3) for k, v in times.items() if v is not None}
    if not times:
        return
    try:
        paths.write_atomic(_durations_path(), json.dumps({**_remembered(), **times}, sort_keys=True))
    except OSError:
        pass


def longest_first(jobs: list[Job], out: str | Path) -> list[Job]:
    """``jobs`` in the order a pool finishes soonest: the longest first (by the last report's time in
    ``out``, else by the last time this machine rendered the scenario, ``remember_durations``; a
    scenario never rendered counts as longest), ties in the given order. The greedy longest-first
    order of list scheduling (Graham, "Bounds on multiprocessing timing anomalies", SIAM J. Appl.
    Math. 17(2), 1969: within 4/3 of the best finish time)."""
    remembered = _remembered()
    known = {j.scenario: _expected_s(Path(out), j.scenario) for j in jobs}
    known = {k: v if v is not None else remembered.get(k) for k, v in known.items()}
    return sorted(jobs, key=lambda j: -(known[j.scenario] if known[j.scenario] is not None else float("inf")))
