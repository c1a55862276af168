"""Running a scenario's notebooks through Papermill's Python API, with one of two engines (``Job.engine``):

- "in-process" (the default): in the worker's own IPython shell (``report.inprocess``), no kernel;
- "kernel": one Jupyter kernel per worker, shared by the notebooks of a scenario (its namespace reset
  between them) and reused for the next scenario, through an engine that accepts that kernel; also
  where the in-process engine cannot run (a thread other than the main one, as Dask's; no SIGALRM).

``widgets`` cells are removed from each notebook before Papermill sees it. ``render_scenario`` is
what a worker (process pool or Dask) runs for one ``Job``. A pool worker writes which cell it runs
into a progress file (``progress_dir``), so that the batch can name the cell of a notebook that ended
its worker (``os._exit``, a crash)."""
from __future__ import annotations

import gc
import json
import logging
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

from .. import netcheck, paths
from ..analysis import SHARE_ENV
from ..scenario import load_scenario
from . import inprocess
from .assemble import assemble_report, first_line, run_estimate, source_numbers, widget_cells
from .jobs import Job, Result
from .nbschema import install as install_nb_validator

ENGINE = "workbook-shared-kernel"
ESTIMATE_FILE = "estimate.json"  # written by the kernel into the worker's private folder
# ``%reset -f`` without its two full garbage collections, and the kernel's collector tuned for a batch
# (``kernelside``: together about 1.5-2 s of CPU per report, measured)
_RESET = "__import__('workbook.report.kernelside', fromlist=['_']).reset_namespace()\n"
_PREPARE = "__import__('workbook.report.kernelside', fromlist=['_']).prepare()\n"


def _register_engine() -> None:
    """A Papermill engine that runs a notebook in an already started kernel (``km=``) through an
    already connected client (``kc=``), resetting the namespace first (Papermill's own engine starts
    a kernel per notebook, which costs a kernel start plus the package imports each time).

    Reusing the client matters too: a new client's ``wait_for_ready`` waits up to 0.2 s for its
    IOPub subscription to see a message (ZeroMQ's late-joining subscriber), measured at about 0.27 s
    of idle time per notebook; without ``kc`` a client is made per notebook and closed after it.
    ``source_path``: recorded as the executed notebook's ``papermill.input_path`` (the notebook is
    handed to Papermill as a NotebookNode, with its widgets cells removed)."""
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, papermill_engines

    if ENGINE in papermill_engines._engines:
        return

    class SharedKernelEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, log_output=False, stdout_file=None,
                                     stderr_file=None, start_timeout=60, execution_timeout=None,
                                     km=None, kc=None, reset_namespace=True, source_path=None, **kwargs):
            from jupyter_core.utils import run_sync

            if source_path is not None:
                nb_man.nb.metadata.papermill["input_path"] = source_path
            client = PapermillNotebookClient(
                nb_man, km=km, timeout=execution_timeout, startup_timeout=start_timeout,
                kernel_name=kernel_name, log=logging.getLogger("papermill"), log_output=log_output,
                stdout_file=stdout_file, stderr_file=stderr_file)

            async def reset(notebook=None):
                if reset_namespace:
                    await client.kc.execute_interactive(_RESET, silent=True, store_history=False,
                                                        timeout=start_timeout, allow_stdin=False)

            if kc is not None:  # connected already: no on_notebook_start hook runs, reset here
                client.kc = kc
                run_sync(reset)()
                try:
                    return _saving_on_failure(nb_man, client)
                finally:
                    client.kc = None  # the kernel's client stays open for the next notebook
            client.on_notebook_start = reset
            try:
                return _saving_on_failure(nb_man, client)
            finally:
                if client.kc is not None:
                    client.kc.stop_channels()

    papermill_engines.register(ENGINE, SharedKernelEngine)


def _saving_on_failure(nb_man, client):
    """``client.execute()``; when it stops on something else than a cell error (a cell past its
    timeout, a dead kernel) the notebook is saved as it stands, its running cell marked by Papermill,
    so that the failure names that cell (``_stopped_cell``)."""
    try:
        return client.execute()
    except Exception:
        try:
            from papermill.iorw import write_ipynb

            path = nb_man.output_path or nb_man.nb.metadata.get("papermill", {}).get("output_path")
            if path:
                write_ipynb(nb_man.nb, path)
        except Exception:  # noqa: BLE001 - the message then names no cell; the first error stands
            pass
        raise


