"""``views.charts.base.static_bundle`` keeps drawn charts between processes (``svg_cache_folder``):
the same drawing is read back, a changed chart is drawn anew, and nothing is kept unless vl-convert
measures with its vendored font."""
from __future__ import annotations

import altair as alt
import pandas as pd
import pytest

from workbook.views.charts import base, converter


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FONTCONFIG_FILE", str(converter.FONTS_CONF))
    base._SVG_MEMO.clear()
    yield tmp_path / "svg"
    base._SVG_MEMO.clear()


def _chart(values=(3.0, 1.0)) -> alt.Chart:
    df = pd.DataFrame({"name": ["a", "b"], "value": list(values)})
    return base.Chart(df).mark_bar().encode(x="value:Q", y="name:N")


def test_a_chart_drawn_in_another_process_is_read_back_not_drawn(cache, monkeypatch):
    first = base.static_bundle(_chart())
    assert first == _chart()._repr_mimebundle_()
    assert len(list(cache.glob("*.json"))) == 1
    base._SVG_MEMO.clear()                                  # a new process: empty memo, same folder
    monkeypatch.setattr(alt.renderers, "get", lambda: pytest.fail("drawn again"))
    assert base.static_bundle(_chart()) == first


def test_a_different_chart_is_drawn_and_kept_apart(cache):
    a, b = base.static_bundle(_chart()), base.static_bundle(_chart((1.0, 3.0)))
    assert a != b and len(list(cache.glob("*.json"))) == 2


def test_an_unreadable_entry_is_drawn_again(cache):
    first = base.static_bundle(_chart())
    (entry,) = cache.glob("*.json")
    entry.write_text("{not json")
    base._SVG_MEMO.clear()
    assert base.static_bundle(_chart()) == first
    assert entry.read_text().startswith("{")


def test_nothing_is_kept_with_the_systems_fonts(cache, monkeypatch):
    monkeypatch.delenv("FONTCONFIG_FILE")
    assert base.svg_cache_folder() is None
    base.static_bundle(_chart())
    assert not cache.exists()


def test_the_folder_keeps_at_most_its_limit_oldest_out_first(cache, monkeypatch):
    import os

    monkeypatch.setattr(base, "SVG_CACHE_MAX_FILES", 2)
    written = []
    for i, v in enumerate((1.0, 2.0, 3.0)):
        base.static_bundle(_chart((v, 1.0)))
        (new,) = set(cache.glob("*.json")) - set(written)
        written.append(new)
        if i < 2:
            os.utime(new, (1_000_000 + i, 1_000_000 + i))     # older than the third, in write order
    assert set(cache.glob("*.json")) == set(written[1:])


def _frame_chart_fn():
    calls = []

    @base.shared_by_frame
    def chart_of(df: pd.DataFrame):
        calls.append(1)
        return base.Chart(df.copy()).mark_bar().encode(x="value:Q", y="name:N")

    return chart_of, calls


def test_a_shared_chart_is_built_once_per_equal_frame_and_drawn_as_built_anew(cache, monkeypatch):
    chart_of, calls = _frame_chart_fn()
    df = pd.DataFrame({"name": ["a", "b"], "value": [3.0, 1.0]})
    first = chart_of(df)
    assert chart_of(df.copy()) is first and len(calls) == 1          # an equal frame: the same chart
    bundle = base.static_bundle(first)
    assert bundle == _chart()._repr_mimebundle_()                     # drawn as the chart built anew
    monkeypatch.setattr(base, "slim_spec", lambda spec: pytest.fail("spec stage run again"))
    assert base.static_bundle(chart_of(df)) == bundle                 # its spec and key kept
    base._SVG_MEMO.clear()                                            # the memo emptied: read back from the folder
    assert base.static_bundle(first) == bundle


def test_a_shared_chart_of_another_frame_or_dtype_is_built_anew(cache):
    chart_of, calls = _frame_chart_fn()
    df = pd.DataFrame({"name": ["a", "b"], "value": [3.0, 1.0]})
    a = chart_of(df)
    assert chart_of(df.assign(value=[1.0, 3.0])) is not a
    assert chart_of(df.assign(value=df["value"].astype("float32"))) is not a
    assert chart_of(df.iloc[::-1]) is not a and len(calls) == 4
    assert base.static_bundle(chart_of(df.assign(value=[1.0, 3.0]))) == base.static_bundle(_chart((1.0, 3.0)))


def test_the_calibration_chart_is_shared_and_its_spec_unchanged():
    from workbook.calibrate import runs
    from workbook.views.charts import perf

    table = runs.calibration_table()
    chart = perf.calibration(table)
    assert perf.calibration(runs.calibration_table()) is chart
    assert chart.to_dict() == perf.calibration.__wrapped__(table).to_dict()


def test_the_svg_renderer_is_called_as_altair_calls_it(cache, monkeypatch):
    """``_rendered`` calls vl-convert as Altair's ``svg`` renderer does (the same bundle), and leaves a
    renderer with options (a locale) to Altair."""
    import altair.utils.mimebundle as mimebundle

    spec = _chart().to_dict()
    expected = alt.renderers.get()(spec)
    with monkeypatch.context() as m:                # not through Altair's version look-up
        m.setattr(mimebundle, "import_vl_convert", lambda: pytest.fail("Altair's renderer"))
        plain = base._rendered(spec)
    assert plain == expected
    with alt.renderers.enable("svg", embed_options={"formatLocale": "de-DE"}):
        localised = base._rendered(spec)
        assert localised == alt.renderers.get()(spec) != plain                  # "0,5", not "0.5"
