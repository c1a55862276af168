"""Shared by the report tests: the fixture notebook folders, the ``report`` command as the CLI runs
it, and scenario copies outside data/scenarios."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from workbook.errors import InputError
from workbook.paths import SCENARIO_DIR
from workbook.report import batch

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURE_NOTEBOOKS = FIXTURES / "notebooks"
BAD_PARAMS = FIXTURES / "notebooks_bad_params"
TWO = ["small-model-cheap", "llama-8b-finetune"]  # an inference and a training scenario


def run_report(*argv: str) -> int:
    """The ``report`` sub-command as the CLI runs it (its own parser, InputError -> exit 2)."""
    p = argparse.ArgumentParser()
    batch.add_arguments(p)
    try:
        return batch.run(p.parse_args(list(argv)))
    except InputError:
        return 2


def copy_scenario(tmp_path: Path, name: str, edit=None) -> Path:
    """A scenario file outside data/scenarios (passed to the notebooks as a path)."""
    text = (SCENARIO_DIR / f"{name}.yaml").read_text()
    p = tmp_path / f"{name}.yaml"
    p.write_text(edit(text) if edit else text)
    return p


def without_catalog_model(text: str) -> str:
    """Still a valid scenario (an explicit architecture instead of a catalog model id), but the
    fixture workload notebook looks the model up in the catalog, so its run fails in a cell."""
    arch = ("  architecture: {layers: 16, hidden: 2048, ffn_hidden: 8192, heads: 32, kv_heads: 8, "
            "vocab: 128256, tied_embeddings: true}")
    return re.sub(r"(?m)^  model: .*$", arch, text)


def page(out: Path, name: str) -> str:
    return (out / name / "report.html").read_text()
