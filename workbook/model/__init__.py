"""Performance: what the work needs (``profile``), how fast a chip or a layout runs it.

Layers, each importing only those before it: ``profile`` and ``comm`` (formulas), ``efficiency``
(the calibrated efficiency as a value), ``training`` and ``serving`` (the two models), ``estimate``
(a scenario on each candidate), ``tables`` (tidy frames for notebooks and the app).
"""
from . import comm, efficiency, estimate, profile, serving, tables, training

__all__ = ["comm", "efficiency", "estimate", "profile", "serving", "tables", "training"]
