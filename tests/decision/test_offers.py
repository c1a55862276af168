"""The offers (workbook.decision.offers) and the honest ranking of issue 11: one entry per (offering,
pricing model) with the issue's keys, excluded ones with their reason, whole contracts, deadline odds,
ties within the model's noise. Hand-made offerings keep the numbers checkable on paper."""
import math

import numpy as np
import pandas as pd
import pytest

from workbook import analysis, cost, decision
from workbook.decision.rank import break_ties, reorderable
from workbook.scenario import load_scenario, parse_scenario

from pricing_helpers import TRAIN, offering, offers, price, scenario, train_perf

ISSUE_KEYS = ["offering", "provider", "region", "accelerator", "pricing_model", "chips", "chips_billed", "instances",
              "hosts", "inter_node_bytes_per_s", "training_days", "training_days_low", "training_days_high",
              "p_meets_deadline", "cost_usd", "cost_usd_low", "cost_usd_high", "usd_per_chip_hour", "price_as_of",
              "interruptions_per_hour", "goodput", "checkpoint_write_s", "checkpoint_interval_min", "start_days",
              "contract_usd", "excluded_reason"]


def _table(s, perf, offs):
    priced = price(s, perf, offerings=offs)
    return priced, decision.offers_table(s, priced, cost.monte_carlo(s, priced, n=500))


def test_offers_list_every_offering_and_pricing_model_with_the_issue_keys():
    """Two offerings x four ways to pay = 8 entries. A $1M budget rules out the four commitments (a
    10-day run pays the whole term: 8 x 8,760 h x $50 = $3.5M and more): listed, with the reason, unranked."""
    s = parse_scenario({**TRAIN, "constraints": {"budget_usd": 1e6}})
    priced, t = _table(s, train_perf(), offers(offering("o1"), offering("o2", od=90.0)))
    assert set(ISSUE_KEYS) <= set(t.columns)
    assert len(t) == 8 and not t.duplicated(["offering", "pricing_model"]).any()
    assert set(zip(t["offering"], t["pricing_model"])) == {(o, m) for o in ("o1", "o2")
                                                           for m in ("on_demand", "spot", "commit_1y", "commit_3y")}
    out = t[t["pricing_model"].str.startswith("commit")]
    assert out["excluded_reason"].str.startswith("budget").all() and out["rank"].isna().all()
    assert sorted(t["rank"].dropna().tolist()) == [1, 2, 3, 4]
    assert t["rank"].head(4).tolist() == [1, 2, 3, 4]  # ranked first, then the excluded


def test_offers_in_estimate_json_name_the_recommended_offer(analysed):
    a = analysed("llama-70b-pretrain", n_draws=500)
    j = analysis.summary_json(a)
    assert j["options"] and set(ISSUE_KEYS) <= set(j["offers"][0])
    rec = j["recommendation"]
    top = [o for o in j["offers"] if o["rank"] == 1][0]
    assert (top["offering"], top["pricing_model"]) == (rec["offering"], rec["pricing_model"])
    assert not any(o["offering"].endswith("-superseded") and o["rank"] is not None for o in j["offers"])


def test_a_short_run_on_a_commitment_shows_the_whole_contract():
    """10 days on 8 instances, 1-year term at $50/h: contract_usd = 8 x 8,760 h x $50 = $3,504,000; the
    3-year one 8 x 26,280 h x $30 = $6,307,200; on-demand and spot carry no contract."""
    s = parse_scenario(TRAIN)
    _, t = _table(s, train_perf(), offers(offering("o1")))
    by = t.set_index("pricing_model")
    assert by.loc["commit_1y", "contract_usd"] == pytest.approx(8 * 8760 * 50.0)
    assert by.loc["commit_3y", "contract_usd"] == pytest.approx(8 * 26280 * 30.0)
    assert by.loc["commit_1y", "cost_usd"] == pytest.approx(by.loc["commit_1y", "contract_usd"])
    assert by[["contract_usd"]].loc[["on_demand", "spot"]].isna().all().all()


