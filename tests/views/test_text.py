"""Numbers, money and tables for people (one format for notebooks, app and reports), and the
explanations and verdicts in words."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workbook import load_scenario
from workbook.analysis import analyse
from workbook.views import text


@pytest.mark.parametrize("value, shown", [
    (0, "0"), (0.0, "0"), (0.5, "0.5"), (0.12345, "0.123"), (3.14159, "3.14"), (99.4, "99.4"), (99.96, "100"),
    (123.4, "123"), (999.6, "1,000"), (45_600.0, "45,600"), (1_234_567.0, "1.23 million"),
    (999_960_000.0, "1 billion"), (2.5e9, "2.5 billion"), (7e12, "7 trillion"),
    (3e15, "3,000 trillion"), (1.307e15, "1,310 trillion"), (999.96e12, "1,000 trillion"), (2.5e18, "2.5e+18"),
    (0.0004, "0.0004"), (-1500.0, "-1,500"), (12_345, "12,345"), (np.int64(1024), "1,024"),
    (np.float64(0.25), "0.25"), (True, "yes"), (np.bool_(False), "no"),
])
def test_number_has_three_significant_digits_and_words_for_large_figures(value, shown):
    assert text.number(value) == shown


@pytest.mark.parametrize("blank", [None, math.nan, math.inf, -math.inf, pd.NA, np.nan])
def test_a_blank_figure_is_a_dash(blank):
    assert text.number(blank) == text.BLANK == "–"
    assert text.money(blank) == "–"


def test_text_passes_through_number():
    assert text.number("H100") == "H100"


@pytest.mark.parametrize("value, shown", [
    (1.234e9, "$1.23B"), (2.5e6, "$2.50M"), (45_600, "$45,600"), (100, "$100"), (2.134, "$2.13"),
    (0.2134, "$0.213"), (-3.5e6, "$-3.50M"), ("12", "$12.00"),
])
def test_money_reads_in_units_of_dollars(value, shown):
    assert text.usd(value) == shown == text.money(value)


def test_usd_says_n_a_for_a_blank_in_sentences():
    assert text.usd(None) == "n/a" and text.usd(float("nan")) == "n/a" and text.usd("x") == "n/a"


def test_table_html_escapes_labels_and_formats_numbers():
    df = pd.DataFrame({"accelerator": ["<H100>", "B200"], "cost_usd": [1234.5, np.nan], "fits": [True, False],
                       "tp": [8, 4]})
    html = text.table_html(df, ["accelerator", "cost_usd", "fits", "tp"], labels={"cost_usd": "Cost"},
                           highlight_first=True)
    assert "&lt;H100&gt;" in html and "<H100>" not in html
    assert "<th>Cost</th>" in html and "<td>1,234</td>" in html and "<td>–</td>" in html
    assert "<td>yes</td>" in html and '<tr class="wb-best">' in html
    assert html.count("<tr") == 3


def test_table_html_keeps_an_informative_index_and_drops_a_range_index():
    wide = pd.DataFrame({"H100": ["TP8"], "B200": ["TP4"]}, index=pd.Index([64], name="chips"))
    assert "<th>chips</th>" in text.table_html(wide)
    assert ">0<" not in text.table_html(pd.DataFrame({"a": ["x"]}))


def test_table_html_of_no_rows_and_of_many_rows():
    assert "No rows" in text.table_html(pd.DataFrame())
    html = text.table_html(pd.DataFrame({"i": range(150)}), max_rows=100)
    assert html.count("<tr") == 101 and "The first 100 of 150 rows" in html


def test_markdown_html_turns_bullets_and_bold_into_html():
    html = text.markdown_html("**Verdict**\n- **H100**: fine <ok>\n- B200")
    assert html == "<p><b>Verdict</b></p><ul><li><b>H100</b>: fine &lt;ok&gt;</li><li>B200</li></ul>"


def test_header_markdown_names_the_scenario_and_workload():
    s = load_scenario("chat-70b-realtime")
    md = text.header_markdown(s)
    assert md.startswith(f"**{s.title}**") and f"`{s.name}`" in md and s.workload.precision in md


# --- explanations ----------------------------------------------------------------------------------

def test_explain_layout_names_the_dimensions_in_use():
    cfg = {"accelerator": "H100-SXM5-80GB", "chips": 1024, "tp": 8, "pp": 4, "vpp": 2, "dp": 32, "cp": 1, "ep": 1,
           "zero": 1, "recompute": "selective", "micro_batch": 1, "microbatches": 16, "step_time_s": 2.0,
           "compute_s": 1.5, "exposed_comm_s": 0.2, "bubble_s": 0.2, "recompute_s": 0.1, "optimizer_s": 0.0,
           "tokens_per_s": 1e6, "mfu": 0.4, "memory_per_chip_bytes": 6e10}
    out = text.explain_layout(cfg)
    for phrase in ("tensor parallel 8", "pipeline parallel 4", "data parallel 32 with ZeRO-1", "compute 75%",
                   "pipeline bubble 10%"):
        assert phrase in out
    assert "context parallel" not in out and "No configuration" in text.explain_layout(None)
    assert out._repr_markdown_() == str(out)
    assert "Training takes 2.5 days" in text.explain_layout({**cfg, "training_days": 2.5})


def test_explain_layout_of_a_serving_row_reads_milliseconds():
    row = {"task": "inference", "accelerator": "H200", "tp": 4, "batch": 64, "output_tokens_per_s": 2000.0,
           "output_tokens_per_s_per_chip": 500.0, "tpot_ms": 32.0, "ttft_ms": 210.0}
    out = text.explain_layout(row)
    assert "32.0 ms per output token" in out and "210 ms to prefill" in out
    assert "one chip per replica" in text.explain_layout({**row, "tp": 1})


def test_serving_verdict_reads_the_new_column_names():
    curves = pd.DataFrame({"accelerator": ["H200"] * 2, "tp": [1, 8], "chosen": [True, True],
                           "tpot_ms": [40.0, 12.5], "ttft_ms": [300.0, 60.0],
                           "output_tokens_per_s_per_chip": [900.0, 400.0]})
    out = text.scaling_verdict(curves)
    assert "from TP1 to TP8" in out and "from 40.0 to 12.5 ms" in out and "900 to 400" in out


def test_verdict_and_layout_of_real_scenarios_are_sentences():
    from workbook.model import tables

    for name in ("llama2-7b-pretrain", "chat-70b-realtime"):
        s = load_scenario(name)
        assert text.scaling_verdict(tables.scenario_curves(s)).strip().startswith("- **")
        assert text.explain_layout(tables.scenario_best(s)).startswith("**")


# --- the recommendation ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rec():
    return analyse(load_scenario("chat-70b-realtime"), n_draws=2000).recommendation


def test_recommendation_card_names_the_choice_in_data_attributes(rec):
    html = text.recommendation_html(rec)
    assert f'data-accelerator="{rec.accelerator}"' in html and f'data-pricing-model="{rec.pricing_model}"' in html
    assert html.count('class="wb-figure"') >= 3 and "Runner-up" in html
    assert html.count("<li>") >= len(rec.reasons) + len(rec.flip_conditions)


def test_recommendation_markdown_and_table_say_the_same(rec):
    md = text.recommendation_markdown(rec)
    headline = rec.as_dict()["summary"]
    assert md.startswith(f"**Recommendation: {headline}**") and "**Runner-up:**" in md
    table = text.recommendation_table(rec)
    assert table["detail"].iloc[0] == headline and (table[""] == "why").sum() == len(rec.reasons)


def test_key_figures_put_money_first(rec):
    figs = text.key_figures(rec.figures)
    assert figs[0][0].startswith("$") and "per million output tokens" in figs[0][1]
    assert text.key_figures({"training_days": 4.25}) == [("4.2 days", "to finish")]


def test_a_workload_read_from_a_hugging_face_config_is_named_by_its_config():
    from types import SimpleNamespace

    w = SimpleNamespace(model=None, hf_config="models/llama/config.json", architecture=object())
    assert text.model_label(w) == "config models/llama/config.json"
    assert text.model_label(SimpleNamespace(model="llama-3.1-8b", hf_config=None, architecture=None)) == "llama-3.1-8b"
    assert text.model_label(SimpleNamespace(model=None, hf_config=None, architecture=None)) == "generic model"


def test_table_html_reads_each_column_as_iterating_it_does():
    """``text._values`` reads numpy and Python-string columns in one call: the same values, of the same
    types (Python floats, ints, booleans, the strings and blanks as stored), as ``list(col)``; other
    extension columns (nullable ints and booleans, categories, dates) are iterated."""
    df = pd.DataFrame({"f": [1.5, np.nan, -0.0, np.inf], "i": [1, 2, 3, 4], "b": [True, False, True, False],
                       "s": pd.Series(["a", None, "a", "<b>"], dtype="str"), "o": ["x", None, 3, [1, 2]],
                       "n": pd.array([1, None, 3, 4], dtype="Int64"), "nb": pd.array([True, None, False, True], dtype="boolean"),
                       "c": pd.Categorical(["u", "v", "u", "v"]), "d": pd.to_datetime(["2026-01-01"] * 4)})
    for c in df.columns:
        got, want = text._values(df[c]), list(df[c])
        assert [type(v) for v in got] == [type(v) for v in want], c
        assert all(g is w or g == w or (g != g and w != w) for g, w in zip(got, want)), c
    html = text.table_html(df)
    assert "<td>1.5</td>" in html and "&lt;b&gt;" in html and "<td>yes</td>" in html and "<td>1</td>" in html
