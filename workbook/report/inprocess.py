"""Running a report's notebooks in this very process: a Papermill engine (``ENGINE``) that executes each
code cell in an IPython ``InteractiveShell`` of the process that renders the scenario (a batch worker,
or the runner itself with ``--jobs 1``), with no Jupyter kernel and no ZeroMQ.

A kernel re-imports pandas, Altair and the workbook that the worker has imported already (1.9 s of CPU
per kernel, measured), and every output crosses ZeroMQ twice. Here the cell's outputs are collected as
ipykernel would send them and written into the notebook as nbclient writes them:

- stdout/stderr -> ``stream`` outputs (what was written between two other outputs, stdout's then
  stderr's, as ipykernel flushes its ``OutStream``s before a display, the result or a traceback; a
  kernel also flushes every 0.2 s, so a slow cell that prints twice may give it two outputs where
  this gives one); ``display()`` -> ``display_data``
  (``_Publisher``, after ipykernel's ``ZMQDisplayPublisher``, display ids and ``clear_output``
  included); the cell's last expression -> ``execute_result`` with its execution count
  (``_DisplayHook``, after ``ZMQShellDisplayHook``); an exception -> an ``error`` output (ename,
  evalue, traceback: ``ZMQInteractiveShell._showtraceback``), after which the notebook stops and
  Papermill's ``raise_for_execution_errors`` raises ``PapermillExecutionError`` as with a kernel.
  Every bundle goes through the same JSON round trip as a kernel message (``_wire``: jupyter_client's
  packer), so the notebook holds the same values.
- Papermill's bookkeeping: ``cell_start`` / ``cell_exception`` / ``cell_complete`` as
  ``PapermillNotebookClient.papermill_execute_cells`` calls them, nbclient's timing metadata, and the
  notebook's ``language_info`` as ipykernel reports it (``LANGUAGE_INFO``).
- A cell past ``execution_timeout`` (seconds, wall clock): ``SIGALRM`` (``signal.setitimer``) raises
  ``Timeout`` in the cell, a BaseException so that the cell's own ``except Exception`` does not swallow
  it; the notebook is saved as it stands and nbclient's ``CellTimeoutError`` raised, as with a kernel.
  Hence the engine runs only in a main thread where SIGALRM exists (``usable``); elsewhere (Dask's
  worker threads, Windows) the runner uses the kernel engine.
- What a report kernel had (``session``): the notebook folder as the working directory and ``''`` on
  ``sys.path`` (as ``IPKernelApp`` puts it), ``WORKBOOK_SHARE_ANALYSIS=1``, ``__main__`` the shell's
  user module while cells run, no stdin (``input()`` raises ``StdinNotImplementedError``), and pandas'
  ``display.max_columns`` at 20, the value pandas picks when imported inside a kernel (imported in a
  plain process it picks 0, "fit the terminal", which would change the tables' HTML).

A cell that ends its process (``os._exit``, a crash) ends the worker with it: the batch reports that
scenario from the worker's progress file (``progress_line``) and renders the others again
(``batch``); with ``--jobs 1`` it ends the batch. A cell stuck inside C code that never returns to
Python cannot be interrupted by SIGALRM; the kernel engine (``WORKBOOK_REPORT_ENGINE=kernel``) kills it.
"""
from __future__ import annotations

import datetime as _dt
import importlib
import io
import json
import os
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from .. import paths
from .jobs import BATCH_ENV, release_collector

ENGINE = "workbook-in-process"
KERNELSIDE = "workbook.report.kernelside"   # imported on first use, as in a kernel: it imports Altair,
# which a runner that hands every scenario to pool workers never needs (about 1 s of CPU)
# ipykernel's IPythonKernel.language_info, which nbclient copies into the notebook's metadata
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3", "version": sys.version.split()[0]}


def usable() -> bool:
    """Can this thread run notebooks in-process: a main thread, SIGALRM for the cell timeout, and no
    other IPython shell in the process (a runner called from a notebook uses kernels)?"""
    return hasattr(signal, "SIGALRM") and hasattr(signal, "setitimer") \
        and threading.current_thread() is threading.main_thread() and not _other_shell()


class Timeout(BaseException):
    """Raised in a cell by SIGALRM when it runs past its timeout."""


