"""The in-process engine (``report.inprocess``): a notebook run in this process's IPython shell comes out
as a Jupyter kernel (Papermill's own nbclient engine) writes it, a failing cell is the same
``PapermillExecutionError``, a cell past its timeout is stopped even when it catches ``Exception``,
``input()`` is refused, and the process is left as it was (working directory, ``sys.path``,
``__main__``, no IPython singleton)."""
from __future__ import annotations

import os
import sys

import nbformat
import papermill as pm
import pytest
from IPython.core.interactiveshell import InteractiveShell
from nbclient.exceptions import CellTimeoutError
from papermill.exceptions import PapermillExecutionError

from workbook.analysis import SHARE_ENV
from workbook.report import inprocess

CELLS = [
    "import sys\nprint('out'); print('err', file=sys.stderr); print('more')\n1 + 1",
    "from IPython.display import display, Markdown, HTML\ndisplay(Markdown('**x**'))\n"
    "display(HTML('<b>y</b>'), metadata={'k': (1, 2)})\n'last'",
    "import pandas as pd\npd.DataFrame({f'c{i}': range(3) for i in range(30)})",
    "from IPython.display import display, update_display\nh = display('one', display_id=True)\n"
    "update_display('two', display_id=h.display_id)",
    "from IPython.display import clear_output\nprint('gone')\nclear_output()\nprint('kept')",
    "x = {1: (2, 3)}\nx;",
    "x",
    "",
    "import os\nos.getcwd() == NOTEBOOK_DIR, os.environ.get('WORKBOOK_SHARE_ANALYSIS')",
]


def _notebook(cells, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_code_cell(f"NOTEBOOK_DIR = {str(tmp_path)!r}", metadata={"tags": ["parameters"]})]
    nb.cells += [nbformat.v4.new_markdown_cell("# t")] + [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def _in_process(nb, out, **kw):
    inprocess.register()
    with inprocess.session(out.parent, SHARE_ENV):
        return pm.execute_notebook(nb, str(out), engine_name=inprocess.ENGINE, kernel_name="python3",
                                   progress_bar=False, request_save_on_cell_execute=False, **kw)


def _comparable(nb):
    """Cells' sources, execution counts and outputs (tracebacks aside: colours differ by shell)."""
    rows = []
    for c in nb.cells:
        outs = [{k: v for k, v in o.items() if k != "traceback"} for o in c.get("outputs", [])]
        rows.append((c.cell_type, c.source, c.get("execution_count"), outs))
    return rows


@pytest.mark.slow
def test_outputs_are_those_a_kernel_gives(tmp_path, monkeypatch):
    # a new batch shell, as in a new worker: one that ran a notebook importing workbook earlier in this
    # process (another test) shows DataFrames with the workbook's table formatter, which a kernel
    # running these cells (no ``import workbook``) does not have
    monkeypatch.setattr(inprocess, "_SHELL", None)
    mine = _in_process(_notebook(CELLS, tmp_path), tmp_path / "mine.ipynb")
    kernel = pm.execute_notebook(_notebook(CELLS, tmp_path), str(tmp_path / "kernel.ipynb"), kernel_name="python3",
                                 progress_bar=False, cwd=str(tmp_path))
    assert _comparable(mine)[:-1] == _comparable(kernel)[:-1]
    assert mine.cells[-1].outputs[0].data["text/plain"] == "(True, '1')"   # the kernel engine sets neither
    assert mine.metadata.language_info == kernel.metadata.language_info
    assert mine.cells[2].outputs[0].text == "out\nmore\n" and mine.cells[5].outputs[0].data["text/plain"] == "'two'"
    # written files: the same keys per cell, papermill's and nbclient's metadata included
    a, b = (nbformat.read(tmp_path / f, as_version=4) for f in ("mine.ipynb", "kernel.ipynb"))
    assert [sorted(c.metadata) for c in a.cells] == [sorted(c.metadata) for c in b.cells]
    assert [sorted(c.metadata.get("execution", {})) for c in a.cells] == \
           [sorted(c.metadata.get("execution", {})) for c in b.cells]


@pytest.mark.slow
def test_an_error_stops_the_notebook_as_with_a_kernel(tmp_path):
    cells = ["a = 1", "raise ValueError('boom\\nsecond line')", "a = 2"]
    errors = []
    for run in (lambda nb, out: _in_process(nb, out),
                lambda nb, out: pm.execute_notebook(nb, str(out), kernel_name="python3", progress_bar=False)):
        out = tmp_path / f"{len(errors)}.ipynb"
        with pytest.raises(PapermillExecutionError) as e:
            run(_notebook(cells, tmp_path), out)
        kept = nbformat.read(out, as_version=4)
        errors.append((e.value.cell_index, e.value.exec_count, e.value.ename, e.value.evalue,
                       [(c.source, c.get("execution_count"), c.metadata.get("papermill", {}).get("status"))
                        for c in kept.cells]))
    assert errors[0] == errors[1]
    assert errors[0][2:4] == ("ValueError", "boom\nsecond line")


def test_a_cell_past_its_timeout_is_stopped_even_when_it_catches_exception(tmp_path):
    cells = ["import time\ntry:\n    time.sleep(30)\nexcept Exception:\n    pass", "reached = True"]
    out = tmp_path / "t.ipynb"
    with pytest.raises(CellTimeoutError, match="after 1 seconds"):
        _in_process(_notebook(cells, tmp_path), out, execution_timeout=1)
    kept = nbformat.read(out, as_version=4)
    statuses = [c.metadata.papermill.status for c in kept.cells]
    assert statuses == ["completed", "completed", "completed", "pending"]
    assert kept.cells[2].outputs[-1].ename == "Timeout"   # where the cell was when stopped
    assert inprocess.shell().user_ns.get("reached") is None


def test_a_cell_within_its_timeout_leaves_no_alarm_behind(tmp_path):
    import signal

    before = signal.getsignal(signal.SIGALRM)
    nb = _in_process(_notebook(["import time\ntime.sleep(0.05)\n7"], tmp_path), tmp_path / "ok.ipynb",
                     execution_timeout=5)
    assert nb.cells[2].outputs[0].data["text/plain"] == "7"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) is before


