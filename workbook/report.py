"""Batch decision reports: ``python -m workbook report [SCENARIO ...] [--out reports] [--jobs N]``.

For each scenario the report notebooks (``SECTIONS``, in report order: the decision first) run with
Papermill's Python API, the scenario as the ``scenario`` parameter and ``interactive=False``; their
cells are then assembled into ONE self-contained HTML page per scenario (no code, no widgets, static
SVG charts, nothing loaded from a network), next to the executed notebooks and ``summary.json`` (the
``estimate`` output plus report metadata). ``reports/index.html`` and ``index.csv`` list every
scenario's headline.

Batch behaviour
- Every scenario is validated, and every notebook's ``parameters`` cell is checked against the
  parameters the runner passes (``papermill.inspect_notebook``), before any kernel starts.
- One kernel per scenario: the notebooks of a scenario run in turn in the same kernel, its namespace
  reset between them (``%reset -f``), so the heavy imports are paid once per scenario.
- Scenarios run in parallel in a process pool (``--jobs``), or on a Dask cluster (``--scheduler``)
  through Dask's ``concurrent.futures`` executor; workers return the files and the driver writes them.
- Each report is written to a staging folder inside ``--out`` and renamed into place, so a failed run
  never leaves a half report nor removes the previous good one; a failure is logged with notebook,
  cell and message, the failed executed notebook is kept in ``<out>/_failed/<scenario>/``, the batch
  goes on and the exit status is non-zero.
- ``--skip-unchanged`` skips a scenario whose inputs (scenario file, catalogs, notebooks, package
  source and version) hash to the value recorded in its ``summary.json``.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import datetime as _dt
import hashlib
import html
import io
import json
import logging
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import analysis, catalog, paths
from .errors import InputError
from .paths import SCENARIO_DIR
from .scenario import load_scenario, resolve_path, scenario_names
from .narrative import usd as _usd

PACKAGE_DIR = Path(__file__).resolve().parent
NOTEBOOK_DIR = PACKAGE_DIR.parent / "notebooks"
TEMPLATE_DIR = PACKAGE_DIR / "templates"

# The parameters every report notebook declares in its ``parameters`` cell, and the batch values.
PARAMETERS = ("scenario", "interactive")
# Cells that never reach a report: widget cells, the parameters (and Papermill's injected copy),
# Papermill's error banners, and the common "remove this cell" tags.
REMOVE_CELL_TAGS = ("widgets", "parameters", "injected-parameters", "papermill-error-cell-tag",
                    "remove-cell", "remove_cell")
# Output types that are interactive or need a script to show; a static report drops them.
DROP_MIMETYPES = ("application/vnd.jupyter.widget-view+json", "application/javascript",
                  "application/vnd.jupyter.widget-state+json")
ENGINE = "workbook-shared-kernel"


@dataclass(frozen=True)
class Section:
    """One part of the report: a notebook in ``notebooks/`` and how the report names it."""

    key: str  # anchor and summary key
    notebook: str  # file name in the notebook folder
    label: str  # the short name in the table of contents


# Report order: the decision first, then the evidence behind it.
SECTIONS: list[Section] = [
    Section("decision", "05_decision.ipynb", "Decision"),
    Section("workload", "01_workload_profile.ipynb", "Workload"),
    Section("comparison", "02_accelerator_comparison.ipynb", "Accelerator comparison"),
    Section("scaling", "03_scaling.ipynb", "Scaling"),
    Section("cost", "04_cost_scenarios.ipynb", "Cost scenarios"),
]


@dataclass(frozen=True)
class Job:
    """Everything a worker needs to render one scenario (plain, picklable values)."""

    scenario: str  # the scenario's name (output folder)
    parameter: str  # the value passed as ``scenario`` (a shipped name, or an absolute path)
    scenario_file: str
    notebook_dir: str
    sections: tuple[tuple[str, str, str], ...]  # (key, notebook file name, label) in report order
    missing: tuple[str, ...]  # labels of the sections whose notebook does not exist
    inputs_sha256: str
    title: str = ""
    timeout_s: float | None = None
    kernel_name: str = "python3"


@dataclass
class Result:
    """What a worker hands back: the files of a finished report, or the error that stopped it."""

    scenario: str
    ok: bool
    title: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # name -> content (report folder)
    error: str | None = None  # one line: notebook, cell, exception
    error_detail: dict | None = None
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)


# --- planning: everything checked before a kernel starts -------------------------------------------

def available_sections(notebook_dir: str | Path = NOTEBOOK_DIR) -> tuple[list[Section], list[Section]]:
    """The sections whose notebook exists in ``notebook_dir`` (report order), and those missing."""
    d = Path(notebook_dir)
    present = [s for s in SECTIONS if (d / s.notebook).is_file()]
    return present, [s for s in SECTIONS if s not in present]


def check_parameters(notebooks: list[Path], parameters=PARAMETERS) -> None:
    """Every parameter the runner passes must be declared in each notebook's ``parameters`` cell.

    Papermill only warns about an unknown parameter and runs the notebook with its default values,
    which would silently render the wrong scenario; here it is an InputError before any kernel starts.
    """
    import papermill as pm

    problems = []
    for nb in notebooks:
        rel = paths.rel(Path(nb))
        try:
            declared = pm.inspect_notebook(str(nb))
        except Exception as e:  # unreadable JSON, not a notebook
            problems.append(f"{rel}: cannot read the notebook ({e.__class__.__name__}: {e})")
            continue
        if not declared:
            problems.append(f"{rel}: no cell tagged 'parameters'; expected one declaring {', '.join(parameters)}")
            continue
        unknown = [p for p in parameters if p not in declared]
        if unknown:
            problems.append(f"{rel}: parameters cell: unknown parameter(s) {', '.join(unknown)} "
                            f"(declared: {', '.join(declared)}; expected {', '.join(parameters)})")
    if problems:
        raise InputError("", problems)


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _package_files() -> list[Path]:
    return sorted(p for p in PACKAGE_DIR.rglob("*")
                  if p.is_file() and p.suffix in (".py", ".j2", ".json", ".css") and "__pycache__" not in p.parts)


def inputs_sha256(scenario_file: str | Path, notebooks: list[Path], data_dir: str | Path | None = None) -> str:
    """One hash over what a report depends on: the scenario file, every catalog CSV, the section
    notebooks, and the package (version and source). Equal hash: the report would be the same."""
    h = hashlib.sha256(f"workbook {paths.VERSION}\n".encode())
    data = Path(data_dir) if data_dir else paths.DATA_DIR
    parts = ([("scenario", Path(scenario_file))] + [("catalog", p) for p in sorted(data.glob("*.csv"))]
             + [("notebook", Path(p)) for p in notebooks]
             + [("package", p) for p in _package_files()])
    for kind, p in parts:
        h.update(f"{kind} {p.name} {_sha256_file(p)}\n".encode())
    return h.hexdigest()


def _previous_inputs_sha256(out: Path, name: str) -> str | None:
    summary = out / name / "summary.json"
    if not (summary.is_file() and (out / name / "report.html").is_file()) or (out / "_failed" / name).exists():
        return None
    try:
        return json.loads(summary.read_text()).get("report", {}).get("inputs_sha256")
    except (OSError, ValueError):
        return None


def plan(scenarios: list[str], out: str | Path, notebook_dir: str | Path = NOTEBOOK_DIR,
         skip_unchanged: bool = False, timeout_s: float | None = None) -> tuple[list[Job], list[str], list[str]]:
    """Validate the batch: returns (jobs to run, problems, names skipped as unchanged).

    A scenario that does not validate is a problem (file and field named) and is left out; the
    notebooks' parameter cells are checked here too (InputError: no notebook would render right).
    """
    present, missing = available_sections(notebook_dir)
    if not present:
        raise InputError(f"{paths.rel(Path(notebook_dir))}: no report notebook found "
                         f"(expected one of {', '.join(s.notebook for s in SECTIONS)})")
    nb_paths = [Path(notebook_dir) / s.notebook for s in present]
    check_parameters(nb_paths)
    kernel_name = _kernel_name(nb_paths[0])
    out = Path(out)
    jobs, problems, skipped, seen = [], [], [], {}
    for arg in scenarios:
        try:
            s = load_scenario(arg)
        except InputError as e:
            problems.extend(e.problems)
            continue
        path = resolve_path(arg).resolve()
        if s.name in seen:
            problems.append(f"{paths.rel(path)}: name: {s.name!r} is also the name of {seen[s.name]}; "
                            "each report needs its own name")
            continue
        seen[s.name] = paths.rel(path)
        shipped = path.parent == SCENARIO_DIR.resolve() and path.stem == s.name
        digest = inputs_sha256(path, nb_paths)
        if skip_unchanged and _previous_inputs_sha256(out, s.name) == digest:
            skipped.append(s.name)
            continue
        jobs.append(Job(scenario=s.name, parameter=s.name if shipped else str(path), scenario_file=str(path),
                        notebook_dir=str(Path(notebook_dir).resolve()),
                        sections=tuple((x.key, x.notebook, x.label) for x in present),
                        missing=tuple(x.label for x in missing), inputs_sha256=digest, title=s.title,
                        timeout_s=timeout_s, kernel_name=kernel_name))
    return jobs, problems, skipped


def _kernel_name(notebook: Path) -> str:
    try:
        meta = json.loads(Path(notebook).read_text()).get("metadata", {})
        return meta.get("kernelspec", {}).get("name") or "python3"
    except (OSError, ValueError):
        return "python3"


# --- execution: one kernel per scenario, driven by Papermill's API ---------------------------------

_RESET = "get_ipython().run_line_magic('reset', '-f')\nget_ipython().execution_count = 1\n"


def _register_engine() -> None:
    """A Papermill engine that runs a notebook in an already started kernel (``km=``) through an
    already connected client (``kc=``), resetting the namespace first (Papermill's own engine starts
    a kernel per notebook, which costs a kernel start plus the package imports each time).

    Reusing the client matters too: a new client's ``wait_for_ready`` waits up to 0.2 s for its
    IOPub subscription to see a message (ZeroMQ's late-joining subscriber), measured at about 0.27 s
    of idle time per notebook; without ``kc`` a client is made per notebook and closed after it."""
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, papermill_engines

    if ENGINE in papermill_engines._engines:
        return

    class SharedKernelEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, log_output=False, stdout_file=None,
                                     stderr_file=None, start_timeout=60, execution_timeout=None,
                                     km=None, kc=None, reset_namespace=True, **kwargs):
            from jupyter_core.utils import run_sync

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
                    return client.execute()
                finally:
                    client.kc = None  # the kernel's client stays open for the next notebook
            client.on_notebook_start = reset
            try:
                return client.execute()
            finally:
                if client.kc is not None:
                    client.kc.stop_channels()

    papermill_engines.register(ENGINE, SharedKernelEngine)


def _start_kernel(kernel_name: str, cwd: str, log_file):
    """Start a kernel in ``cwd`` that imports this very ``workbook`` package (its parent folder is
    put first on PYTHONPATH), its stdout/stderr going to ``log_file`` rather than the batch log."""
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_DIR.parent)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    km = AsyncKernelManager(kernel_name=kernel_name)
    run_sync(km.start_kernel)(cwd=cwd, env=env, stdout=log_file, stderr=log_file)
    return km


# Kernels kept by this worker (process and thread): starting a kernel and importing pandas and
# altair in it costs seconds, paid once per worker rather than per scenario or notebook.
# Each entry: (kernel manager, its log file, a connected client or None).
_KERNELS: dict[tuple, list] = {}
_FINALIZER = None


def _kernel(kernel_name: str, cwd: str):
    """This worker's kernel for ``cwd`` (started when missing or dead), and whether it is new."""
    global _FINALIZER
    from jupyter_core.utils import run_sync

    key = (kernel_name, cwd, os.getpid(), threading.get_ident())
    if key in _KERNELS:
        km = _KERNELS[key][0]
        if run_sync(km.is_alive)():
            return km, False
        _discard_kernel(kernel_name, cwd)
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

    entry = _KERNELS[(kernel_name, cwd, os.getpid(), threading.get_ident())]
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
    entry = _KERNELS.pop((kernel_name, cwd, os.getpid(), threading.get_ident()), None)
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


def _stop_kernel(km) -> None:
    from jupyter_core.utils import run_sync

    try:
        run_sync(km.shutdown_kernel)(now=True)
    except Exception:  # already dead: nothing left to stop
        pass


def _source_cell_number(nb, index: int) -> int:
    """1-based number, in the source notebook, of the cell Papermill reports as ``index``: an index
    into the executed cells (with its ``injected-parameters`` cell) before it added error banners."""
    def tags(c):
        return c.get("metadata", {}).get("tags", [])

    cells = [c for c in nb.cells if "papermill-error-cell-tag" not in tags(c)]
    injected = sum(1 for c in cells[:index] if "injected-parameters" in tags(c))
    return index - injected + 1


def _first_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip():
            return line.strip()[:80]
    return ""


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
        msg = (f"{rel}: cell {cell} (`{_first_line(exc.source)}`): {exc.ename}: "
               f"{exc.evalue.splitlines()[0] if exc.evalue else ''}").rstrip()
        detail = {"notebook": rel, "cell": cell, "source": exc.source, "ename": exc.ename, "evalue": exc.evalue}
    else:
        msg = f"{rel}: {exc.__class__.__name__}: {exc}"
        detail = {"notebook": rel, "cell": None, "ename": exc.__class__.__name__, "evalue": str(exc)}
    return msg, detail, files


def execute_notebooks(job: Job, workdir: Path) -> list[tuple[str, Path, float]]:
    """Run the scenario's notebooks in report order in this worker's kernel, its namespace reset
    before each notebook (``%reset -f``: a notebook sees only its own variables, as in JupyterLab);
    returns (section key, executed notebook path, seconds). Raises ``_NotebookFailed`` naming the
    notebook; after a failure the kernel is stopped, so the next scenario gets a fresh one."""
    import papermill as pm

    _register_engine()
    logging.getLogger("papermill").setLevel(logging.WARNING)
    done = []
    km, fresh = _kernel(job.kernel_name, job.notebook_dir)
    try:
        kc = _client(job.kernel_name, job.notebook_dir)
    except Exception as e:  # the kernel died while starting
        _discard_kernel(job.kernel_name, job.notebook_dir)
        raise _NotebookFailed(job.sections[0][1], e, workdir / job.sections[0][1]) from e
    for i, (key, notebook, _label) in enumerate(job.sections):
        out_path = workdir / notebook
        t0 = time.perf_counter()
        try:
            pm.execute_notebook(
                str(Path(job.notebook_dir) / notebook), str(out_path),
                parameters={"scenario": job.parameter, "interactive": False},
                engine_name=ENGINE, kernel_name=job.kernel_name, progress_bar=False,
                request_save_on_cell_execute=False, execution_timeout=job.timeout_s,
                km=km, kc=kc, reset_namespace=not (fresh and i == 0))
        except Exception as e:
            _discard_kernel(job.kernel_name, job.notebook_dir)
            raise _NotebookFailed(notebook, e, out_path) from e
        done.append((key, out_path, time.perf_counter() - t0))
    _estimate_in_kernel(kc, job, workdir / ESTIMATE_FILE)
    return done


ESTIMATE_FILE = "estimate.json"  # written by the kernel into the worker's private folder


def _estimate_in_kernel(kc, job: Job, path: Path) -> None:
    """Compute ``summary.json``'s estimate in the scenario's kernel, which has the model modules
    imported already (the runner would import and compute it all again, about 0.5 s); the runner
    reads ``path``. A failure here only costs time: ``build_summary`` then computes it itself."""
    from jupyter_core.utils import run_sync

    code = (f"import workbook.report as _wr\n_wr.write_estimate({job.scenario_file!r}, {str(path)!r})\n"
            "del _wr\n")
    try:
        run_sync(kc.execute_interactive)(code, silent=True, store_history=False, timeout=job.timeout_s,
                                         allow_stdin=False, output_hook=lambda msg: None)
    except Exception:  # timeout, dead kernel: the runner computes the estimate
        path.unlink(missing_ok=True)


def write_estimate(scenario_file: str, path: str) -> None:
    """``run_estimate`` of a scenario file, as JSON in ``path`` (runs in the report kernel)."""
    est, err = run_estimate(load_scenario(scenario_file))
    tmp = Path(path).with_name(f".{Path(path).name}.tmp")
    tmp.write_text(json.dumps({"estimate": est, "error": err}, allow_nan=False))
    os.replace(tmp, path)


class _NotebookFailed(Exception):
    def __init__(self, notebook: str, exc: Exception, executed_path: Path):
        super().__init__(str(exc))
        self.notebook, self.exc, self.executed_path = notebook, exc, executed_path


def render_scenario(job: Job) -> Result:
    """Run one scenario's notebooks and build its report in memory (runs in a worker process, or on
    a Dask worker: it writes only to a private temporary folder and returns the files)."""
    t0 = time.perf_counter()
    res = Result(scenario=job.scenario, ok=False, title=job.title)
    with tempfile.TemporaryDirectory(prefix=f"workbook-report-{job.scenario}-") as tmp:
        try:
            executed = execute_notebooks(job, Path(tmp))
        except _NotebookFailed as f:
            res.error, res.error_detail, res.files = _failure(job, f.notebook, f.exc, f.executed_path)
            res.duration_s = time.perf_counter() - t0
            return res
        try:
            res.files, res.notes = assemble_report(job, executed, Path(tmp) / ESTIMATE_FILE)
            res.ok = True
        except Exception as e:  # a rendering bug or an offline-rule violation: this report only
            res.error = f"{job.scenario}: assembling the report: {e.__class__.__name__}: {e}"
            res.error_detail = {"notebook": None, "cell": None, "ename": e.__class__.__name__, "evalue": str(e)}
    res.duration_s = time.perf_counter() - t0
    return res


# --- from executed notebooks to one HTML page -------------------------------------------------------

def clean_notebook(nb) -> list[str]:
    """Make an executed notebook fit for a static report, in place; returns notes on what was dropped.

    Drops widget state (``metadata.widgets``), widget views, JavaScript, stderr (logged as notes,
    e.g. library warnings), code cells left without output, and the heading cell of a section whose
    only content is widgets (a "## Try it" with nothing to try). Cells with a ``REMOVE_CELL_TAGS``
    tag are removed by nbconvert's TagRemovePreprocessor in ``notebook_html``."""
    notes = []
    nb.metadata.pop("widgets", None)
    intros = _widget_intros(nb.cells)
    keep, number = [], 0  # number: the cell's number in the source notebook
    for i, cell in enumerate(nb.cells):
        if i in intros:
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        number += "injected-parameters" not in tags
        if cell.cell_type == "code":
            outputs = []
            for o in cell.get("outputs", []):
                if o.get("output_type") == "stream" and o.get("name") == "stderr":
                    if not set(tags) & set(REMOVE_CELL_TAGS):
                        notes.append(f"cell {number} wrote to stderr: {_first_line(o.get('text', ''))}")
                    continue
                data = o.get("data")
                if data is not None:
                    if "application/vnd.jupyter.widget-view+json" in data:
                        continue
                    for m in DROP_MIMETYPES:
                        data.pop(m, None)
                    if not data:
                        continue
                    if "image/svg+xml" in data:
                        o.setdefault("metadata", {}).setdefault("image/svg+xml", {})["alt"] = _chart_alt(data["image/svg+xml"])
                outputs.append(o)
            cell.outputs = outputs
            if not outputs:
                continue
        keep.append(cell)
    nb.cells = keep
    return notes


def _is_heading(cell) -> bool:
    return cell.cell_type == "markdown" and cell.source.lstrip().startswith("#")


def _widget_intros(cells) -> set[int]:
    """Indexes of markdown cells that open a section holding nothing but ``widgets`` cells."""
    out = set()
    for i, cell in enumerate(cells):
        if not _is_heading(cell):
            continue
        j = i + 1
        while j < len(cells) and "widgets" in cells[j].get("metadata", {}).get("tags", []):
            j += 1
        if j > i + 1 and (j == len(cells) or _is_heading(cells[j])):
            out.add(i)
    return out


_SVG_TITLE = re.compile(r'role-title-text[^>]*>.*?<text[^>]*>([^<]+)</text>', re.S)


def _chart_alt(svg) -> str:
    """Alternative text for a chart image: its title as Vega drew it, else 'Chart'."""
    m = _SVG_TITLE.search(svg if isinstance(svg, str) else "".join(svg))
    return f"Chart: {html.unescape(m.group(1)).strip()}" if m else "Chart"


_LOCAL = threading.local()  # one exporter per thread: from_notebook_node re-registers filters


def _exporter():
    """nbconvert's HTMLExporter with the ``report_cells`` template: cells only, no code, no prompts."""
    if getattr(_LOCAL, "exporter", None) is None:
        from nbconvert import HTMLExporter
        from nbconvert.exporters.templateexporter import TemplateExporter
        from nbconvert.filters.highlight import Highlight2HTML
        from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
        from nbconvert.preprocessors import TagRemovePreprocessor

        class CellsExporter(HTMLExporter):
            """HTMLExporter without its final BeautifulSoup pass (about 0.1 s per notebook, half the
            export time): that pass adds a placeholder alt text to images without one (``clean_notebook``
            gives every chart one, ``notebook_html`` any other image) and ``tabindex`` to ``.jp-Notebook`` input/output wrappers, which the
            ``report_cells`` template does not emit (checked: the report had no ``tabindex`` with it)."""

            def from_notebook_node(self, nb, resources=None, **kw):
                lexer = nb.metadata.get("language_info", {}).get("pygments_lexer")
                resources = self._init_resources(resources)
                self.register_filter("highlight_code", self.filters.get(
                    "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
                self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                    notebook_metadata=self._nb_metadata, parent=self, resources=resources))
                return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

        ex = CellsExporter(template_name="report_cells", extra_template_basedirs=[str(TEMPLATE_DIR)],
                          exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
        ex.register_preprocessor(TagRemovePreprocessor(remove_cell_tags=set(REMOVE_CELL_TAGS)), enabled=True)
        _LOCAL.exporter = ex
    return _LOCAL.exporter


def notebook_html(nb, name: str = "notebook") -> str:
    """The cells of an executed, cleaned notebook as an HTML fragment."""
    body, _ = _exporter().from_notebook_node(nb, resources={"metadata": {"name": name}})
    return _NUMERIC_ENTITY.sub(_entity_char, _IMG_WITHOUT_ALT.sub('<img alt="Image"', body))


_IMG_WITHOUT_ALT = re.compile(r"<img(?![^>]*\balt=)")
_NUMERIC_ENTITY = re.compile(r"&#(x[0-9a-fA-F]+|[0-9]+);")


def _entity_char(m) -> str:
    """A numeric character reference as its character (``&#183;`` -> ``·``), as the BeautifulSoup
    pass of HTMLExporter wrote them; markup characters stay escaped."""
    code = int(m.group(1)[1:], 16) if m.group(1)[0] in "xX" else int(m.group(1))
    ch = chr(code) if 0 < code < 0x110000 else ""
    return m.group(0) if not ch or ch in "<>&\"'" or not ch.isprintable() else ch


_NOTEBOOK_NUMBER = re.compile(r"^\s*\d{1,2}\s*[·.:\-–—]\s*")
_HEADING = re.compile(r'<h([1-6]) id="([^"]*)"[^>]*>(.*?)</h\1>', re.S)


def _prefix_anchors(fragment: str, prefix: str) -> tuple[str, list[dict]]:
    """Give headings section-unique ids (two notebooks may both have a 'Summary'), and list them."""
    heads = []

    def sub(m):
        level, hid, inner = m.group(1), m.group(2), m.group(3)
        new = f"{prefix}-{hid}"
        if level == "1":  # "05 · The decision": the notebook's file number means nothing in the report
            inner = _NOTEBOOK_NUMBER.sub("", inner)
        inner = inner.replace(f'href="#{hid}"', f'href="#{new}"')
        text = html.unescape(re.sub(r"<[^>]+>", "", re.sub(r'<a class="anchor-link".*?</a>', "", inner))).strip()
        heads.append({"level": int(level), "id": new, "text": text})
        return f'<h{level} id="{new}">{inner}</h{level}>'

    return _HEADING.sub(sub, fragment), heads


_EXTERNAL = re.compile(
    r"""<(?:script|link|img|iframe|source|video|audio|embed|object|image|use)\b[^>]*?"""
    r"""\b(?:src|href|data|xlink:href)\s*=\s*["']?\s*((?:https?:)?//[^"'\s>]+)"""
    r"""|@import\s+(?:url\()?["']?((?:https?:)?//[^"')\s]+)|url\(\s*["']?((?:https?:)?//[^"')\s]+)""",
    re.I)


def external_resources(page: str) -> list[str]:
    """URLs that a browser would fetch to show ``page`` (scripts, styles, images, fonts, frames).
    Plain links (``<a href>``) are not fetched and are allowed."""
    return [next(g for g in m.groups() if g) for m in _EXTERNAL.finditer(page)]


def run_estimate(s) -> tuple[dict | None, str | None]:
    """``analysis.summary_json(analysis.analyse(s))``, or the reason it failed."""
    try:
        return analysis.summary_json(analysis.analyse(s)), None
    except Exception as e:
        return None, f"{e.__class__.__name__}: {e}"


def _read_estimate(path: Path | None) -> tuple[dict | None, str | None] | None:
    try:
        data = json.loads(Path(path).read_text())
        return data["estimate"], data["error"]
    except (TypeError, OSError, ValueError, KeyError):
        return None


def build_summary(job: Job, durations: list[dict], estimate_file: Path | None = None) -> dict:
    """``summary.json``: the estimate's keys at the top level, plus ``report`` metadata. The estimate
    is read from ``estimate_file`` (``write_estimate`` in the kernel) when there is one, else computed."""
    s = load_scenario(job.scenario_file)
    est, err = _read_estimate(estimate_file) or run_estimate(s)
    meta = {
        "generated_utc": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "package_version": paths.VERSION,
        "scenario_file": paths.rel(Path(job.scenario_file)),
        "scenario_sha256": _sha256_file(Path(job.scenario_file)),
        "catalog_versions": catalog.catalog_versions(),
        "inputs_sha256": job.inputs_sha256,
        "notebooks": durations,
        "missing_sections": list(job.missing),
        "python": sys.version.split()[0],
    }
    summary = {"scenario": s.name, "title": s.title}
    if est is not None:
        summary.update(est)
    else:
        summary["estimate_error"] = err
    summary["report"] = meta
    return summary


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None




def _pick(d, *keys):
    """First present, non-null value among dotted ``keys`` of a nested dict."""
    for k in keys:
        node = d
        for part in k.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def _recommendation_text(rec: dict) -> str | None:
    """The sentence of ``decision.Recommendation.headline()`` (``as_dict()["summary"]``; rebuilt from
    the parts for a summary.json written before that key existed)."""
    if rec.get("summary"):
        return str(rec["summary"])
    if not rec.get("accelerator"):
        return "No option passes the hard constraints."
    try:
        from .cost import MODEL_LABEL
    except ImportError:
        MODEL_LABEL = {}
    pm = rec.get("pricing_model")
    return f"{rec['accelerator']} on {MODEL_LABEL.get(pm, pm)} ({rec.get('provider')}, {rec.get('offering')})"


def headline(summary: dict) -> dict:
    """The report's headline box and the index row, read from ``summary.json``: display strings
    (``recommendation``, ``cost``, ``time``, ``confidence``) and plain numbers for the CSV.

    The one place that knows where the estimate keeps its headline figures (``recommendation`` of
    ``decision.Recommendation.as_dict()``; latency from the recommended accelerator's entry in
    ``options``): adjust the key paths here when that JSON changes."""
    rec = summary.get("recommendation") if isinstance(summary.get("recommendation"), dict) else {}
    fig = rec.get("figures") or {}
    metric = rec.get("metric")
    option = next((o for o in summary.get("options") or [] if o.get("accelerator") == rec.get("accelerator")), {})
    value, low, high = (_num(fig.get(metric)), _num(fig.get(f"{metric}_low")), _num(fig.get(f"{metric}_high")))
    per_month, days, p = _num(fig.get("usd_per_month")), _num(fig.get("time_days")), _num(fig.get("p_cheapest"))
    ttft, tpot = _num(option.get("ttft_ms")), _num(option.get("tpot_ms"))
    p_ru, score = _num(fig.get("p_beats_runner_up")), _num(fig.get("score"))
    ru_score = _num((rec.get("runner_up") or {}).get("score"))
    cost = None
    if value is not None:
        unit = {"cost_usd": " per run", "usd_per_million_tokens": " per million output tokens"}.get(metric, "")
        band = f" ({_usd(low)} to {_usd(high)})" if low is not None and high is not None else ""
        cost = f"{_usd(value)}{unit}{band}" + (f"; {_usd(per_month)} per month" if per_month is not None else "")
    if days is not None:
        time_text = f"{days:,.1f} days" if days >= 1 else f"{days * 24:,.1f} hours"
    elif tpot is not None:
        time_text = f"{tpot:,.0f} ms per output token" + (f", first token {ttft:,.0f} ms" if ttft is not None else "")
    else:
        time_text = None
    return {
        "scenario": summary.get("scenario"),
        "title": summary.get("title"),
        "recommendation": _recommendation_text(rec) if rec else None,
        "cost": cost,
        "time": time_text,
        "confidence": "; ".join(x for x in (
            f"score {score:.3f} vs {ru_score:.3f} for the runner-up" if score is not None and ru_score is not None else "",
            f"beats the runner-up in {p_ru:.0%} of Monte Carlo draws" if p_ru is not None else "",
            f"cheapest in {p:.0%} of Monte Carlo draws" if p is not None else "") if x) or None,
        "estimate_error": summary.get("estimate_error"),
        "generated_utc": _pick(summary, "report.generated_utc"),
        # plain values for index.csv
        "accelerator": rec.get("accelerator"), "pricing_model": rec.get("pricing_model"),
        "provider": rec.get("provider"), "offering": rec.get("offering"), "cost_metric": metric,
        "cost_value": value, "cost_low": low, "cost_high": high, "usd_per_month": per_month,
        "time_days": days, "ttft_ms": ttft, "tpot_ms": tpot, "score": score, "runner_up_score": ru_score,
        "p_beats_runner_up": p_ru, "p_cheapest": p,
    }


def _jinja():
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
                              autoescape=jinja2.select_autoescape(["html", "j2"]), trim_blocks=True,
                              lstrip_blocks=True)


def assemble_report(job: Job, executed: list[tuple[str, Path, float]],
                    estimate_file: Path | None = None) -> tuple[dict[str, bytes], list[str]]:
    """The report folder's files: ``report.html``, ``summary.json`` and the executed notebooks."""
    import nbformat

    labels = {key: label for key, _nb, label in job.sections}
    names = {key: nb for key, nb, _label in job.sections}
    files, notes, sections, durations = {}, [], [], []
    for key, path, seconds in executed:
        files[path.name] = path.read_bytes()
        durations.append({"section": key, "notebook": path.name, "duration_s": round(seconds, 2)})
        nb = nbformat.read(path, as_version=4)
        notes += [f"{names[key]}: {n}" for n in clean_notebook(nb)]
        fragment, heads = _prefix_anchors(notebook_html(nb, Path(path).stem), key)
        first = next((h for h in heads if h["level"] == 1), None)
        sections.append({"key": key, "anchor": first["id"] if first else key, "label": labels[key],
                         "title": first["text"] if first else labels[key], "html": fragment,
                         "subheads": [h for h in heads if h["level"] == 2]})
    summary = build_summary(job, durations, estimate_file)
    head = headline(summary)
    items = [("Recommendation", head["recommendation"] or "(no recommendation)"), ("Cost", head["cost"]),
             ("Time", head["time"]), ("Confidence", head["confidence"])]
    page = _jinja().get_template("report_page.html.j2").render(
        scenario=summary["scenario"], title=summary["title"], description=load_scenario(job.scenario_file).description,
        headline_items=[(k, v) for k, v in items if v is not None], estimate_error=summary.get("estimate_error"),
        sections=sections, missing=list(job.missing), meta=summary["report"], css=(TEMPLATE_DIR / "report.css").read_text())
    ext = external_resources(page)
    if ext:
        raise ValueError(f"the report would load {len(ext)} resource(s) from a network, e.g. {ext[0]} "
                         "(charts must be static: import workbook.charts, which enables the svg renderer)")
    files["report.html"] = page.encode()
    files["summary.json"] = (json.dumps(summary, indent=2, allow_nan=False) + "\n").encode()
    return files, notes


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
    return dest / "report.html"


_LEFTOVER = re.compile(r"^\.(staging|old)-(.+)-(\d+)-[A-Za-z0-9_]+$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
        if not (m and p.is_dir()) or _alive(int(m.group(3))):
            continue
        kind, name = m.group(1), m.group(2)
        if kind == "old" and not (out / name).exists():
            os.rename(p, out / name)
            done.append(f"restored {name}/ (a killed run had moved it aside)")
        else:
            shutil.rmtree(p, ignore_errors=True)
            done.append(f"removed {p.name}/ (left by a killed run)")
    return done


def record_failure(result: Result, out: str | Path) -> Path:
    """Keep the failed executed notebook and the error in ``<out>/_failed/<scenario>/``; the
    previous good report (if any) stays untouched."""
    d = Path(out) / "_failed" / result.scenario
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for name, data in result.files.items():
        (d / name).write_bytes(data)
    (d / "error.txt").write_text(result.error + "\n")
    (d / "error.json").write_text(json.dumps({"scenario": result.scenario, "title": result.title,
                                              "error": result.error, "detail": result.error_detail}, indent=2) + "\n")
    return d


INDEX_COLUMNS = [("scenario", "Scenario"), ("title", "Title"), ("recommendation", "Recommendation"),
                 ("cost", "Cost"), ("time", "Time"), ("confidence", "Confidence"), ("status", "Status"),
                 ("generated_utc", "Generated (UTC)")]
CSV_COLUMNS = ["scenario", "title", "recommendation", "accelerator", "pricing_model", "provider", "offering",
               "cost_metric", "cost_value", "cost_low", "cost_high", "usd_per_month", "time_days", "ttft_ms",
               "tpot_ms", "score", "runner_up_score", "p_beats_runner_up", "p_cheapest", "status", "generated_utc",
               "report"]


def index_rows(out: str | Path) -> list[dict]:
    """One row per report folder in ``out`` (and per scenario whose latest run failed)."""
    out = Path(out)
    rows = {}
    for p in sorted(out.glob("*/summary.json")):
        try:
            summary = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        row = headline(summary)
        row["scenario"] = row["scenario"] or p.parent.name
        row["report"] = f"{p.parent.name}/report.html"
        row["status"] = f"estimate error: {row['estimate_error']}" if row["estimate_error"] else "ok"
        rows[p.parent.name] = row
    for p in sorted((out / "_failed").glob("*/error.json")):
        try:
            err = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        name = p.parent.name
        row = rows.setdefault(name, {"scenario": name, "title": err.get("title"), "report": None})
        when = f" (the report linked is from {row['generated_utc']})" if row.get("generated_utc") else ""
        row["status"] = f"latest run failed: {err.get('error')}{when}"
        row["failure"] = f"_failed/{name}/error.txt"
    return [rows[k] for k in sorted(rows)]


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_index(out: str | Path) -> Path:
    """``index.html`` and ``index.csv`` from every report in ``out``."""
    out = Path(out)
    rows = index_rows(out)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    _atomic_write(out / "index.csv", buf.getvalue())
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    page = _jinja().get_template("index_page.html.j2").render(
        rows=rows, columns=[{"key": k, "label": v} for k, v in INDEX_COLUMNS], updated_utc=now,
        css=(TEMPLATE_DIR / "report.css").read_text())
    _atomic_write(out / "index.html", page)
    return out / "index.html"


# --- the batch ---------------------------------------------------------------------------------------

def _default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _process_pool(workers: int) -> cf.Executor:
    import multiprocessing as mp

    # forkserver: workers fork from a clean single-threaded server that imported the heavy modules
    # once (papermill and nbconvert take seconds to import), rather than importing them each.
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["workbook.report", "papermill", "nbconvert", "jupyter_client", "workbook.estimate"])
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx)


