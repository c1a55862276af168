"""The command line in the test's process, for tests of what a command prints and returns (not of the
process: start-up, signals and hangs are tested with a real ``python -m workbook``). ``tests/`` is on
``sys.path`` (pytest puts a root conftest's folder there), so any test imports it as ``cli_helpers``."""
import contextlib
import io
import subprocess

from workbook import cli, paths


def run_workbook(*args):
    """``python -m workbook ARGS`` in this process (``workbook.cli.main``, what ``__main__`` calls, from the
    checkout's root, its stdout and stderr captured): a ``subprocess.CompletedProcess`` like a real run's.
    A fresh interpreter costs 2-3 s of CPU per command (imports); tests of the process itself (start-up,
    signals, hangs) start one (issue 30)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(paths.ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main([str(a) for a in args])
        except SystemExit as e:  # argparse's usage errors
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return subprocess.CompletedProcess(["python", "-m", "workbook", *map(str, args)], rc, out.getvalue(),
                                       err.getvalue())
