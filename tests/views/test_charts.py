"""Every chart function, through ``chart.to_dict()``: the field or encoding a reader relies on, on the
frames the notebooks pass (a serving and a training scenario). ``to_dict`` also runs Altair's row
limit (5,000 rows without ``disable_max_rows``), so a frame too big for a chart fails here."""
from __future__ import annotations

import sys

import pandas as pd
import pytest
import vl_convert as vlc

from workbook import catalog, cost, load_scenario
from workbook.calibrate import runs as calruns
from workbook.model import tables
from workbook.model import search as train_search
from workbook.analysis import analyse
from workbook.model.profile import workload_profile
from workbook.terms import pricing_short
from workbook.views import charts
from workbook.views.charts import cost as cc
from workbook.views.charts import perf as cp
from workbook.views.charts import scaling as sc

SERVING = "chat-70b-realtime"
TRAINING = "llama-70b-pretrain"


@pytest.fixture(scope="module")
def serving():
    return analyse(load_scenario(SERVING), n_draws=2000)


@pytest.fixture(scope="module")
def training():
    return analyse(load_scenario(TRAINING), n_draws=2000)


@pytest.fixture(scope="module")
def curves():
    return {name: tables.scenario_curves(load_scenario(name)) for name in (SERVING, TRAINING)}


def _layers(spec: dict) -> list[dict]:
    return spec.get("layer") or [spec]


def _mark(layer: dict) -> str:
    m = layer["mark"]
    return m["type"] if isinstance(m, dict) else m


def _fields(spec) -> set[str]:
    """Every ``field`` named anywhere in a spec."""
    if isinstance(spec, dict):
        here = {spec["field"]} if isinstance(spec.get("field"), str) else set()
        return here.union(*(_fields(v) for v in spec.values()))
    if isinstance(spec, list):
        return set().union(*(_fields(v) for v in spec)) if spec else set()
    return set()


def test_empty_chart_says_why_in_words():
    spec = charts.empty("nothing to draw").to_dict()
    assert spec["mark"]["type"] == "text" and spec["encoding"]["text"]["field"] == "text"
    assert spec["datasets"][next(iter(spec["datasets"]))] == [{"text": "nothing to draw"}]


def test_importing_the_charts_keeps_altairs_row_limit():
    import altair as alt

    assert alt.data_transformers.active == "default"
    assert alt.data_transformers.options.get("max_rows", 5000) == 5000


# --- performance -----------------------------------------------------------------------------------

def test_roofline_chart_puts_the_workload_points_on_each_chip(serving):
    s = serving.scenario
    spec = cp.roofline(tables.roofline_lines(s), tables.operating_points(s, serving.perf)).to_dict()
    assert len(spec["layer"]) == 2
    assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    assert spec["layer"][1]["encoding"]["shape"]["field"] == "point"


def test_comparison_chart_has_an_error_bar_from_the_bands(training):
    spec = cp.comparison(training.perf).to_dict()
    assert [_mark(x) for x in spec["layer"]] == ["bar", "errorbar"]
    assert spec["layer"][0]["encoding"]["x"]["field"] == "training_days"
    assert spec["layer"][1]["encoding"]["x2"]["field"] == "training_days_high"


def test_serving_comparison_is_per_chip_throughput(serving):
    spec = cp.comparison(serving.perf).to_dict()
    assert spec["layer"][0]["encoding"]["x"]["field"] == "output_tokens_per_s_per_chip"


def test_memory_breakdown_stacks_components_in_gigabytes(training):
    spec = cp.memory_breakdown(tables.memory_breakdown(training.scenario)).to_dict()
    assert spec["encoding"]["x"]["field"] == "gb" and spec["encoding"]["x"]["aggregate"] == "sum"
    assert spec["encoding"]["color"]["field"] == "component"


def test_calibration_chart_has_one_panel_per_kind():
    spec = cp.calibration(calruns.calibration_table()).to_dict()
    assert spec["facet"]["field"] == "kind"
    assert {"value", "predicted"} <= _fields(spec["spec"])