def test_input_is_refused_and_the_process_is_left_as_it_was(tmp_path):
    cwd, path, main, stdin = os.getcwd(), list(sys.path), sys.modules["__main__"], sys.stdin
    with pytest.raises(PapermillExecutionError, match="StdinNotImplementedError"):
        _in_process(_notebook(["input('name? ')"], tmp_path), tmp_path / "in.ipynb")
    assert (os.getcwd(), sys.path, sys.modules["__main__"], sys.stdin) == (cwd, path, main, stdin)
    assert not InteractiveShell.initialized()      # the batch shell is the singleton only while cells run
    assert os.environ.get(SHARE_ENV) is None


def test_the_namespace_is_reset_between_notebooks(tmp_path):
    _in_process(_notebook(["leftover = 1"], tmp_path), tmp_path / "a.ipynb")
    nb = _in_process(_notebook(["'leftover' in dir()"], tmp_path), tmp_path / "b.ipynb")
    assert nb.cells[2].outputs[0].data["text/plain"] == "False" and nb.cells[2].execution_count == 2


def test_wire_round_trips_values_as_a_kernel_message_does():
    import datetime as dt

    content = {"data": {"text/plain": "x", "application/json": {1: (1, 2), "t": dt.date(2026, 1, 2), "b": b"\x00"}}}
    assert inprocess._wire(content) == {"data": {"text/plain": "x",
                                                 "application/json": {"1": [1, 2], "t": "2026-01-02", "b": "AA=="}}}
    assert inprocess._wire({"v": float("nan")}) == {"v": "nan"}


