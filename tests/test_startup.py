"""What each command loads: ``python -m workbook --help`` imports neither pandas nor the report stack,
and ``estimate`` draws nothing, so it imports no Altair, Jupyter or widget package (issue 30: every verb
used to import Altair through the plan page). Checked in a fresh interpreter's ``sys.modules``."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DRAWING = ("altair", "vl_convert", "nbformat", "jupyter_client", "papermill", "ipywidgets", "IPython")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_help_imports_neither_pandas_nor_the_report_stack():
    loaded = _modules_after("import contextlib, io\nfrom workbook import cli\n"
                            "with contextlib.redirect_stdout(io.StringIO()):\n"
                            "    try:\n        cli.main(['--help'])\n    except SystemExit:\n        pass")
    assert not loaded & {"pandas", "numpy", *DRAWING}, sorted(loaded & {"pandas", "numpy", *DRAWING})


def test_estimate_imports_no_chart_or_notebook_package():
    loaded = _modules_after("import contextlib, io\nfrom workbook import cli\n"
                            "with contextlib.redirect_stdout(io.StringIO()):\n"
                            "    cli.main(['estimate', 'chat-70b-realtime', '--json'])")
    assert "workbook.analysis" in loaded
    assert not loaded & set(DRAWING), sorted(loaded & set(DRAWING))


def test_every_verb_is_built_when_asked_for():
    import argparse

    from workbook import cli

    for only in (None, *cli._COMMANDS):
        p = cli.build_parser(only=only)
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
        built = {v for v in cli._COMMANDS if sub.choices[v].get_default("func") is not None}
        assert built == (set(cli._COMMANDS) if only is None else {only})