# --- scaling ---------------------------------------------------------------------------------------

def test_training_scaling_curves_show_throughput_per_chip_and_days(curves):
    spec = sc.scaling_curves(curves[TRAINING]).to_dict()
    left, right = spec["hconcat"]
    assert left["encoding"]["y"]["field"] == "tokens_per_s_per_chip"
    assert left["layer"][0]["encoding"]["x"]["scale"] == {"type": "log", "base": 2}
    assert left["layer"][1]["encoding"]["shape"]["field"] == "network"
    assert right["encoding"]["y"]["field"] == "training_days"


def test_serving_scaling_curves_are_against_tensor_parallel_size(curves):
    spec = sc.scaling_curves(curves[SERVING]).to_dict()
    thr, lat = spec["hconcat"]
    assert thr["layer"][0]["encoding"]["x"]["field"] == "tp"
    assert thr["encoding"]["y"]["field"] == "output_tokens_per_s_per_chip"
    assert lat["encoding"]["y"]["field"] == "tpot_ms"
    assert lat["layer"][0]["encoding"]["strokeDash"]["field"] == "batch_kind"


def test_tp_curves_read_milliseconds(curves):
    spec = sc.tp_curves(curves[SERVING]).to_dict()
    lat = spec["hconcat"][1]
    rows = spec["datasets"][lat["data"]["name"]]
    chosen = [r for r in rows if r["batch_kind"] == "chosen batch"]
    assert chosen and all(1 < r["tpot_ms"] < 10_000 for r in chosen)


def test_mfu_curves_show_both_measures_for_training_and_a_sentence_for_serving(curves):
    spec = sc.mfu_curves(curves[TRAINING]).to_dict()
    assert spec["encoding"]["strokeDash"]["field"] == "measure"
    assert spec["encoding"]["y"]["axis"]["format"] == "%"
    assert sc.mfu_curves(curves[SERVING]).to_dict()["mark"]["type"] == "text"


@pytest.mark.parametrize("name", [TRAINING, SERVING])
def test_step_breakdown_takes_the_tidy_breakdown(curves, name):
    spec = sc.step_breakdown(tables.breakdown(curves[name])).to_dict()
    assert spec["facet"]["field"] == "accelerator"
    assert spec["spec"]["encoding"]["y"]["stack"] == "normalize"
    assert spec["spec"]["encoding"]["color"]["field"] == "component"
    assert vlc.vegalite_to_svg(spec).startswith("<svg")


def test_step_breakdown_of_nothing_says_so():
    empty = pd.DataFrame(columns=["accelerator", "x", "component", "seconds", "x_name"])
    assert sc.step_breakdown(empty).to_dict()["mark"]["type"] == "text"


def test_configurations_chart_stacks_the_step_parts():
    s = load_scenario("llama2-7b-pretrain")
    table = train_search.search(workload_profile(s.workload), catalog.accelerator("H100-SXM5-80GB"), 64, s.workload)
    spec = sc.configurations_breakdown(table, top=5).to_dict()
    assert spec["mark"]["type"] == "bar" and spec["encoding"]["x"]["field"] == "seconds"
    assert spec["encoding"]["y"]["field"] == "configuration"


# --- cost and decision -----------------------------------------------------------------------------

def test_pricing_models_chart_names_ways_to_pay_from_terms(serving):
    spec = cc.pricing_models(serving.priced).to_dict()
    bars, band = spec["layer"]
    assert bars["encoding"]["x"]["field"] == "usd_per_million_tokens"
    assert band["encoding"]["x2"]["field"] == "usd_per_million_tokens_high"
    assert set(bars["encoding"]["color"]["sort"]) <= {pricing_short(m) for m in serving.scenario.pricing.models}