def test_wire_copies_json_ready_content_as_the_round_trip_gives_it():
    """``_wire``'s shortcut (``_plain_copy``) against the JSON round trip it stands for, on random content
    mixing JSON's own types with what is not (tuples, int keys, NaN, subclasses, bytes, deep nesting)."""
    import enum
    import json
    import math
    import random

    class Level(enum.IntEnum):
        LOW = 1

    class Text(str):
        pass

    def round_trip(content):
        return json.loads(json.dumps(content, default=inprocess._json_default, ensure_ascii=False, allow_nan=False))

    def same(a, b):   # equal, of the same types, and no container shared with the input
        if type(a) is not type(b):
            return False
        if isinstance(a, dict):
            return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))

    rng = random.Random(30)
    plain = [lambda: rng.choice(["", "x", "<svg>\n</svg>", "é\u2028\ud800", '"\\']), lambda: rng.randint(-2**70, 2**70),
             lambda: rng.choice([True, False, None]), lambda: rng.choice([0.0, -0.0, 1e300, 5e-324, rng.random()])]
    other = [lambda: (1, 2), lambda: float("nan"), lambda: float("inf"), lambda: Level.LOW, lambda: Text("t"), lambda: b"\x00"]

    def value(depth, mixed):
        kind = rng.random()
        if depth < 4 and kind < 0.3:
            keys = [rng.choice(["a", "b", "text/plain", "é"]) if not mixed or rng.random() < 0.9 else rng.randint(0, 3)
                    for _ in range(rng.randint(0, 4))]
            return {k: value(depth + 1, mixed) for k in keys}
        if depth < 4 and kind < 0.5:
            return [value(depth + 1, mixed) for _ in range(rng.randint(0, 4))]
        if mixed and rng.random() < 0.05:
            return rng.choice(other)()
        return rng.choice(plain)()

    shortcuts = 0
    for i in range(3000):
        content = {"data": value(0, i % 2 == 1), "metadata": value(1, i % 3 == 0)}
        copied = inprocess._plain_copy(content)
        if copied is not inprocess._NOT_PLAIN:
            shortcuts += 1
            assert same(copied, round_trip(content)) and copied is not content
            assert same(inprocess._wire(content), copied)
        else:
            try:
                expected = round_trip(content)
            except ValueError:   # NaN: the old json_clean path, as before
                continue
            assert same(inprocess._wire(content), expected)
    assert shortcuts > 1000
    deep: list = []
    for _ in range(150):
        deep = [deep]
    assert inprocess._plain_copy(deep) is inprocess._NOT_PLAIN and inprocess._wire({"v": deep}) == {"v": deep}


def test_a_cell_ends_with_the_metadata_papermill_gives_it(tmp_path, monkeypatch):
    """``_cell_complete`` (the duration from ``datetime.fromisoformat``) against Papermill's
    ``cell_complete`` (``dateutil``) at the same end time: equal ``metadata.papermill``, a failed cell
    included; a cell that never started, and a manager that saves on each cell, go to Papermill's own."""
    import copy
    import datetime as dt

    from papermill.engines import NotebookExecutionManager

    nb = _notebook(["1"], tmp_path)
    nb.metadata["papermill"] = {}   # as Papermill's load_notebook_node leaves it
    ends = [dt.datetime(2026, 12, 3, 9, 15, 16, 15667, tzinfo=dt.timezone.utc),
            dt.datetime(2026, 12, 3, 9, 15, 16, 0, tzinfo=dt.timezone.utc),
            dt.datetime(2027, 1, 1, 0, 0, 0, 999999, tzinfo=dt.timezone.utc)]
    for end in ends:
        for failed in (False, True):
            managers = []
            for _ in range(2):
                man = NotebookExecutionManager(copy.deepcopy(nb), progress_bar=False)
                man.notebook_start()
                managers.append(man)
            for man in managers:
                man.cell_start(man.nb.cells[2], 2)
                man.nb.cells[2].metadata.papermill["start_time"] = managers[0].nb.cells[2].metadata.papermill["start_time"]
                if failed:
                    man.cell_exception(man.nb.cells[2], cell_index=2)
                monkeypatch.setattr(man, "now", lambda end=end: end)
            managers[0].cell_complete(managers[0].nb.cells[2], cell_index=2)
            inprocess._cell_complete(managers[1], managers[1].nb.cells[2], 2)
            assert managers[1].nb.cells[2].metadata.papermill == managers[0].nb.cells[2].metadata.papermill
            assert managers[1].nb.cells[2].metadata.papermill["duration"] is not None
    man = NotebookExecutionManager(copy.deepcopy(nb), progress_bar=False)
    man.notebook_start()
    inprocess._cell_complete(man, man.nb.cells[1], 1)     # never started: no duration, as Papermill
    assert man.nb.cells[1].metadata.papermill["duration"] is None
    assert man.nb.cells[1].metadata.papermill["status"] == "completed"
    saved = []
    man = NotebookExecutionManager(copy.deepcopy(nb), output_path=str(tmp_path / "out.ipynb"), progress_bar=False)
    man.notebook_start()
    man.cell_start(man.nb.cells[2], 2)
    monkeypatch.setattr(man, "save", lambda **kw: saved.append(man.nb.cells[2].metadata.papermill["start_time"]))
    inprocess._cell_complete(man, man.nb.cells[2], 2)
    assert saved and saved[0] is not None and man.nb.cells[2].metadata.papermill["duration"] is not None


