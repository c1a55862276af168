"""The decision: hard constraints first, a ranking that moves the expected way when weights or
constraints move, reasons with numbers, the runner-up, flip conditions and the assumptions ledger."""
import datetime as dt
import json
import time

import numpy as np
import pandas as pd
import pytest

from workbook import cost, decision
from workbook.scenario import parse_scenario

from test_cost import TRAIN, SERVE, offering, offers, serve_perf


def two_chip_perf(fast_days=5.0, slow_days=10.0):
    """H100 (fast, dear) and A100 (slow, cheap): both CUDA, so only cost and time differ."""
    return pd.DataFrame({"accelerator": ["H100-SXM5-80GB", "A100-SXM4-80GB"], "chips": [64, 64],
                         "fits": [True, True], "reason": [None, None], "training_days": [fast_days, slow_days]})


def two_chip_offers():
    return offers(offering("h", od=100.0, spot=np.nan, c1=np.nan, c3=np.nan),
                  offering("a", acc="A100-SXM4-80GB", od=30.0, spot=np.nan, c1=np.nan, c3=np.nan))


def scenario(weights=None, constraints=None, pricing=None, workload=None, base=TRAIN):
    d = {**base, "pricing": {**base["pricing"], "models": ["on_demand"], **(pricing or {})}}
    if weights is not None:
        d["weights"] = weights
    if constraints is not None:
        d["constraints"] = constraints
    if workload is not None:
        d["workload"] = {**base["workload"], **workload}
    return parse_scenario(d)


def decide(s, perf=None, offs=None):
    perf = two_chip_perf() if perf is None else perf
    priced = cost.price_options(s, perf, offerings=two_chip_offers() if offs is None else offs)
    mc = cost.monte_carlo(s, priced, n=2000)
    return decision.recommend(s, perf, priced, mc, n_draws=2000), priced


def test_cost_weight_picks_the_cheaper_run_and_time_weight_the_faster():
    """A100: 8 x 240 h x $30 = $57,600; H100: 8 x 120 h x $100 = $96,000 but twice as fast."""
    cheap, _ = decide(scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}))
    fast, _ = decide(scenario({"cost": 0.1, "time": 1, "ecosystem": 0, "portability": 0}))
    assert cheap.accelerator == "A100-SXM4-80GB"
    assert fast.accelerator == "H100-SXM5-80GB"
    assert cheap.runner_up["accelerator"] == "H100-SXM5-80GB"


def test_a_deadline_rules_out_the_slow_option():
    rec, priced = decide(scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}, {"deadline_days": 7}))
    assert rec.accelerator == "H100-SXM5-80GB"
    assert rec.excluded["constraint"].str.startswith("deadline: 10.0 days > 7").any()


def test_a_budget_rules_out_the_dear_option():
    rec, _ = decide(scenario({"cost": 0, "time": 1, "ecosystem": 0, "portability": 0}, {"budget_usd": 60000}))
    assert rec.accelerator == "A100-SXM4-80GB"
    assert rec.excluded["constraint"].str.startswith("budget: $96,000 > $60,000").any()


def test_an_option_that_does_not_fit_is_never_recommended():
    perf = two_chip_perf()
    perf.loc[1, ["fits", "reason"]] = [False, "needs 90 GB per chip, has 80 GB"]
    rec, priced = decide(scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}), perf)
    assert rec.accelerator == "H100-SXM5-80GB"
    assert (priced.loc[priced["accelerator"] == "A100-SXM4-80GB", "excluded_reason"]
            .str.startswith("memory: needs 90 GB").all())
    assert "A100-SXM4-80GB" not in set(rec.ranking["accelerator"])


def test_a_missed_latency_target_is_never_recommended():
    s = parse_scenario({**SERVE, "workload": {**SERVE["workload"], "tpot_slo_ms": 25}})
    perf = pd.concat([serve_perf(), serve_perf(acc="A100-SXM4-80GB", tpot=40.0)], ignore_index=True)
    perf.loc[1, "meets_slo"] = False
    o = offers(offering("h"), offering("a", acc="A100-SXM4-80GB", od=10.0, spot=2.0))
    rec, priced = decide(s, perf, o)
    assert rec.accelerator == "H100-SXM5-80GB"
    assert rec.excluded["constraint"].str.contains("latency: 40 ms per token > 25 ms").any()