def test_pricing_models_of_a_training_run_is_the_cost_of_the_run(training):
    assert cc.pricing_models(training.priced).to_dict()["layer"][0]["encoding"]["x"]["field"] == "cost_usd"


def test_offers_chart_ranks_each_offer_by_its_point_estimate(training, serving):
    """One bar per ranked offer (offering x way to pay), first by rank, at most ``top``."""
    spec = cc.offers(training.offers, top=10).to_dict()
    bars, band = spec["layer"]
    assert bars["encoding"]["x"]["field"] == "cost_usd" and band["encoding"]["x2"]["field"] == "cost_usd_high"
    rows = spec["datasets"][next(iter(spec["datasets"]))]
    assert len(rows) == 10 and [r["rank"] for r in rows] == list(range(1, 11))
    assert rows[0]["offering"] == training.recommendation.offering
    tips = {t["field"] for t in bars["encoding"]["tooltip"]}
    assert {"training_days", "p_meets_deadline", "goodput"} <= tips
    assert cc.offers(serving.offers).to_dict()["layer"][0]["encoding"]["x"]["field"] == "usd_per_million_tokens"


def test_breakeven_chart_is_cumulative_cost_against_months(serving):
    curves = cost.breakeven_curves(serving.scenario, serving.priced)
    spec = cc.breakeven_chart(curves).to_dict()
    assert spec["encoding"]["x"]["field"] == "month"
    assert spec["encoding"]["y"]["field"] == "cumulative_usd_per_chip"
    assert spec["encoding"]["color"]["field"] == "way to pay"


def test_mc_distribution_is_share_of_draws_per_option(serving):
    spec = cc.mc_distribution(cost.mc_histogram(serving.scenario, serving.priced)).to_dict()
    assert spec["encoding"]["y"]["field"] == "share" and spec["encoding"]["color"]["field"] == "option"


def test_tornado_bars_swing_around_the_base(serving):
    option = serving.recommendation.ranking["option"].iloc[0]
    spec = cc.tornado_chart(cost.tornado(serving.scenario, serving.priced, option)).to_dict()
    bars, rule = spec["layer"]
    assert bars["encoding"]["x2"]["field"] == "base" and rule["mark"]["type"] == "rule"


@pytest.mark.parametrize("which, time_field", [("serving", "tpot_ms"), ("training", "training_days")])
def test_pareto_chart_is_cost_against_time(request, which, time_field):
    a = request.getfixturevalue(which)
    spec = cc.pareto_chart(a.recommendation.ranking).to_dict()
    assert spec["encoding"]["y"]["field"] == time_field
    assert spec["encoding"]["opacity"]["field"] == "front"
    assert spec["encoding"]["shape"]["field"] == "way to pay"


def test_interactivity_curve_is_throughput_per_chip_against_tokens_per_user_with_the_cost_at_each_point(serving):
    """The InferenceX-style curve: x = 1000 / tpot_ms, y = output tokens/s per chip from the serving model's TP
    curve, and the cost per million tokens at full load = $/chip-hour / (3,600 x tokens/s per chip) x 1e6."""
    s = load_scenario(SERVING)
    d = tables.interactivity_curve(s, serving.offers)
    assert 2 <= d["accelerator"].nunique() <= 4 and d["frontier"].any()
    assert (d["tokens_per_s_per_user"] - 1000.0 / d["tpot_ms"]).abs().max() < 1e-9
    cost = d["usd_per_chip_hour"] / (3600.0 * d["output_tokens_per_s_per_chip"]) * 1e6
    assert (d["usd_per_million_tokens_full_load"] - cost).abs().max() < 1e-9
    # one offer's frontier: more tokens per user never comes with more throughput per chip
    f = d[d["frontier"] & (d["offer"] == d["offer"].iloc[0])].sort_values("tokens_per_s_per_user")
    assert f["output_tokens_per_s_per_chip"].is_monotonic_decreasing
    spec = sc.interactivity(d).to_dict()
    marks = {_mark(layer) for layer in _layers(spec)}
    assert {"line", "text"} <= marks and {"tokens_per_s_per_user", "output_tokens_per_s_per_chip", "cost_label"} <= _fields(spec)


