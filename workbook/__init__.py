"""Decision workbook: which accelerator, and how to pay for it, for a given AI workload.

The package computes; notebooks narrate. The public face is ``Scenario``, ``load_scenario``,
``analyse`` (the one pipeline) and ``InputError``, so that a notebook cell is one line:
``a = wb.analyse(wb.load_scenario("llama2-7b-pretrain"))``. Everything, the public names included,
loads on first use (``wb.model``, ``wb.cost``, ``wb.decision``...; ``wb.charts`` / ``wb.widgets`` are
the views' charts and widgets, ``workbook.views.charts``, ``workbook.views.widgets``), so that
``python -m workbook --help`` does not import pandas and ``estimate`` does not import Altair.
"""
import importlib
import sys as _sys

# jsonschema (imported by altair and nbformat) imports rfc3987_syntax, when installed, only to check
# the "iri"/"iri-reference" string formats; building that package's grammar costs about 2.5 s of CPU
# in every process (CLI, kernel, report worker). Nothing in the workbook validates those formats, so
# the optional import is declined here (jsonschema then skips the two format checks).
_sys.modules.setdefault("rfc3987_syntax", None)

from . import paths  # noqa: E402

__version__ = paths.VERSION

# names that live deeper than their notebook spelling
_ALIASES = {"charts": "workbook.views.charts", "widgets": "workbook.views.widgets", "text": "workbook.views.text"}
# the public names: (module, attribute)
_NAMES = {"analyse": ("workbook.analysis", "analyse"), "InputError": ("workbook.errors", "InputError"),
          "header": ("workbook.views.text", "header"), "Scenario": ("workbook.scenario", "Scenario"),
          "load_scenario": ("workbook.scenario", "load_scenario"), "parse_scenario": ("workbook.scenario", "parse_scenario"),
          "scenario_names": ("workbook.scenario", "scenario_names"), "with_overrides": ("workbook.scenario", "with_overrides")}
_formatter = []  # [True] once the notebook table formatter is registered


def _register_formatter() -> None:
    """In an IPython kernel (notebooks, Voila, Papermill), show DataFrames with ``views.text.table_html``:
    registered on the first use of the package from inside a kernel."""
    if _formatter or "IPython" not in _sys.modules:
        return
    _formatter.append(importlib.import_module("workbook.views.text").register_table_formatter())


def __getattr__(name: str):
    """``wb.<subpackage>`` and the public names imported on first use, so that ``import workbook``
    stays light for the CLI while a notebook needs only ``import workbook as wb``."""
    if name.startswith("__"):
        raise AttributeError(f"module 'workbook' has no attribute {name!r}")
    _register_formatter()
    if name in _NAMES:
        module, attr = _NAMES[name]
        return getattr(importlib.import_module(module), attr)
    try:
        return importlib.import_module(_ALIASES.get(name, f"workbook.{name}"))
    except ModuleNotFoundError as e:
        if e.name in (f"workbook.{name}", _ALIASES.get(name)):
            raise AttributeError(f"module 'workbook' has no attribute {name!r}") from None
        raise


__all__ = ["analyse", "catalog", "header", "InputError", "Scenario", "load_scenario", "parse_scenario",
           "scenario_names", "with_overrides", "__version__"]
