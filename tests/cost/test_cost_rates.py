"""Billing and break-even formulas (workbook.cost.rates): hand values, and properties that hold for any input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbook import cost


@settings(max_examples=200, deadline=None)
@given(lam=st.floats(0, 5), ckpt=st.floats(0, 4), restart=st.floats(0, 2), n=st.integers(1, 512))
def test_spot_is_never_cheaper_than_its_sticker_after_interruptions(lam, ckpt, restart, n):
    f = float(cost.spot_overhead_factor(lam, ckpt, restart, n))
    assert f >= 1.0


def test_commit_breakeven_months_make_both_bills_equal():
    """C = 0.6 OD, 12-month term, 100% use: break-even at 7.2 months, where 7.2 x OD = 12 x C."""
    m = float(cost.breakeven_months_commit(0.6, 1.0, 12, 1.0))
    assert m == pytest.approx(7.2)
    assert m * 730 * 1.0 == pytest.approx(12 * 730 * 0.6)
    assert np.isinf(cost.breakeven_months_commit(0.6, 1.0, 12, 0.5))  # 0.6 / 0.5 > 1: never


def test_commit_breakeven_utilization():
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


def test_spot_breakeven_rate_with_spares():
    """Spot $20 vs on-demand $80 for one instance: up to 2 spares stay cheaper (20 x 3 < 80), so
    spot stops paying where a third spare is needed: P(Poisson(3 x r x 1/6) > 2) = 0.01."""
    r = cost.breakeven_interruptions_spot_spares(20.0, 80.0, 10 / 60, 1, 0.99)
    assert cost.spare_instances(1, r * 0.999, 10 / 60, 0.99) == 2
    assert cost.spare_instances(1, r * 1.001, 10 / 60, 0.99) == 3
    assert cost.poisson_sf(2, 3 * r / 6) == pytest.approx(0.01, rel=1e-3)
    assert cost.breakeven_interruptions_spot_spares(80.0, 80.0, 10 / 60, 1, 0.99) == 0.0


@pytest.mark.parametrize("n,rate,restart_h,target", [
    (2000, 0.05, 10 / 60, 0.999), (20000, 0.05, 10 / 60, 0.99), (60000, 0.05, 10 / 60, 0.9999),
    (400, 0.5, 0.5, 0.99), (100, 1.0, 0.5, 0.999), (50, 0.05, 10 / 60, 0.3)])
def test_spares_of_large_fleets_are_the_fewest_that_meet_the_target(n, rate, restart_h, target):
    """Counts that surely fail (below the Poisson median bound) are skipped, not changed: the answer
    is still the fewest k whose tail meets the target, the one below it missing."""
    k = cost.spare_instances(n, rate, restart_h, target)
    rho = rate * restart_h
    assert np.isfinite(k) and k == int(k)
    k = int(k)
    assert cost.poisson_sf(k, (n + k) * rho) <= 1 - target
    if k > 0:
        assert cost.poisson_sf(k - 1, (n + k - 1) * rho) > 1 - target


def test_a_fleet_whose_mean_underflows_needs_more_spares_than_the_search_allows():
    """n·r·R >= 746: e^-mean is 0.0 in float64, every tail sums to 1, no count passes (inf)."""
    assert np.isinf(cost.spare_instances(100_000, 0.05, 10 / 60, 0.99))
    assert cost.poisson_sf(cost.MAX_SPARES, (100_000 + cost.MAX_SPARES) * 0.05 / 6) == 1.0
