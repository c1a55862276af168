"""The CLI's top level (issue 28): an expected input error is one line and exit 2; anything else (a
bug) is one line with the exception and how to report it, exit 3, never a traceback, unless --debug."""
from __future__ import annotations

import pytest

from workbook import analysis, cli


def _boom(*_a, **_k):
    raise ZeroDivisionError("float division by zero\nsecond line of detail")


def test_an_unexpected_error_is_one_line_with_a_hint_and_exit_3(monkeypatch, capsys):
    monkeypatch.setattr(analysis, "analyse", _boom)
    assert cli.main(["estimate", "small-model-cheap"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: ZeroDivisionError: float division by zero (this is a bug in the workbook")
    assert "--debug" in err


def test_debug_shows_the_traceback(monkeypatch):
    monkeypatch.setattr(analysis, "analyse", _boom)
    with pytest.raises(ZeroDivisionError):
        cli.main(["estimate", "small-model-cheap", "--debug"])


def test_out_of_memory_is_one_line_and_exit_3(monkeypatch, capsys):
    def oom(*_a, **_k):
        raise MemoryError()
    monkeypatch.setattr(analysis, "analyse", oom)
    assert cli.main(["--debug", "estimate", "small-model-cheap"][1:]) == 3
    assert "out of memory" in capsys.readouterr().err


def test_an_input_error_is_exit_2(capsys, tmp_path):
    assert cli.main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err.strip().endswith("file not found")
