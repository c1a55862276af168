import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def write_yaml(tmp_path):
    """Write a scenario YAML text to a temp file and return its path."""
    def _write(text: str, name: str = "s.yaml") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p
    return _write


@pytest.fixture(scope="session")
def analysed():
    """``analysed(name, n_draws=...)``: the analysis of a shipped scenario, computed once per test
    process (``analysis.shared_analyse``) and handed to each test as its own deep copy. For tests that
    read an unchanged shipped scenario; a test that patches the model calls ``analysis.analyse``."""
    from workbook import analysis, load_scenario

    def get(name: str, n_draws: int = analysis.MC_DRAWS, seed: int = 0):
        return analysis.shared_analyse(load_scenario(name), n_draws, seed)
    return get