def _now() -> str:
    """A timestamp as nbclient records one (a message header's date, UTC, ``Z``)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _json_default(obj):
    """jupyter_client.jsonutil.json_default: how a kernel message packs what JSON has no type for."""
    import numbers
    from binascii import b2a_base64
    from collections.abc import Iterable

    if isinstance(obj, _dt.datetime):
        obj = obj if obj.tzinfo else obj.replace(tzinfo=_dt.timezone.utc)
        return obj.isoformat().replace("+00:00", "Z")
    if isinstance(obj, _dt.date):
        return obj.isoformat()
    if isinstance(obj, bytes):
        return b2a_base64(obj, newline=False).decode("ascii")
    if isinstance(obj, Iterable):
        return list(obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        return float(obj)
    raise TypeError(f"{obj!r} is not JSON serializable")


def _wire(content: dict) -> dict:
    """``content`` as the client reads it back from a kernel message (jupyter_client's
    ``json_packer``, then ``json.loads``): tuples become lists, keys strings, bytes base64. Content
    that is JSON's own types already (``_plain_copy``: a chart's SVG, a table's HTML, text) comes back
    as an equal copy without the round trip (about 0.01 s of CPU a report: 2 MB of SVG escaped and
    parsed back)."""
    copied = _plain_copy(content)
    if copied is not _NOT_PLAIN:
        return copied
    try:
        text = json.dumps(content, default=_json_default, ensure_ascii=False, allow_nan=False)
    except ValueError:   # NaN/inf: jupyter_client falls back to the old json_clean (repr of the number)
        text = json.dumps(_clean_floats(content), default=_json_default, ensure_ascii=False)
    return json.loads(text)


_NOT_PLAIN = object()
_PLAIN_SCALARS = (str, int, bool, type(None))


def _plain_copy(obj, depth: int = 0):
    """A copy of ``obj`` equal to what ``json.loads(json.dumps(obj))`` gives, when ``obj`` holds only
    dicts with ``str`` keys, lists, ``str``, ``int``, ``bool``, None and finite floats, each of exactly
    that type (subclasses, such as an ``IntEnum`` or a NotebookNode, are written by json as their base
    type and read back as it); else ``_NOT_PLAIN``. Nested more than 100 deep: ``_NOT_PLAIN`` too
    (the round trip then decides, as it did)."""
    t = type(obj)
    if t in _PLAIN_SCALARS:
        return obj
    if t is float:
        return obj if obj - obj == 0.0 else _NOT_PLAIN   # NaN and infinities are not finite
    if depth > 100:
        return _NOT_PLAIN
    if t is dict:
        out = {}
        for k, v in obj.items():
            if type(k) is not str:
                return _NOT_PLAIN
            v = _plain_copy(v, depth + 1)
            if v is _NOT_PLAIN:
                return _NOT_PLAIN
            out[k] = v
        return out
    if t is list:
        out = []
        for v in obj:
            v = _plain_copy(v, depth + 1)
            if v is _NOT_PLAIN:
                return _NOT_PLAIN
            out.append(v)
        return out
    return _NOT_PLAIN


def _clean_floats(obj):
    import math

    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return repr(obj)
    if isinstance(obj, dict):
        return {str(k): _clean_floats(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_clean_floats(v) for v in obj]
    return obj


class _Outputs:
    """The outputs of the running cell, in nbformat's form, as nbclient appends them."""

    def __init__(self):
        self.outputs: list = []
        self.pending: list[tuple[str, str]] = []   # (stream name, text) written since the last flush
        self.clear_next = False
        self.display_ids: dict[str, list] = {}      # display id -> outputs showing it

    def start(self, outputs: list) -> None:
        self.outputs, self.pending, self.clear_next = outputs, [], False

    def flush(self) -> None:
        """The text written since the last output: one ``stream`` output for stdout, then one for
        stderr, as ipykernel flushes ``sys.stdout`` then ``sys.stderr`` before each display, the
        result, a traceback and at the end of the cell."""
        from nbformat import from_dict

        pending, self.pending = self.pending, []
        for name in ("stdout", "stderr"):
            text = "".join(t for n, t in pending if n == name)
            if text:
                self._append(from_dict({"output_type": "stream", "name": name, "text": text}))

    def _append(self, out, display_id: str | None = None) -> None:
        if self.clear_next:
            self.outputs[:] = []
            self.clear_next = False
        if display_id:
            self.display_ids.setdefault(display_id, []).append(out)
        self.outputs.append(out)

    def bundle(self, output_type: str, data: dict, metadata: dict | None, transient: dict | None = None,
               update: bool = False, execution_count: int | None = None) -> None:
        from nbformat import from_dict

        self.flush()
        content = _wire({"data": data, "metadata": metadata if metadata is not None else {}})
        display_id = (transient or {}).get("display_id")
        if display_id:   # nbclient's _update_display_id: every output showing this id takes the new data
            for out in self.display_ids.get(display_id, []):
                out["data"], out["metadata"] = from_dict(content["data"]), from_dict(content["metadata"])
        if update:
            return
        out = {"output_type": output_type, "metadata": content["metadata"], "data": content["data"]}
        if output_type == "execute_result":
            out["execution_count"] = execution_count
        self._append(from_dict(out), display_id)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        from nbformat import from_dict

        self.flush()
        self._append(from_dict(_wire({"output_type": "error", "ename": ename, "evalue": evalue,
                                      "traceback": traceback})))

    def clear(self, wait: bool) -> None:
        self.flush()
        if wait:
            self.clear_next = True
        else:
            self.outputs[:] = []


