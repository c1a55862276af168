"""The charts' shortcuts around Altair's own work give Altair's specs: the DataFrame's records
(``frame_values``), layering (``Chart.__add__``), concatenation (``hconcat``), ``properties`` and the
chart functions under debug mode off (``quiet``)."""
from __future__ import annotations

import json
import math
import re

import altair as alt
import numpy as np
import pandas as pd
import pytest
from altair.utils.core import sanitize_pandas_dataframe
from altair.utils.schemapi import SchemaValidationError

from workbook.views.charts import base, converter
from workbook.views.charts.base import Chart
from workbook.views.charts.data import frame_values


def _altairs(frame: pd.DataFrame) -> list[dict]:
    return sanitize_pandas_dataframe(frame).to_dict(orient="records")


def _typed(x):
    """Values with their Python types, NaN comparable, for an exact comparison."""
    if isinstance(x, dict):
        return {k: _typed(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_typed(v) for v in x]
    return type(x).__name__, ("nan" if isinstance(x, float) and math.isnan(x) else x)


FRAMES = {
    "int64": pd.DataFrame({"a": np.array([1, -2, 3], dtype="int64")}),
    "int8/uint32": pd.DataFrame({"a": np.array([1, 2, 3], dtype="int8"), "b": np.array([4, 5, 2**31], dtype="uint32")}),
    "float with nan and inf": pd.DataFrame({"a": [1.5, np.nan, np.inf], "b": [-np.inf, -0.0, 1e300]}),
    "float32": pd.DataFrame({"a": np.array([0.1, np.nan, 3.0], dtype="float32")}),
    "bool": pd.DataFrame({"a": [True, False, True]}),
    "pandas text with missing": pd.DataFrame({"a": pd.array(["x", None, "z"], dtype="str")}),
    "python-backed string": pd.DataFrame({"a": pd.array(["x", None, "é"], dtype=pd.StringDtype("python"))}),
    "object text": pd.DataFrame({"a": pd.Series(["x", "", "é"], dtype=object)}),
    "nullable Int64 and boolean": pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"),
                                                "b": pd.array([True, None, False], dtype="boolean")}),
    "mixed, index not a range": pd.DataFrame({"n": [1, 2], "s": ["p", "q"], "f": [0.5, np.nan]}, index=[7, 3]),
    "empty with columns": pd.DataFrame({"a": pd.Series([], dtype=float), "b": pd.Series([], dtype=object)}),
}


@pytest.mark.parametrize("name", list(FRAMES))
def test_frame_values_are_altairs_records(name):
    frame = FRAMES[name]
    ours = frame_values(frame)
    assert ours is not None
    assert _typed(ours) == _typed(_altairs(frame))
    assert json.dumps(ours, sort_keys=True, default=str) == json.dumps(_altairs(frame), sort_keys=True, default=str)


OTHERS = {
    "categorical": pd.DataFrame({"a": pd.Categorical(["x", "y", "x"])}),
    "datetime": pd.DataFrame({"a": pd.to_datetime(["2026-01-01", "2026-02-01"])}),
    "object text with None and nan": pd.DataFrame({"a": pd.Series(["x", None, np.nan], dtype=object)}),
    "object numbers": pd.DataFrame({"a": pd.Series([1, 2.5, None], dtype=object)}),
    "object numpy strings": pd.DataFrame({"a": pd.Series([np.str_("x"), "y"], dtype=object)}),
    "object arrays": pd.DataFrame({"a": pd.Series([np.array([1, 2]), np.array([3])], dtype=object)}),
    "nullable Float64": pd.DataFrame({"a": pd.array([1.5, None], dtype="Float64")}),
    "integer column names": pd.DataFrame({0: [1], 1: [2]}),
    "duplicate column names": pd.DataFrame([[1, 2]], columns=["a", "a"]),
    "hierarchical columns": pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "b"), ("a", "c")])),
}


@pytest.mark.parametrize("name", list(OTHERS))
def test_frame_values_leaves_anything_else_to_altair(name):
    assert frame_values(OTHERS[name]) is None


