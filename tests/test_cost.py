"""Cost model: hand-computed bills, spot after interruptions, break-even formulas, Monte Carlo.

Hand-made offerings and performance frames keep every number checkable on paper."""
import math
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbook import catalog, cost
from workbook.errors import InputError
from workbook.scenario import parse_scenario

TRAIN = {
    "name": "t-train", "title": "test training",
    "workload": {"task": "training", "model": "llama-2-7b", "tokens": 1e11, "framework": "pytorch"},
    "pricing": {"models": ["on_demand", "spot", "commit_1y", "commit_3y"], "utilization": 0.9,
                "horizon_months": 12, "spot_interruptions_per_hour": 0.05, "checkpoint_interval_min": 30,
                "restart_min": 10},
    "weights": {"cost": 1.0, "time": 0.0, "ecosystem": 0.0, "portability": 0.0},
}
SERVE = {
    "name": "t-serve", "title": "test serving",
    "workload": {"task": "inference", "model": "llama-3.1-8b", "input_tokens": 1000, "output_tokens": 100,
                 "requests_per_s": 10, "hours_per_day": 24},
    "pricing": {"models": ["on_demand", "spot", "commit_1y", "commit_3y"], "utilization": 0.5, "horizon_months": 36,
                "spot_interruptions_per_hour": 0.05, "restart_min": 12},
}


def offering(name, acc="H100-SXM5-80GB", cpi=8, od=80.0, spot=20.0, c1=50.0, c3=30.0, kind="hyperscaler",
             provider="TestCloud", as_of="2026-11-01"):
    return {"offering": name, "provider": provider, "provider_kind": kind, "region": "r1", "instance": name,
            "accelerator": acc, "chips_per_instance": cpi, "on_demand_usd_per_hour": od, "spot_usd_per_hour": spot,
            "commit_1y_usd_per_hour": c1, "commit_3y_usd_per_hour": c3, "monthly_usd": np.nan,
            "other_usd_per_hour": np.nan, "other_price_model": None, "as_of": as_of, "source": "test row",
            "notes": ""}


def offers(*rows):
    return pd.DataFrame(list(rows))


def train_perf(acc="H100-SXM5-80GB", chips=64, days=10.0, low=None, high=None, fits=True):
    d = {"accelerator": [acc], "chips": [chips], "fits": [fits], "reason": [None if fits else "too big"],
         "training_days": [days]}
    if low is not None:
        d["training_days_low"], d["training_days_high"] = [low], [high]
    return pd.DataFrame(d)


def serve_perf(acc="H100-SXM5-80GB", replicas=2, tp=2, tpot=20.0):
    return pd.DataFrame({"accelerator": [acc], "chips": [replicas * tp], "fits": [True], "reason": [None],
                         "ttft_ms": [100.0], "tpot_ms": [tpot], "output_tokens_per_s": [1000.0], "max_batch": [32],
                         "meets_slo": [True], "replicas": [replicas], "tp": [tp]})


def row(priced, model, off="o1"):
    return priced[(priced["pricing_model"] == model) & (priced["offering"] == off)].iloc[0]


# --- hand-computed bills -------------------------------------------------------------------------------

def test_on_demand_run_costs_hours_times_price():
    """64 chips on 8-chip instances = 8 instances x 10 days x 24 h x $80 = $153,600."""
    s = parse_scenario(TRAIN)
    p = cost.price_options(s, train_perf(), offerings=offers(offering("o1")))
    r = row(p, "on_demand")
    assert r["instances"] == 8
    assert r["cost_usd"] == pytest.approx(8 * 240 * 80.0)
    assert r["time_days"] == pytest.approx(10.0)
    assert r["usd_per_chip_hour_effective"] == pytest.approx(10.0)


