"""What an update after a control change recomputes (issue 30): the page keeps no stale figure. After
any sequence of control changes (a price input, a weight, a way to pay, back to values seen before)
the page shows what a fresh, uncached analysis of the same inputs gives (the report's numbers); a
weight alone re-runs the decision only; the summary download is made when asked for and always for
the inputs shown; the Cost tab's Monte Carlo histogram reuses the analysis' draws."""
from __future__ import annotations

import base64
import json
import re

import pandas as pd
import pytest

from workbook import analysis, cost, paths
from workbook.app import page, panels

SCENARIO = "chat-70b-realtime"   # the app's default scenario


def _fresh(s):
    """The analysis of ``s`` computed from scratch: no shared analysis, no kept tables."""
    return analysis._analyse(s, analysis.MC_DRAWS, 0, True)


def _summary(a) -> str:
    j = analysis.summary_json(a)
    j.pop("generated_utc")   # the time of the call, not of the analysis
    return json.dumps(j, sort_keys=True)


def _assert_shows(p: page.Page, fresh) -> None:
    """The page's analysis, card and open tab are those of ``fresh``."""
    a = p.analysis
    for name in ("perf", "priced", "mc", "offers", "fit"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(fresh, name), check_exact=True, obj=name)
    assert _summary(a) == _summary(fresh)
    assert p.rec.value == panels.recommendation(fresh)
    assert p.panes[0].value == panels.decision(p.scenario, fresh, {})


@pytest.fixture(scope="module")
def app_page():
    return page.Page(SCENARIO)


def test_every_update_shows_what_a_fresh_analysis_of_its_inputs_gives(app_page):
    p = app_page
    steps = [(p.utilization, round(p.utilization.value - 0.05, 2)), (p.pricing_model, "on_demand")]   # weights: below
    for control, value in steps:
        control.value = value
        assert 'data-state="ok"' in p.status.value
        _assert_shows(p, _fresh(p.scenario))
    p.reset.click()   # back at the file's values: the first analysis again, kept since the page opened
    assert p.overrides() == {} and p.scenario == p.base
    _assert_shows(p, _fresh(p.base))


def test_a_weight_alone_reruns_the_decision_only(app_page):
    p = app_page
    p.utilization.value = round(p.base.pricing.utilization - 0.1, 2)   # inputs no earlier test analysed
    kept = analysis._BEFORE_DECISION.misses
    w0 = p.weights["time"].value
    p.weights["time"].value = round(w0 + 0.05, 2)
    assert analysis._BEFORE_DECISION.misses == kept, "a weight re-priced the options or re-drew the Monte Carlo"
    _assert_shows(p, _fresh(p.scenario))
    p.utilization.value = round(p.base.pricing.utilization - 0.15, 2)
    assert analysis._BEFORE_DECISION.misses == kept + 1, "a price input did not re-price"
    p.reset.click()


def test_a_weights_only_shared_analysis_hands_out_its_own_tables():
    s = page.load_scenario(SCENARIO)
    s2 = s.model_copy(update={"weights": s.weights.model_copy(update={"cost": 0.15})})
    first = analysis.shared_analyse(s, n_draws=500, seed=3)
    first.priced["usd_per_million_tokens"] = 0.0   # a caller that changes its copy changes nothing kept
    first.mc["p50"] = 0.0
    second = analysis.shared_analyse(s2, n_draws=500, seed=3)
    fresh = analysis._analyse(s2, 500, 3, True)
    pd.testing.assert_frame_equal(second.priced, fresh.priced, check_exact=True)
    pd.testing.assert_frame_equal(second.mc, fresh.mc, check_exact=True)
    assert _summary(second) == _summary(fresh)


def _json_link(markup: str) -> dict:
    b64 = re.search(r'wb-download-json"[^>]*href="data:application/json;charset=utf-8;base64,([^"]+)"', markup).group(1)
    return json.loads(base64.b64decode(b64))