def test_language_info_is_ipykernels():
    from ipykernel.ipkernel import IPythonKernel

    assert inprocess.LANGUAGE_INFO == IPythonKernel.language_info


@pytest.mark.parametrize("batch_env,absent", [("1", True), (None, False)])
def test_only_a_report_process_goes_without_anywidget(batch_env, absent):
    """``report.command`` marks anywidget absent in a report process (the runner sets
    WORKBOOK_REPORT_BATCH, which the pool's forkserver inherits); imported elsewhere it changes nothing."""
    import subprocess

    from workbook import paths

    env = {k: v for k, v in os.environ.items() if k != "WORKBOOK_REPORT_BATCH"}
    env["PYTHONPATH"] = str(paths.ROOT)
    if batch_env:
        env["WORKBOOK_REPORT_BATCH"] = batch_env
    code = ("import sys, workbook.report.command, altair\n"
            "print(sys.modules.get('anywidget', 0) is None, 'ipywidgets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(absent), str(not absent)]


@pytest.mark.parametrize("batch_env,absent", [("1", True), (None, False)])
def test_a_report_process_goes_without_the_optional_packages_it_never_uses_and_says_nothing(batch_env, absent):
    """``report.command`` marks charset_normalizer (requests' encoding guess) and soupsieve (BeautifulSoup's
    CSS selectors) absent in a report process, silencing the warnings requests and bs4 give then;
    papermill and nbconvert still import and export; elsewhere nothing changes."""
    import subprocess

    from workbook import paths

    env = {k: v for k, v in os.environ.items() if k != "WORKBOOK_REPORT_BATCH"}
    env["PYTHONPATH"] = str(paths.ROOT)
    if batch_env:
        env["WORKBOOK_REPORT_BATCH"] = batch_env
    code = ("import sys, workbook.report.command, papermill, nbconvert, requests, bs4\n"
            "from workbook.report.assemble import notebook_html\n"
            "import nbformat\n"
            "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell('# Hi ![x](a.png)')])\n"
            "assert 'Hi' in notebook_html(nb)\n"
            "print(*[sys.modules.get(m, 0) is None for m in ('charset_normalizer', 'soupsieve')])")
    done = subprocess.run([sys.executable, "-W", "default", "-c", code], env=env, capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == [str(absent)] * 2
    assert done.stderr == ""


def _report_process(code: str, batch_env: str | None, *args: str, pythonpath: str = "") -> str:
    """``python -c code *args`` with this checkout first on its path (then ``pythonpath``), as a report
    process (``WORKBOOK_REPORT_BATCH`` = ``batch_env``) or not (None); its stdout (status 0, nothing on stderr
    but a report run's own lines)."""
    import subprocess

    from workbook import paths

    env = {k: v for k, v in os.environ.items() if k != "WORKBOOK_REPORT_BATCH"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(paths.ROOT), pythonpath]))
    if batch_env:
        env["WORKBOOK_REPORT_BATCH"] = batch_env
    done = subprocess.run([sys.executable, "-W", "default", "-c", code, *args], env=env, capture_output=True, text=True,
                          timeout=300, cwd=paths.ROOT)
    assert done.returncode == 0, done.stderr
    assert all(line.startswith(("report:", "ok ", "note: section ")) for line in done.stderr.splitlines()), done.stderr
    return done.stdout