def test_spot_run_pays_for_work_lost_to_interruptions():
    """8 instances x 0.05/h = 0.4 interruptions/h, each losing 15 + 10 min: factor 1/(1 - 0.4 x 5/12) = 1.2,
    so 8 x 240 h x $20 x 1.2 = $46,080 and the run takes 12 days."""
    s = parse_scenario(TRAIN)
    p = cost.price_options(s, train_perf(), offerings=offers(offering("o1")))
    r = row(p, "spot")
    assert r["paid_per_used_hour"] == pytest.approx(1.2)
    assert r["cost_usd"] == pytest.approx(8 * 240 * 20.0 * 1.2)
    assert r["time_days"] == pytest.approx(12.0)


def test_commitment_charges_idle_hours_at_low_utilisation():
    """1-year commitment over a 12-month horizon at 90% utilisation: $50/h / 0.9 per useful hour."""
    s = parse_scenario(TRAIN)
    p = cost.price_options(s, train_perf(), offerings=offers(offering("o1")))
    assert row(p, "commit_1y")["cost_usd"] == pytest.approx(8 * 240 * 50.0 / 0.9)


def test_commitment_longer_than_the_horizon_is_paid_in_full():
    """A 3-year commitment used for 12 months pays 36/12 = 3x per useful hour (then / utilisation)."""
    s = parse_scenario(TRAIN)
    p = cost.price_options(s, train_perf(), offerings=offers(offering("o1")))
    assert row(p, "commit_3y")["cost_usd"] == pytest.approx(8 * 240 * 30.0 * 3 / 0.9)


def test_missing_committed_price_uses_the_discount_factor_on_hyperscalers_only():
    s = parse_scenario(TRAIN)
    o = offers(offering("o1", c1=np.nan, c3=np.nan), offering("g1", c1=np.nan, c3=np.nan, kind="gpu-cloud"))
    p = cost.price_options(s, train_perf(), offerings=o)
    r = row(p, "commit_1y")
    assert r["usd_per_instance_hour"] == pytest.approx(80.0 * (1 - s.pricing.commit_1y_discount))
    assert "commit_1y_discount" in r["price_basis"]
    assert p[(p["offering"] == "g1") & (p["pricing_model"] == "commit_1y")].empty


def test_negotiated_discount_comes_off_list_prices_not_spot():
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "negotiated_discount": 0.25}})
    p = cost.price_options(s, train_perf(), offerings=offers(offering("o1")))
    assert row(p, "on_demand")["usd_per_instance_hour"] == pytest.approx(60.0)
    assert row(p, "commit_1y")["usd_per_instance_hour"] == pytest.approx(37.5)
    assert row(p, "spot")["usd_per_instance_hour"] == pytest.approx(20.0)


def test_storage_and_egress_are_added_to_the_bill():
    """10 TB stored and 2 TB out a month for a 10-day run: (10 x 18.63 + 2 x 111.76) x 10 / (730/24)."""
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "storage_tb": 10, "egress_tb_per_month": 2}})
    p = cost.price_options(s, train_perf(), offerings=offers(offering("o1")))
    extra = (10 * 18.63 + 2 * 111.76) * 10 / (730 / 24)
    assert row(p, "on_demand")["cost_usd"] == pytest.approx(8 * 240 * 80.0 + extra)


def test_serving_cost_per_million_tokens_at_the_scenarios_load():
    """2 replicas x TP 2 fit one 8-chip instance: $80 x 730 h = $58,400 a month for
    10 req/s x 100 tokens x 3600 x 730 h = 2,628 M tokens -> $22.22 per million."""
    s = parse_scenario(SERVE)
    p = cost.price_options(s, serve_perf(), offerings=offers(offering("o1")))
    r = row(p, "on_demand")
    assert r["instances"] == 1
    assert r["usd_per_month"] == pytest.approx(80.0 * 730)
    assert r["usd_per_million_tokens"] == pytest.approx(80.0 * 730 / (10 * 100 * 3600 * 730) * 1e6)
    assert r["usd_total"] == pytest.approx(80.0 * 730 * 36)