def test_p_meets_deadline_of_an_offer_is_the_lognormal_cdf_of_its_band():
    """Band 8-12 days around 10 (no failures, on-demand: the wall time is the band): mu = ln sqrt(96),
    sigma = ln 1.5 / (2 x 1.28155) = 0.15819; deadline 11 days: z = ln(11 / 9.798) / 0.15819 = 0.7316,
    P = 0.768 (< deadline_confidence 0.8: ruled out with that reason)."""
    s = scenario(constraints={"deadline_days": 11})
    priced = price(s, train_perf(days=10.0, low=8.0, high=12.0), offerings=offers(offering("o1")))
    r = priced[priced["pricing_model"] == "on_demand"].iloc[0]
    z = math.log(11 / math.sqrt(96)) / (math.log(1.5) / (2 * 1.2815516))
    assert z == pytest.approx(0.7316, abs=1e-3)
    assert r["p_meets_deadline"] == pytest.approx(0.5 * (1 + math.erf(z / math.sqrt(2))), rel=1e-6)
    assert r["p_meets_deadline"] == pytest.approx(0.768, abs=1e-3)
    assert "deadline_confidence 0.8" in r["excluded_reason"]


def _two_chip_tie(spread, price_doubt_scale=1.0):
    """H100 97,000 USD in 5 days, A100 96,000 USD in 10 days, weights cost 0.9 / time 0.1: scores
    0.9 x 96/97 + 0.1 = 0.9907 and 0.9 + 0.1 x 0.5 = 0.95 (H100 leads by 0.041 at the point)."""
    perf = pd.DataFrame({"accelerator": ["H100-SXM5-80GB", "A100-SXM4-80GB"], "chips": [64, 64],
                         "fits": [True, True], "reason": [None, None], "training_days": [5.0, 10.0],
                         "training_days_low": [5.0 / spread, 10.0 / spread],
                         "training_days_high": [5.0 * spread, 10.0 * spread]})
    offs = offers(offering("h", od=97000 / (8 * 120), spot=np.nan, c1=np.nan, c3=np.nan),
                  offering("a", acc="A100-SXM4-80GB", od=96000 / (8 * 240), spot=np.nan, c1=np.nan, c3=np.nan))
    s = scenario({"cost": 0.9, "time": 0.1, "ecosystem": 0, "portability": 0},
                 pricing={"price_doubt_scale": price_doubt_scale})
    priced = price(s, perf, offerings=offs)
    return s, perf, priced, decision.recommend(s, perf, priced, cost.monte_carlo(s, priced, n=2000), n_draws=2000)


def test_a_lead_within_the_noise_is_a_tie_decided_by_the_named_tie_breaker():
    """With +/-30% bands drawn independently per chip, the 0.041 lead holds in far fewer than 90% of
    draws: a tie, decided by the lower point-estimate cost (A100, 96,000 < 97,000)."""
    s, perf, priced, rec = _two_chip_tie(1.3)
    ranked = decision.rank(s, priced)
    assert ranked["score"].iloc[0] - ranked["score"].iloc[1] == pytest.approx(0.9 * 96 / 97 + 0.1 - 0.95)
    assert [t["option"] for t in rec.ties] == ["A100-SXM4-80GB | a | on_demand"]
    assert 0.1 < rec.ties[0]["p_top_leads"] < 0.9 and rec.ties[0]["gap_p10"] <= 0
    assert rec.accelerator == "A100-SXM4-80GB"
    tie = rec.reasons[0]
    assert tie.startswith("Tie within the model's noise") and "lower point-estimate cost then fewer chips" in tie
    assert rec.as_dict()["ties"][0]["option"] == "A100-SXM4-80GB | a | on_demand"


def test_a_lead_outside_the_noise_is_not_a_tie():
    """Bands of +/-0.1% and prices held at the catalog's (price_doubt_scale 0): the 0.041 lead holds in
    every draw, so the higher score wins and no tie is said."""
    s, perf, priced, rec = _two_chip_tie(1.001, price_doubt_scale=0.0)
    assert rec.ties == [] and rec.accelerator == "H100-SXM5-80GB"
    assert not any(r.startswith("Tie") for r in rec.reasons)


