"""Decision workbook: which accelerator, and how to pay for it, for a given AI workload.

The package computes; notebooks narrate. Public entry points are re-exported here so that a
notebook cell is one line: ``s = wb.load_scenario("llama2-7b-pretrain")``.
"""
from . import catalog
from .errors import InputError
from .scenario import Scenario, load_scenario, parse_scenario, scenario_names, with_overrides

__version__ = "0.1.0"


def __getattr__(name: str):
    """Submodules on first use (``wb.widgets``, ``wb.charts``, ``wb.perf``...): ``import workbook``
    stays light for the CLI, and a notebook still needs only ``import workbook as wb``."""
    import importlib

    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name == f"{__name__}.{name}":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        raise

__all__ = ["catalog", "InputError", "Scenario", "load_scenario", "parse_scenario", "scenario_names",
           "with_overrides", "__version__"]
