"""The charts' theme, the offline renderer and the chart for "nothing to draw"."""
from __future__ import annotations

import json

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


# Static SVG of charts already drawn in this process, keyed by their Vega-Lite spec: a report batch
# draws some charts identically for every scenario (the calibration chart: about 0.3 s of vl-convert
# each time). Bounded: a kernel renders a few dozen charts per scenario.
_SVG_MEMO: dict[str, dict] = {}
_SVG_MEMO_MAX = 64


def static_bundle(chart: alt.TopLevelMixin) -> dict:
    """The chart as the active renderer (``svg``) draws it for a notebook output, as
    ``chart._repr_mimebundle_()`` does, but without validating the spec against the Vega-Lite schema
    again (about a third of ``to_dict``'s time; the charts' specs are validated by the test suite)
    and memoised by spec (``_SVG_MEMO``). Used by batch report kernels (``report.kernelside``)."""
    spec = chart.to_dict(validate=False, context={"pre_transform": False})
    key = json.dumps(spec, sort_keys=True, default=str)
    bundle = _SVG_MEMO.get(key)
    if bundle is None:
        bundle = alt.renderers.get()(spec)
        if len(_SVG_MEMO) >= _SVG_MEMO_MAX:
            _SVG_MEMO.pop(next(iter(_SVG_MEMO)))
        _SVG_MEMO[key] = bundle
    return dict(bundle)