# --- this worker's kernels ---------------------------------------------------------------------------

def _start_kernel(kernel_name: str, cwd: str, log_file):
    """Start a kernel in ``cwd`` that imports this very ``workbook`` package (its parent folder is
    put first on PYTHONPATH), its stdout/stderr going to ``log_file`` rather than the batch log.
    ipykernel's launcher is replaced by ``kernellaunch`` (the same kernel without debugpy and anywidget)."""
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(paths.ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env[SHARE_ENV] = "1"   # the notebooks and the summary of a scenario share one analysis
    km = AsyncKernelManager(kernel_name=kernel_name)
    argv = km.kernel_spec.argv
    if argv[1:3] == ["-m", "ipykernel_launcher"]:   # the same kernel, less what a batch never uses
        km.kernel_spec.argv = [argv[0], "-m", "workbook.report.kernellaunch", *argv[3:]]
    run_sync(km.start_kernel)(cwd=cwd, env=env, stdout=log_file, stderr=log_file)
    return km


# Kernels kept by this worker (process and thread): starting a kernel and importing pandas and
# altair in it costs seconds, paid once per worker rather than per scenario or notebook.
# Each entry: (kernel manager, its log file, a connected client or None).
_KERNELS: dict[tuple, list] = {}
_FINALIZER = None


def _key(kernel_name: str, cwd: str) -> tuple:
    return (kernel_name, cwd, os.getpid(), threading.get_ident())


def _kernel(kernel_name: str, cwd: str):
    """This worker's kernel for ``cwd`` (started when missing or dead), and whether it is new."""
    global _FINALIZER
    from jupyter_core.utils import run_sync

    key = _key(kernel_name, cwd)
    if key in _KERNELS:
        km = _KERNELS[key][0]
        if run_sync(km.is_alive)():
            return km, False
        _discard_kernel(kernel_name, cwd)
    problem = netcheck.loopback_problem()
    if problem:  # fail in a second rather than after the kernel's 60 s "Kernel didn't respond"
        raise RuntimeError(problem)
    log_file = tempfile.TemporaryFile()
    _KERNELS[key] = [_start_kernel(kernel_name, cwd, log_file), log_file, None]
    if _FINALIZER is None:
        import multiprocessing.util

        # runs at exit of the main process and of process-pool workers (which skip atexit handlers)
        _FINALIZER = multiprocessing.util.Finalize(None, shutdown_kernels, exitpriority=10)
    return _KERNELS[key][0], True


def _client(kernel_name: str, cwd: str):
    """A connected client of this worker's kernel for ``cwd`` (made once, kept with the kernel)."""
    from jupyter_core.utils import run_sync

    entry = _KERNELS[_key(kernel_name, cwd)]
    if entry[2] is None:
        kc = entry[0].client()
        kc.start_channels()
        try:
            run_sync(kc.wait_for_ready)(timeout=60)
        except Exception:
            kc.stop_channels()
            raise
        kc.allow_stdin = False
        entry[2] = kc
    return entry[2]


def _discard_kernel(kernel_name: str, cwd: str) -> None:
    entry = _KERNELS.pop(_key(kernel_name, cwd), None)
    if entry is not None:
        _close_entry(entry)


def _close_entry(entry) -> None:
    km, log_file, kc = entry
    if kc is not None:
        kc.stop_channels()
    _stop_kernel(km)
    log_file.close()


def shutdown_kernels() -> int:
    """Stop every kernel this worker keeps (called at exit, and on Dask workers after a batch)."""
    n = 0
    for key in [k for k in _KERNELS if k[2] == os.getpid()]:
        _close_entry(_KERNELS.pop(key))
        n += 1
    return n


def kill_kernels_now() -> int:
    """SIGKILL the process group of every kernel this process keeps, at once and without an event
    loop (safe in a signal handler: a worker told to stop, or whose parent died, leaves no kernel
    behind; each kernel runs in a session of its own, so its group is its pid)."""
    n = 0
    for key in [k for k in _KERNELS if k[2] == os.getpid()]:
        proc = getattr(getattr(_KERNELS[key][0], "provisioner", None), "process", None)
        pid = getattr(proc, "pid", None)
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL)
                n += 1
            except (ProcessLookupError, PermissionError):
                pass
    return n


