"""``views.charts.base.fitted_label_limits`` (``views.charts.labels``): an axis or legend loses its label
limit when no label reaches it, so vl-convert draws the same SVG, and when labels do, they are
truncated in Python exactly as Vega would (``views.charts.textwidth``: vl-convert's own text widths)."""
from __future__ import annotations

import html
import random
import re

import altair as alt
import pandas as pd
import pytest
import vl_convert as vlc

from workbook.views.charts import base, labels, textwidth


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


def _texts(svg: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]


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


OFFERS = ["1. verda-1b200.30v-fin-03 · spot", "10. shadeform-massedcompute-h100x2-desmoines-usa-1 · on-demand",
          "13. shadeform-scaleway-h100x2-warsaw-poland-1 · on-demand", "18. runpod-b200-pod · on-demand",
          "AVAVAVAVAVAVAVAVAVAVAVAVAVAVAVAVAVAVAVAVAVAVAV To To", "spaces     before   the   cut at this limit here",
          'quotes "in it", a back\\slash and an apostrophe\'s text, to be cut at the limit']


def test_labels_over_the_limit_are_truncated_here_but_one_and_the_drawing_is_the_same():
    """Vega truncates one label (so that the axis and the legend keep the extent of the limit, which
    Vega gives a label it truncates), the spec the others (``labelExpr``): the same SVG, to the byte."""
    spec = _spec(OFFERS)
    fitted = base.fitted_label_limits(spec)
    assert _limits(fitted) == {"x": 0, "y": None, "color": None}
    for guide in (fitted["encoding"]["y"]["axis"], fitted["encoding"]["color"]["legend"]):
        assert guide["labelExpr"].count("===") >= 3      # 5 or 6 of the 7 are truncated, one left to Vega
        assert 'quotes \\"in it\\", a back\\\\slash' in guide["labelExpr"]   # written as a JSON string
    before, after = vlc.vegalite_to_svg(spec), vlc.vegalite_to_svg(fitted)
    assert "…" in before and after == before


def test_labels_all_truncated_here_would_narrow_the_axis():
    """Why one truncated label is left to Vega: with every label truncated here and no limit, the same
    texts are drawn, but the axis is narrower (the title moves)."""
    spec = _spec(OFFERS, legend=False)
    truncated = {label: textwidth.truncate(label, 180, 11) for label in OFFERS}
    alone = {**spec, "encoding": {**spec["encoding"], "y": {**spec["encoding"]["y"], "axis": {
        "labelLimit": 0, "labelExpr": labels._label_expr({k: v for k, v in truncated.items() if v != k})}}}}
    before, after = vlc.vegalite_to_svg(spec), vlc.vegalite_to_svg(alone)
    assert _texts(after) == _texts(before) and after != before


@pytest.mark.parametrize("guide", [{"orient": "bottom"}, {"direction": "horizontal"}, {"columns": 2}])
def test_a_legend_of_several_columns_is_left_to_vega(guide):
    """Each column of a legend is as wide as its own widest label: truncating some would move others."""
    spec = _spec(OFFERS)
    spec["encoding"]["color"]["legend"] = guide
    assert base.fitted_label_limits(spec)["encoding"]["color"]["legend"] == guide


def test_an_explicit_limit_is_honoured_as_the_default_is():
    long = "A100-SXM4-80GB | shadeform-massedcompute-a100-sxm4-80gbx8-desmoines-usa-1 | on_demand"
    spec = _spec(["short", long, long.replace("A100", "H100"), long[:40]], labelLimit=300)
    fitted = base.fitted_label_limits(spec)
    assert fitted["encoding"]["y"]["axis"]["labelLimit"] == 300 and "labelExpr" in fitted["encoding"]["y"]["axis"]
    assert vlc.vegalite_to_svg(fitted) == vlc.vegalite_to_svg(spec)
    short = _spec(["short", "labels"], legend=False, labelLimit=300)
    assert _limits(base.fitted_label_limits(short))["y"] == 0
    assert vlc.vegalite_to_svg(base.fitted_label_limits(short)) == vlc.vegalite_to_svg(short)


def test_without_the_width_table_long_labels_keep_their_limit(monkeypatch):
    """Another font configuration (the system's fonts): the table does not apply, the conservative
    rule does."""
    monkeypatch.setenv("FONTCONFIG_FILE", "/etc/fonts/fonts.conf")
    assert textwidth.table() is None
    fitted = base.fitted_label_limits(_spec(OFFERS))
    assert _limits(fitted) == {"x": 0, "y": None, "color": None}
    assert "labelExpr" not in fitted["encoding"]["y"]["axis"]