def test_nothing_feasible_gives_no_recommendation_and_says_why():
    rec, _ = decide(scenario(constraints={"deadline_days": 1}))
    assert rec.accelerator is None
    assert "deadline" in rec.reasons[0]


def test_max_chips_rules_out_larger_fleets():
    perf = two_chip_perf()
    perf.loc[0, "chips"] = 128
    rec, _ = decide(scenario({"cost": 0, "time": 1, "ecosystem": 0, "portability": 0}, {"max_chips": 64}), perf)
    assert rec.accelerator == "A100-SXM4-80GB"


def test_custom_cuda_kernels_rule_out_tpus_unless_a_port_is_paid_for():
    perf = pd.DataFrame({"accelerator": ["TPU-v5e", "A100-SXM4-80GB"], "chips": [64, 64], "fits": [True, True],
                         "reason": [None, None], "training_days": [5.0, 10.0]})
    o = offers(offering("t", acc="TPU-v5e", od=9.6, spot=np.nan, c1=np.nan, c3=np.nan),
               offering("a", acc="A100-SXM4-80GB", od=30.0, spot=np.nan, c1=np.nan, c3=np.nan))
    w = {"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}
    rec, priced = decide(scenario(w, workload={"custom_cuda_kernels": True}), perf, o)
    assert rec.accelerator == "A100-SXM4-80GB"
    assert priced.loc[priced["accelerator"] == "TPU-v5e", "excluded_reason"].str.contains("custom CUDA kernels").all()
    rec2, priced2 = decide(scenario(w, workload={"custom_cuda_kernels": True}, pricing={"porting_cost_usd": 5000}), perf, o)
    tpu = priced2[priced2["accelerator"] == "TPU-v5e"].iloc[0]
    assert tpu["excluded_reason"] is None
    assert tpu["cost_usd"] == pytest.approx(8 * 120 * 9.6 + 5000)
    assert rec2.accelerator == "TPU-v5e"
    assert any("porting" in r for r in rec2.reasons)


def test_a_framework_nobody_supports_rules_the_platform_out():
    perf = pd.DataFrame({"accelerator": ["Trainium1", "A100-SXM4-80GB"], "chips": [64, 64], "fits": [True, True],
                         "reason": [None, None], "training_days": [5.0, 10.0]})
    o = offers(offering("t", acc="Trainium1", cpi=16, od=21.5, spot=np.nan, c1=np.nan, c3=np.nan),
               offering("a", acc="A100-SXM4-80GB", od=30.0, spot=np.nan, c1=np.nan, c3=np.nan))
    s = scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0},
                 {"frameworks": ["tensorflow"]}, workload={"framework": "tensorflow"})
    rec, priced = decide(s, perf, o)
    assert rec.accelerator == "A100-SXM4-80GB"
    assert priced.loc[priced["accelerator"] == "Trainium1", "excluded_reason"].str.startswith("framework: none of").all()


def test_ecosystem_weight_moves_the_choice_toward_native_support():
    """TPU v5e is cheaper but PyTorch support on TPU is partial (software.csv)."""
    perf = pd.DataFrame({"accelerator": ["TPU-v5e", "A100-SXM4-80GB"], "chips": [64, 64], "fits": [True, True],
                         "reason": [None, None], "training_days": [10.0, 10.0]})
    o = offers(offering("t", acc="TPU-v5e", od=20.0, spot=np.nan, c1=np.nan, c3=np.nan),
               offering("a", acc="A100-SXM4-80GB", od=30.0, spot=np.nan, c1=np.nan, c3=np.nan))
    cheap, _ = decide(scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}), perf, o)
    eco, _ = decide(scenario({"cost": 0.3, "time": 0, "ecosystem": 1, "portability": 0}), perf, o)
    assert cheap.accelerator == "TPU-v5e"
    assert eco.accelerator == "A100-SXM4-80GB"