def test_serving_commitment_covers_peaks_when_utilisation_is_below_the_duty_cycle():
    """Serving 24 h a day at 50% utilisation: a reserved fleet holds 1/0.5 = 2x the average fleet."""
    s = parse_scenario(SERVE)
    p = cost.price_options(s, serve_perf(), offerings=offers(offering("o1")))
    assert row(p, "commit_3y")["usd_per_month"] == pytest.approx(30.0 * 730 * 2)


def test_nightly_batch_pays_serving_hours_on_demand_and_all_hours_reserved():
    """6 h a day at 25% utilisation: on-demand pays 6 h a day; a commitment pays all 24."""
    s = parse_scenario({**SERVE, "workload": {**SERVE["workload"], "hours_per_day": 6},
                        "pricing": {**SERVE["pricing"], "utilization": 0.25}})
    p = cost.price_options(s, serve_perf(), offerings=offers(offering("o1")))
    assert row(p, "on_demand")["usd_per_month"] == pytest.approx(80.0 * 730 / 4)
    assert row(p, "commit_3y")["usd_per_month"] == pytest.approx(30.0 * 730)


def test_a_tensor_parallel_replica_never_spans_instances():
    s = parse_scenario(SERVE)
    p = cost.price_options(s, serve_perf(tp=4), offerings=offers(offering("o1", cpi=2)))
    assert row(p, "on_demand")["excluded_reason"].startswith("instance: a replica needs 4 chips")


def test_spot_job_that_can_never_finish_is_ruled_out():
    """512 instances x 0.05/h x (15 + 10 min) > 1: the job restarts before it checkpoints."""
    s = parse_scenario(TRAIN)
    p = cost.price_options(s, train_perf(chips=4096), offerings=offers(offering("o1")))
    r = row(p, "spot")
    assert math.isnan(r["cost_usd"])
    assert "never finishes" in r["excluded_reason"]


def test_performance_band_carries_into_cost_band():
    s = parse_scenario(TRAIN)
    p = cost.price_options(s, train_perf(low=8.0, high=13.0), offerings=offers(offering("o1")))
    r = row(p, "on_demand")
    assert (r["cost_usd_low"], r["cost_usd"], r["cost_usd_high"]) == pytest.approx(
        (8 * 192 * 80.0, 8 * 240 * 80.0, 8 * 312 * 80.0))


def test_an_accelerator_without_a_price_is_reported_not_priced():
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["on_demand", "purchase"]}})
    p = cost.price_options(s, train_perf(acc="MI300X"), offerings=offers(offering("o1")))
    assert set(p["pricing_model"]) == {"on_demand", "purchase"}
    assert p["excluded_reason"].str.startswith("not priced").all()


def test_purchase_uses_the_sourced_system_price_and_power():
    """DGX H100: $329,736 over 4 years of 730 h months, plus 10.2 kW x PUE 1.3 x $0.12 per busy hour."""
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["purchase"]}})
    p = cost.price_options(s, train_perf(), offerings=offers(offering("o1")))
    r = p[p["pricing_model"] == "purchase"].iloc[0]
    capex = 329736 / (4 * 12 * 730)
    energy = 10.2 * 1.3 * 0.12
    assert r["usd_per_instance_hour"] == pytest.approx(capex)
    # 4-year life over a 12-month horizon: the whole life is paid by 12 months of use at 90%
    assert r["cost_usd"] == pytest.approx(8 * 240 * (capex * 4 / 0.9 + energy))
    assert "hosting not priced" in r["price_basis"]


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
    """scenario.py documents the defaults as 1 - median(commit/on-demand) over GCP rows with both."""
    off = catalog.offerings()
    s = parse_scenario(TRAIN)
    for col, default in (("commit_1y_usd_per_hour", s.pricing.commit_1y_discount),
                         ("commit_3y_usd_per_hour", s.pricing.commit_3y_discount)):
        both = off[(off["provider"] == "GCP") & off[col].notna() & off["on_demand_usd_per_hour"].notna()]
        assert len(both) >= 10
        assert 1 - (both[col] / both["on_demand_usd_per_hour"]).median() == pytest.approx(default, abs=0.001)


