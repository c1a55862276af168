"""Calibration: the performance model against published runs (``data/reference_runs.csv``).

``runs`` reads the runs, converts each to one definition, predicts it and tabulates the errors;
``fit`` fits the efficiency parameters (``data/efficiency.csv``) and, with ``bands``, their P10-P90 bands
(pinned layouts and free layout searches); ``cases`` tags the runs by kind of case;
``command`` is the ``calibrate`` command.
"""
from . import fit, runs

__all__ = ["fit", "runs"]
