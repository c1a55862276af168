"""The notebooks' explorers build from the scenario and recompute through the one pipeline."""
from __future__ import annotations

import pytest

from workbook import load_scenario
from workbook.model import estimate
from workbook.analysis import analyse
from workbook.views import widgets


def _by_class(box, cls):
    return next(c for c in box.children[0].children if cls in c._dom_classes)


@pytest.mark.parametrize("name", ["llama-8b-finetune", "small-model-cheap"])
def test_profile_and_comparison_explorers_start_at_the_scenario(name):
    s = load_scenario(name)
    assert widgets.profile_explorer(s).children
    box = widgets.comparison_explorer(s)
    assert list(_by_class(box, "wb-compare-candidates").value) == estimate.candidate_accelerators(s)


def test_scaling_explorer_builds_and_reacts_to_a_chip_count_change():
    box = widgets.scaling_explorer(load_scenario("llama-70b-pretrain"))
    chips = _by_class(box, "wb-scaling-chips")
    chips.value = 256
    assert chips.value == 256


def test_cost_explorer_reuses_the_notebooks_analysis_then_recomputes(monkeypatch):
    s = load_scenario("chat-70b-realtime")
    a = analyse(s, n_draws=2000)
    calls = []
    monkeypatch.setattr(widgets, "analyse", lambda s2: calls.append(s2) or analyse(s2, n_draws=2000))
    box = widgets.cost_explorer(s, a)
    assert calls == [], "the starting values are the scenario's: its own analysis is shown"
    utilization = next(c for c in box.children if "utilization" in c.description)
    utilization.value = round(s.pricing.utilization - 0.2, 2)
    assert len(calls) == 1 and calls[0].pricing.utilization == pytest.approx(s.pricing.utilization - 0.2)


def test_decision_explorer_keys_its_sliders_by_weight():
    s = load_scenario("chat-70b-realtime")
    box = widgets.decision_explorer(s, analyse(s, n_draws=2000))
    assert [c.description for c in box.children[1:6]] == ["cost", "time", "ecosystem", "portability", "supply risk"]