# --- formulas -----------------------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(lam=st.floats(0, 5), ckpt=st.floats(0, 4), restart=st.floats(0, 2), n=st.integers(1, 512))
def test_spot_is_never_cheaper_than_its_sticker_after_interruptions(lam, ckpt, restart, n):
    f = float(cost.spot_overhead_factor(lam, ckpt, restart, n))
    assert f >= 1.0


def test_spot_in_priced_options_never_beats_its_sticker_price():
    s = parse_scenario(SERVE)
    p = cost.price_options(s, serve_perf(), offerings=offers(offering("o1"), offering("o2", spot=5.0)))
    sp = p[p["pricing_model"] == "spot"]
    assert (sp["usd_per_chip_hour_effective"] >= sp["usd_per_instance_hour"] / sp["chips_per_instance"]).all()


def test_commit_breakeven_months_make_both_bills_equal():
    """C = 0.6 OD, 12-month term, 100% use: break-even at 7.2 months, where 7.2 x OD = 12 x C."""
    m = float(cost.breakeven_months_commit(0.6, 1.0, 12, 1.0))
    assert m == pytest.approx(7.2)
    assert m * 730 * 1.0 == pytest.approx(12 * 730 * 0.6)
    assert np.isinf(cost.breakeven_months_commit(0.6, 1.0, 12, 0.5))  # 0.6 / 0.5 > 1: never


def test_commit_breakeven_utilisation():
    assert float(cost.breakeven_utilization_commit(0.63, 1.0, 12, 12)) == pytest.approx(0.63)
    assert float(cost.breakeven_utilization_commit(0.44, 1.0, 36, 12)) == pytest.approx(1.32)


def test_purchase_breakeven_months():
    """P = $100k, on-demand $10/h, power $2/h, full use: 100,000 / (730 x 8) = 17.1 months."""
    m = float(cost.breakeven_months_purchase(100_000, 10.0, 2.0, 1.0))
    assert m == pytest.approx(100_000 / (730 * 8))
    assert 100_000 + m * 730 * 2.0 == pytest.approx(m * 730 * 10.0)


def test_spot_breakeven_interruption_rate_equalises_prices():
    lam = float(cost.breakeven_interruptions_spot(0.3, 1.0, 0.5, 10 / 60, 1))
    assert 0.3 * float(cost.spot_overhead_factor(lam, 0.5, 10 / 60, 1)) == pytest.approx(1.0)
    assert float(cost.spot_goodput_breakeven(0.3, 1.0)) == pytest.approx(0.3)


def test_breakeven_table_and_curves():
    s = parse_scenario(TRAIN)
    p = cost.price_options(s, train_perf(), offerings=offers(offering("o1")))
    b = cost.breakeven(s, p)
    c1 = b[b["pricing_model"] == "commit_1y"].iloc[0]
    assert c1["months_to_beat_on_demand"] == pytest.approx(12 * 50 / (0.9 * 80))
    curves = cost.breakeven_curves(s, p)
    od = curves[curves["pricing_model"] == "on_demand"]
    assert od["cumulative_usd_per_chip"].is_monotonic_increasing


# --- Monte Carlo ----------------------------------------------------------------------------------------

def _mc_setup():
    s = parse_scenario(SERVE)
    perf = pd.concat([serve_perf(), serve_perf(acc="A100-SXM4-80GB", tpot=30.0)], ignore_index=True)
    perf["output_tokens_per_s_low"], perf["output_tokens_per_s_high"] = 700.0, 1200.0
    o = offers(offering("o1"), offering("o2", od=60.0, spot=25.0), offering("a1", acc="A100-SXM4-80GB", od=40.0,
                                                                            spot=12.0, c1=np.nan, c3=np.nan))
    return s, cost.price_options(s, perf, offerings=o)


