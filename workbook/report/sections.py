"""Which notebooks make a report, and what they must declare: each report notebook names its section
in its own metadata (``metadata.workbook.section = {"key": ..., "order": ..., "label": ...}``; the
report runs them by ``order``, the decision first), and declares the batch's ``PARAMETERS`` in its
``parameters`` cell. Both are checked before any kernel starts."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..errors import InputError
from ..paths import NOTEBOOK_DIR
from .nbschema import install as install_nb_validator

# The parameters every report notebook declares in its ``parameters`` cell (the batch passes them).
PARAMETERS = ("scenario",)


# --- sections: declared by the notebooks themselves -------------------------------------------------

@dataclass(frozen=True)
class Section:
    """One part of the report: a notebook and how the report names it, from the notebook's metadata
    ``{"workbook": {"section": {"key": "decision", "order": 1, "label": "Decision"}}}``."""

    key: str  # anchor and summary key
    notebook: str  # file name in the notebook folder
    label: str  # the short name in the table of contents
    order: int  # report order, lowest first (the decision first, then the evidence behind it)


SECTION_FIELDS = ("key", "order", "label")
_SECTION_KEY = re.compile(r"^[a-z][a-z0-9-]*$")
SECTION_METADATA = "metadata.workbook.section"


def _section_problems(rel: str, decl) -> list[str]:
    if not isinstance(decl, dict):
        return [f"{rel}: {SECTION_METADATA}: expected a mapping with {', '.join(SECTION_FIELDS)}, got {decl!r}"]
    problems = [f"{rel}: {SECTION_METADATA}.{k}: unknown field (expected {', '.join(SECTION_FIELDS)})"
                for k in decl if k not in SECTION_FIELDS]
    problems += [f"{rel}: {SECTION_METADATA}.{k}: missing" for k in SECTION_FIELDS if k not in decl]
    key, order, label = decl.get("key"), decl.get("order"), decl.get("label")
    if "key" in decl and not (isinstance(key, str) and _SECTION_KEY.match(key)):
        problems.append(f"{rel}: {SECTION_METADATA}.key: expected lower-case letters, digits and '-', got {key!r}")
    if "order" in decl and (isinstance(order, bool) or not isinstance(order, int)):
        problems.append(f"{rel}: {SECTION_METADATA}.order: expected an integer, got {order!r}")
    if "label" in decl and not (isinstance(label, str) and label.strip()):
        problems.append(f"{rel}: {SECTION_METADATA}.label: expected a non-empty text, got {label!r}")
    return problems


def _scan(notebook_dir: Path) -> tuple[list[Section], list[str]]:
    """The sections declared by the notebooks of ``notebook_dir`` (report order), and the problems."""
    sections, problems = [], []
    for path in sorted(Path(notebook_dir).glob("*.ipynb")):
        rel = paths.rel(path)
        try:
            meta = json.loads(path.read_text()).get("metadata", {})
        except (OSError, ValueError, AttributeError) as e:
            problems.append(f"{rel}: cannot read the notebook ({e.__class__.__name__}: {e})")
            continue
        decl = (meta.get("workbook") or {}).get("section") if isinstance(meta, dict) else None
        if decl is None:
            continue  # not a report notebook (e.g. app.ipynb)
        bad = _section_problems(rel, decl)
        problems += bad
        if not bad:
            sections.append(Section(decl["key"], path.name, decl["label"], decl["order"]))
    for field in ("key", "order"):
        seen = {}
        for s in sections:
            value = getattr(s, field)
            if value in seen:
                problems.append(f"{paths.rel(Path(notebook_dir) / s.notebook)}: {SECTION_METADATA}.{field}: {value!r} "
                                f"is also the {field} of {seen[value]}")
            seen.setdefault(value, s.notebook)
    return sorted(sections, key=lambda s: (s.order, s.notebook)), problems


def discover_sections(notebook_dir: str | Path = NOTEBOOK_DIR) -> list[Section]:
    """The report sections of ``notebook_dir`` in report order: every notebook that declares one in
    its metadata (``metadata.workbook.section``). InputError, one line per problem naming the file
    and field, for an unreadable notebook or a malformed or duplicate declaration."""
    sections, problems = _scan(Path(notebook_dir))
    if problems:
        raise InputError("", problems)
    return sections


def available_sections(notebook_dir: str | Path = NOTEBOOK_DIR) -> tuple[list[Section], list[Section]]:
    """The sections of ``notebook_dir`` (report order), and those the shipped notebooks declare that
    ``notebook_dir`` lacks (by key; none when ``notebook_dir`` is the shipped folder)."""
    present = discover_sections(notebook_dir)
    if Path(notebook_dir).resolve() == NOTEBOOK_DIR.resolve():
        return present, []
    keys = {s.key for s in present}
    shipped, _problems = _scan(NOTEBOOK_DIR)  # the reference only: its problems show up in its own runs
    return present, [s for s in shipped if s.key not in keys]


# --- the parameters cell ----------------------------------------------------------------------------

def check_parameters(notebooks: list[Path], parameters=PARAMETERS) -> None:
    """Every parameter the runner passes must be declared in each notebook's ``parameters`` cell.

    Papermill only warns about an unknown parameter and runs the notebook with its default values,
    which would silently render the wrong scenario; here it is an InputError before any kernel starts.
    """
    import papermill as pm

    install_nb_validator()   # nbformat's validator from kept code, before the first notebook is validated
    problems = []
    for nb in notebooks:
        rel = paths.rel(Path(nb))
        try:
            declared = pm.inspect_notebook(str(nb))
        except Exception as e:  # unreadable JSON, not a notebook
            problems.append(f"{rel}: cannot read the notebook ({e.__class__.__name__}: {e})")
            continue
        if not declared:
            problems.append(f"{rel}: no cell tagged 'parameters'; expected one declaring {', '.join(parameters)}")
            continue
        unknown = [p for p in parameters if p not in declared]
        if unknown:
            problems.append(f"{rel}: parameters cell: unknown parameter(s) {', '.join(unknown)} "
                            f"(declared: {', '.join(declared)}; expected {', '.join(parameters)})")
    if problems:
        raise InputError("", problems)