def run_batch(jobs: list[Job], out: str | Path, workers: int = 1, executor: cf.Executor | None = None,
              progress: bool | None = None, echo=None):
    """Render ``jobs`` (in parallel when ``workers > 1`` or an ``executor`` is given), install each
    finished report as it arrives, record failures; returns the list of Results."""
    out = Path(out)
    if progress is None:
        progress = sys.stderr.isatty()
    bar = None
    if progress and jobs:
        from tqdm import tqdm

        size = shutil.get_terminal_size((80, 24))  # a pty of size 0x0 (CI, `script`) would hide the bar
        bar = tqdm(total=len(jobs), unit="report", desc="report", file=sys.stderr,
                   ncols=min(size.columns, 100) if size.columns > 0 else 80, nrows=size.lines if size.lines > 1 else 24)
    say = echo or (bar.write if bar is not None else _say)
    for line in recover(out):
        say(f"note: {line}")

    def stream():
        if executor is None and (workers <= 1 or len(jobs) <= 1):
            try:
                for job in jobs:
                    yield job, _safe_render(job)
            finally:
                shutdown_kernels()
            return
        own = executor is None
        ex = executor or _process_pool(min(workers, len(jobs)))
        try:
            futures = {ex.submit(render_scenario, job): job for job in jobs}
            for fut in cf.as_completed(futures):
                job = futures[fut]
                try:
                    yield job, fut.result()
                except Exception as e:  # the worker itself died (killed, out of memory, lost)
                    yield job, Result(scenario=job.scenario, ok=False, title=job.title,
                                      error=f"worker failed: {e.__class__.__name__}: {e}",
                                      error_detail={"ename": e.__class__.__name__, "evalue": str(e)})
        finally:
            if own:
                ex.shutdown(wait=True)

    results = []
    for job, res in stream():
        results.append(res)
        if res.ok:
            where = install(res, out)
            say(f"ok      {job.scenario} ({res.duration_s:.1f} s) -> {paths.rel(where)}")
        else:
            kept = record_failure(res, out)
            say(f"FAILED  {job.scenario} ({res.duration_s:.1f} s): {res.error}")
            say(f"        executed notebook and error kept in {paths.rel(kept)}/")
        for n in res.notes:
            say(f"        note: {job.scenario}: {n}")
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return results


