"""Hard constraints (workbook.decision.rules): what rules an option out, with a code and a sentence."""
import math

import numpy as np
import pandas as pd
import pytest

from workbook import cost, decision
from workbook.scenario import parse_scenario

from pricing_helpers import SERVE, TRAIN, decide, offering, offers, price, row, scenario, serve_perf, train_perf, two_chip_offers, two_chip_perf


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


def test_spot_job_that_can_never_finish_is_ruled_out():
    """512 one-host instances x 0.05/h = 25.6 interruptions an hour: a mean of 3600 / 25.6 = 141 s between
    them, shorter than the 600-s restart (plus a 0-s write): the job is interrupted before it has
    restarted and saved a checkpoint, so it never finishes (reliability.wall_per_useful)."""
    s = parse_scenario(TRAIN)
    p = price(s, train_perf(chips=4096), offerings=offers(offering("o1")))
    r = row(p, "spot")
    assert math.isnan(r["cost_usd"])
    assert "never finishes" in r["excluded_reason"]


def test_every_exclusion_carries_a_code_and_its_sentence():
    perf = two_chip_perf()
    perf.loc[1, ["fits", "reason"]] = [False, "needs 90 GB per chip, has 80 GB"]
    s = scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}, {"deadline_days": 7})
    priced = price(s, perf, offerings=two_chip_offers())
    a100 = priced[priced["accelerator"] == "A100-SXM4-80GB"].iloc[0]
    assert a100["excluded_codes"] == ("memory", "deadline")
    assert a100["excluded_reason"] == "memory: needs 90 GB per chip, has 80 GB; deadline: 10.0 days > 7"
    h100 = priced[priced["accelerator"] == "H100-SXM5-80GB"].iloc[0]
    assert h100["excluded_codes"] == () and h100["excluded_reason"] is None
    found = decision.exclusions(s, priced)
    assert [(e.code, e.text) for e in found[a100.name]] == [("memory", "memory: needs 90 GB per chip, has 80 GB"),
                                                            ("deadline", "deadline: 10.0 days > 7")]
    assert set(decision.CONSTRAINTS) >= {c for codes in priced["excluded_codes"] for c in codes}


def test_a_chip_without_a_published_peak_is_a_precision_exclusion_not_a_memory_one():
    perf = two_chip_perf()
    perf["peak_flops_per_s"] = [9.9e14, float("nan")]
    perf.loc[1, ["fits", "reason"]] = [False, "no published dense fp8 peak"]
    priced = price(scenario(), perf, offerings=two_chip_offers())
    a100 = priced[priced["accelerator"] == "A100-SXM4-80GB"].iloc[0]
    assert a100["excluded_codes"] == ("precision",)
    assert a100["excluded_reason"] == "precision: no published dense fp8 peak"


def test_the_excluded_table_groups_by_codes_not_by_parsing_sentences():
    # a performance reason with its own "word:" parts must not create extra kinds of constraint
    perf = two_chip_perf()
    perf.loc[1, ["fits", "reason"]] = [False, "needs 90 GB; kv: 12 GB; weights: 78 GB"]
    rec, priced = decide(scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}), perf)
    ex = rec.excluded[rec.excluded["accelerator"] == "A100-SXM4-80GB"]
    assert len(ex) == 1 and ex["constraint"].iloc[0].startswith("memory: needs 90 GB")


def test_price_options_alone_applies_no_constraint():
    perf = two_chip_perf()
    perf.loc[1, ["fits", "reason"]] = [False, "too big"]
    s = scenario(constraints={"deadline_days": 1})
    bare = cost.price_options(s, perf, offerings=two_chip_offers())
    assert "excluded_reason" not in bare and "excluded_codes" not in bare
    marked = decision.apply_constraints(s, bare)
    assert marked["excluded_reason"].notna().all()
    assert marked.drop(columns=["excluded_reason", "excluded_codes"]).columns.tolist() == bare.columns.tolist()


def test_porting_cost_is_an_input_of_the_bill():
    s = scenario()
    base = cost.price_options(s, two_chip_perf(), offerings=two_chip_offers())
    ported = cost.price_options(s, two_chip_perf(), {"A100-SXM4-80GB": 5000.0}, offerings=two_chip_offers())
    a = (ported["accelerator"] == "A100-SXM4-80GB").to_numpy()
    assert ported.loc[a, "cost_usd"].to_numpy() == pytest.approx(base.loc[a, "cost_usd"].to_numpy() + 5000.0)
    assert ported.loc[~a, "cost_usd"].to_numpy() == pytest.approx(base.loc[~a, "cost_usd"].to_numpy())


