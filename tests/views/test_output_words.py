"""What a person or a script reads from the command line and the cards: the "no option" case in
words with the nearest change, the exit status, warnings and the figures that answer the question."""
import json

from cli_helpers import run_workbook
from workbook.views import text

NOFIT = """\
name: nofit
workload: {task: training, model: llama-2-7b, tokens: 2.0e+12, seq_len: 4096}
candidates: {accelerators: [H100-SXM5-80GB], pricing_models: [on_demand]}
constraints: {deadline_days: 1, max_chips: 64}
"""


def _run(*args):
    """The command in this test's process (``cli_helpers.run_workbook``; exit status = ``cli.main``'s return)."""
    return run_workbook(*args)


def test_no_option_is_said_in_words_with_the_nearest_change_and_exit_status_1(write_yaml):
    path = write_yaml(NOFIT)
    r = _run("estimate", str(path))
    assert r.returncode == 1, r.stderr
    assert "None via None" not in r.stdout
    assert "Recommendation: no option passes the hard constraints." in r.stdout
    assert "Nearest changes that would make an option pass:" in r.stdout
    assert "Change constraints.deadline_days from 1 to " in r.stdout
    j = _run("estimate", str(path), "--json")
    assert j.returncode == 1
    rec = json.loads(j.stdout)["recommendation"]
    assert rec["accelerator"] is None and rec["warnings"] == []
    change = rec["nearest_changes"][0]["changes"]["constraints.deadline_days"]
    assert change["from"] == 1 and change["to"] > 1


def test_a_recommendation_exits_0_and_prints_its_warnings():
    r = _run("estimate", "small-model-cheap")
    assert r.returncode == 0, r.stderr
    d = json.loads(_run("estimate", "small-model-cheap", "--json").stdout)["recommendation"]
    assert isinstance(d["warnings"], list)
    for w in d["warnings"]:
        assert f"  ! {w}" in r.stdout


def test_key_figures_answer_the_question_and_bill_whole_instances():
    figs = dict((k, v) for v, k in text.key_figures(
        {"usd_per_million_tokens": 0.2, "usd_per_million_tokens_low": 0.1, "usd_per_million_tokens_high": 0.3,
         "chips": 4.0, "chips_billed": 16.0, "batch_hours_needed": 7.5, "batch_window_hours": 6.0}))
    assert figs["chips used, 16 billed (whole instances and spares)"] == "4"
    assert figs["does NOT fit the 6-hour batch window"] == "7.5 h"
    train = [k for _v, k in text.key_figures({"training_days": 12.0, "deadline_days": 10.0, "p_meets_deadline": 0.2})]
    assert "to finish (past the 10-day deadline)" in train
    assert "chance of meeting the deadline (performance band)" in train


def test_card_shows_warnings_and_no_option_in_words():
    class R:
        def __init__(self, d):
            self.d = d

        def as_dict(self):
            return self.d

    card = text.recommendation_html(R({"summary": "x", "accelerator": "H100", "warnings": ["Stale price: p"],
                                       "reasons": [], "figures": {}}))
    assert 'class="wb-warnings"' in card and "Stale price: p" in card
    none = text.recommendation_html(R({"summary": "No option passes the hard constraints.", "accelerator": None,
                                       "flip_conditions": ["Change constraints.max_chips from 8 to 16: ..."]}))
    assert "wb-none" in none and "Nearest changes that would make an option pass" in none


def test_long_words_in_a_table_are_never_cut_and_the_table_scrolls():
    import pandas as pd
    long = "a reason that is much longer than fifty characters and must be read whole, never cut"
    html = text.table_html(pd.DataFrame({"option": ["a"], "why": [long]}))
    assert long in html and "..." not in html
    assert html.startswith('<div class="wb-scroll"')