class _Stream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` while a cell runs: the text goes to the cell's outputs."""

    def __init__(self, name: str, sink: _Outputs):
        super().__init__()
        self.name, self._sink = name, sink

    @property
    def encoding(self):
        return "UTF-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self._sink.pending.append((self.name, text))
        return len(text)


class _NoStdin(io.TextIOBase):
    """``sys.stdin`` while a cell runs: a batch has nobody to answer ``input()`` (as a kernel whose
    client does not allow stdin)."""

    def readable(self) -> bool:
        return True

    def readline(self, size=-1):
        from IPython.core.error import StdinNotImplementedError

        raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")

    read = readline


_SHELL = None


def _make_shell():
    """The process's batch shell (an ``InteractiveShell`` singleton, so that ``IPython.display.display``
    publishes through it), or None when another IPython shell runs here already."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    sink = _Outputs()

    class _Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            sink.bundle("display_data", data, metadata, transient, update)

        def clear_output(self, wait=False):
            sink.clear(wait)

    class _DisplayHook(DisplayHook):
        msg = None

        def start_displayhook(self):
            self.msg = {"data": {}, "metadata": {}, "execution_count": None}

        def write_output_prompt(self):
            self.msg["execution_count"] = self.prompt_count

        def write_format_data(self, format_dict, md_dict=None):
            self.msg["data"], self.msg["metadata"] = format_dict, md_dict

        def finish_displayhook(self):
            msg, self.msg = self.msg, None
            if msg and msg["data"]:
                sink.bundle("execute_result", msg["data"], msg["metadata"], execution_count=msg["execution_count"])

    class BatchShell(InteractiveShell):
        """An InteractiveShell whose outputs go to the running cell (``sink``)."""

        displayhook_class, display_pub_class = _DisplayHook, _Publisher

        def init_virtualenv(self):   # as ipykernel's shell: no virtualenv detection
            pass

        def init_completer(self):
            """No tab completion in a batch (nobody asks for it): IPython's completer module, whose
            import compiles its patterns, is not loaded (7 ms of the shell's 18, measured)."""
            self.Completer = None

        def _showtraceback(self, etype, evalue, stb):
            sink.error(str(etype.__name__), str(evalue), stb)

    main = sys.modules.get("__main__")
    cfg = Config()
    cfg.HistoryManager.enabled = False    # no history database: a batch never reads it
    shell = BatchShell(config=cfg)        # not the singleton: it is that only while cells run (``session``)
    shell.sink = sink
    shell.batch_main = shell.user_module
    if main is not None:
        sys.modules["__main__"] = main    # the shell takes __main__ only while cells run (``run_cell``)
    with _installed(shell):
        importlib.import_module(KERNELSIDE).prepare(shell)
    # ``import workbook`` registers its DataFrame formatter with the shell on the package's first use
    # in a cell; if it looked for a shell in this process before (and found none), let it look again
    package = sys.modules.get("workbook")
    if getattr(package, "_formatter", None) and not any(package._formatter):
        package._formatter.clear()
    _kernel_defaults()
    _freeze_imports()
    return shell


def _freeze_imports() -> None:
    """In a report process (``jobs.BATCH_ENV`` set to 1 by ``command.run``), move every object made so far
    (the imported modules of pandas, IPython, Altair, nbconvert, the package, and the shell) to the garbage collector's
    permanent generation (``gc.freeze``, Python's documentation), so that the full collections the
    notebooks trigger walk only what the notebooks made. One report (chat-70b-realtime, one core) made 3
    full collections of 0.15-0.22 s in all, 0.08-0.10 s once frozen (3 pairs). The pool's workers inherit
    a frozen heap from the forkserver already (``report.forkready``); this covers the runner of
    ``--jobs 1`` and the shell each worker makes. Objects frozen are never collected: cyclic garbage left
    by the imports stays until the process ends (a batch process, which ends with the batch). The
    collector turned off for the imports by the runner (``jobs.hold_collector``) is turned on again here."""
    import gc

    if os.environ.get(BATCH_ENV) == "1":
        gc.freeze()
    release_collector()


def _other_shell() -> bool:
    """Does an IPython shell other than the batch shell run in this process (a kernel, a terminal)?"""
    ip = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return ip is not None and ip is not _SHELL


@contextmanager
def _installed(sh):
    """``sh`` as IPython's ``InteractiveShell`` singleton (what ``display()`` and ``get_ipython()``
    find), then none again."""
    classes = list(type(sh)._walk_mro())
    for cls in classes:
        cls._instance = sh
    try:
        yield
    finally:
        for cls in classes:
            cls._instance = None


def _kernel_defaults() -> None:
    """pandas' ``display.max_columns`` as pandas sets it when imported inside a kernel (20) rather than
    in a terminal (0: fit the terminal's width)."""
    import pandas as pd

    if pd.get_option("display.max_columns") == 0:
        pd.set_option("display.max_columns", 20)


@contextmanager
def _pandas_as_in_a_new_kernel():
    """pandas' display options as a newly started kernel has them (every ``display.*`` option at its
    default, ``display.max_columns`` 20: ``_kernel_defaults``) while a scenario's notebooks run, and
    the process's own afterwards: a notebook's tables do not depend on what ran before in this process
    (another scenario, a test, the CLI)."""
    import pandas as pd
    from pandas._config import config as pd_config

    keys = [k for k in pd_config._registered_options if k.startswith("display.")]
    saved = [(k, pd.get_option(k)) for k in keys]
    for k in keys:
        pd.reset_option(k)
    _kernel_defaults()
    try:
        yield
    finally:
        for k, v in saved:
            pd.set_option(k, v)


def shell():
    """This process's batch shell, made (and prepared: ``kernelside.prepare``) on first use."""
    global _SHELL
    if _SHELL is None:
        _SHELL = _make_shell()
    return _SHELL


@contextmanager
def session(notebook_dir: str | Path, share_env: str):
    """What a report kernel had, for the notebooks of one scenario: ``notebook_dir`` as the working
    directory and ``''`` on ``sys.path`` before site-packages (IPython's ``init_path``), the package's
    folder on ``sys.path``, ``share_env`` set to 1 (the notebooks and the summary share one analysis),
    no stdin. All restored afterwards."""
    cwd, path, env, stdin = os.getcwd(), list(sys.path), os.environ.get(share_env), sys.stdin
    os.chdir(notebook_dir)
    if "" not in sys.path:
        at = next((i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))), len(sys.path))
        sys.path.insert(at, "")
    if str(paths.ROOT) not in sys.path:
        sys.path.insert(0, str(paths.ROOT))
    os.environ[share_env] = "1"
    sys.stdin = _NoStdin()
    try:
        with _installed(shell()), _pandas_as_in_a_new_kernel():
            yield
    finally:
        sys.stdin = stdin
        os.chdir(cwd)
        sys.path[:] = path
        if env is None:
            os.environ.pop(share_env, None)
        else:
            os.environ[share_env] = env


def _on_alarm(signum, frame):
    raise Timeout()


@contextmanager
def time_limit(seconds: float | None):
    """Raise ``Timeout`` in this (main) thread after ``seconds`` of wall time (None: no limit)."""
    if not seconds:
        yield
        return
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_cell(sh, cell, timeout_s: float | None) -> bool:
    """Execute one code cell in ``sh``, its outputs and execution count written into ``cell`` (as
    nbclient's ``execute_cell``); True when it ran without error. Raises nbclient's
    ``CellTimeoutError`` when it ran past ``timeout_s``."""
    sink = sh.sink
    timing = {"iopub.status.busy": _now()}
    cell.outputs = []
    sink.start(cell.outputs)
    cell["execution_count"] = sh.execution_count   # the count this cell runs as (the result's too)
    out, err, main = sys.stdout, sys.stderr, sys.modules.get("__main__")
    sys.stdout, sys.stderr = _Stream("stdout", sink), _Stream("stderr", sink)
    sys.modules["__main__"] = sh.batch_main
    timing["iopub.execute_input"] = _now()
    try:
        with time_limit(timeout_s):
            try:
                result = sh.run_cell(cell.source, store_history=True)
            except Timeout:       # outside the cell's own code (IPython's machinery around it)
                result = None
    except Timeout:               # between the end of the cell and the alarm's cancellation
        result = None
    finally:
        sys.stdout, sys.stderr = out, err
        if main is not None:
            sys.modules["__main__"] = main
        sink.flush()
    timing["shell.execute_reply"] = timing["iopub.status.idle"] = _now()
    cell["metadata"]["execution"] = timing
    if result is not None and isinstance(result.error_in_exec, KeyboardInterrupt):
        raise KeyboardInterrupt("interrupted in a cell")   # Ctrl-C, or SIGTERM to the runner: the batch unwinds
    if result is None or isinstance(result.error_in_exec, Timeout):
        from nbclient.exceptions import CellTimeoutError

        raise CellTimeoutError.error_from_timeout_and_cell("Cell execution timed out", timeout_s, cell)
    return result.success


def register() -> None:
    """Register ``ENGINE`` with Papermill (once per process)."""
    from papermill.engines import Engine, papermill_engines

    if ENGINE in papermill_engines._engines:
        return

    class InProcessEngine(Engine):
        """Papermill's engine protocol (``execute_managed_notebook``) over this process's shell."""

        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, execution_timeout=None, source_path=None,
                                     reset_namespace=True, on_cell=None, **kwargs):
            sh = shell()
            if source_path is not None:
                nb_man.nb.metadata.papermill["input_path"] = source_path
            if reset_namespace:
                importlib.import_module(KERNELSIDE).reset_namespace(sh)
            for index, cell in enumerate(nb_man.nb.cells):
                failed = False
                try:
                    nb_man.cell_start(cell, index)
                    if cell.cell_type == "code" and cell.source.strip():
                        if on_cell is not None:
                            on_cell(nb_man.nb, index)
                        failed = not run_cell(sh, cell, execution_timeout)
                    if failed:
                        nb_man.cell_exception(nb_man.nb.cells[index], cell_index=index)
                except Exception:
                    _cell_complete(nb_man, nb_man.nb.cells[index], index)
                    _save(nb_man)
                    raise
                _cell_complete(nb_man, nb_man.nb.cells[index], index)
                if failed:
                    break
            nb_man.nb.metadata["language_info"] = dict(LANGUAGE_INFO)
            return nb_man.nb

    papermill_engines.register(ENGINE, InProcessEngine)


def _cell_complete(nb_man, cell, index: int) -> None:
    """``nb_man.cell_complete(cell, cell_index=index)``: Papermill's end of a cell (its end time, status and
    duration in ``metadata.papermill``), the duration computed from the two ISO times by
    ``datetime.fromisoformat`` rather than by Papermill's ``dateutil.parser.parse`` of the start time
    (0.2 ms a cell, 0.02 s of CPU a report): the same number, both times being exact to the microsecond.
    Papermill computes a duration only for a cell with a start time, so the start time is out of its
    sight while it ends the cell. Only where it saves nothing meanwhile (no ``output_path``: the
    runner saves the notebook after it ran); else Papermill's own."""
    meta = cell.metadata.get("papermill") or {}
    start = meta.get("start_time")
    if not start or nb_man.output_path:
        nb_man.cell_complete(cell, cell_index=index)
        return
    meta["start_time"] = None
    try:
        nb_man.cell_complete(cell, cell_index=index)
    finally:
        meta["start_time"] = start
    meta["duration"] = (_dt.datetime.fromisoformat(meta["end_time"]) - _dt.datetime.fromisoformat(start)).total_seconds()


def _save(nb_man) -> None:
    """Save the notebook as it stands (a cell past its timeout), so that the failure names its cell."""
    try:
        from papermill.iorw import write_ipynb

        path = nb_man.nb.metadata.get("papermill", {}).get("output_path")
        if path:
            write_ipynb(nb_man.nb, path)
    except Exception:  # noqa: BLE001 - the message then names no cell; the first error stands
        pass
