"""The bill (workbook.cost.bill): hand-computed bills, spot after interruptions or with spare instances,
break-even tables. Hand-made offerings and performance frames keep every number checkable on paper."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbook import catalog, cost
from workbook.scenario import parse_scenario

from pricing_helpers import LIVE, SERVE, TRAIN, offering, offers, price, row, serve_perf, train_perf


def test_on_demand_run_costs_hours_times_price():
    """64 chips on 8-chip instances = 8 instances x 10 days x 24 h x $80 = $153,600."""
    s = parse_scenario(TRAIN)
    p = price(s, train_perf(), offerings=offers(offering("o1")))
    r = row(p, "on_demand")
    assert r["instances"] == 8
    assert r["cost_usd"] == pytest.approx(8 * 240 * 80.0)
    assert r["training_days"] == pytest.approx(10.0)
    assert r["usd_per_chip_hour_effective"] == pytest.approx(10.0)


def spot_factor():
    """8 one-host instances x 0.05 reclaims/h = 0.4 interruptions/h, M = 9,000 s; 30-min checkpoints
    (no write time in these fixtures), 10-min restarts: Daly 2006's wall/useful
    e^(R/M) (e^(tau/M) - 1) / (tau/M) = e^(1/15) (e^0.2 - 1) / 0.2 = 1.1833."""
    m = 3600 / 0.4
    return math.exp(600 / m) * math.expm1(1800 / m) / (1800 / m)


def test_spot_run_pays_for_work_lost_to_interruptions():
    """Wall time = 10 days x 1.1833 (``spot_factor``): 8 x 240 h x $20 x 1.1833 = $45,440 and 11.8 days
    (the first-order 1/(1 - lambda (tau/2 + R)) = 1.2 this replaced overstated the loss)."""
    s = parse_scenario(TRAIN)
    p = price(s, train_perf(), offerings=offers(offering("o1")))
    r = row(p, "spot")
    assert spot_factor() == pytest.approx(1.18333, rel=1e-5)
    assert r["paid_per_used_hour"] == pytest.approx(spot_factor())
    assert r["goodput"] == pytest.approx(1 / spot_factor())
    assert r["interruptions_per_hour"] == pytest.approx(0.4)
    assert r["cost_usd"] == pytest.approx(8 * 240 * 20.0 * spot_factor())
    assert r["training_days"] == pytest.approx(10.0 * spot_factor())


def test_commitment_for_a_short_run_costs_its_whole_term():
    """Issue 11: a 10-day run on a 1-year commitment pays the contract, 8 instances x 12 x 730 h x $50 =
    $3,504,000, not a prorated 8 x 240 h (no silent slice)."""
    s = parse_scenario(TRAIN)
    r = row(price(s, train_perf(), offerings=offers(offering("o1"))), "commit_1y")
    assert r["contract_usd"] == pytest.approx(8 * 8760 * 50.0)
    assert r["cost_usd"] == pytest.approx(8 * 8760 * 50.0)


def test_commitment_backfill_fraction_says_what_other_work_pays():
    """Half the 8,520 hours after the 240-h run filled by other work: 8 x (240 + 0.5 x 8,520) h x $50 =
    $1,800,000; the contract is still $3,504,000."""
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "commitment_backfill_fraction": 0.5}})
    r = row(price(s, train_perf(), offerings=offers(offering("o1"))), "commit_1y")
    assert r["cost_usd"] == pytest.approx(8 * (240 + 0.5 * 8520) * 50.0)
    assert r["contract_usd"] == pytest.approx(8 * 8760 * 50.0)


def test_commitment_longer_than_the_horizon_is_paid_in_full():
    """A 3-year commitment for a 10-day run: 8 x 36 x 730 h x $30 = $6,307,200."""
    s = parse_scenario(TRAIN)
    p = price(s, train_perf(), offerings=offers(offering("o1")))
    assert row(p, "commit_3y")["cost_usd"] == pytest.approx(8 * 3 * 8760 * 30.0)


def test_missing_committed_price_uses_the_discount_factor_on_hyperscalers_only():
    s = parse_scenario(TRAIN)
    o = offers(offering("o1", c1=np.nan, c3=np.nan), offering("g1", c1=np.nan, c3=np.nan, kind="gpu-cloud"))
    p = price(s, train_perf(), offerings=o)
    r = row(p, "commit_1y")
    assert r["usd_per_instance_hour"] == pytest.approx(80.0 * (1 - s.pricing.commit_1y_discount))
    assert "commit_1y_discount" in r["price_derivation"]
    assert p[(p["offering"] == "g1") & (p["pricing_model"] == "commit_1y")].empty


def test_negotiated_discount_comes_off_list_prices_not_spot():
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "negotiated_discount": 0.25}})
    p = price(s, train_perf(), offerings=offers(offering("o1")))
    assert row(p, "on_demand")["usd_per_instance_hour"] == pytest.approx(60.0)
    assert row(p, "commit_1y")["usd_per_instance_hour"] == pytest.approx(37.5)
    assert row(p, "spot")["usd_per_instance_hour"] == pytest.approx(20.0)


def test_storage_and_egress_are_added_to_the_bill():
    """10 TB stored and 2 TB out a month for a 10-day run: (10 x 18.63 + 2 x 111.76) x 10 / (730/24)."""
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "storage_tb": 10, "egress_tb_per_month": 2}})
    p = price(s, train_perf(), offerings=offers(offering("o1")))
    extra = (10 * 18.63 + 2 * 111.76) * 10 / (730 / 24)
    assert row(p, "on_demand")["cost_usd"] == pytest.approx(8 * 240 * 80.0 + extra)


def test_serving_cost_per_million_tokens_at_the_scenarios_load():
    """2 replicas x TP 2 fit one 8-chip instance: $80 x 730 h = $58,400 a month for
    10 req/s x 100 tokens x 3600 x 730 h = 2,628 M tokens -> $22.22 per million."""
    s = parse_scenario(SERVE)
    p = price(s, serve_perf(), offerings=offers(offering("o1")))
    r = row(p, "on_demand")
    assert r["instances"] == 1
    assert r["usd_per_month"] == pytest.approx(80.0 * 730)
    assert r["usd_per_million_tokens"] == pytest.approx(80.0 * 730 / (10 * 100 * 3600 * 730) * 1e6)
    assert r["usd_total"] == pytest.approx(80.0 * 730 * 36)


def test_serving_commitment_covers_peaks_when_utilization_is_below_the_duty_cycle():
    """Serving 24 h a day at 50% utilization: a reserved fleet holds 1/0.5 = 2x the average fleet."""
    s = parse_scenario(SERVE)
    p = price(s, serve_perf(), offerings=offers(offering("o1")))
    assert row(p, "commit_3y")["usd_per_month"] == pytest.approx(30.0 * 730 * 2)


def test_nightly_batch_pays_serving_hours_on_demand_and_all_hours_reserved():
    """6 h a day at 25% utilization: on-demand pays 6 h a day; a commitment pays all 24."""
    s = parse_scenario({**SERVE, "workload": {**SERVE["workload"], "hours_per_day": 6},
                        "pricing": {**SERVE["pricing"], "utilization": 0.25}})
    p = price(s, serve_perf(), offerings=offers(offering("o1")))
    assert row(p, "on_demand")["usd_per_month"] == pytest.approx(80.0 * 730 / 4)
    assert row(p, "commit_3y")["usd_per_month"] == pytest.approx(30.0 * 730)


def test_a_tensor_parallel_replica_never_spans_instances():
    s = parse_scenario(SERVE)
    p = price(s, serve_perf(tp=4), offerings=offers(offering("o1", cpi=2)))
    assert row(p, "on_demand")["excluded_reason"].startswith("instance: a replica needs 4 chips")


def test_performance_band_carries_into_cost_band():
    s = parse_scenario(TRAIN)
    p = price(s, train_perf(low=8.0, high=13.0), offerings=offers(offering("o1")))
    r = row(p, "on_demand")
    assert (r["cost_usd_low"], r["cost_usd"], r["cost_usd_high"]) == pytest.approx(
        (8 * 192 * 80.0, 8 * 240 * 80.0, 8 * 312 * 80.0))


def test_an_accelerator_without_a_price_is_reported_not_priced():
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["on_demand", "purchase"]}})
    p = price(s, train_perf(acc="MI300X"), offerings=offers(offering("o1")))
    assert set(p["pricing_model"]) == {"on_demand", "purchase"}
    assert p["excluded_reason"].str.startswith("not priced").all()


def test_purchase_uses_the_sourced_system_price_and_power():
    """DGX H100: $329,736 over 4 years of 730 h months, plus 10.2 kW x PUE 1.3 x $0.12 per busy hour
    (hosting switched off here: colocation at $0; ``test_hosting_...`` below prices it)."""
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["purchase"],
                                            "colocation_usd_per_kw_month": 0.0}})
    p = price(s, train_perf(), offerings=offers(offering("o1")))
    r = p[p["pricing_model"] == "purchase"].iloc[0]
    capex = 329736 / (4 * 12 * 730)
    energy = 10.2 * 1.3 * 0.12
    assert r["usd_per_instance_hour"] == pytest.approx(capex)
    # a system bought for a 10-day run costs its whole 4-year life (35,040 h) plus 240 h of power
    assert r["cost_usd"] == pytest.approx(8 * (329736 + 240 * energy))
    assert r["contract_usd"] == pytest.approx(8 * 329736)
    assert "network not priced" in r["price_derivation"] and "support not priced" in r["price_derivation"]
    assert r["hosting_usd"] == pytest.approx(0.0)


def test_superseded_rows_keep_their_spot_price_but_not_their_on_demand():
    off = catalog.offerings()
    sup = off[off["offering"].str.endswith("-superseded")]
    assert len(sup)
    s = parse_scenario(TRAIN)
    prices = cost.offer_prices(s)
    od = prices[(prices["pricing_model"] == "on_demand") & prices["offering"].isin(sup["offering"])]
    sp = prices[(prices["pricing_model"] == "spot") & prices["offering"].isin(sup["offering"])]
    assert od.empty and len(sp)


def test_commit_discount_defaults_equal_the_median_published_gcp_ratio():
    """scenario.py documents the defaults as 1 - median(commit/on-demand) over the GCP GPU rows with
    both (the defaults stand in for unpublished GPU commitments; TPUs publish their own)."""
    off = catalog.offerings()
    gpu = off["accelerator"].map(catalog.accelerators().set_index("accelerator")["kind"]) == "gpu"
    s = parse_scenario(TRAIN)
    for col, default in (("commit_1y_usd_per_hour", s.pricing.commit_1y_discount),
                         ("commit_3y_usd_per_hour", s.pricing.commit_3y_discount)):
        both = off[(off["provider"] == "GCP") & gpu & off[col].notna() & off["on_demand_usd_per_hour"].notna()]
        assert len(both) >= 10
        assert 1 - (both[col] / both["on_demand_usd_per_hour"]).median() == pytest.approx(default, abs=0.001)


def test_spot_in_priced_options_never_beats_its_sticker_price():
    s = parse_scenario(SERVE)
    p = price(s, serve_perf(), offerings=offers(offering("o1"), offering("o2", spot=5.0)))
    sp = p[p["pricing_model"] == "spot"]
    assert (sp["usd_per_chip_hour_effective"] >= sp["usd_per_instance_hour"] / sp["chips_per_instance"]).all()


def test_breakeven_table_and_curves():
    s = parse_scenario(TRAIN)
    p = price(s, train_perf(), offerings=offers(offering("o1")))
    b = cost.breakeven(s, p)
    c1 = b[b["pricing_model"] == "commit_1y"].iloc[0]
    assert c1["months_to_beat_on_demand"] == pytest.approx(12 * 50 / (0.9 * 80))
    curves = cost.breakeven_curves(s, p)
    od = curves[curves["pricing_model"] == "on_demand"]
    assert od["cumulative_usd_per_chip"].is_monotonic_increasing


def test_latency_bound_spot_pays_for_its_spare_instance():
    """2 replicas x TP 2 on one 8-chip instance; 0.1/h, 30-min restarts, 99%: one spare (above), so
    the month costs 2 instances x 730 h x $20 = $29,200, twice the sticker; on-demand is unchanged
    (1 x 730 h x $80 = $58,400)."""
    s = parse_scenario(LIVE)
    p = price(s, serve_perf(replicas=2, tp=2), offerings=offers(offering("o1")))
    spot, od = row(p, "spot"), row(p, "on_demand")
    assert spot["instances"] == 1 and spot["spare_instances"] == 1
    assert spot["paid_per_used_hour"] == pytest.approx(2.0)
    assert spot["usd_per_month"] == pytest.approx(2 * 730 * 20.0)
    assert od["spare_instances"] == 0 and od["usd_per_month"] == pytest.approx(730 * 80.0)


@settings(max_examples=30, deadline=None)
@given(replicas=st.integers(1, 60), rate=st.floats(0.0, 0.5), restart_min=st.floats(1.0, 60.0),
       target=st.floats(0.5, 0.999))
def test_latency_bound_spot_never_cheaper_than_sticker_times_spares(replicas, rate, restart_min, target):
    s = parse_scenario({**LIVE, "pricing": {**LIVE["pricing"], "spot_interruptions_per_hour": rate,
                                            "restart_min": restart_min, "spot_availability_target": target}})
    p = price(s, serve_perf(replicas=replicas, tp=2), offerings=offers(offering("o1")))
    r = row(p, "spot")
    sticker = r["instances"] * 730 * 20.0
    if np.isfinite(r["spare_instances"]):
        assert r["usd_per_month"] >= sticker * (1 + r["spare_instances"] / r["instances"]) * (1 - 1e-12)
        assert r["spare_instances"] >= 0
    else:
        assert np.isnan(r["usd_per_month"]) and "no number of spare instances" in r["excluded_reason"]


def test_batch_and_untargeted_serving_keep_the_lost_hours_model():
    """No latency target, or a batch window: factor 1 / (1 - 0.1 x 0.5) = 1/0.95, no spares."""
    for wl in ({}, {"ttft_slo_ms": 500, "batch_window_hours": 6}):
        s = parse_scenario({**LIVE, "workload": {**SERVE["workload"], **wl}})
        r = row(price(s, serve_perf(), offerings=offers(offering("o1"))), "spot")
        assert r["spare_instances"] == 0
        assert r["paid_per_used_hour"] == pytest.approx(1 / 0.95)
        assert r["usd_per_month"] == pytest.approx(730 * 20.0 / 0.95)


def test_training_on_spot_has_no_spares():
    s = parse_scenario(TRAIN)
    r = row(price(s, train_perf(), offerings=offers(offering("o1"))), "spot")
    assert r["spare_instances"] == 0 and r["paid_per_used_hour"] == pytest.approx(spot_factor())


def test_breakeven_curves_have_no_undefined_month_for_a_spot_job_that_never_finishes():
    """A spot job whose interruptions outpace its checkpoints pays for ever (paid hours per used hour
    inf): its cumulative curve is 0 at month 0 and inf after, never 0 x inf = NaN (which numpy warned
    about in every llama2-7b-pretrain report)."""
    import warnings

    import workbook as wb

    s = wb.load_scenario("llama2-7b-pretrain")
    a = wb.analyse(s, n_draws=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        curves = wb.cost.breakeven_curves(s, a.priced)
    assert curves["cumulative_usd_per_chip"].notna().all()