def _safe_render(job: Job) -> Result:
    try:
        return render_scenario(job)
    except Exception as e:  # kernel could not start, disk full, ...
        return Result(scenario=job.scenario, ok=False, title=job.title, error=f"{e.__class__.__name__}: {e}",
                      error_detail={"ename": e.__class__.__name__, "evalue": str(e)})


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def add_arguments(parser) -> None:
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                        help="scenario names (data/scenarios/<name>.yaml) or YAML paths; default: every shipped scenario")
    parser.add_argument("--out", default="reports", help="output folder (default: reports)")
    parser.add_argument("--jobs", "-j", type=_positive_int, default=None,
                        help="scenarios rendered in parallel (default: the number of CPUs)")
    parser.add_argument("--skip-unchanged", action="store_true",
                        help="skip scenarios whose inputs (scenario, catalogs, notebooks, package) are unchanged "
                             "since their last good report")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="hand scenarios to a Dask distributed scheduler (e.g. tcp://10.0.0.5:8786) instead "
                             "of a local process pool; workers need this package and its notebooks installed")
    parser.add_argument("--timeout", type=float, default=600, metavar="SECONDS",
                        help="limit per notebook cell (default: 600)")
    # The notebook folder (tests point it at fixtures); not part of the documented interface.
    parser.add_argument("--notebooks", default=str(NOTEBOOK_DIR), help=argparse.SUPPRESS)


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