def test_the_summary_download_is_made_when_asked_and_for_the_inputs_shown(app_page):
    p = app_page
    p.utilization.value = round(p.base.pricing.utilization - 0.05, 2)
    assert "wb-download-json" not in p.downloads.value + p.summary_link.value   # not sent with the update
    assert "wb-download-yaml" in p.downloads.value and "wb-download-csv" in p.downloads.value
    assert p.summary_button.layout.display != "none" and not p.summary_button.disabled
    p.summary_button.click()
    got = _json_link(p.summary_link.value)
    got.pop("generated_utc")
    assert json.dumps(got, sort_keys=True) == _summary(p.analysis)
    assert got["recommendation"]["accelerator"] == p.analysis.recommendation.accelerator
    assert p.summary_button.layout.display == "none"
    p.reset.click()   # other inputs: the link made for the old ones goes, the button comes back
    assert p.summary_link.value == "" and p.summary_button.layout.display != "none"


def test_no_summary_is_offered_when_the_analysis_did_not_run(app_page):
    p = app_page
    p.quiet = True
    for w in p.weights.values():
        w.value = 0.0
    p.quiet = False
    p._recompute()
    assert 'data-state="error"' in p.status.value and p.analysis is None
    assert p.summary_button.layout.display == "none" and p.summary_button.disabled
    p._prepare_summary()   # a click that arrives late does nothing
    assert p.summary_link.value == ""
    p.reset.click()
    assert p.analysis is not None and not p.summary_button.disabled


def test_the_cost_tab_histogram_reuses_the_analysis_draws(app_page):
    a = app_page.analysis
    s = app_page.scenario
    pd.testing.assert_frame_equal(cost.mc_histogram(s, a.priced, mc=a.mc), cost.mc_histogram(s, a.priced),
                                  check_exact=True)


def test_inputs_seen_before_are_shown_without_drawing_again(app_page, monkeypatch):
    p = app_page
    u0 = p.base.pricing.utilization
    p.utilization.value = round(u0 - 0.05, 2)
    card, pane = p.rec.value, p.panes[0].value
    p.utilization.value = u0
    drawn = []
    monkeypatch.setattr(panels, "recommendation", lambda a: drawn.append("card") or "redrawn")
    monkeypatch.setitem(panels.RENDERERS, "Decision", lambda s, a, memo: drawn.append("tab") or "redrawn")
    p.utilization.value = round(u0 - 0.05, 2)   # back to a value analysed and drawn before
    assert drawn == [] and p.rec.value == card and p.panes[0].value == pane
    state = paths.data_state()
    monkeypatch.setattr(paths, "data_state", lambda extra=(): state + (("a catalog file changed", 1, 1),))
    p.utilization.value = u0   # the same inputs, other data files: analysed and drawn again
    assert drawn == ["card", "tab"] and p.rec.value == "redrawn"
    monkeypatch.undo()
    p.reset.click()


def _orphan_models() -> set[str]:
    """Open Layout and style models that no open widget uses (a widget's ``close`` leaves its own open)."""
    from ipywidgets import Layout
    from ipywidgets.widgets.widget import _instances
    from ipywidgets.widgets.widget_style import Style

    models = list(_instances.values())
    used = {getattr(w, name).model_id for w in models for name in ("layout", "style")
            if w.has_trait(name) and getattr(w, name) is not None}
    return {m.model_id for m in models if isinstance(m, (Layout, Style)) and m.model_id not in used}


def test_widgets_of_one_look_share_its_models_and_a_scenario_switch_leaves_none_open():
    """``Page.look``: the page's HTML widgets share one Layout and one style model, the candidates'
    boxes theirs, the sliders theirs (the browser creates 65 models on the first render instead of
    129); switching the scenario closes the old boxes without leaving their models open."""
    from workbook.scenario import scenario_names

    p = page.Page(SCENARIO)
    html = [p.about, p.rec, p.status, p.downloads, p.busy, *p.panes, p.box.children[0]]
    for widgets in (html, list(p.checks.values()), list(p.weights.values()) + [p.utilization]):
        assert len({id(w.layout) for w in widgets}) == 1 and len({id(w.style) for w in widgets}) == 1
    assert p.summary_button.layout is not p.reset.layout   # shown and hidden on its own
    before = _orphan_models()
    p.picker.value = next(n for n in scenario_names() if n != SCENARIO)
    assert 'data-state="ok"' in p.status.value
    assert _orphan_models() <= before