def test_monte_carlo_percentiles_are_ordered_and_stable_for_a_seed():
    s, p = _mc_setup()
    a = cost.monte_carlo(s, p, n=5000, seed=1)
    b = cost.monte_carlo(s, p, n=5000, seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert (a["p10"] <= a["p50"]).all() and (a["p50"] <= a["p90"]).all()
    assert a["p_cheapest"].sum() == pytest.approx(1.0)
    c = cost.monte_carlo(s, p, n=20000, seed=2)
    m = a.set_index("option")["p50"].div(c.set_index("option")["p50"])
    assert ((m - 1).abs() < 0.03).all()


def test_monte_carlo_median_matches_the_point_estimate_without_spread():
    s, p = _mc_setup()
    s2 = parse_scenario({**SERVE, "pricing": {**SERVE["pricing"], "utilization_spread": 0.0, "interruption_spread": 1.0,
                                               "spot_price_p90_over_p10": 1.0}})
    p2 = cost.price_options(s2, serve_perf(), offerings=offers(offering("o1")))
    mc = cost.monte_carlo(s2, p2, n=1000, seed=0)
    point = p2.set_index("option")["usd_per_million_tokens"]
    assert np.allclose(mc.set_index("option")["p50"], point.loc[mc["option"]].to_numpy())


def test_monte_carlo_of_ten_thousand_draws_for_every_option_is_fast():
    """120 options (the shipped scenarios have up to about 110 feasible ones) x 10,000 draws; best of 3
    runs, so that a busy shared machine does not decide the result."""
    s, p = _mc_setup()
    big = pd.concat([p] * 10, ignore_index=True)
    big["option"] = big["option"] + big.index.astype(str)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        cost.monte_carlo(s, big, n=10000, seed=0)
        times.append(time.perf_counter() - t)
    assert min(times) < 1.0, f"{len(big)} options: {times}"


def test_monte_carlo_rejects_zero_draws():
    s, p = _mc_setup()
    with pytest.raises(InputError):
        cost.monte_carlo(s, p, n=0)


def test_tornado_ranks_inputs_by_swing():
    s, p = _mc_setup()
    spot = p[(p["pricing_model"] == "spot") & p["excluded_reason"].isna()].iloc[0]["option"]
    t = cost.tornado(s, p, spot)
    assert list(t["swing"]) == sorted(t["swing"], reverse=True)
    assert {"efficiency (performance band)", "spot price", "spot interruptions per hour"} <= set(t["input"])
    od = p[p["pricing_model"] == "on_demand"].iloc[0]["option"]
    assert "spot price" not in set(cost.tornado(s, p, od)["input"])
    with pytest.raises(InputError):
        cost.tornado(s, p, "no such option")


def test_histogram_shares_sum_to_at_most_one_per_option():
    s, p = _mc_setup()
    h = cost.mc_histogram(s, p, n=2000)
    assert (h.groupby("option")["share"].sum() <= 1.0 + 1e-9).all()


# --- latency-bound serving on spot: spare instances (M/G/inf) -------------------------------------------
# The number of instances out at once is Poisson with mean (instances + spares) x rate x restart
# (M/G/inf: arrival rate x mean service time; Gross & Harris, Fundamentals of Queueing Theory).
# Every k below is checked by hand: P(N > k) = 1 - e^-m (1 + m + m^2/2 + ... + m^k/k!).

LIVE = {**SERVE, "name": "t-live", "workload": {**SERVE["workload"], "ttft_slo_ms": 500, "tpot_slo_ms": 50},
        "pricing": {**SERVE["pricing"], "models": ["on_demand", "spot"], "spot_interruptions_per_hour": 0.1,
                    "restart_min": 30, "spot_availability_target": 0.99}}


def test_poisson_tail_matches_hand_values():
    """m = 0.1: P(N > 0) = 1 - e^-0.1 = 0.095163; P(N > 1) = 1 - 1.1 e^-0.1 = 0.0046788."""
    assert cost.poisson_sf(0, 0.1) == pytest.approx(0.095163, rel=1e-4)
    assert cost.poisson_sf(1, 0.1) == pytest.approx(0.0046788, rel=1e-4)


def test_one_instance_with_10_min_restarts_needs_no_spare_for_99_percent():
    """m = 1 x 0.05/h x 1/6 h = 0.00833: P(N > 0) = 1 - e^-0.00833 = 0.0083 <= 0.01, so k = 0: the
    service is down 0.83% of the time, within a 99% target."""
    assert cost.spare_instances(1, 0.05, 10 / 60, 0.99) == 0
    assert cost.spot_spares_factor(1, 0.05, 10 / 60, 0.99) == pytest.approx(1.0)


def test_one_instance_needs_one_spare_for_99_9_percent():
    """k = 0: 0.0083 > 0.001. k = 1: m = 2 x 0.00833 = 0.01667, P(N > 1) = 1 - 1.01667 e^-0.01667 =
    1.37e-4 <= 0.001, so k = 1 and the fleet pays twice the instance-hours."""
    assert cost.spare_instances(1, 0.05, 10 / 60, 0.999) == 1
    assert cost.spot_spares_factor(1, 0.05, 10 / 60, 0.999) == pytest.approx(2.0)


def test_one_instance_with_slow_restarts_needs_one_spare_for_99_percent():
    """rate 0.1/h, restart 30 min: k = 0: m = 0.05, P(N > 0) = 0.0488 > 0.01; k = 1: m = 0.1,
    P(N > 1) = 0.00468 <= 0.01."""
    assert cost.spare_instances(1, 0.1, 0.5, 0.99) == 1


def test_a_large_fleet_needs_few_spares():
    """100 instances, 0.05/h, 10 min, 99%: k = 3: m = 103/120 = 0.8583, P(N > 3) = 0.0115 > 0.01;
    k = 4: m = 104/120 = 0.8667, P(N > 4) = 0.0020 <= 0.01. Four spares: +4%, against +100% for
    one instance at 99.9%. 12 instances: k = 0: m = 0.1, 0.095 > 0.01; k = 1: m = 0.1083, 0.0055."""
    assert cost.spare_instances(100, 0.05, 10 / 60, 0.99) == 4
    assert cost.spot_spares_factor(100, 0.05, 10 / 60, 0.99) == pytest.approx(1.04)
    assert cost.spare_instances(12, 0.05, 10 / 60, 0.99) == 1
    np.testing.assert_array_equal(cost.spare_instances(np.array([1.0, 12.0, 100.0]), 0.05, 10 / 60, 0.99), [0, 1, 4])


def test_no_number_of_spares_helps_when_an_instance_is_out_longer_than_up():
    """rate x restart >= 1: the expected number out grows as fast as the spares."""
    assert np.isinf(cost.spare_instances(3, 2.0, 0.5, 0.99))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), rate=st.floats(0.001, 1.0), restart_min=st.floats(1.0, 60.0),
       target=st.floats(0.5, 0.9999))
