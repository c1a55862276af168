"""The ``report`` command's front (``python -m workbook report``; ``cli`` names this module): its
arguments, and ``run``, which marks ``anywidget`` absent before ``batch`` (and Altair) load.

Why: Altair imports anywidget, and ipywidgets with it, for ``alt.JupyterChart``, the live chart of the
app (about 0.5 s of CPU, ``-X importtime``). A report process runs its notebooks in-process and never
shows a live widget (``widgets`` cells are removed; a report draws static SVG), so, as ``kernellaunch``
does in a report kernel, ``sys.modules["anywidget"] = None`` and Altair defines its stand-in
``JupyterChart``; the pages are the same. Likewise charset_normalizer and soupsieve, which requests
(through papermill) and BeautifulSoup (through nbconvert) import for work a report never asks of them
(``UNUSED_OPTIONAL``: 0.2 s of CPU). Modules that papermill, Altair and nbconvert's dependencies import
for work a report never asks of them (requests, click, Altair's example datasets...) are loaded lazily
(``LAZY``: their bodies run only if something touches them; 0.08 s), and papermill's two scans for
plugins read the installed distributions' entry-point files without parsing them when none names a
papermill plugin (``entry_points_group``: 0.03 s). ``run`` also sets ``WORKBOOK_REPORT_BATCH=1``, so that the
pool's forkserver (which imports this module first, ``PRELOAD``) and its workers start the same
way. Importing this module elsewhere (the tests, ``--help``) changes nothing: it imports only
``jobs`` and ``paths``.

The pool's forkserver is started here too, before ``batch`` is imported, when the run will use a
pool (``start_pool_early``): its imports (``PRELOAD``, about 2 s of CPU) then run beside this
process's own instead of after them.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys

from ..paths import NOTEBOOK_DIR
from .jobs import BATCH_ENV, CELL_TIMEOUT_S, ENGINE_ENV, ENGINES, default_engine, hold_collector, release_collector

UNUSED = ("anywidget",)
# Optional packages that libraries of the report path import without needing them there, each with
# the package that imports it and the warning that package gives when it is absent. papermill imports
# requests (for notebooks at http:// addresses; a report reads local files), and requests its
# character-set detector, charset_normalizer (0.1 s of CPU: a compiled module and its tables), used
# only to guess the encoding of a response that declares none. nbconvert imports BeautifulSoup, and
# BeautifulSoup soupsieve (0.08 s: about 40 regular expressions compiled) for CSS selectors, which
# neither nbconvert's image embedding nor the report uses. Marked absent in a report process only.
#
# Likewise, without a warning (their importers try them and go on): nbconvert's ``serve`` post-processor
# (``--post serve``: Tornado's web server and HTTP client, webbrowser), and the packages behind
# jsonschema's optional format checkers for formats no schema of a report declares. Altair validates
# charts against the Vega-Lite schema (formats ``uri``, ``uri-reference``, ``color-hex``: their checker,
# rfc3986_validator, stays) and nbformat against its own (no format); ``duration`` (isoduration, which
# imports arrow), ``iri`` (rfc3987_syntax, lark), ``date-time``, ``color``, ``hostname``,
# ``json-pointer`` and ``uri-template`` are checked for no value there, so the same charts pass.
# About 0.05 s of CPU each for the two groups (issue 30, branch s10-machinery), in the runner of one
# report and in the pool's forkserver, on the batch's critical path.
UNUSED_OPTIONAL = {"charset_normalizer": ("requests", "Unable to find acceptable character detection dependency"),
                   "chardet": ("requests", "Unable to find acceptable character detection dependency"),
                   "soupsieve": ("bs4", "The soupsieve package is not installed"),
                   "nbconvert.postprocessors.serve": ("nbconvert", None),
                   **{name: ("jsonschema", None) for name in (
                       "isoduration", "rfc3987_syntax", "rfc3339_validator", "webcolors", "fqdn", "jsonpointer",
                       "uri_template")}}

# Modules that libraries of the report path import with a plain ``import x`` at their top and use only in
# functions a report never calls (each: its importer, what it is for, the CPU its body takes once the rest of
# a report's imports are done, 6 fresh interpreters, medians, issue 30, branch s13-imports). A report
# process loads them with the standard library's ``importlib.util.LazyLoader`` (``LazyImports``): the
# module object exists at once, its body runs at the first access to one of its attributes, so whatever
# uses one still works, and only then pays for it. Not for modules imported as ``from x import y``, nor for
# one imported again (``import x`` of a module already in ``sys.modules`` reads its ``__spec__``): either
# runs the body at once (no saving, nothing broken): bleach (nbconvert imports names from it), the
# jupyter_client it needs at class definition, bs4 (``nbconvert.exporters.html``), ssl (asyncio) stay eager.
LAZY = {
    "requests": "papermill.iorw: notebooks at http(s):// addresses; with urllib3, certifi, http.cookiejar, 0.040 s",
    "click": "papermill.inspection: papermill's command line (--help-notebook); 0.009 s",
    "altair.datasets": "altair: the example datasets (alt.datasets), with packaging's requirement parser; 0.019 s",
    "platformdirs": "jupyter_core.paths: Jupyter's folders (the kernel engine's kernel-spec lookup; then it loads); 0.003 s",
    "colorama": "tornado.log: coloured logs on a Windows console; 0.002 s",
    "tinycss2": "bleach.css_sanitizer: the CSS of sanitised HTML (nbconvert's SanitizeHTML, clean_html); 0.002 s",
    "webencodings": "bleach's html5lib and tinycss2: the encoding of HTML and CSS they parse; 0.002 s",
}


class LazyImports:
    """A meta path finder (``sys.meta_path``, first) for the modules ``names``: it finds one as Python's
    path finder does and, for a module of Python source, hands back its spec with the loader wrapped in
    ``importlib.util.LazyLoader`` (the recipe of the ``importlib`` documentation, "Implementing lazy
    imports"); any other module it leaves to the finders after it. Python 3.11's lazy module is not
    thread-safe at its first access (3.12's is): a report touches none of ``LAZY`` (tested), and its other
    thread, vl-convert's warm-up (``kernelside.warm_converter``), imports none."""

    def __init__(self, names) -> None:
        self.names = frozenset(names)

    def find_spec(self, name, path=None, target=None):
        if name not in self.names:
            return None
        from importlib import machinery, util

        spec = machinery.PathFinder.find_spec(name, path)
        if spec is None or not isinstance(spec.loader, machinery.SourceFileLoader):
            return None
        spec.loader = util.LazyLoader(spec.loader)
        return spec


def entry_points_group(group: str, path=None, *, scan) -> list:
    """``entrypoints.get_group_all(group, path)`` (``scan``), without parsing every installed distribution's
    ``entry_points.txt`` when none of them names the group.

    papermill scans for plugins at its import, twice (``papermill.io`` in ``papermill.iorw``,
    ``papermill.engine`` in ``papermill.engines``), and the scan parses each distribution's file with
    ``configparser``: 0.019 s of CPU each with 155 distributions and no papermill plugin. A section
    ``[group]`` can come only from a line holding the text ``[group]`` (``configparser``'s section
    header), so this reads the files of every ``*.dist-info`` and ``*.egg-info`` folder of the path
    (more than the scan globs, never fewer) and returns ``[]`` when none holds that text: 0.0035 s. When
    one does (a plugin is installed), or the path holds an egg or a zip file, or a folder cannot be
    read, it runs the scan itself, so plugins are found as before."""
    import zipfile

    header = f"[{group}]".encode()
    path = None if path is None else list(path)   # read twice when the scan runs
    for folder in sys.path if path is None else path:
        if folder.rstrip("/\\").endswith(".egg") or zipfile.is_zipfile(folder):
            return scan(group, path)
        try:
            entries = os.scandir(folder or ".")
        except (FileNotFoundError, NotADirectoryError):   # the scan's glob finds nothing there either
            continue
        except OSError:
            return scan(group, path)
        with entries:
            for entry in entries:
                if entry.name.lower().endswith((".dist-info", ".egg-info")):
                    try:
                        with open(os.path.join(entry.path, "entry_points.txt"), "rb") as f:
                            if header in f.read():
                                return scan(group, path)
                    except (FileNotFoundError, NotADirectoryError):
                        pass
                    except OSError:
                        return scan(group, path)
    return []


# pydantic's own setting: no plugins. Without it, building the first model (the scenario's, on import)
# scans every installed distribution's entry points for the ``pydantic`` group (0.016 s of CPU with 155
# distributions and no plugin); a report process uses none. A value the user set is kept (``""``: scan).
PYDANTIC_PLUGINS_ENV = ("PYDANTIC_DISABLE_PLUGINS", "__all__")


# imported once by the forkserver, so that every worker starts with them: this module first (no
# anywidget in a report process), the runner's modules with the in-process engine (IPython's shell,
# Altair), and what the report notebooks import. Not vl-convert: its engine starts threads, which a
# fork would not carry over.
PRELOAD = ["workbook.report.command", "workbook.report.batch", "papermill", "nbconvert", "IPython.core.interactiveshell",
           "workbook.analysis", "workbook.report.kernelside", "workbook.views.charts", "workbook.views.buyer",
           "workbook.model.tables", "workbook.report.forkready"]


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# Linux's sockaddr_un.sun_path holds 108 bytes with the final NUL (unix(7)); macOS's 104.
SUN_PATH_MAX_BYTES = 103


def socket_dir_fits(folder: str) -> bool:
    """Whether the forkserver's listening socket fits in ``folder`` (multiprocessing names it
    ``<folder>/listener-<8 characters>``, ``connection.arbitrary_address``): a longer path fails with
    "OSError: AF_UNIX path too long" (a deep ``TMPDIR``, as pytest's per-test folders)."""
    return len(os.fsencode(folder)) + len("/listener-") + 8 <= SUN_PATH_MAX_BYTES


def pool_context(start: bool = False):
    """The process pool's start method. forkserver: workers fork from a clean single-threaded server
    that imported the heavy modules once (``PRELOAD``), rather than importing them each; spawn where
    there is no forkserver or its socket's path would be too long (``socket_dir_fits``: the workers
    then import the modules each). ``start``: start that server now, so that its imports run while
    this process imports and plans."""
    import multiprocessing as mp
    from multiprocessing import util

    method = ("forkserver" if "forkserver" in mp.get_all_start_methods() and socket_dir_fits(util.get_temp_dir())
              else "spawn")
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(PRELOAD)
        if start:
            from multiprocessing import forkserver

            forkserver.ensure_running()
    return ctx


def start_pool_early(args) -> bool:
    """Start the pool's forkserver now when this run will render in a local pool (more than one
    worker, not one named scenario, no Dask scheduler; ``--skip-unchanged`` may leave nothing to
    render, so it waits); whether it did."""
    workers = args.jobs or default_jobs()
    if workers > 1 and len(args.scenarios) != 1 and not (args.scheduler or args.skip_unchanged):
        pool_context(start=True)
        return True
    return False


def batch_process() -> list[str]:
    """Mark the packages a report process never uses absent (``UNUSED`` before Altair is imported,
    ``UNUSED_OPTIONAL`` before the package that would import them), and silence the warning their
    importer gives then; load ``LAZY`` lazily (``LazyImports``, first on ``sys.meta_path``); let
    papermill's plugin scans skip the files that name no plugin (``entry_points_group`` as
    ``entrypoints.get_group_all``, before papermill is imported); turn pydantic's plugins off unless the
    user chose (``PYDANTIC_PLUGINS_ENV``); the names marked absent here."""
    import warnings

    marked = []
    os.environ.setdefault(*PYDANTIC_PLUGINS_ENV)
    if "altair" not in sys.modules:
        for name in UNUSED:
            if name not in sys.modules:
                sys.modules[name] = None
                marked.append(name)
    for name, (importer, warning) in UNUSED_OPTIONAL.items():
        if importer not in sys.modules and name not in sys.modules:
            sys.modules[name] = None
            marked.append(name)
            if warning:
                warnings.filterwarnings("ignore", message=warning)
    if not any(isinstance(finder, LazyImports) for finder in sys.meta_path):
        sys.meta_path.insert(0, LazyImports(LAZY))
    if "papermill" not in sys.modules:
        try:
            import entrypoints
        except ImportError:   # no papermill either: nothing scans
            pass
        else:
            if getattr(entrypoints.get_group_all, "func", None) is not entry_points_group:
                entrypoints.get_group_all = functools.partial(entry_points_group, scan=entrypoints.get_group_all)
    return marked


def undo_batch_process(marked: list[str]) -> None:
    """What ``batch_process`` did that a process going on after a report run (a test) would notice, undone:
    the optional packages ``marked`` absent may be imported, modules are found eagerly, papermill's scan
    is its own again (the lazy modules already made stay: they load when touched)."""
    for name in marked:
        if name in UNUSED_OPTIONAL and sys.modules.get(name, 0) is None:
            del sys.modules[name]
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, LazyImports)]
    entrypoints = sys.modules.get("entrypoints")
    if entrypoints is not None and getattr(entrypoints.get_group_all, "func", None) is entry_points_group:
        entrypoints.get_group_all = entrypoints.get_group_all.keywords["scan"]