def _die_with_kernels(signum, _frame) -> None:
    kill_kernels_now()
    _progress_note(STOPPED)
    os._exit(128 + signum)


RUNNER_POLL_S = 1.0
STOPPED = "stopped"   # the last line of a progress file whose worker was told to stop
_PROGRESS = {"dir": None, "file": None}   # this pool worker's progress folder, the running job's file


def worker_init(runner_pid: int | None = None, progress_dir: str | None = None) -> None:
    """A batch worker process: on SIGTERM, SIGHUP or SIGINT (the batch stopped, ``kill``), and when
    the runner ``runner_pid`` is gone (killed with -9: a thread checks every ``RUNNER_POLL_S``; the
    pool's forkserver, the worker's parent, outlives it), kill this worker's kernels and exit, so
    that no kernel outlives the batch (the running job's progress file then ends with ``STOPPED``).
    ``progress_dir``: where each job's progress file goes (``progress_line``). The garbage collector,
    off in the forkserver this worker comes from (``command.preload_without_collections``), is turned on
    first."""
    gc.enable()
    _PROGRESS["dir"] = progress_dir
    if hasattr(os, "setsid"):
        # a session of its own, as each kernel had (jupyter_client starts kernels so): a terminal's
        # Ctrl-C reaches the runner, which stops the workers, and under load the scheduler gives each
        # worker a group's share of the CPU, as it gave each kernel (Linux autogroups)
        try:
            os.setsid()
        except OSError:
            pass
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _die_with_kernels)
    if runner_pid:
        threading.Thread(target=_watch_runner, args=(runner_pid,), daemon=True, name="watch-runner").start()


def progress_path(progress_dir: str | Path, scenario: str) -> Path:
    return Path(progress_dir) / f"{scenario}.progress"


def _progress_note(line: str) -> None:
    """Append ``line`` to the running job's progress file (one write: safe in a signal handler)."""
    path = _PROGRESS["file"]
    if path is None:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line.replace("\n", " ") + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def progress_line(pid: int, notebook: str, cell: int, source: str) -> str:
    """A progress file's line for a cell started: pid, notebook, source cell number, first line."""
    return f"{pid}\t{notebook}\t{cell}\t{first_line(source)}"


def read_progress(progress_dir: str | Path, scenario: str) -> dict | None:
    """The last line of a scenario's progress file: {"pid", "notebook", "cell", "source"}, or
    {"stopped": True} when its worker was told to stop, or None when it never started a cell."""
    try:
        lines = progress_path(progress_dir, scenario).read_text().splitlines()
    except OSError:
        return None
    if not lines:
        return None
    if lines[-1] == STOPPED:
        return {"stopped": True}
    try:
        pid, notebook, cell, source = lines[-1].split("\t", 3)
        return {"pid": int(pid), "notebook": notebook, "cell": int(cell), "source": source}
    except ValueError:
        return None


def _watch_runner(pid: int) -> None:
    while True:
        time.sleep(RUNNER_POLL_S)
        if not runner_alive(pid):
            _die_with_kernels(signal.SIGTERM, None)


def runner_alive(pid: int) -> bool:
    """Is process ``pid`` alive (a zombie, killed but not yet reaped by its parent, is not)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # alive, another user's
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True           # no /proc: signal 0 is all there is


def _interrupted(signum, _frame):
    kill_kernels_now()          # this process's own kernels (a batch run without workers)
    raise KeyboardInterrupt(f"signal {signum}")


def unwind_on_signals() -> None:
    """In the batch runner: SIGTERM and SIGHUP raise KeyboardInterrupt, so the batch unwinds
    (workers stopped by ``stop_workers``, kernels shut down) instead of dying on the spot."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupted)


def stop_workers(ex) -> None:
    """SIGTERM each worker of a process pool (``execute.worker_init`` kills its kernels then)."""
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        try:
            proc.terminate()
        except (OSError, AttributeError):
            pass
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        proc.join(timeout=5)


