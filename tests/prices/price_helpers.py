"""Helpers shared by the price tests: the `prices` CLI in a subprocess, a written catalog read back by
offering id, and a quiet HTTP handler for the local servers (no test reaches the network)."""
import http.server
import os
import subprocess
import sys

import pandas as pd

from workbook import paths


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


def prices_cli(*args, timeout=120):
    """``python -m workbook prices ARGS`` from the repository root; the completed process."""
    return subprocess.run([sys.executable, "-m", "workbook", "prices", *map(str, args)], capture_output=True,
                          text=True, cwd=paths.ROOT, timeout=timeout, env={**os.environ, "PYTHONPATH": str(paths.ROOT)})


def catalog_rows(f):
    """A written offerings file as text cells, indexed by ``offering``."""
    return pd.read_csv(f, dtype=str, keep_default_na=False).set_index("offering")