def freeze_at_exit() -> None:
    """At this process's exit, after its ``atexit`` handlers, move every object to the collector's
    permanent generation (``gc.freeze``), so that the interpreter's final collections skip the heap.

    For the pool's forkserver: when the runner exits, the forkserver leaves its loop (``SystemExit``)
    and its interpreter tears down the modules it preloaded (pandas, IPython, Altair, nbconvert, the
    package); most of that is the final full collections walking every object (0.3-0.4 s of CPU,
    measured: import ``PRELOAD`` and exit 1.79 s, the same with ``gc.freeze()`` last 1.44 s, with
    ``os._exit`` 1.37 s). It held the runner's stdout and stderr until then, so a batch read through
    a pipe (the benchmark, ``| tee``) ended only after it. Everything else still runs: ``atexit``
    handlers, the closing of its listener socket, the modules' teardown. The pool's workers, forked
    from it, never run ``atexit`` handlers (they leave through ``os._exit``)."""
    import atexit
    import gc

    atexit.register(gc.freeze)


def preload_without_collections() -> None:
    """The garbage collector off while the pool's forkserver imports ``PRELOAD`` (its full collections
    walk every object the imports made so far, again and again: 0.06-0.07 s of its ~1 s of CPU, on the
    batch's critical path); ``report.forkready``, imported last, freezes what the imports made, and
    each worker turns the collector on (``execute.worker_init``). The pattern Python's documentation of
    ``gc.freeze`` gives for a process that forks without exec: ``gc.disable()`` early in the parent,
    ``gc.freeze()`` right before ``fork()``, ``gc.enable()`` early in the children."""
    import gc

    gc.disable()