def run(args) -> int:
    t0 = time.perf_counter()
    out = Path(args.out)
    names = args.scenarios or scenario_names()
    if not names:
        raise InputError(f"{paths.rel(SCENARIO_DIR)}: no scenario files found")
    jobs, problems, skipped = plan(names, out, args.notebooks, args.skip_unchanged, args.timeout)
    say = _say
    for line in problems:
        say(f"invalid {line}")
    present, missing = available_sections(args.notebooks)
    for s in missing:
        say(f"note: section '{s.label}' skipped: {paths.rel(Path(args.notebooks) / s.notebook)} not found")
    for name in skipped:
        say(f"skip    {name} (inputs unchanged since its last report)")
    workers = max(1, args.jobs or _default_jobs())
    executor, client = None, None
    if args.scheduler and jobs:
        client = _dask_client(args.scheduler)
        executor = client.get_executor(pure=False)
        where = f"Dask scheduler {args.scheduler}"
    else:
        where = f"{min(workers, max(len(jobs), 1))} job(s)"
    if jobs:
        say(f"report: {len(jobs)} scenario(s) x {len(present)} notebook(s) on {where} -> {paths.rel(out)}/")
    try:
        results = run_batch(jobs, out, workers=workers, executor=executor)
    finally:
        if client is not None:
            client.run(shutdown_kernels)  # the workers outlive the batch; their kernels need not
            client.close()
    out.mkdir(parents=True, exist_ok=True)
    index = write_index(out)
    failed = [r for r in results if not r.ok]
    invalid = len({p.split(": ")[0] for p in problems})  # problems are "file: field: message" lines
    say(f"report: {len(results) - len(failed)} written, {len(failed)} failed, {len(skipped)} unchanged, "
        f"{invalid} invalid, in {time.perf_counter() - t0:.1f} s; index: {paths.rel(index)}")
    if problems:
        return 2
    return 1 if failed else 0
