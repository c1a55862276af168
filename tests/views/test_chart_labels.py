"""``views.charts.base.fitted_label_limits``: an axis or legend loses its label limit only when no
label can reach it, so vl-convert draws the same SVG (a label at the limit would be truncated with
an ellipsis, and the drawings would differ)."""
from __future__ import annotations

import random

import altair as alt
import pandas as pd
import pytest
import vl_convert as vlc

from workbook.views.charts import base


@pytest.fixture(autouse=True, scope="module")
def _vendored_font():
    import os

    old = os.environ.get("FONTCONFIG_FILE")
    base.vendored_fonts_only()
    yield
    if old is None:
        os.environ.pop("FONTCONFIG_FILE", None)
    else:
        os.environ["FONTCONFIG_FILE"] = old


def _spec(labels, legend=True, **axis) -> dict:
    df = pd.DataFrame({"name": labels, "value": range(1, len(labels) + 1)})
    color = alt.Color("name:N") if legend else alt.value("#333")
    chart = base.Chart(df).mark_bar().encode(x=alt.X("value:Q"), y=alt.Y("name:N", axis=alt.Axis(**axis)),
                                             color=color)
    return base.slim_spec(chart.to_dict())


def _limits(spec) -> dict:
    out = {}
    for channel, kind in (("x", "axis"), ("y", "axis"), ("color", "legend")):
        guide = spec["encoding"].get(channel, {}).get(kind)
        out[channel] = None if guide is None else guide.get("labelLimit")
    return out


def test_short_labels_lose_their_limits_and_draw_the_same():
    spec = _spec(["H100-SXM5-80", "MI300X", "spot · 3-year"])
    fitted = base.fitted_label_limits(spec)
    assert _limits(fitted) == {"x": 0, "y": 0, "color": 0}
    assert _limits(spec) == {"x": None, "y": None, "color": None}     # the spec itself is left alone
    assert vlc.vegalite_to_svg(fitted) == vlc.vegalite_to_svg(spec)


def test_a_label_that_could_reach_the_limit_keeps_it_and_is_truncated_as_before():
    long = "hyperbolic-2x-h100-149-1443-default · on-demand"
    spec = _spec(["a", long])
    fitted = base.fitted_label_limits(spec)
    assert _limits(fitted) == {"x": 0, "y": None, "color": None}       # numbers still fit
    svg = vlc.vegalite_to_svg(fitted)
    assert "…" in svg and svg == vlc.vegalite_to_svg(spec)


@pytest.mark.parametrize("spec_patch", [
    {"axis": {"labelLimit": 300}},               # an explicit limit is the author's
    {"axis": {"labelExpr": "datum.label + ' and more text'"}},
    {"axis": {"labelFont": "serif"}},
])
def test_what_it_cannot_vouch_for_keeps_its_limit(spec_patch):
    spec = _spec(["a", "b"], legend=False, **spec_patch["axis"])
    assert base.fitted_label_limits(spec)["encoding"]["y"]["axis"] == spec["encoding"]["y"]["axis"]


def test_a_limit_or_font_in_the_config_leaves_the_spec_alone():
    spec = _spec(["a", "b"])
    for config in ({"axis": {"labelLimit": 50}}, {"font": "Courier"}, {"legend": {"labelFont": "serif"}}):
        patched = {**spec, "config": {**spec["config"], **config}}
        assert base.fitted_label_limits(patched) is patched


def test_labels_with_characters_it_does_not_know_keep_their_limit():
    assert _limits(base.fitted_label_limits(_spec(["ok", "日本語"])))["y"] is None


def test_the_bound_holds_for_the_widest_glyphs_at_the_longest_length_it_accepts():
    """Labels of the widest characters, as long as the rule lets through at 11 px (the theme's label
    size): drawn without a limit they are exactly as drawn with one (none reached it)."""
    n = int(base.VEGA_LABEL_LIMIT_PX["legend"] / (base.MAX_GLYPH_EM * 11))
    rng = random.Random(7)
    for _ in range(12):
        labels = list(dict.fromkeys("".join(rng.choice("@WMmw%—…") for _ in range(rng.randint(1, n)))
                                    for _ in range(6)))
        spec = _spec(labels)
        fitted = base.fitted_label_limits(spec)
        assert _limits(fitted)["y"] == 0 and _limits(fitted)["color"] == 0
        assert vlc.vegalite_to_svg(fitted) == vlc.vegalite_to_svg(spec)
