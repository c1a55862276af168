"""Failures, checkpoints, goodput and deadline odds (workbook.cost.reliability), hand-computed."""
import math

import pytest

from workbook.cost import reliability as r


def test_llama3_405b_golden_check_keeps_more_than_90_percent_effective_training_time():
    """Dubey et al. 2024 §3.3.4: 419 unexpected interruptions in 54 days on 16,384 H100 (2,048 hosts),
    >90% effective training time. State 405e9 x 14 B on Tectonic (2 TB/s), 10-min restarts."""
    lam_host = 419 / (2048 * 54 * 24)
    assert lam_host == pytest.approx(1.579e-4, rel=1e-3)
    write = r.checkpoint_write_s(405e9 * 14, 16384, "parallel_fs")
    assert write == pytest.approx(2.835, rel=1e-3)
    g = r.training_goodput(2048, lam_host, 0.0, write, 600.0)
    assert float(g["interruptions_per_hour"]) == pytest.approx(419 / (54 * 24), rel=1e-9)  # one every ~3.1 h
    assert float(g["goodput"]) > 0.90
    assert float(g["goodput"]) < 0.95  # the restarts still cost several percent


def test_young_interval_and_daly_correction():
    """sqrt(2 x 10 s x 36,000 s) = 848.5 s; Daly adds (1/3)sqrt(d/2M) + (1/9)(d/2M) and subtracts d."""
    assert float(r.young_interval_s(10, 36000)) == pytest.approx(848.53, rel=1e-4)
    x = 10 / 72000
    assert float(r.optimal_checkpoint_interval_s(10, 36000)) == pytest.approx(
        848.528 * (1 + math.sqrt(x) / 3 + x / 9) - 10, rel=1e-5)


def test_no_failures_costs_only_the_checkpoint_writes():
    assert float(r.wall_per_useful(600.0, 6.0, 600.0, math.inf)) == pytest.approx(1.01)


def test_reclaims_scale_with_hosts():
    """A 32-host slice on spot at 0.05 reclaims per host-hour is interrupted 1.6 times an hour."""
    assert float(r.job_interruptions_per_hour(32, 0.0, 0.05)) == pytest.approx(1.6)


def test_deadline_odds_from_the_band():
    """The deadline at the band's P90 is met with probability 0.9; a 42-day start eats the margin."""
    assert float(r.p_meets_deadline(50, 80, 80)) == pytest.approx(0.9, abs=1e-9)
    assert float(r.p_meets_deadline(50, 80, 80, 42)) == 0.0 or float(r.p_meets_deadline(50, 80, 80, 42)) < 0.01
    assert r.deadline_quantile(0.8, 1.25, 0.5) == pytest.approx(1.0)


def test_start_days_default_and_override():
    assert list(r.start_days([1, 2])) == [0.0, r.CLUSTER_START_DAYS]
    assert list(r.start_days([1, 2], 5)) == [5.0, 5.0]


def test_nfs_checkpoint_takes_tens_of_minutes_for_405b():
    assert float(r.checkpoint_write_s(405e9 * 14, 16384, "nfs")) / 60 == pytest.approx(26.4, rel=0.01)