def test_the_default_transformer_keeps_altairs_name_row_limit_and_output():
    assert alt.data_transformers.active == "default"
    frame = FRAMES["mixed, index not a range"]
    assert alt.data_transformers.get()(frame) == {"values": _altairs(frame)}
    with pytest.raises(alt.MaxRowsError):
        alt.data_transformers.get()(pd.DataFrame({"a": range(5001)}))
    with alt.data_transformers.enable("default", max_rows=None):
        assert len(alt.data_transformers.get()(pd.DataFrame({"a": range(5001)}))["values"]) == 5001
    # a categorical column goes through Altair's own sanitising
    cat = OTHERS["categorical"]
    assert alt.data_transformers.get()(cat) == {"values": _altairs(cat)}


def _frame():
    return pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [3.0, 1.0, 2.0], "lo": [2.5, 0.5, 1.5], "hi": [3.5, 1.5, 2.5],
                         "g": ["a", "b", "a"]})


def _same(ours, altairs):
    assert type(ours) is type(altairs) or isinstance(ours, type(altairs))
    assert ours.to_dict() == altairs.to_dict()
    assert ours.to_json() == altairs.to_json()


def test_layering_gives_altairs_spec():
    d = _frame()
    chart = Chart(d).encode(y="g:N", tooltip=["x", "g", alt.Tooltip("y:Q", format=".2f")])
    bars, band = chart.mark_bar().encode(x="x:Q"), chart.mark_rule().encode(x="lo:Q", x2="hi:Q")
    _same((bars + band).properties(width=300, title="t"), alt.layer(bars, band).properties(width=300, title="t"))
    # different data: nothing lifted
    rule = Chart(pd.DataFrame({"x": [2.0]})).mark_rule().encode(x="x:Q")
    _same(bars + rule, alt.layer(bars, rule))
    # the same frame in two Chart objects is lifted, as Altair does
    other = Chart(d).mark_point().encode(x="x:Q", y="y:Q")
    _same(Chart(d).mark_line().encode(x="x:Q", y="y:Q") + other,
          alt.layer(Chart(d).mark_line().encode(x="x:Q", y="y:Q"), other))


def test_layering_leaves_params_and_sizes_to_altair():
    d = _frame()
    a = Chart(d).mark_point().encode(x="x:Q", y="y:Q")
    sized = a.properties(width=200)
    assert (sized + a).to_dict() == alt.layer(sized, a).to_dict()
    interactive = a.interactive()
    assert (interactive + a).to_dict() == alt.layer(interactive, a).to_dict()
    with pytest.raises(TypeError):
        a + a.encode(row="g:N")


def test_hconcat_gives_altairs_spec():
    d = _frame()
    a = Chart(d).mark_line().encode(x="x:Q", y="y:Q")
    b = Chart(d).mark_point().encode(x="x:Q", y="y:Q")
    left, right = (a + b).properties(width=200), b.properties(width=100)
    _same(base.hconcat(left, right), alt.hconcat(left, right))
    c = Chart(pd.DataFrame({"x": [1.0]})).mark_point().encode(x="x:Q")
    _same(base.hconcat(left, c), alt.hconcat(left, c))


def test_a_concatenation_of_sized_charts_is_built_without_altairs_copies(monkeypatch):
    """Sized parts (``properties(width=...)``) are settled in a concatenation (Altair moves no size
    there); a layer chart with named layers is left to Altair, which renames them by position."""
    d = _frame()
    a = Chart(d).mark_line().encode(x="x:Q", y="y:Q")
    b = Chart(d).mark_point().encode(x="x:Q", y="y:Q")
    left, right = (a + b).properties(width=200, title="l"), (a + b).properties(width=100, height=80)
    expected = alt.hconcat(left, right).properties(title="t")
    with monkeypatch.context() as m:
        m.setattr(base._api, "_combine_subchart_params", lambda *a: pytest.fail("Altair's lifting ran"))
        ours = base.hconcat(left, right).properties(title="t")
    _same(ours, expected)
    named = alt.layer(a.properties(name="v"), b)
    assert not base._settled(alt.Undefined, [named, right], {}, concat=True)
    _same(base.hconcat(named, right), alt.hconcat(named, right))