def _stop_kernel(km) -> None:
    from jupyter_core.utils import run_sync

    try:
        run_sync(km.shutdown_kernel)(now=True)
    except Exception:  # already dead: nothing left to stop
        pass


# --- failures ------------------------------------------------------------------------------------------

class _NotebookFailed(Exception):
    def __init__(self, notebook: str, exc: Exception, executed_path: Path):
        super().__init__(str(exc))
        self.notebook, self.exc, self.executed_path = notebook, exc, executed_path


def _source_cell_number(nb, index: int) -> int:
    """1-based number, in the source notebook, of the cell Papermill reports as ``index``: an index
    into the executed cells (with its ``injected-parameters`` cell, without the ``widgets`` cells
    removed before execution) before it added error banners."""
    numbers = [n for c, n in zip(nb.cells, source_numbers(nb))
               if "papermill-error-cell-tag" not in c.get("metadata", {}).get("tags", [])]
    after = [n for n in numbers[index:] if n is not None]
    return after[0] if after else max([n for n in numbers if n is not None], default=0) + 1


def _failure(job: Job, notebook: str, exc: Exception, executed_path: Path | None) -> tuple[str, dict, dict]:
    """One-line message, details for error.json and the files kept for debugging."""
    import nbformat
    from papermill.exceptions import PapermillExecutionError

    rel = paths.rel(Path(job.notebook_dir) / notebook)
    files = {}
    if isinstance(exc, PapermillExecutionError):
        cell = exc.cell_index + 1
        if executed_path is not None and executed_path.exists():
            files[notebook] = executed_path.read_bytes()
            cell = _source_cell_number(nbformat.read(executed_path, as_version=4), exc.cell_index)
        msg = (f"{rel}: cell {cell} (`{first_line(exc.source)}`): {exc.ename}: "
               f"{exc.evalue.splitlines()[0] if exc.evalue else ''}").rstrip()
        detail = {"notebook": rel, "cell": cell, "source": exc.source, "ename": exc.ename, "evalue": exc.evalue}
    else:  # a cell past its timeout (CellTimeoutError), a dead kernel (DeadKernelError), ...
        cell, source = _stopped_cell(executed_path)
        if cell is not None and executed_path is not None:
            files[notebook] = executed_path.read_bytes()
        where = f"cell {cell} (`{first_line(source)}`): " if cell is not None else ""
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        msg = f"{rel}: {where}{exc.__class__.__name__}: {text}".rstrip()
        detail = {"notebook": rel, "cell": cell, "source": source, "ename": exc.__class__.__name__, "evalue": str(exc)}
    return msg, detail, files


def _stopped_cell(executed_path: Path | None) -> tuple[int | None, str | None]:
    """The source number and source of the cell the run stopped at (the last code cell Papermill
    started: nbclient marks it completed even when it timed out or its kernel died), from the
    executed notebook; (None, None) when unknown."""
    import nbformat

    if executed_path is None or not executed_path.exists():
        return None, None
    try:
        nb = nbformat.read(executed_path, as_version=4)
    except Exception:  # noqa: BLE001 - a half-written notebook: the message names no cell
        return None, None
    cells = [c for c in nb.cells if "papermill-error-cell-tag" not in c.get("metadata", {}).get("tags", [])]
    started = [i for i, c in enumerate(cells) if c.cell_type == "code"
               and c.get("metadata", {}).get("papermill", {}).get("status") in ("running", "failed", "completed")]
    if not started:
        return None, None
    return _source_cell_number(nb, started[-1]), cells[started[-1]].source   # the run stopped at its last cell


# --- one scenario ----------------------------------------------------------------------------------

def batch_notebook(path: str | Path):
    """The notebook at ``path`` as a batch runs it (a NotebookNode): its ``widgets`` cells and the
    headings of sections holding only them are removed, so they never execute; their numbers are
    kept in ``metadata.workbook.removed_cells`` so that messages name cells as the source numbers them."""
    import nbformat

    install_nb_validator()   # a worker not forked from the pool's forkserver (spawn, Dask): the kept validator
    nb = nbformat.read(str(path), as_version=4)
    drop = widget_cells(nb.cells)
    if drop:
        nb.metadata.setdefault("workbook", {})["removed_cells"] = sorted(i + 1 for i in drop)
        nb.cells = [c for i, c in enumerate(nb.cells) if i not in drop]
    return nb


