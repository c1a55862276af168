"""Decision workbook: which accelerator, and how to pay for it, for a given AI workload.

The package computes; notebooks narrate. Public entry points are re-exported here so that a
notebook cell is one line: ``s = wb.load_scenario("llama2-7b-pretrain")``.
"""
from . import catalog
from .errors import InputError
from .scenario import Scenario, load_scenario, parse_scenario, scenario_names, with_overrides

__version__ = "0.1.0"

__all__ = ["catalog", "InputError", "Scenario", "load_scenario", "parse_scenario", "scenario_names",
           "with_overrides", "__version__"]