def test_a_facet_chart_gives_altairs_spec_without_its_copies(monkeypatch):
    d = _frame()
    bars = Chart().mark_bar().encode(x="x:O", y="y:Q").properties(width=100)
    expected = alt.FacetChart(data=d, spec=bars, facet=alt.Facet("g:N"), columns=2).resolve_scale(
        x="independent").properties(title="t")
    with monkeypatch.context() as m:
        m.setattr(base._api, "_combine_subchart_params", lambda *a: pytest.fail("Altair's lifting ran"))
        ours = base.FacetChart(data=d, spec=bars, facet=alt.Facet("g:N"), columns=2).resolve_scale(
            x="independent").properties(title="t")
    _same(ours, expected)
    interactive = Chart().mark_point().encode(x="x:Q", y="y:Q").interactive()     # parameters: Altair's way
    _same(base.FacetChart(data=d, spec=interactive, facet=alt.Facet("g:N")),
          alt.FacetChart(data=d, spec=interactive, facet=alt.Facet("g:N")))


def test_the_whole_spec_is_still_validated():
    chart = base.quiet(lambda: Chart(_frame()).mark_point().encode(x=alt.X("x:Q", scale=alt.Scale(type="nolog"))))()
    with pytest.raises(SchemaValidationError):
        chart.to_dict()
    with pytest.raises(SchemaValidationError):
        Chart(_frame()).mark_point().encode(x="x:Q").properties(width="wide").to_dict()


def test_copies_of_compound_charts_keep_altairs_spec():
    d = _frame()
    a = Chart(d).mark_line().encode(x="x:Q", y="y:Q")
    b = Chart(d).mark_point().encode(x="x:Q", y="y:Q")
    ours, altairs = a + b, alt.layer(a, b)
    for op in (lambda c: c.copy(), lambda c: c.copy(deep=False), lambda c: c.encode(color="g:N"),
               lambda c: c.properties(height=120), lambda c: c + Chart(d).mark_rule().encode(y="y:Q"),
               lambda c: c.interactive()):
        assert op(ours).to_dict() == op(altairs).to_dict()
    cat = base.hconcat(ours, b.properties(width=90))
    assert cat.copy(deep=False).to_dict() == alt.hconcat(altairs, b.properties(width=90)).to_dict()


_ZERO_BAR = re.compile(r'<path (?:aria-label="[^"]*" )?role="graphics-symbol" aria-roledescription="bar" '
                       r'd="M[-\d.e]+,[-\d.e]+h[-\d.e]+v0h[-\d.e]+Z"(?: fill="[^"]*")?/>')


def test_step_breakdown_draws_no_zero_height_bars_and_the_same_picture(monkeypatch):
    """The components taking no time are left out of the step breakdown's data; drawn with them put
    back, the SVG is the same but for their zero-height bars."""
    import vl_convert as vlc

    from workbook.views.charts import scaling

    rows = []
    for acc in ("A", "B"):
        for x in (8, 16, 32):
            for comp, sec in (("compute", 1.0 + x / 100), ("recomputation", 0.0), ("pipeline bubble", 0.1 * (x > 8)),
                              ("exposed communication", 0.02 * x), ("optimizer update", 0.0)):
                rows.append({"accelerator": acc, "x": x, "x_name": "chips", "component": comp, "seconds": sec})
    rows += [{"accelerator": "C", "x": 8, "x_name": "chips", "component": c, "seconds": 0.0}
             for c in ("compute", "optimizer update")]            # a column of nothing keeps its rows
    parts = pd.DataFrame(rows)
    spec = scaling.step_breakdown(parts).to_dict()
    (name, data), = spec["datasets"].items()
    assert all(r["seconds"] != 0 for r in data if r["accelerator"] != "C")
    assert sum(r["accelerator"] == "C" for r in data) == 2
    assert spec["spec"]["encoding"]["color"]["scale"]["domain"] == [
        "compute", "recomputation", "pipeline bubble", "exposed communication", "optimizer update"]
    total = parts.groupby(["accelerator", "x"])["seconds"].transform("sum")
    dropped = parts[(parts["seconds"] == 0) & (total != 0)].assign(share=0.0)
    with_zeros = {**spec, "datasets": {name: data + dropped.to_dict(orient="records")}}
    monkeypatch.setenv("FONTCONFIG_FILE", str(converter.FONTS_CONF))
    ours, theirs = vlc.vegalite_to_svg(spec), vlc.vegalite_to_svg(with_zeros)
    assert ours != theirs
    stripped, n = _ZERO_BAR.subn("", theirs)
    assert n == len(dropped) and stripped == ours