def test_spares_are_the_fewest_that_meet_the_target(n, rate, restart_min, target):
    rho = rate * restart_min / 60.0
    k = cost.spare_instances(n, rate, restart_min / 60.0, target)
    if not np.isfinite(k):
        return
    k = int(k)
    assert cost.poisson_sf(k, (n + k) * rho) <= 1 - target
    if k > 0:
        assert cost.poisson_sf(k - 1, (n + k - 1) * rho) > 1 - target
    assert cost.spot_spares_factor(n, rate, restart_min / 60.0, target) == pytest.approx(1 + k / n)


def test_latency_bound_spot_pays_for_its_spare_instance():
    """2 replicas x TP 2 on one 8-chip instance; 0.1/h, 30-min restarts, 99%: one spare (above), so
    the month costs 2 instances x 730 h x $20 = $29,200, twice the sticker; on-demand is unchanged
    (1 x 730 h x $80 = $58,400)."""
    s = parse_scenario(LIVE)
    p = cost.price_options(s, serve_perf(replicas=2, tp=2), offerings=offers(offering("o1")))
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
    p = cost.price_options(s, serve_perf(replicas=replicas, tp=2), offerings=offers(offering("o1")))
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
        r = row(cost.price_options(s, serve_perf(), offerings=offers(offering("o1"))), "spot")
        assert r["spare_instances"] == 0
        assert r["paid_per_used_hour"] == pytest.approx(1 / 0.95)
        assert r["usd_per_month"] == pytest.approx(730 * 20.0 / 0.95)