if os.environ.get(BATCH_ENV) == "1":   # the pool's forkserver, started by a report run
    preload_without_collections()
    batch_process()
    freeze_at_exit()


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def add_arguments(parser) -> None:
    """The ``report`` command's arguments."""
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
    parser.add_argument("--timeout", type=float, default=CELL_TIMEOUT_S, metavar="SECONDS",
                        help="limit per notebook cell (default: 600)")
    parser.add_argument("--engine", choices=ENGINES, default=None,
                        help=f"how notebooks run: in-process (an IPython shell in each worker) or kernel (a Jupyter "
                             f"kernel per worker); default: ${ENGINE_ENV}, else in-process")
    # The notebook folder (tests point it at fixtures); not part of the documented interface.
    parser.add_argument("--notebooks", default=str(NOTEBOOK_DIR), help=argparse.SUPPRESS)


def renders_here(args) -> bool:
    """Whether this run renders its reports in this process with the in-process engine (one worker or one
    scenario named, no Dask scheduler: ``batch._results``; the engine usable here: ``execute``), so that
    it makes the batch shell."""
    workers = args.jobs or default_jobs()
    engine = getattr(args, "engine", None) or default_engine()
    return (engine == "in-process" and not args.scheduler and (workers <= 1 or len(args.scenarios) == 1)
            and importlib.import_module("workbook.report.inprocess").usable())


def run(args) -> int:
    """``batch.run`` in a report process (``batch_process``); ``WORKBOOK_REPORT_BATCH`` is set while it
    runs (the pool's forkserver starts then) and put back after, as is pydantic's plugin setting."""
    before = os.environ.get(BATCH_ENV)
    plugins = os.environ.get(PYDANTIC_PLUGINS_ENV[0])
    os.environ[BATCH_ENV] = "1"
    marked = batch_process()
    if not start_pool_early(args) and renders_here(args):
        hold_collector()   # until the batch shell is made (``inprocess._freeze_imports``), or the run ends
    try:
        return importlib.import_module("workbook.report.batch").run(args)
    finally:
        release_collector()
        for name, value in ((BATCH_ENV, before), (PYDANTIC_PLUGINS_ENV[0], plugins)):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        undo_batch_process(marked)   # for a process that goes on (a test)
