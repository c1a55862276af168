"""A shared analysis (``analysis.shared_analyse``: the report kernel's notebooks and summary, the app)
is the same analysis as a fresh one, and a caller that changes its copy changes nothing for the next."""
import json

import pandas as pd
import pytest

from workbook import analysis, load_scenario

SCENARIO = "llama2-7b-pretrain"


@pytest.fixture(scope="module")
def fresh():
    return analysis._analyse(load_scenario(SCENARIO), analysis.MC_DRAWS, 0, True)


def _same(a, b):
    for name in ("perf", "priced", "mc", "offers", "fit"):
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
        else:
            pd.testing.assert_frame_equal(x, y, check_exact=True, obj=name)
    ja, jb = analysis.summary_json(a), analysis.summary_json(b)
    ja.pop("generated_utc"), jb.pop("generated_utc")   # the time of the call, not of the analysis
    assert json.dumps(ja, sort_keys=True) == json.dumps(jb, sort_keys=True)


def test_a_shared_analysis_equals_a_fresh_one(fresh, monkeypatch):
    monkeypatch.setenv(analysis.SHARE_ENV, "1")
    first = analysis.analyse(load_scenario(SCENARIO))
    second = analysis.analyse(load_scenario(SCENARIO))
    _same(first, fresh)
    _same(second, fresh)
    assert second is not first and second.priced is not first.priced


def test_changing_a_shared_copy_does_not_change_the_next(fresh, monkeypatch):
    monkeypatch.setenv(analysis.SHARE_ENV, "1")
    a = analysis.analyse(load_scenario(SCENARIO))
    a.priced["cost_usd"] = 0.0
    a.recommendation.flip_conditions.append("changed by the caller")
    b = analysis.analyse(load_scenario(SCENARIO))
    _same(b, fresh)


def test_another_scenario_or_seed_is_another_analysis(monkeypatch):
    monkeypatch.setenv(analysis.SHARE_ENV, "1")
    s = load_scenario(SCENARIO)
    a = analysis.analyse(s, n_draws=500, seed=1)
    b = analysis.analyse(s, n_draws=500, seed=2)
    assert not a.mc.equals(b.mc)
    c = analysis.analyse(s.model_copy(update={"pricing": s.pricing.model_copy(update={"utilization": 0.5})}),
                         n_draws=500, seed=1)
    assert not c.priced.equals(a.priced)