@pytest.mark.parametrize("spec_patch", [
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


SAMPLE = ["2. hyperbolic-2x-h100-149-1443-default · on-demand", "AVATAR To Yes, Tw 11 111", "P. F, L'T T. Ly",
          "  leading and trailing  ", "a  run   of spaces", "A V Y T, 1 1", "—–…·@WMmw%&", "nvidia-blackwell",
          "A100-SXM4-80GB | aws-p4de.24xlarge-us-west-2 | commit_1y", "{[(|)]}~^`_\\\"'<>=?!#$*+;:/"]


@pytest.mark.parametrize("size", [10, 11, 12.5])
def test_the_width_model_is_vl_converts_own_measurement(size):
    """Every width the model gives is the one vl-convert measures (usvg's layout: advances, the font's
    pair kerning, SVG whitespace), to the last bit, for labels, their prefixes and the ellipsis."""
    texts = SAMPLE + [t[:i] + textwidth.ELLIPSIS for t in SAMPLE[:3] for i in range(1, len(t))]
    assert [textwidth.text_width(t, size) for t in texts] == textwidth.measure(texts, size)


def test_the_table_is_the_installed_vl_converts():
    """The advances and the listed pairs, and a sample of pairs listed as zero, read again from vl-convert."""
    table = textwidth.table()
    assert table is not None, "vl-convert's version is not the table's: regenerate it (textwidth.write_table)"
    chars = [c for c in textwidth.ALPHABET if c != " "]
    assert textwidth.measure(chars, textwidth.REF_SIZE) == [table.ADVANCE[c] for c in chars]
    rng = random.Random(3)
    pairs = [p for p in table.PAIR if " " not in p] + [a + b for a, b in (rng.sample(chars, 2) for _ in range(200))]
    got = textwidth.measure(pairs, textwidth.REF_SIZE)
    assert got == [table.ADVANCE[p[0]] + table.ADVANCE[p[1]] + table.PAIR.get(p, 0) for p in pairs]


@pytest.mark.parametrize("limit", [180, 97.5, 40])
def test_truncation_is_vegas(limit):
    """Labels Vega truncates (a text mark with a limit, drawn by vl-convert) come out of
    ``textwidth.truncate`` with the same text."""
    labels = [t for t in SAMPLE if textwidth.text_width(t.strip(), 11) >= limit] + [
        "15. verda-2h200.141s.88v-fin-02 · on-demand", "lambda-gpu-1x-b200-sxm6-europe-central-1", "a b " * 30]
    spec = {"width": 10, "height": 10, "data": [{"name": "t", "values": [{"t": t} for t in labels]}],
            "marks": [{"type": "text", "from": {"data": "t"},
                       "encode": {"enter": {"text": {"field": "t"}, "limit": {"value": limit}, "fontSize": {"value": 11},
                                            "font": {"value": "sans-serif"}}}}]}
    drawn = _texts(vlc.vega_to_svg(spec))
    assert all(t.endswith("…") for t in drawn) and len(drawn) == len(labels) >= 4
    assert [textwidth.truncate(t, limit, 11) for t in labels] == drawn


def test_the_calibration_chart_leaves_a_gap_between_x_labels():
    """The calibration chart's log x axes: no two labels drawn closer than ``CALIBRATION_LABEL_GAP_PX``
    (with Vega's default, no gap, "10,000" and "20,000" were drawn 1 px apart on 1,190-94,620)."""
    from workbook.views.charts import perf

    values = [1190.0, 3000.0, 13000.0, 40000.0, 94620.0]
    table = pd.DataFrame({"run": [f"r{i}" for i in range(5)], "family": "tpu-v4", "metric": "tps", "value": values,
                          "predicted": values, "error": 0.0, "split": "fit", "kind": "generic inference"})
    svg = vlc.vegalite_to_svg(perf.calibration(table).to_dict())
    shown = re.findall(r'<text text-anchor="(\w+)" transform="translate\(([-\d.e]+),16\)"[^>]*opacity="1"[^>]*>([^<]+)</text>', svg)
    spans = []
    for anchor, x, text in shown:
        w = textwidth.text_width(html.unescape(text), 11)
        x0 = float(x) - {"start": 0, "middle": w / 2, "end": w}[anchor]
        spans.append((x0, x0 + w))
    assert len(spans) >= 3
    assert all(b[0] - a[1] >= perf.CALIBRATION_LABEL_GAP_PX for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("transform, known", [
    ([{"filter": "datum.value > 0"}, {"calculate": "datum.value * 2", "as": "double"}], True),
    ([{"calculate": "'x' + datum.name", "as": "name"}], False),       # the field is made by a calculate
    ([{"aggregate": [{"op": "count", "as": "n"}], "groupby": ["name"]}], False),   # may make any field
])
def test_a_field_a_transform_may_make_has_no_known_labels(transform, known):
    """``_made_fields`` (walked once per spec, not once per guide): the labels of a field are known
    unless a transform anywhere in the spec (here in a layer) may write it."""
    from workbook.views.charts import labels

    spec = _spec(["a", "b"], legend=False)
    layer = {k: v for k, v in spec.items() if k not in ("datasets", "data", "config", "$schema")}
    spec = {"layer": [{**layer, "transform": transform}], "data": spec["data"], "datasets": spec["datasets"]}
    chdef = spec["layer"][0]["encoding"]["y"]
    for made in ((), labels._made_fields(spec)):
        assert labels._label_texts(spec, chdef, made) == ({"a", "b"} if known else None)
