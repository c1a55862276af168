"""Every hostile input of issue 28 (tests/hostile.py) gives one short message and exit 2 (or a
valid result), no traceback, no hang, and never the content of a file it was not meant to read."""
from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import hostile  # noqa: E402

from workbook import cli  # noqa: E402

CASE_LIMIT_S = 60   # the slowest valid case (an estimate) takes ~5 s; a hang is a FIFO or /dev/zero read
SECRETS = ("root:", "PYTHONPATH=", "PATH=/", "SHELL=")


@pytest.fixture(scope="module")
def case_table(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    return {f"{s}/{n}": argv for s, n, argv in hostile.cases(tmp)}


def _names():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        return [f"{s}/{n}" for s, n, _ in hostile.cases(Path(d))]


def _timeout(_signum, _frame):
    raise TimeoutError(f"no answer in {CASE_LIMIT_S} s (a hang)")


@pytest.mark.parametrize("case", _names())
def test_hostile_input_gives_one_line_and_no_traceback(case, case_table, capsys):
    old = signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(CASE_LIMIT_S)
    try:
        rc = cli.main(case_table[case])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    err = capsys.readouterr().err
    assert rc in (0, 1, 2), f"exit {rc}: {err[:300]}"
    assert "Traceback" not in err
    assert len(err) < 2000, f"{len(err)} characters on stderr"
    assert not any(s in err for s in SECRETS), err[:300]
    if rc == 2:
        assert err.strip(), "exit 2 without a message"
