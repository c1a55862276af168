"""Decision workbook: which accelerator, and how to pay for it, for a given AI workload.

The package computes; notebooks narrate. The public face is ``Scenario``, ``load_scenario``,
``analyse`` (the one pipeline) and ``InputError``, so that a notebook cell is one line:
``a = wb.analyse(wb.load_scenario("llama2-7b-pretrain"))``. Subpackages load on first use
(``wb.model``, ``wb.cost``, ``wb.decision``...), and ``wb.charts`` / ``wb.widgets`` are the views'
charts and widgets (``workbook.views.charts``, ``workbook.views.widgets``).
"""
import importlib
import sys as _sys

# jsonschema (imported by altair and nbformat) imports rfc3987_syntax, when installed, only to check
# the "iri"/"iri-reference" string formats; building that package's grammar costs about 2.5 s of CPU
# in every process (CLI, kernel, report worker). Nothing in the workbook validates those formats, so
# the optional import is declined here (jsonschema then skips the two format checks).
_sys.modules.setdefault("rfc3987_syntax", None)

from . import catalog, paths  # noqa: E402
from .errors import InputError
from .views.text import header, register_table_formatter
from .scenario import Scenario, load_scenario, parse_scenario, scenario_names, with_overrides

__version__ = paths.VERSION

register_table_formatter()


# names that live deeper than their notebook spelling
_ALIASES = {"charts": "workbook.views.charts", "widgets": "workbook.views.widgets", "text": "workbook.views.text",
            "buyer": "workbook.views.buyer"}


def __getattr__(name: str):
    """``wb.<subpackage>`` imported on first use, so that ``import workbook`` stays light for the CLI
    while a notebook needs only ``import workbook as wb``; ``wb.analyse`` is ``analysis.analyse``."""
    if name == "analyse":
        return importlib.import_module("workbook.analysis").analyse
    try:
        return importlib.import_module(_ALIASES.get(name, f"workbook.{name}"))
    except ModuleNotFoundError as e:
        if e.name in (f"workbook.{name}", _ALIASES.get(name)):
            raise AttributeError(f"module 'workbook' has no attribute {name!r}") from None
        raise


__all__ = ["analyse", "catalog", "header", "InputError", "Scenario", "load_scenario", "parse_scenario",
           "scenario_names", "with_overrides", "__version__"]