def test_interactivity_curve_is_empty_for_training_and_the_chart_says_so(training):
    d = tables.interactivity_curve(load_scenario(TRAINING), training.offers)
    assert d.empty
    assert "Serving scenarios only" in str(sc.interactivity(d).to_dict())


# --- every chart carries the columns it reads, and only those (views.charts.base.keep) ----------------

def _notebook_charts(a, curves_frame):
    """Every chart the report notebooks draw, on one analysis (as ``benchmarks/bench_charts.py``)."""
    s = a.scenario
    return {
        "memory_breakdown": cp.memory_breakdown(tables.memory_breakdown(s)),
        "roofline": cp.roofline(tables.roofline_lines(s), tables.operating_points(s, a.perf)),
        "comparison": cp.comparison(a.perf),
        "calibration": cp.calibration(calruns.calibration_table()),
        "scaling_curves": sc.scaling_curves(curves_frame),
        "mfu_curves": sc.mfu_curves(curves_frame),
        "step_breakdown": sc.step_breakdown(tables.breakdown(curves_frame)),
        "pricing_models": cc.pricing_models(a.priced),
        "interactivity": sc.interactivity(tables.interactivity_curve(s, a.offers)),
        "breakeven": cc.breakeven_chart(cost.breakeven_curves(s, a.priced)),
        "mc_distribution": cc.mc_distribution(cost.mc_histogram(s, a.priced, mc=a.mc)),
        "tornado": cc.tornado_chart(cost.tornado(s, a.priced)),
        "pareto": cc.pareto_chart(a.recommendation.ranking),
        "offers": cc.offers(a.offers),
    }


def _computed(spec) -> set[str]:
    """Fields a spec makes itself (``calculate``/aggregate ``as``)."""
    if isinstance(spec, dict):
        here = {spec["as"]} if isinstance(spec.get("as"), str) else set()
        return here.union(*(_computed(v) for k, v in spec.items() if k != "datasets"))
    if isinstance(spec, list):
        return set().union(*(_computed(v) for v in spec)) if spec else set()
    return set()


@pytest.mark.parametrize("which", ["serving", "training"])
def test_every_chart_has_every_column_it_reads_and_not_the_whole_table(request, curves, which):
    """The frames handed over carry 57 (offers, performance) to 117 (priced options) columns; a chart
    keeps those it reads (and a few it derives its own from)."""
    from workbook.views.charts import base

    a = request.getfixturevalue(which)
    for name, chart in _notebook_charts(a, curves[SERVING if which == "serving" else TRAINING]).items():
        spec = chart.to_dict()
        read: set[str] = set()
        assert base.used_fields(spec, read), name
        columns = {c for rows in spec["datasets"].values() for row in rows for c in row}
        assert read - _computed(spec) <= columns, (name, read - _computed(spec) - columns)
        assert len(columns) <= 20 and len(columns - read) <= 8, (name, columns - read)


def test_pareto_chart_leaves_the_ranking_it_is_given_alone(serving):
    ranking = serving.recommendation.ranking.copy()
    cc.pareto_chart(ranking)
    pd.testing.assert_frame_equal(ranking, serving.recommendation.ranking)


def test_keep_cuts_a_frame_to_the_columns_named_by_strings_and_channels():
    import altair as alt

    from workbook.views.charts.base import column_names, keep

    frame = pd.DataFrame({"a": [1], "b": [2], "c": [3], "d d": [4]})
    items = ["c:Q", alt.Tooltip("a:Q", format=".0f"), [alt.X(field="d d"), "missing"], "c"]
    assert column_names(*items) == ["c", "a", "d d", "missing"]
    assert list(keep(frame, *items).columns) == ["c", "a", "d d"]
    assert keep(frame, "b").equals(frame[["b"]])



