"""Charts are values: functions take tidy DataFrames and return ``alt.Chart``; they never display,
save or load data. One theme, registered once; one offline renderer, chosen once; one chart for
"nothing to draw" (``empty``).

Offline rule: Altair's default renderer loads Vega from a CDN. Reports (Papermill + nbconvert) use
the static ``svg`` renderer through vl-convert; live views in JupyterLab/Voila use ``live(chart)``
(an offline ``alt.JupyterChart``) or SVG inside an Output or an ``<img>``.
"""
from __future__ import annotations

from . import cost, perf, plan, scaling
from .base import PALETTE, empty, enable, live

enable()

__all__ = ["PALETTE", "cost", "empty", "enable", "live", "perf", "plan", "scaling"]