def test_weight_flip_threshold_really_flips_the_ranking():
    s = scenario({"cost": 0.6, "time": 0.4, "ecosystem": 0, "portability": 0})
    rec, priced = decide(s)
    ranked = decision.rank(s, priced)
    flips = [f for f in rec.flip_conditions if f.startswith("If the time weight")]
    assert flips, rec.flip_conditions
    new = float(flips[0].split(" to ")[1].split(" ")[0])
    after = decision.rank(scenario({"cost": 0.6, "time": new + 0.02, "ecosystem": 0, "portability": 0}), priced)
    assert after.iloc[0]["accelerator"] != ranked.iloc[0]["accelerator"]


def test_reasons_are_sentences_with_numbers():
    rec, _ = decide(scenario())
    assert len(rec.reasons) >= 4
    assert all(r.endswith(".") for r in rec.reasons)
    assert any("$" in r for r in rec.reasons)
    assert any("Monte Carlo" in r for r in rec.reasons)


def test_recommendation_is_json_ready_and_renders_as_a_table():
    rec, _ = decide(scenario())
    d = rec.as_dict()
    json.dumps(d)
    assert d["accelerator"] == rec.accelerator and d["reasons"] == rec.reasons
    summary = rec.summary()
    assert list(summary.columns) == ["", "detail"] and len(summary) >= 3
    assert "Recommendation" in rec._repr_html_()


def test_recommend_is_fast():
    s = parse_scenario(SERVE)
    perf = pd.concat([serve_perf(), serve_perf(acc="A100-SXM4-80GB", tpot=30.0)], ignore_index=True)
    from workbook import catalog
    priced = cost.price_options(s, perf)
    mc = cost.monte_carlo(s, priced)
    t = time.perf_counter()
    decision.recommend(s, perf, priced, mc)
    assert time.perf_counter() - t < 1.0
    assert len(catalog.offerings())


def test_pareto_front():
    front = decision.pareto_front([1, 2, 3, 2], [3, 2, 1, 3])
    assert list(front) == [True, True, True, False]


def test_ledger_lists_inputs_and_flags_old_prices():
    s = scenario()
    o = offers(offering("h", od=100.0, as_of="2025-01-01"), offering("a", acc="A100-SXM4-80GB", od=30.0))
    perf = two_chip_perf()
    priced = cost.price_options(s, perf, offerings=o)
    led = decision.assumptions(s, perf, priced, today=dt.date(2026, 11, 29))
    assert {"scenario", "performance", "price", "accelerator", "software", "model convention"} <= set(led["category"])
    old = led[(led["category"] == "price") & led["item"].str.startswith("h ")]
    assert old["flag"].str.contains("older than 180 days").all()
    new = led[(led["category"] == "price") & led["item"].str.startswith("a ")]
    assert new["flag"].isna().all()
    assert led.loc[led["item"] == "pricing.utilization", "value"].iloc[0] == "0.9"


def test_a_stale_price_in_the_recommendation_is_said_in_the_reasons():
    # data/offerings.csv dates the pre-June-2025 AWS snapshot 2025-05-31 (an upper bound): a decision
    # that rests on it must say so where the reader looks first, not only in the ledger.
    from workbook import cost, decision, perf
    from workbook.scenario import load_scenario, with_overrides

    s = with_overrides(load_scenario("chat-70b-realtime"),
                       **{"candidates.accelerators": ["H100-SXM5-80GB"], "candidates.clouds": ["AWS"],
                          "pricing.models": ["spot"]})
    perf_df = perf.compare(s)
    priced = cost.price_options(s, perf_df)
    rec = decision.recommend(s, perf_df, priced)
    assert rec.offering.endswith("-superseded")
    assert any("Check its price before committing" in r and "2025-05-31" in r for r in rec.reasons)