def _tpu_or_a100(**pricing):
    """A PyTorch team: TPU v5e (8 x 9.6 $/h x 120 h = $9,216) against A100 (8 x 30 $/h x 240 h = $57,600)."""
    perf = pd.DataFrame({"accelerator": ["TPU-v5e", "A100-SXM4-80GB"], "chips": [64, 64], "fits": [True, True],
                         "reason": [None, None], "training_days": [5.0, 10.0]})
    o = offers(offering("t", acc="TPU-v5e", od=9.6, spot=np.nan, c1=np.nan, c3=np.nan),
               offering("a", acc="A100-SXM4-80GB", od=30.0, spot=np.nan, c1=np.nan, c3=np.nan))
    return decide(scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}, pricing=pricing), perf, o)


def test_a_pytorch_team_moving_to_tpu_is_told_the_porting_cost_and_a_large_effort_flips_it():
    # no published PyTorch -> TPU figure: data/effort.csv's stated default, 8 weeks (2-26) x $3,635 =
    # $29,080; $9,216 + $29,080 = $38,296 < $57,600: the TPU still wins, and its headline says it needs a port
    rec, priced = _tpu_or_a100()
    tpu = priced[priced["accelerator"] == "TPU-v5e"].iloc[0]
    assert rec.accelerator == "TPU-v5e" and tpu["porting_usd"] == pytest.approx(8 * 3635.0)
    assert any("(data/effort.csv (default), range 2-26 weeks)" in r for r in rec.reasons)
    assert "needs a port of your PyTorch code to TPU" in rec.headline() and "$29,080 porting included" in rec.headline()
    rec, priced = _tpu_or_a100(porting_weeks=4)  # 4 x $3,635 = $14,540: TPU still the cheaper
    tpu = priced[priced["accelerator"] == "TPU-v5e"].iloc[0]
    assert tpu["porting_usd"] == pytest.approx(4 * 3635.0)
    assert tpu["cost_usd"] == pytest.approx(8 * 120 * 9.6 + 4 * 3635.0)
    assert rec.accelerator == "TPU-v5e"
    assert any("porting $14,540 = 4 engineer-weeks x $3,635/week" in r for r in rec.reasons)
    rec, priced = _tpu_or_a100(porting_weeks=14)  # $9,216 + $50,890 > $57,600: A100 wins
    assert rec.accelerator == "A100-SXM4-80GB"
    assert priced.loc[priced["accelerator"] == "A100-SXM4-80GB", "porting_usd"].eq(0).all()


def test_stack_changes_repeat_a_share_of_the_port_over_the_horizon():
    s = scenario(pricing={"porting_weeks": 4, "porting_rework_fraction": 0.25, "horizon_months": 12},
                 workload={"stack_changes_per_year": 6})
    fit = decision.framework_fit(s, ["TPU-v5e", "A100-SXM4-80GB"]).set_index("accelerator")
    assert fit.loc["TPU-v5e", "porting_usd"] == pytest.approx(4 * 3635.0 * (1 + 6 * 0.25))  # $36,350
    assert fit.loc["A100-SXM4-80GB", "porting_usd"] == 0
    # 4 weeks alone keep the TPU ahead (above); monthly stack changes on top of 9 weeks flip it
    rec, _ = _tpu_or_a100(porting_weeks=9)
    assert rec.accelerator == "TPU-v5e"  # 9,216 + 32,715 = 41,931 < 57,600
    s2 = scenario(pricing={"porting_weeks": 9, "porting_rework_fraction": 0.25}, workload={"stack_changes_per_year": 12})
    fit2 = decision.framework_fit(s2, ["TPU-v5e"]).set_index("accelerator")
    assert fit2.loc["TPU-v5e", "porting_usd"] == pytest.approx(9 * 3635.0 * 4)  # 130,860: the TPU loses


def test_a_given_porting_cost_replaces_the_effort_catalog():
    fit = decision.framework_fit(scenario(pricing={"porting_cost_usd": 7000, "porting_weeks": 50}), ["TPU-v5e"])
    assert fit.iloc[0]["porting_usd"] == 7000


def test_operations_staff_are_billed_per_host_and_week_of_use():
    s = scenario(pricing={"ops_hosts_per_engineer": 4})
    base = cost.price_options(scenario(), two_chip_perf(), offerings=two_chip_offers())
    staffed = cost.price_options(s, two_chip_perf(), offerings=two_chip_offers())
    r, b = staffed.iloc[0], base.iloc[0]
    engineers = math.ceil(r["hosts"] / 4)
    per_month = engineers * 3635.0 * 52 / 12
    assert r["ops_usd_per_month"] == pytest.approx(per_month)
    assert r["cost_usd"] - b["cost_usd"] == pytest.approx(per_month * r["training_days"] / (730 / 24), rel=1e-9)


def test_the_effort_catalog_prices_a_pytorch_port_to_inferentia_for_serving():
    s = parse_scenario(SERVE)
    acc = [a for a in decision.framework_fit(s, ["Inferentia2"])["accelerator"]][0]
    fit = decision.framework_fit(s, [acc]).iloc[0]
    assert fit["needs_porting"] and fit["porting_usd"] == pytest.approx(2 * 3635.0)  # data/effort.csv: 2 weeks
    assert "(data/effort.csv (illustration), range 1-8 weeks)" in fit["porting_why"]


