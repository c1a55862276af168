"""The batch: which notebooks make the report (sections from notebook metadata), every check before a
kernel starts, rendering in a process pool or on a Dask cluster, the atomic install of each report,
recovery after a killed run, the index, and the ``report`` command.

- Every scenario is validated, and every notebook's section declaration and ``parameters`` cell are
  checked (``papermill.inspect_notebook``), before any kernel starts.
- The notebooks of a scenario run in turn in the worker's own IPython shell (``inprocess``; or, with
  ``--engine kernel``, in the worker's kernel), the namespace reset between them (``%reset -f``), so
  the heavy imports are paid once per worker.
- Scenarios run in parallel in a process pool (``--jobs``), or on a Dask cluster (``--scheduler``)
  through Dask's ``concurrent.futures`` executor; workers return the files and the driver writes them.
- Each report is written to a staging folder inside ``--out`` and renamed into place, so a failed run
  never leaves a half report nor removes the previous good one; a failure is logged with notebook,
  cell and message, the failed executed notebook is kept in ``<out>/_failed/<scenario>/``, the batch
  goes on and the exit status is non-zero.
- One run at a time per output folder: ``<out>/.report.lock`` holds the PID of the run writing it
  (``outfolder``); a second run is refused, a lock whose process is gone is taken over. Report names
  are checked before a kernel starts (reserved names, two files with one name, a name whose report
  another file made). A scenario that cannot be planned (symlink loop, read error, recursion) or
  whose report cannot be written (disk full, read-only) fails alone, in one line naming the folder.
- ``--skip-unchanged`` skips a scenario whose inputs (scenario file, catalogs, notebooks, package
  source and version) hash to the value recorded in its ``summary.json``.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import copy
import csv
import io
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

from .. import diff, netcheck, paths
from ..errors import InputError
from ..paths import NOTEBOOK_DIR, SCENARIO_DIR
from ..scenario import load_scenario, resolve_path, scenario_names
from . import outfolder
from .assemble import headline, jinja_env, report_css, utc_now
from .execute import render_scenario, shutdown_kernels, unwind_on_signals
from .command import add_arguments, default_jobs, pool_context
from .digest import inputs_sha256, shared_inputs
from .jobs import CELL_TIMEOUT_S, Job, Result, default_engine
from .pool import longest_first, pool_results
from .sections import SECTION_METADATA, Section, available_sections, check_parameters

__all__ = ["Section", "Job", "Result", "available_sections", "check_parameters", "inputs_sha256", "plan",
           "install", "recover", "record_failure", "index_rows", "write_index", "run_batch", "add_arguments", "run"]


# --- planning: everything checked before a kernel starts -------------------------------------------

def _previous_inputs_sha256(out: Path, name: str) -> str | None:
    summary = out / name / "summary.json"
    if not (summary.is_file() and (out / name / "report.html").is_file()) or (out / "_failed" / name).exists():
        return None
    try:
        return json.loads(summary.read_text()).get("report", {}).get("inputs_sha256")
    except (OSError, ValueError):
        return None


def _kernel_name(notebook: Path) -> str:
    try:
        meta = json.loads(Path(notebook).read_text()).get("metadata", {})
        return meta.get("kernelspec", {}).get("name") or "python3"
    except (OSError, ValueError):
        return "python3"


def plan(scenarios: list[str], out: str | Path, notebook_dir: str | Path = NOTEBOOK_DIR,
         skip_unchanged: bool = False, timeout_s: float | None = None,
         failures: list[str] | None = None, engine: str | None = None) -> tuple[list[Job], list[str], list[str]]:
    """Validate the batch: returns (jobs to run, problems, names skipped as unchanged).

    A scenario that does not validate is a problem (file and field named) and is left out, as is
    one whose name cannot name a report folder here: reserved (``index.html``, ``_failed``, ...),
    taken by another scenario of the batch, or naming a report that another scenario file made
    (``<out>/<name>/summary.json`` records its file). A scenario that cannot be planned for another
    reason (a symlink loop, a read error, a recursion limit) is left out too, its one line going to
    ``failures`` when given (else to the problems). The notebooks' section declarations and
    parameter cells are checked here too (InputError: no notebook would render right).
    """
    present, missing = available_sections(notebook_dir)
    if not present:
        raise InputError(f"{paths.rel(Path(notebook_dir))}: no report notebook found (a report notebook "
                         f"declares its section in its metadata: {SECTION_METADATA} = {{key, order, label}})")
    nb_paths = [Path(notebook_dir) / s.notebook for s in present]
    check_parameters(nb_paths)
    base = dict(notebook_dir=str(Path(notebook_dir).resolve()), missing=tuple(x.label for x in missing),
                sections=tuple((x.key, x.notebook, x.label) for x in present), timeout_s=timeout_s or CELL_TIMEOUT_S,
                kernel_name=_kernel_name(nb_paths[0]), engine=engine or default_engine())
    out = Path(out)
    jobs, problems, skipped, seen = [], [], [], {}
    failed = problems if failures is None else failures
    shared = shared_inputs(nb_paths)   # the inputs every scenario's digest shares, hashed once
    for arg in scenarios:
        try:
            name, job = _plan_one(arg, out, nb_paths, skip_unchanged, seen, base, shared)
        except InputError as e:
            problems.extend(e.problems)
            continue
        except Exception as e:  # RecursionError, RuntimeError (symlink loop), OSError: this scenario only
            failed.append(f"{arg}: cannot be planned ({e.__class__.__name__}: {excerpt(str(e))})")
            continue
        if job is None:
            skipped.append(name)
        else:
            jobs.append(job)
    return jobs, problems, skipped


def excerpt(text: str, limit: int = 200) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[:limit] + "..."


def _plan_one(arg: str, out: Path, nb_paths: list[Path], skip_unchanged: bool, seen: dict,
              base: dict, shared: str | None = None) -> tuple[str, Job | None]:
    """(name, Job) of one scenario, the Job None when its inputs are unchanged; InputError when the
    file or its name is refused. ``seen``: name -> file of the scenarios planned so far."""
    s = load_scenario(arg)
    path = resolve_path(arg).resolve()
    rel = paths.rel(path)
    problem = outfolder.name_problem(s.name)
    if problem:
        raise InputError(f"{rel}: name: {problem}")
    if s.name in seen:
        raise InputError(f"{rel}: name: {s.name!r} is also the name of {seen[s.name]}; each report needs its own name")
    seen[s.name] = rel
    owner = _report_owner(out, s.name)
    if owner is not None and owner != _origin(path):
        raise InputError(f"{rel}: name: {s.name!r} already names the report in {paths.rel(out / s.name)}/, made from "
                         f"{'the shipped scenario' if owner == 'shipped' else owner}; refusing to replace it "
                         "(rename this scenario, use another --out, or delete that folder)")
    shipped = path.parent == SCENARIO_DIR.resolve() and path.stem == s.name
    digest = inputs_sha256(path, nb_paths, shared=shared)
    if skip_unchanged and _previous_inputs_sha256(out, s.name) == digest:
        return s.name, None
    return s.name, Job(scenario=s.name, parameter=s.name if shipped else str(path), scenario_file=str(path),
               inputs_sha256=digest, title=s.title, **base)


def _origin(path: Path | str) -> str:
    """Which scenario file a report comes from: ``shipped`` (data/scenarios of any checkout, so
    that a report folder made from another checkout is still the shipped scenario's) or its path."""
    p = Path(path)
    if p.parent.parts[-2:] == ("data", "scenarios") and p.suffix in (".yaml", ".yml"):
        return "shipped"
    return os.path.abspath(p)


def _report_owner(out: Path, name: str) -> str | None:
    """The origin of the scenario file that made ``<out>/<name>/`` (or its recorded failure)."""
    for record, keys in ((out / name / "summary.json", ("report", "scenario_file")),
                         (out / outfolder.FAILED_DIR / name / "error.json", ("scenario_file",))):
        data = _read_json(record) if record.is_file() else None
        for k in keys:
            data = data.get(k) if isinstance(data, dict) else None
        if isinstance(data, str) and data:
            return _origin(data)
    return None


# --- writing: staging folder, then rename into place ------------------------------------------------

def install(result: Result, out: str | Path) -> Path:
    """Write a finished report into ``<out>/<scenario>/`` atomically: files go to a staging folder
    in ``out`` (same file system), which then replaces the old folder by two renames; the old
    report is deleted only after the new one is in place. Clears a previous failure record."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    dest = out / result.scenario
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{result.scenario}-{os.getpid()}-", dir=out))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # mkdtemp makes it private; a report folder is not
    try:
        for name, data in result.files.items():
            (staging / name).write_bytes(data)
        _keep_previous(dest, staging)
        old = None
        if dest.exists():
            old = out / f".old-{result.scenario}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            os.rename(dest, old)
        try:
            os.rename(staging, dest)
        except OSError:
            if old is not None:
                os.rename(old, dest)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(out / "_failed" / result.scenario, ignore_errors=True)
    _remember_headline(dest / "summary.json", result.files.get("summary.json"), result.headline)
    return dest / "report.html"


# The headline of each summary.json this process installed, keyed by the file's path, with the
# (device, inode, size, mtime) it was installed with: the index reads a summary (up to 3.2 MB of JSON)
# only when no install of this process wrote that very file. A batch installs each report while the
# pool's workers still render the others; the index is written after the last one, and parsing every
# summary there came after all the rendering (8 reports: 0.25-0.43 s of CPU at load 12, now 0.03-0.04 s).
# The worker hands the headline over (``Result.headline``): no 20-25 ms parse per install either.
_HEADLINES: dict[str, tuple[tuple, dict]] = {}


def _stat_key(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _remember_headline(path: Path, data: bytes | None, head: dict | None = None) -> None:
    key = _stat_key(path)
    if data is None or key is None:
        return
    try:
        _HEADLINES[str(path)] = (key, copy.deepcopy(head) if head is not None else headline(json.loads(data)))
    except Exception:  # noqa: BLE001 - not a summary headline can read: the index reads the file, as before
        _HEADLINES.pop(str(path), None)


def _summary_headline(path: Path) -> dict | None:
    """``headline`` of the summary at ``path``: the one remembered when this process installed that very
    file, else read from it (None when it cannot be read)."""
    known = _HEADLINES.get(str(path))
    if known is not None and known[0] == _stat_key(path):
        return copy.deepcopy(known[1])
    summary = _read_json(path)
    return None if summary is None else headline(summary)


def _keep_previous(dest: Path, staging: Path) -> None:
    """Keep the summary a new report replaces (``previous_summary.json``) and what changed since it
    (``changes.json``, ``changes.txt``: ``workbook.diff``), for the index's "Since last run"."""
    prev, new = dest / "summary.json", staging / "summary.json"
    if not (prev.is_file() and new.is_file()):
        return
    try:
        old_summary, new_summary = diff.load_summary(prev), diff.load_summary(new)
    except InputError:
        return   # an unreadable old summary: nothing to compare with
    d = diff.diff_summaries(old_summary, new_summary)
    (staging / "previous_summary.json").write_bytes(prev.read_bytes())
    (staging / "changes.json").write_text(json.dumps(d, indent=2, default=str) + "\n")
    (staging / "changes.txt").write_text("\n".join(diff.change_lines(d)) + "\n")


_LEFTOVER = re.compile(r"^\.(staging|old)-(.+)-(\d+)-[A-Za-z0-9_]+$")


def recover(out: str | Path) -> list[str]:
    """Finish what a killed run left in ``out``: put back a previous report that was moved aside
    (``.old-*``) when no report replaced it, and delete staging folders. Only folders of processes
    that no longer run are touched. Returns what was done."""
    done = []
    out = Path(out)
    if not out.is_dir():
        return done
    for p in sorted(out.iterdir()):
        m = _LEFTOVER.match(p.name)
        if not (m and p.is_dir()) or outfolder.alive(int(m.group(3))):
            continue
        kind, name = m.group(1), m.group(2)
        if kind == "old" and not (out / name).exists():
            os.rename(p, out / name)
            done.append(f"restored {name}/ (a killed run had moved it aside)")
        else:
            shutil.rmtree(p, ignore_errors=True)
            done.append(f"removed {p.name}/ (left by a killed run)")
    return done


def record_failure(result: Result, out: str | Path, scenario_file: str | None = None) -> Path:
    """Keep the failed executed notebook and the error in ``<out>/_failed/<scenario>/``; the
    previous good report (if any) stays untouched. ``scenario_file`` is recorded in ``error.json``
    (which file the name belongs to)."""
    d = Path(out) / outfolder.FAILED_DIR / result.scenario
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for name, data in result.files.items():
        (d / name).write_bytes(data)
    (d / "error.txt").write_text(result.error + "\n")
    record = {"scenario": result.scenario, "title": result.title, "error": result.error,
              "detail": result.error_detail}
    if scenario_file:
        record["scenario_file"] = scenario_file
    (d / "error.json").write_text(json.dumps(record, indent=2) + "\n")
    return d


# --- the index -----------------------------------------------------------------------------------------

INDEX_COLUMNS = [("scenario", "Scenario"), ("title", "Title"), ("recommendation", "Recommendation"),
                 ("cost", "Cost"), ("price_short", "Price (basis, age)"), ("time", "Time"),
                 ("tie_short", "Tie or lead"), ("warnings", "Before acting"),
                 ("status", "Status"), ("since_last_run", "Since last run"), ("generated_utc", "Generated (UTC)")]
CSV_COLUMNS = ["scenario", "title", "recommendation", "accelerator", "pricing_model", "provider", "offering",
               "cost_metric", "cost_value", "cost_low", "cost_high", "usd_per_month", "training_days", "ttft_ms",
               "tpot_ms", "score", "runner_up_score", "p_beats_runner_up", "p_cheapest", "chips", "chips_billed",
               "price_short", "tie", "tie_share", "warnings", "status", "since_last_run", "generated_utc", "report"]


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _status(row: dict) -> str:
    """``ok`` (a recommendation), ``no feasible option`` (the estimate ran, nothing passes the hard
    constraints) or the estimate's error."""
    if row.get("estimate_error"):
        return f"estimate error: {row['estimate_error']}"
    return "ok" if row.get("accelerator") else "no feasible option"


def index_rows(out: str | Path) -> list[dict]:
    """One row per report folder in ``out`` (and per scenario whose latest run failed)."""
    out = Path(out)
    rows = {}
    for p in sorted(out.glob("*/summary.json")):
        row = _summary_headline(p)
        if row is None:
            continue
        row["scenario"] = row["scenario"] or p.parent.name
        row["report"] = f"{p.parent.name}/report.html"
        row["status"] = _status(row)
        changes = _read_json(p.parent / "changes.json")
        if changes is not None:
            row["since_last_run"] = changes.get("headline")
            row["changes"] = f"{p.parent.name}/changes.txt"
        rows[p.parent.name] = row
    for p in sorted((out / "_failed").glob("*/error.json")):
        err = _read_json(p)
        if err is None:
            continue
        name = p.parent.name
        row = rows.setdefault(name, {"scenario": name, "title": err.get("title"), "report": None})
        when = f" (the report linked is from {row['generated_utc']})" if row.get("generated_utc") else ""
        row["status"] = f"latest run failed: {err.get('error')}{when}"
        row["failure"] = f"_failed/{name}/error.txt"
    return [rows[k] for k in sorted(rows)]


def write_index(out: str | Path) -> Path:
    """``index.html`` and ``index.csv`` from every report in ``out``."""
    out = Path(out)
    rows = index_rows(out)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    paths.write_atomic(out / "index.csv", buf.getvalue())
    page = jinja_env().get_template("index_page.html.j2").render(
        rows=rows, columns=[{"key": k, "label": v} for k, v in INDEX_COLUMNS], updated_utc=utc_now(),
        css=report_css(), plans=sorted(p.relative_to(out).as_posix() for p in out.glob("plans/*.html")))
    paths.write_atomic(out / "index.html", page)
    return out / "index.html"


# --- the batch ---------------------------------------------------------------------------------------

def _worker_failed(job: Job, e: Exception, prefix: str = "") -> Result:
    return Result(scenario=job.scenario, ok=False, title=job.title, error=f"{prefix}{e.__class__.__name__}: {e}",
                  error_detail={"ename": e.__class__.__name__, "evalue": str(e)})


def _safe_render(job: Job) -> Result:
    try:
        return render_scenario(job)
    except Exception as e:  # kernel could not start, disk full, ...
        return _worker_failed(job, e)


def _results(jobs: list[Job], workers: int, executor: cf.Executor | None):
    """(job, Result) as each finishes: in this process, or through a pool or executor."""
    if executor is None and (workers <= 1 or len(jobs) <= 1):
        try:
            for job in jobs:
                yield job, _safe_render(job)
        finally:
            shutdown_kernels()
        return
    if executor is None:
        yield from pool_results(jobs, workers, render_scenario, _worker_failed)
        return
    futures = {executor.submit(render_scenario, job): job for job in jobs}
    for fut in cf.as_completed(futures):
        job = futures[fut]
        try:
            yield job, fut.result()
        except Exception as e:  # the worker itself died (killed, out of memory, lost)
            yield job, _worker_failed(job, e, "worker failed: ")


def _progress_bar(n: int):
    from tqdm import tqdm

    size = shutil.get_terminal_size((80, 24))  # a pty of size 0x0 (CI, `script`) would hide the bar
    return tqdm(total=n, unit="report", desc="report", file=sys.stderr,
                ncols=min(size.columns, 100) if size.columns > 0 else 80, nrows=size.lines if size.lines > 1 else 24)


def run_batch(jobs: list[Job], out: str | Path, workers: int = 1, executor: cf.Executor | None = None,
              progress: bool | None = None, echo=None):
    """Render ``jobs`` (in parallel when ``workers > 1`` or an ``executor`` is given), install each
    finished report as it arrives, record failures; returns the list of Results. Holds the output
    folder's lock (``outfolder.output_lock``: InputError when another run holds it) before anything
    starts. A report that cannot be written (disk full, read-only) is a failed Result with one line
    naming the folder; the batch goes on and the previous report stays."""
    out, progress = Path(out), sys.stderr.isatty() if progress is None else progress
    notes: list[str] = []
    unwind_on_signals()   # a killed batch unwinds: workers and kernels stopped
    with outfolder.output_lock(out, notes):
        bar = _progress_bar(len(jobs)) if progress and jobs else None
        say = echo or (bar.write if bar is not None else _say)
        for line in notes + recover(out):
            say(f"note: {line}")
        results = []
        try:
            for job, res in _results(jobs, workers, executor):
                results.append(_finish(job, res, out, say))
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
    return results


def _finish(job: Job, res: Result, out: Path, say) -> Result:
    """Install a finished report or record a failure, saying so in one or two lines; a write error
    turns an ok Result into a failed one."""
    if res.ok:
        try:
            where = install(res, out)
            say(f"ok      {job.scenario} ({res.duration_s:.1f} s) -> {paths.rel(where)}")
        except OSError as e:
            res = Result(scenario=res.scenario, ok=False, title=res.title, duration_s=res.duration_s, notes=res.notes,
                         error=f"{outfolder.write_error(e, out)} (its previous report, if any, is kept)",
                         error_detail={"ename": e.__class__.__name__, "evalue": str(e), "errno": e.errno})
            say(f"FAILED  {job.scenario}: {res.error}")
            _try_record(res, out, job, say, quiet=True)
    else:
        say(f"FAILED  {job.scenario} ({res.duration_s:.1f} s): {res.error}")
        _try_record(res, out, job, say)
    for n in res.notes:
        say(f"        note: {job.scenario}: {n}")
    return res


def _try_record(res: Result, out: Path, job: Job, say, quiet: bool = False) -> None:
    try:
        kept = record_failure(res, out, job.scenario_file)
    except OSError as e:
        if not quiet:  # a write error already said why
            say(f"        the error could not be kept: {outfolder.write_error(e, out / outfolder.FAILED_DIR)}")
        return
    if not quiet:
        say(f"        executed notebook and error kept in {paths.rel(kept)}/")


# --- the `report` command ------------------------------------------------------------------------------

def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _dask_client(address: str):
    """A client of the Dask scheduler at ``address``, or InputError saying why there is none."""
    try:
        from distributed import Client
    except ImportError:
        raise InputError("--scheduler: needs the 'distributed' package (pip install 'dask[distributed]')") from None
    try:
        return Client(address, timeout="20s")
    except (OSError, TimeoutError, ValueError) as e:
        raise InputError(f"--scheduler {address}: cannot connect to a Dask scheduler ({e})") from None


def _announce(args, problems: list[str], skipped: list[str]) -> list[Section]:
    """Log the invalid scenarios, the sections skipped and the unchanged scenarios; the sections."""
    for line in problems:
        _say(f"invalid {line}")
    present, missing = available_sections(args.notebooks)
    for s in missing:
        _say(f"note: section '{s.label}' skipped: {paths.rel(Path(args.notebooks) / s.notebook)} not found")
    for name in skipped:
        _say(f"skip    {name} (inputs unchanged since its last report)")
    return present


def run(args) -> int:
    """The ``report`` command. Exit 2 when nothing could start (an invalid scenario is reported and
    the rest still rendered; the output folder locked by another run or not writable; no loopback
    interface for the kernels), 1 when a scenario failed while planned, rendered or written, else 0."""
    t0 = time.perf_counter()
    out = Path(args.out)
    names = args.scenarios or scenario_names()
    if not names:
        raise InputError(f"{paths.rel(SCENARIO_DIR)}: no scenario files found")
    notes: list[str] = []
    unwind_on_signals()   # a killed batch unwinds: workers and kernels stopped
    with outfolder.output_lock(out, notes):  # before planning: --skip-unchanged reads the folder
        for line in notes:
            _say(f"note: {line}")
        return _run_locked(args, out, names, t0)


def _run_locked(args, out: Path, names: list[str], t0: float) -> int:
    plan_failed: list[str] = []
    workers = max(1, args.jobs or default_jobs())
    if workers > 1 and len(names) > 1 and not (args.scheduler or args.skip_unchanged):
        pool_context(start=True)   # the workers' server imports while the batch is planned
    engine = getattr(args, "engine", None) or default_engine()
    jobs, problems, skipped = plan(names, out, args.notebooks, args.skip_unchanged, args.timeout, plan_failed, engine)
    if workers > 1:
        jobs = longest_first(jobs, out)
        try:   # compiled now, while the pool's server still imports (this process would wait for it
            # anyway), rather than after the last report (Jinja's import and the index template)
            jinja_env().get_template("index_page.html.j2")
        except Exception:  # noqa: BLE001 - write_index meets it again and says so, as before
            pass
    present = _announce(args, problems, skipped)
    for line in plan_failed:
        _say(f"FAILED  {line}")
    if jobs and not args.scheduler and (engine == "kernel" or not hasattr(signal, "SIGALRM")):
        problem = netcheck.loopback_problem()
        if problem:  # else each report would wait 60 s for "Kernel didn't respond"
            raise InputError(problem)
    executor, client = None, None
    if args.scheduler and jobs:
        client = _dask_client(args.scheduler)
        executor = client.get_executor(pure=False)
        where = f"Dask scheduler {args.scheduler}"
    else:
        where = f"{min(workers, max(len(jobs), 1))} job(s)"
    if jobs:
        _say(f"report: {len(jobs)} scenario(s) x {len(present)} notebook(s) on {where} -> {paths.rel(out)}/")
    try:
        results = run_batch(jobs, out, workers=workers, executor=executor)
    finally:
        if client is not None:
            client.run(shutdown_kernels)  # the workers outlive the batch; their kernels need not
            client.close()
    written = len([r for r in results if r.ok])
    failed = len(results) - written + len(plan_failed)
    try:
        index = paths.rel(write_index(out))
    except OSError as e:
        _say(f"FAILED  index: {outfolder.write_error(e, out)} (the previous index, if any, is kept)")
        index, failed = "not written", failed + 1
    invalid = len({p.split(": ")[0] for p in problems})  # problems are "file: field: message" lines
    _say(f"report: {written} written, {failed} failed, {len(skipped)} unchanged, "
         f"{invalid} invalid, in {time.perf_counter() - t0:.1f} s; index: {index}")
    if problems:
        return 2
    return 1 if failed else 0
