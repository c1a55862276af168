"""Decision workbook: which accelerator, and how to pay for it, for a given AI workload.

The package computes; notebooks narrate. Public entry points are re-exported here so that a
notebook cell is one line: ``s = wb.load_scenario("llama2-7b-pretrain")``.
"""
import sys as _sys

# jsonschema (imported by altair and nbformat) imports rfc3987_syntax, when installed, only to check
# the "iri"/"iri-reference" string formats; building that package's grammar costs about 2.5 s of CPU
# in every process (CLI, kernel, report worker). Nothing in the workbook validates those formats, so
# the optional import is declined here (jsonschema then skips the two format checks).
_sys.modules.setdefault("rfc3987_syntax", None)

from . import catalog, paths  # noqa: E402
from .errors import InputError
from .narrative import header, register_table_formatter
from .scenario import Scenario, load_scenario, parse_scenario, scenario_names, with_overrides

__version__ = paths.VERSION

register_table_formatter()


def submodule_getattr(package: str):
    """A module ``__getattr__`` that imports ``package.<name>`` on first use (``wb.widgets``,
    ``wb.charts.scaling``...): ``import workbook`` stays light for the CLI, and a notebook still needs
    only ``import workbook as wb``."""
    import importlib

    def __getattr__(name: str):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"{package}.{name}":
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
            raise

    return __getattr__


__getattr__ = submodule_getattr(__name__)

__all__ = ["catalog", "header", "InputError", "Scenario", "load_scenario", "parse_scenario", "scenario_names",
           "with_overrides", "__version__"]