def test_a_port_with_no_catalog_row_gets_the_stated_default_never_zero():
    """JAX -> AWS Neuron has no data/effort.csv row: the stated default (rules.DEFAULT_PORT_WEEKS,
    8 weeks, 2-26) prices it, and the sentence says it is a default."""
    s = scenario(workload={"framework": "jax"})
    fit = decision.framework_fit(s, ["Trainium2"]).iloc[0]
    assert fit["needs_porting"]  # software.csv: JAX on Neuron is partial
    assert fit["porting_usd"] == pytest.approx(8 * 3635.0)
    assert "stated default, no data/effort.csv row, range 2-26 weeks" in fit["porting_why"]


def _two_regions(**constraints_and_candidates):
    """The same H100 shape: AWS us-east-1 at $80/h and GCP europe-west4 (Eemshaven, NL) at $100/h."""
    us = {**offering("us", od=80.0, spot=np.nan, c1=np.nan, c3=np.nan, provider="AWS"), "region": "us-east-1"}
    eu = {**offering("eu", od=100.0, spot=np.nan, c1=np.nan, c3=np.nan, provider="GCP"), "region": "europe-west4"}
    nowhere = {**offering("lam", od=60.0, spot=np.nan, c1=np.nan, c3=np.nan, provider="Lambda"), "region": "all"}
    c = constraints_and_candidates
    s = scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}, c.get("constraints"))
    if "regions" in c:
        s = s.model_copy(update={"candidates": s.candidates.model_copy(update={"regions": c["regions"]})})
    return decide(s, train_perf(), offers(us, eu, nowhere))


def test_data_residency_rules_out_offers_outside_the_jurisdiction():
    rec, _ = _two_regions()
    assert rec.offering == "lam"  # cheapest, anywhere
    rec, priced = _two_regions(constraints={"data_residency": ["EU"]})
    assert rec.offering == "eu"
    lam = priced[priced["offering"] == "lam"].iloc[0]
    assert "residency" in lam["excluded_codes"] and "no published location" in lam["excluded_reason"]
    us = priced[priced["offering"] == "us"].iloc[0]
    assert us["excluded_reason"].startswith("residency: us-east-1 is in US, outside constraints.data_residency (EU)")
    rec, _ = _two_regions(constraints={"data_residency": ["US"]})
    assert rec.offering == "us"
    rec, _ = _two_regions(constraints={"data_residency": ["NL"]})
    assert rec.offering == "eu"


def test_candidate_regions_keep_only_the_regions_named():
    rec, priced = _two_regions(regions=["europe-west4"])
    assert rec.offering == "eu"
    assert priced[priced["offering"] == "us"].iloc[0]["excluded_codes"] == ("region",)


def test_a_residency_code_must_be_eu_or_a_country_code():
    with pytest.raises(Exception, match="data_residency"):
        parse_scenario({**TRAIN, "constraints": {"data_residency": ["europe"]}})


def test_exclusion_sentences_made_for_the_rows_ruled_out_equal_those_made_for_every_row():
    """``_Ledger.add`` with a function makes the sentences of the rows ruled out only; they equal the sentences made
    for every row and read at the rows ruled out (the eager way), on scenarios where budget, carbon, chip, deadline,
    spot, duplicate and not-priced rules bite."""
    import importlib

    from workbook import analysis
    from workbook.scenario import load_scenario, with_overrides
    rules = importlib.import_module("workbook.decision.rules")
    real = rules._Ledger.add

    def eager(self, code, mask, text):
        if callable(text):
            got = text(np.arange(len(self.priced)))
            text = got if isinstance(got, pd.Series) else pd.Series(got, index=self.priced.index)
        return real(self, code, mask, text)

    cases = [("llama-70b-pretrain", {"constraints.budget_usd": 2e6, "constraints.max_co2_kg": 2e5, "constraints.max_chips": 1024}),
             ("llama-8b-finetune", {"pricing.spot_interruptions_per_hour": 5.0, "constraints.budget_usd": 5e3}),
             ("chat-70b-realtime", {"constraints.budget_usd": 3e5, "constraints.max_co2_kg": 1e4})]
    seen = set()
    for name, over in cases:
        s = with_overrides(load_scenario(name), **over)
        a = analysis.analyse(s, n_draws=200)
        priced = a.priced.drop(columns=["excluded_reason", "excluded_codes"])
        lazy = rules.exclusions(s, priced, a.fit)
        rules._Ledger.add = eager
        try:
            every = rules.exclusions(s, priced, a.fit)
        finally:
            rules._Ledger.add = real
        assert lazy.tolist() == every.tolist()
        seen |= {e.code for r in lazy for e in r}
    assert {"not_priced", "duplicate", "budget", "carbon", "deadline", "spot", "chips"} <= seen, seen
