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