def execute_notebooks(job: Job, workdir: Path, handover: dict | None = None) -> list[tuple[str, Path, float]]:
    """Run the scenario's notebooks in report order in this worker's kernel, its namespace reset
    before each notebook (``%reset -f``: a notebook sees only its own variables, as in JupyterLab);
    returns (section key, executed notebook path, seconds). Raises ``_NotebookFailed`` naming the
    notebook; after a failure the kernel is stopped, so the next scenario gets a fresh one. With the
    in-process engine (``job.engine``, where ``inprocess.usable``) the notebooks run in this process,
    and the summary's estimate is left in ``handover["estimate"]`` (``_execute_in_process``); the
    kernel writes it to ``workdir / ESTIMATE_FILE``. ``handover["notebooks"]``: each executed
    notebook as Papermill returned it after writing it (path -> NotebookNode), for the assembly,
    which then need not read it back (``assemble._section``)."""
    import papermill as pm

    if job.engine == "in-process" and inprocess.usable():
        return _execute_in_process(job, workdir, handover)
    _register_engine()
    logging.getLogger("papermill").setLevel(logging.WARNING)
    done = []
    km, fresh = _kernel(job.kernel_name, job.notebook_dir)
    try:
        kc = _client(job.kernel_name, job.notebook_dir)
    except Exception as e:  # the kernel died while starting
        _discard_kernel(job.kernel_name, job.notebook_dir)
        raise _NotebookFailed(job.sections[0][1], e, workdir / job.sections[0][1]) from e
    if fresh:
        _quietly(kc, _PREPARE, job.timeout_s)
    for i, (key, notebook, _label) in enumerate(job.sections):
        source, out_path = Path(job.notebook_dir) / notebook, workdir / notebook
        t0 = time.perf_counter()
        try:
            nb = pm.execute_notebook(
                batch_notebook(source), str(out_path), parameters={"scenario": job.parameter},
                engine_name=ENGINE, kernel_name=job.kernel_name, progress_bar=False,
                request_save_on_cell_execute=False, execution_timeout=job.timeout_s,
                km=km, kc=kc, reset_namespace=not (fresh and i == 0), source_path=str(source))
        except Exception as e:
            _discard_kernel(job.kernel_name, job.notebook_dir)
            raise _NotebookFailed(notebook, e, out_path) from e
        done.append((key, out_path, time.perf_counter() - t0))
        _hand_over_notebook(handover, out_path, nb)
    _estimate_in_kernel(kc, job, workdir / ESTIMATE_FILE)
    return done


def _execute_in_process(job: Job, workdir: Path, handover: dict | None = None) -> list[tuple[str, Path, float]]:
    """``execute_notebooks`` in this process's shell (``inprocess``); the summary's estimate too, handed
    over in memory (``handover["estimate"]``: ``run_estimate``'s pair) rather than written as JSON and
    read back by ``build_summary`` (about 0.05 s of JSON for a 2.6 MB estimate: it is JSON-ready
    already, ``analysis.summary_json``, so the page and summary.json come out the same)."""
    import papermill as pm

    inprocess.register()
    logging.getLogger("papermill").setLevel(logging.WARNING)
    done = []
    with inprocess.session(job.notebook_dir, SHARE_ENV):
        for key, notebook, _label in job.sections:
            source, out_path = Path(job.notebook_dir) / notebook, workdir / notebook
            t0 = time.perf_counter()
            try:
                nb = pm.execute_notebook(
                    batch_notebook(source), str(out_path), parameters={"scenario": job.parameter},
                    engine_name=inprocess.ENGINE, kernel_name=job.kernel_name, progress_bar=False,
                    request_save_on_cell_execute=False, execution_timeout=job.timeout_s,
                    source_path=str(source), on_cell=_on_cell(notebook))
            except Exception as e:
                raise _NotebookFailed(notebook, e, out_path) from e
            done.append((key, out_path, time.perf_counter() - t0))
            _hand_over_notebook(handover, out_path, nb)
        try:
            with inprocess.time_limit(job.timeout_s):
                pair = run_estimate(load_scenario(job.scenario_file))
        except (Exception, inprocess.Timeout):  # noqa: BLE001 - build_summary computes the estimate then
            pair = None
        if handover is not None and pair is not None:
            handover["estimate"] = pair
    return done