def test_a_lead_within_the_doubt_of_the_prices_is_a_stated_tie_that_keeps_the_order():
    """The same bands of +/-0.1%, with the default price doubt: the fixture's catalog prices are 31+ days
    old, so each is doubted by about +/-9% (cost.doubt) and the 1% cost lead no longer holds in 90% of
    the draws. A tie caused by price doubt: stated, but the higher score stays first (rank.reorderable)."""
    s, perf, priced, rec = _two_chip_tie(1.001)
    assert [t["option"] for t in rec.ties] == ["A100-SXM4-80GB | a | on_demand"]
    t = rec.ties[0]
    assert t["cause"] == "price doubt" and t["p_top_leads_fixed_prices"] == 1.0 and t["p_top_leads"] < 0.9
    assert rec.accelerator == "H100-SXM5-80GB"
    tie = rec.reasons[0]
    assert tie.startswith("Tie within the model's noise and the doubt of the prices")
    assert "the doubt of the prices makes the tie" in tie and "Kept first: H100-SXM5-80GB" in tie


def test_break_ties_orders_by_cost_then_chips():
    ranked = pd.DataFrame({"option": ["x", "y", "z", "w"], "score": [0.9, 0.89, 0.88, 0.5],
                           "cost_value": [10.0, 9.0, 9.0, 1.0], "chips": [8, 16, 8, 8], "rank": [1, 2, 3, 4]})
    out = break_ties(ranked, ["y", "z"])
    assert out["option"].tolist() == ["z", "y", "x", "w"] and out["rank"].tolist() == [1, 2, 3, 4]


def test_every_ranked_offer_states_the_network_it_was_planned_with(analysed):
    """``inter_node_bytes_per_s`` (per instance) is the bandwidth the plan used: the offering's own
    figure, or the accelerator catalog's per-chip figure x chips per instance where the offering
    publishes none (``network_basis`` says which)."""
    import workbook as wb
    from workbook import catalog

    a = analysed("llama-70b-pretrain", n_draws=500)
    ranked = a.offers[a.offers["rank"].notna()]
    assert ranked["inter_node_bytes_per_s"].notna().all()
    lam = ranked[ranked["offering"] == "lambda-8x-h100-sxm"].iloc[0]
    chip = catalog.accelerator_record("H100-SXM5-80GB")["inter_node_bytes_per_s"]
    assert "not published" in lam["network_basis"]
    assert lam["inter_node_bytes_per_s"] == pytest.approx(chip * lam["chips_billed"] / lam["instances"])


def test_a_tie_with_many_offers_names_the_first_three_and_counts_the_rest(monkeypatch):
    """Five tied offers: the sentence names the top and three tied offers with their gaps and prices,
    and says "2 more tied offer(s)" instead of listing them (a report's tie line stayed readable)."""
    import importlib
    rec_mod = importlib.import_module("workbook.decision.recommend")
    monkeypatch.setattr(rec_mod, "describe", lambda row: f"<{row.name}>")
    monkeypatch.setattr(rec_mod, "price_words", lambda row: "p")
    ranked = pd.DataFrame({"option": list("abcdef"), "score": [0.9, 0.89, 0.88, 0.87, 0.86, 0.85]})
    tied = pd.DataFrame({"option": list("bcdef"), "score_gap": [0.01] * 5, "p_top_leads": [0.6] * 5,
                         "gap_p10": [-0.1] * 5, "gap_p90": [0.1] * 5, "cause": ["model noise"] * 5})
    [text] = rec_mod._reason_tie(ranked, ranked.iloc[0], tied, 2000)
    assert all(f"<{o}>" in text for o in "abcd") and "<e>" not in text and "<f>" not in text
    assert "and 2 more tied offer(s), in the ranking with their scores" in text


@pytest.mark.parametrize("name", ["llama-70b-pretrain", "chat-70b-realtime", "small-model-cheap"])
def test_offers_table_from_the_recommendations_ranking_equals_ranking_again(analysed, name):
    """``analyse`` hands ``offers_table`` the ranking ``recommend`` made (``Recommendation.ranked``);
    the table is the one ranking afresh gives."""
    a = analysed(name)
    rec = a.recommendation
    tied = [t["option"] for t in rec.ties]
    reorder = reorderable(rec.ties)
    assert rec.ranked is not None and len(rec.ranked)
    pd.testing.assert_frame_equal(decision.offers_table(a.scenario, a.priced, a.mc, tied, reorder, ranked=rec.ranked),
                                  decision.offers_table(a.scenario, a.priced, a.mc, tied, reorder))
    pd.testing.assert_frame_equal(a.offers, decision.offers_table(a.scenario, a.priced, a.mc, tied, reorder))