# each module of ``command.LAZY`` touched as its users touch it
TOUCH = {"requests": "requests.codes.ok == 200", "click": "callable(click.echo)",
         "altair.datasets": "altair.datasets.Loader.__name__ == 'Loader'",
         "platformdirs": "isinstance(platformdirs.user_data_dir('x'), str)", "colorama": "colorama.Fore.RED == '\\x1b[31m'",
         "tinycss2": "tinycss2.parse_declaration_list('a: b')[0].name == 'a'",
         "webencodings": "webencodings.lookup('utf-8').name == 'utf-8'"}


@pytest.mark.parametrize("batch_env,lazy", [("1", True), (None, False)])
def test_a_report_process_loads_the_modules_it_never_uses_only_when_touched(batch_env, lazy):
    """In a report process every module of ``command.LAZY`` is imported by what a report imports (the pool's
    ``PRELOAD``, nbconvert's HTML export) without its body running (a lazy module: its type is not yet
    ``ModuleType``; requests' urllib3 not imported); touched, each loads and works; elsewhere they are
    ordinary modules. A library that starts importing one of them as ``from x import y`` fails here."""
    from workbook.report.command import LAZY

    assert set(TOUCH) == set(LAZY)
    code = ("import importlib, sys, types, workbook.report.command as c\n"
            "for m in c.PRELOAD: importlib.import_module(m)\n"
            "from workbook.report.assemble import notebook_html\n"
            "import nbformat\n"
            "assert 'Hi' in notebook_html(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell('# Hi')]))\n"
            "print(*[type(sys.modules[n]) is not types.ModuleType for n in c.LAZY], 'urllib3' in sys.modules)\n"
            f"import {', '.join(TOUCH)}\n"
            f"print(*[{', '.join(TOUCH.values())}])\n"
            "print(*[type(sys.modules[n]) is types.ModuleType for n in c.LAZY], 'urllib3' in sys.modules)\n")
    lines = _report_process(code, batch_env).splitlines()
    assert lines == [" ".join([str(lazy)] * len(LAZY) + [str(not lazy)]), " ".join(["True"] * len(LAZY)),
                     " ".join(["True"] * (len(LAZY) + 1))]


@pytest.mark.slow
def test_a_report_run_leaves_the_lazy_modules_unloaded_and_the_process_as_it_was(tmp_path):
    """``python -m workbook report`` in-process (the fixture notebooks, one job): the report is written and
    no module of ``command.LAZY`` was loaded by it (a report touches none); after the run this process
    finds modules eagerly again and papermill's scan is its own."""
    from report_helpers import FIXTURE_NOTEBOOKS, copy_scenario

    code = ("import sys, types, entrypoints\n"
            "from workbook import cli\n"
            "from workbook.report import command as c\n"
            "scan = entrypoints.get_group_all\n"
            "assert cli.main(['report', sys.argv[1], '--jobs', '1', '--notebooks', sys.argv[2], '--out', sys.argv[3]]) == 0\n"
            "print(*[type(sys.modules.get(n)) is not types.ModuleType for n in c.LAZY])\n"
            "print(entrypoints.get_group_all is scan, any(isinstance(f, c.LazyImports) for f in sys.meta_path))\n")
    out = _report_process(code, None, str(copy_scenario(tmp_path, "small-model-cheap")), str(FIXTURE_NOTEBOOKS),
                          str(tmp_path / "out"))
    from workbook.report.command import LAZY

    assert out.splitlines() == [" ".join(["True"] * len(LAZY)), "True False"]
    assert (tmp_path / "out" / "small-model-cheap" / "report.html").is_file()