def _hand_over_notebook(handover: dict | None, path: Path, nb) -> None:
    """Keep the executed notebook Papermill returned (the object it wrote to ``path``, normalised by
    nbformat's validation as it wrote it) for the assembly."""
    if handover is not None and nb is not None:
        handover.setdefault("notebooks", {})[path] = nb


def _on_cell(notebook: str):
    """The engine's hook before each code cell: a pool worker notes the cell in its progress file."""
    if _PROGRESS["file"] is None:
        return None

    def note(nb, index: int) -> None:
        _progress_note(progress_line(os.getpid(), notebook, _source_cell_number(nb, index), nb.cells[index].source))
    return note


def _quietly(kc, code: str, timeout_s: float) -> bool:
    """Run ``code`` in the kernel without output or history; whether it ran without error."""
    from jupyter_core.utils import run_sync

    try:
        reply = run_sync(kc.execute_interactive)(code, silent=True, store_history=False, timeout=timeout_s,
                                                 allow_stdin=False, output_hook=lambda msg: None)
    except Exception:  # noqa: BLE001 - timeout, dead kernel: the notebook run that follows reports it
        return False
    return reply.get("content", {}).get("status") == "ok"


def _estimate_in_kernel(kc, job: Job, path: Path) -> None:
    """Compute ``summary.json``'s estimate in the scenario's kernel, which has the model modules
    imported already (the runner would import and compute it all again, about 0.5 s); the runner
    reads ``path``. A failure here only costs time: ``build_summary`` then computes it itself."""
    code = (f"import workbook.report.execute as _wr\n_wr.write_estimate({job.scenario_file!r}, {str(path)!r})\n"
            "del _wr\n")
    if not _quietly(kc, code, job.timeout_s):  # timeout, dead kernel: the runner computes the estimate
        path.unlink(missing_ok=True)


def write_estimate(scenario_file: str, path: str) -> None:
    """``run_estimate`` of a scenario file, as JSON in ``path`` (runs in the report kernel)."""
    est, err = run_estimate(load_scenario(scenario_file))
    tmp = Path(path).with_name(f".{Path(path).name}.tmp")
    tmp.write_text(json.dumps({"estimate": est, "error": err}, allow_nan=False))
    os.replace(tmp, path)


def render_scenario(job: Job) -> Result:
    """Run one scenario's notebooks and build its report in memory (runs in a worker process, or on
    a Dask worker: it writes only to a private temporary folder and returns the files)."""
    t0 = time.perf_counter()
    res = Result(scenario=job.scenario, ok=False, title=job.title)
    with tempfile.TemporaryDirectory(prefix=f"workbook-report-{job.scenario}-") as tmp:
        if _PROGRESS["dir"]:
            _PROGRESS["file"] = str(progress_path(_PROGRESS["dir"], job.scenario))
        handover: dict = {}
        try:
            executed = execute_notebooks(job, Path(tmp), handover)
        except _NotebookFailed as f:
            res.error, res.error_detail, res.files = _failure(job, f.notebook, f.exc, f.executed_path)
            res.duration_s = time.perf_counter() - t0
            return res
        finally:
            _PROGRESS["file"] = None
        try:
            res.files, res.notes, res.headline = assemble_report(job, executed, Path(tmp) / ESTIMATE_FILE,
                                                                 handover.get("estimate"), handover.get("notebooks"))
            res.ok = True
        except Exception as e:  # a rendering bug or an offline-rule violation: this report only
            res.error = f"{job.scenario}: assembling the report: {e.__class__.__name__}: {e}"
            res.error_detail = {"notebook": None, "cell": None, "ename": e.__class__.__name__, "evalue": str(e)}
    res.duration_s = time.perf_counter() - t0
    return res
