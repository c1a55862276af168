"""Helpers shared by the price tests: the `prices` CLI (in the test's process, or in a subprocess), a written
catalog read back by offering id, and a quiet HTTP handler for the local servers (no test reaches the
network)."""
import contextlib
import http.server
import io
import os
import subprocess
import sys

import pandas as pd

from workbook import paths


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


def prices_cli(*args, timeout=120, process=False):
    """``python -m workbook prices ARGS`` from the repository root; the completed process.

    By default ``workbook.cli.main`` runs in the test's own process (stdout and stderr captured, the exit
    code its return value or its ``SystemExit``): the same code as the command's, without a fresh
    interpreter importing pandas for each call (2-3 s of CPU each; issue 30). ``process=True`` runs the
    real ``python -m workbook`` (with ``timeout``), for the tests whose point is the process: a hang
    (that must end in a timeout, not block the suite), the exit code of the interpreter."""
    if not process:
        from workbook import cli
        out, err = io.StringIO(), io.StringIO()
        with contextlib.chdir(paths.ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main(["prices", *map(str, args)])
            except SystemExit as e:  # argparse's usage errors
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        return subprocess.CompletedProcess(["workbook", "prices", *map(str, args)], rc, out.getvalue(), err.getvalue())
    return subprocess.run([sys.executable, "-m", "workbook", "prices", *map(str, args)], capture_output=True,
                          text=True, cwd=paths.ROOT, timeout=timeout, env={**os.environ, "PYTHONPATH": str(paths.ROOT)})


def catalog_rows(f):
    """A written offerings file as text cells, indexed by ``offering``."""
    return pd.read_csv(f, dtype=str, keep_default_na=False).set_index("offering")