def _plugin(folder, group: str, name: str, module: str, dist: str = "wbplugin-1.0") -> None:
    """A distribution in ``folder`` whose ``entry_points.txt`` declares ``name = module:Plugin`` in ``group``."""
    info = folder / f"{dist}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    with open(info / "entry_points.txt", "a") as f:
        f.write(f"[{group}]\n{name} = {module}:Plugin\n\n")
    (folder / f"{module}.py").write_text("class Plugin:\n    pass\n")


def test_the_quick_plugin_scan_finds_what_the_scan_finds(tmp_path):
    """``command.entry_points_group`` gives ``entrypoints.get_group_all``'s list: none where no file names
    the group, the scan's own where one does (a plugin; a distribution shadowed by an earlier one of
    the same name), on this process's path and on folders that are missing or a file."""
    import entrypoints

    from workbook.report.command import entry_points_group

    scan = entrypoints.get_group_all
    first, second = tmp_path / "a", tmp_path / "b"
    (tmp_path / "file").touch()
    _plugin(first, "papermill.io", "wbtest://", "wbio")
    _plugin(second, "papermill.io", "wbshadowed://", "wbio2")
    _plugin(second, "papermill.engine", "wbengine", "wbeng", dist="other-2.0")
    paths_ = [None, [str(first)], [str(first), str(second)], [str(tmp_path / "missing"), str(tmp_path / "file"), str(second)]]
    for group in ("papermill.io", "papermill.engine", "console_scripts", "no.such.group"):
        for path in paths_:
            want = [(e.name, e.module_name, e.object_name, e.distro.name) for e in scan(group, path)]
            got = [(e.name, e.module_name, e.object_name, e.distro.name) for e in entry_points_group(group, path, scan=scan)]
            assert got == want, (group, path)
    assert [e.name for e in entry_points_group("papermill.io", [str(first), str(second)], scan=scan)] == ["wbtest://"]
    assert [e.name for e in entry_points_group("papermill.io", iter([str(first)]), scan=scan)] == ["wbtest://"]


def test_a_report_process_still_registers_papermills_plugins(tmp_path):
    """A papermill I/O handler and engine installed as plugins (entry points ``papermill.io``,
    ``papermill.engine``) are registered in a report process as elsewhere."""
    _plugin(tmp_path, "papermill.io", "wbtest://", "wbio")
    _plugin(tmp_path, "papermill.engine", "wbengine", "wbeng", dist="wbengine-1.0")
    code = ("import workbook.report.command, papermill\n"
            "from papermill.iorw import papermill_io\n"
            "from papermill.engines import papermill_engines\n"
            "print(papermill_io._handlers[0][0], papermill_io.get_handler('wbtest://x').__module__,\n"
            "      papermill_engines.get_engine('wbengine').__module__)\n")
    for batch_env in ("1", None):
        assert _report_process(code, batch_env, pythonpath=str(tmp_path)).split() == ["wbtest://", "wbio", "wbeng"]


def test_an_interrupt_in_a_cell_stops_the_run_instead_of_failing_the_notebook(tmp_path):
    """IPython shows a KeyboardInterrupt as the cell's error; the runner must unwind instead (Ctrl-C,
    or SIGTERM, which the runner turns into KeyboardInterrupt)."""
    with pytest.raises(KeyboardInterrupt):
        _in_process(_notebook(["raise KeyboardInterrupt", "after = 1"], tmp_path), tmp_path / "k.ipynb")
    assert inprocess.shell().user_ns.get("after") is None


def test_a_notebook_sees_pandas_display_options_as_a_new_kernel_has_them_and_the_process_keeps_its_own(tmp_path):
    # a test, the CLI or an earlier scenario in the same worker may have changed them; a kernel starts afresh
    import pandas as pd

    cells = ["import pandas as pd\n(pd.get_option('display.max_columns'), pd.get_option('display.width'))"]
    with pd.option_context("display.max_columns", 3, "display.width", 30):
        nb = _in_process(_notebook(cells, tmp_path), tmp_path / "opts.ipynb")
        assert (pd.get_option("display.max_columns"), pd.get_option("display.width")) == (3, 30)
    shown = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "execute_result"]
    assert shown[-1]["data"]["text/plain"] == "(20, 80)"