WARNING_CHART = """
import pandas as pd
from workbook.views.charts import base
d = pd.DataFrame({"x": [1.0, 2.0], "y": ["a", "b"], "tied": ["-", "tied with the first"]})
chart = base.Chart(d).mark_bar().encode(x="x:Q", y="y:N", opacity="tied:N")
print(base.static_bundle(chart)["image/svg+xml"][:4])
"""


def test_drawing_writes_no_vega_lite_warning_to_stderr():
    """vl-convert 2.0 forwards Vega-Lite's compile warnings to Python's logging (1.x dropped them), whose
    last-resort handler writes them to stderr, that is into a report cell's output; ``views.charts.base``
    keeps them out. The chart makes Vega-Lite warn (opacity on an unsorted discrete field, as the offers
    chart's tie marker does). In a fresh process: pytest's own log capture would hide the stderr."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", WARNING_CHART], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "<svg\n"
    assert done.stderr == ""


def test_the_converter_reads_no_url():
    """``converter.converter()``: vl-convert 2.0 would fetch a chart's data from any http(s) URL and resolve a
    relative path against the vega-datasets CDN; configured, it refuses before any request is made."""
    from workbook.views.charts import converter

    for data in ({"url": "https://example.invalid/data.csv"}, {"url": "data/cars.json"}):
        with pytest.raises(Exception, match="VLC_ACCESS_DENIED|Unsupported data URL"):
            converter.converter().vegalite_to_svg({"data": data, "mark": "point"})
    assert converter.converter().get_config()["allowed_base_urls"] == []


def test_an_older_vl_convert_is_named_with_the_fix(monkeypatch):
    """vl-convert 1.x has no ``configure``: the first chart says which version is installed and how to
    get the pinned one, instead of an AttributeError deep in a report."""
    import types

    from workbook.views.charts import converter

    monkeypatch.setitem(sys.modules, "vl_convert", types.SimpleNamespace(__version__="1.9.0"))
    with pytest.raises(RuntimeError, match=r"vl-convert-python 1\.9\.0 is installed.*2\.0\.0rc7.*pip install -e"):
        converter.converter.__wrapped__()


def test_the_apps_converter_collects_after_each_drawing_and_still_reads_no_url():
    """``long_lived_converter`` (the app's kernels) adds V8's collection after each drawing to
    ``converter``'s settings. In a fresh process: the setting is process-wide and costs CPU per drawing."""
    import json
    import subprocess
    import sys

    code = ("import json; from workbook.views.charts import converter as c; v = c.long_lived_converter(); "
            "print(json.dumps(v.get_config()))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    config = json.loads(done.stdout)
    assert config["gc_after_conversion"] is True
    assert config["allowed_base_urls"] == [] and config["base_url"] is False


def _text_width(font: str, text: str, size: float) -> float:
    """vl-convert's width of ``text`` in ``font`` (a text mark's bounds, read back through a second mark)."""
    from workbook.views.charts import converter

    enter = {"text": {"value": text}, "font": {"value": font}, "fontSize": {"value": size}}
    spec = {"width": 10, "height": 10, "data": [{"name": "t", "values": [{}]}],
            "marks": [{"type": "text", "name": "texts", "from": {"data": "t"}, "encode": {"enter": enter}},
                      {"type": "rect", "from": {"data": "texts"},
                       "encode": {"enter": {"x": {"field": "bounds.x1"}, "x2": {"field": "bounds.x2"},
                                            "y": {"value": 0}, "height": {"value": 1}}}}]}
    scene = converter.converter().vega_to_scenegraph(spec)["scenegraph"]
    return scene["items"][0]["items"][1]["items"][0]["width"]


def test_every_font_family_is_the_vendored_liberation_sans():
    """With ``vendored_fonts_only`` (tests/conftest.py sets it, as a report process does) vl-convert
    lays text out in its own Liberation Sans whatever family a spec names, so a chart does not depend on
    a machine's fonts. Golden figure: "Hello World" in Liberation Sans Regular, from the font's advance
    widths (hmtx, 2,048 units per em: H 1479, e 1139, l 455, o 1139, space 569, W 1933, r 682, d 1139)
    and its pair kerning of "Wo" (-37): 10,547 units, so 102.998046875 px at 20 px."""
    from workbook.views.charts import converter

    assert converter.vendored_font()
    families = ("sans-serif", "Liberation Sans", "DejaVu Sans", "serif", "monospace")
    golden = 10547 / 2048 * 20
    assert {f: _text_width(f, "Hello World", 20) for f in families} == dict.fromkeys(families, golden)


def test_typed_channels_give_altairs_own_spec():
    """``base.Chart.encode`` writes out the type of a plain column name where Altair's inference is
    certain (``base.typed``); the spec must be the one Altair makes by inferring it, for every dtype
    (those it leaves alone included)."""
    import json

    import altair as alt
    import numpy as np

    from workbook.views.charts import base

    d = pd.DataFrame({
        "i": [1, 2, 3], "u": np.array([1, 2, 3], dtype="uint8"), "f": [1.5, np.nan, 2.0], "b": [True, False, True],
        "s": ["a", "b", None], "way to pay": ["on-demand", "spot", "spot"], "mixed": ["a", 1, 2.0],
        "objnum": pd.Series([1, 2, 3], dtype=object), "objbool": pd.Series([True, False, True], dtype=object),
        "empty_obj": pd.Series([None, None, None], dtype=object), "nan_obj": pd.Series([np.nan] * 3, dtype=object),
        "cat": pd.Categorical(["x", "y", "x"]), "ocat": pd.Categorical(["lo", "hi", "lo"], categories=["lo", "hi"], ordered=True),
        "when": pd.to_datetime(["2026-01-01", "2026-02-01", "2026-03-01"]), "Int": pd.array([1, None, 3], dtype="Int64"),
        "str": pd.array(["a", "b", "c"], dtype="string")})
    names = list(d.columns)
    assert base.typed("i", d) == "i:Q" and base.typed("b", d) == "b:N" and base.typed("way to pay", d) == "way to pay:N"
    assert base.typed("mixed", d) == "mixed" and base.typed("i:O", d) == "i:O" and base.typed("sum(i)", d) == "sum(i)"
    assert base.typed("absent", d) == "absent" and base.typed("i", None) == "i"
    ours = base.Chart(d).mark_point().encode(x="i", y="f", color="s", tooltip=names).to_dict(validate=True)
    altairs = alt.Chart(d).mark_point().encode(x="i", y="f", color="s", tooltip=names).to_dict(validate=True)
    assert json.dumps(ours, sort_keys=True, default=str) == json.dumps(altairs, sort_keys=True, default=str)  # NaN != NaN


def test_a_pareto_axis_of_one_value_shows_three_digits():
    """Every option of llama2-7b-pretrain takes the same 4.42364 days: the time axis has one tick, the
    value, which Vega 6.4 writes as "4.423640"; the chart asks for three significant digits there, and
    leaves Vega's own ticks alone elsewhere (a narrow range keeps its digits)."""
    import re

    from workbook.views.charts import converter

    def ticks(days):
        ranking = pd.DataFrame({"rank": [1, 2], "accelerator": ["A", "B"], "offering": ["x", "y"],
                                "usd_per_million_tokens": [1.0, 2.0], "training_days": days, "score": [1.0, 2.0],
                                "pricing_model": ["on_demand", "spot"], "pareto": [True, False]})
        svg = converter.converter().vegalite_to_svg(cc.pareto_chart(ranking).to_dict())
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
        return texts[texts.index("USD per million output tokens") + 1:texts.index("Days to train")]

    assert ticks([4.42364, 4.42364]) == ["4.42"]
    assert ticks([100.1, 100.9])[-2:] == ["100.8", "100.9"]