def test_training_on_spot_has_no_spares():
    s = parse_scenario(TRAIN)
    r = row(cost.price_options(s, train_perf(), offerings=offers(offering("o1"))), "spot")
    assert r["spare_instances"] == 0 and r["paid_per_used_hour"] == pytest.approx(1.2)


def test_monte_carlo_rederives_spares_for_each_interruption_rate():
    """One instance, 10-min restarts, 99%: 0.05/h needs no spare (above); 0.1/h: m = 0.01667,
    P(N > 0) = 0.0165 > 0.01, so one spare (k = 1: m = 0.0333, P(N > 1) = 0.00054)."""
    s = parse_scenario({**LIVE, "pricing": {**LIVE["pricing"], "restart_min": 10}})
    p = cost.price_options(s, serve_perf(), offerings=offers(offering("o1")))
    spot = p[p["pricing_model"] == "spot"]
    out = cost.bill(spot, False, eff=np.ones((1, 2)), price_mult=1.0, utilization=0.5,
                    interruptions_per_hour=np.array([[0.05, 0.1]]))
    np.testing.assert_allclose(out["factor"][0], [1.0, 2.0])
    np.testing.assert_allclose(out["cost"][0], [730 * 20.0, 2 * 730 * 20.0])


def test_spot_breakeven_rate_with_spares():
    """Spot $20 vs on-demand $80 for one instance: up to 2 spares stay cheaper (20 x 3 < 80), so
    spot stops paying where a third spare is needed: P(Poisson(3 x r x 1/6) > 2) = 0.01."""
    r = cost.breakeven_interruptions_spot_spares(20.0, 80.0, 10 / 60, 1, 0.99)
    assert cost.spare_instances(1, r * 0.999, 10 / 60, 0.99) == 2
    assert cost.spare_instances(1, r * 1.001, 10 / 60, 0.99) == 3
    assert cost.poisson_sf(2, 3 * r / 6) == pytest.approx(0.01, rel=1e-3)
    assert cost.breakeven_interruptions_spot_spares(80.0, 80.0, 10 / 60, 1, 0.99) == 0.0


def test_realtime_chat_recommendation_is_feasible_and_explains_spot_spares():
    """The shipped chat-70b-realtime scenario, at its default target and at 99.9%: whatever wins
    passes every hard constraint, and a spot winner says how many spares keep the latency targets."""
    from workbook import decision, perf
    from workbook.scenario import load_scenario, with_overrides

    base = load_scenario("chat-70b-realtime")
    perf_df = perf.compare(base)
    for s in (base, with_overrides(base, **{"pricing.spot_availability_target": 0.999})):
        priced = cost.price_options(s, perf_df)
        mc = cost.monte_carlo(s, priced, n=2000)
        rec = decision.recommend(s, perf_df, priced, mc, n_draws=2000)
        win = priced[(priced["accelerator"] == rec.accelerator) & (priced["offering"] == rec.offering)
                     & (priced["pricing_model"] == rec.pricing_model)].iloc[0]
        assert pd.isna(win["excluded_reason"])
        if rec.pricing_model == "spot":
            k = int(win["spare_instances"])
            assert f"with {k} spare instance" in " ".join(rec.reasons)
            assert "availability target" in " ".join(rec.reasons)
        ledger = decision.assumptions(s, perf_df, priced)
        assert (ledger["item"] == "pricing.spot_availability_target").any()
