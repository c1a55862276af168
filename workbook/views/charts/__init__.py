"""Charts are values: functions take tidy DataFrames and return ``alt.Chart``; they never display,
save or load data. One theme, registered once; one offline renderer, chosen once; one chart for
"nothing to draw" (``empty``).

Offline rule: Altair's default renderer loads Vega from a CDN. Reports (Papermill + nbconvert) use
the static ``svg`` renderer through vl-convert; live views in JupyterLab/Voila use ``live(chart)``
(an offline ``alt.JupyterChart``) or SVG inside an Output or an ``<img>``.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf"]


def _theme():
    return alt.theme.ThemeConfig(
        config={
            "view": {"continuousWidth": 520, "continuousHeight": 300, "stroke": None},
            "range": {"category": PALETTE},
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "grid": True, "gridColor": "#eee"},
            "legend": {"labelFontSize": 11, "titleFontSize": 12},
            "title": {"fontSize": 14, "anchor": "start"},
            "font": "sans-serif",
        }
    )


def enable(renderer: str = "svg") -> None:
    """Register the theme and pick an offline renderer: ``svg`` (default, static) or ``png``."""
    if "workbook" not in alt.theme.names():
        alt.theme.register("workbook", enable=True)(_theme)
    alt.theme.enable("workbook")
    alt.renderers.enable(renderer)


def empty(message: str) -> alt.Chart:
    """A chart that says, in words, why there is nothing to draw."""
    return alt.Chart(pd.DataFrame({"text": [message]})).mark_text(size=13).encode(text="text:N").properties(
        width=520, height=60)


def live(chart: alt.TopLevelMixin):
    """An offline, updatable chart widget for JupyterLab and Voila (assign ``.chart`` to update)."""
    alt.JupyterChart.enable_offline()
    return alt.JupyterChart(chart)


enable()

from . import cost, perf, scaling  # noqa: E402  (the chart modules use ``empty`` above)

__all__ = ["PALETTE", "cost", "empty", "enable", "live", "perf", "scaling"]
