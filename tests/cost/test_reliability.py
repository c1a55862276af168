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


def test_lead_time_comes_from_the_sourced_catalog_only():
    """data/lead_times.csv: H100/H200-class (nvidia-hopper) beyond one instance on AWS, GCP and Azure waits
    28-56 days ("4-8 weeks for H100 quota", public vendor articles): point = the midpoint, 42 days.
    One instance, another chip or another provider: no published wait, 0 days. The scenario overrides."""
    many = r.lead_time("GCP", "H100-SXM5-80GB", 2)
    assert (many["start_days"], many["start_days_low"], many["start_days_high"]) == (42.0, 28.0, 56.0)
    assert "public vendor articles" in many["start_days_source"]
    assert r.lead_time("Azure", "H200-SXM-141GB", 64)["start_days"] == 42.0
    for provider, acc, n in (("AWS", "H100-SXM5-80GB", 1), ("Lambda", "H100-SXM5-80GB", 62),
                             ("GCP", "TPU-v6e", 4), ("AWS", "A100-SXM4-80GB", 256)):
        none = r.lead_time(provider, acc, n)
        assert none["start_days"] == 0.0 and none["start_days_source"] == r.NO_LEAD_TIME
    assert r.lead_time("AWS", "H100-SXM5-80GB", 8, override=5)["start_days"] == 5.0


def test_a_job_interrupted_before_it_restarts_never_finishes():
    """M = 500 s < R + d = 600 + 10 s: inf; M = 1,000 s (>= 610 s): finite, Daly's formula."""
    assert math.isinf(float(r.wall_per_useful(1800.0, 10.0, 600.0, 500.0)))
    m = 1000.0
    assert float(r.wall_per_useful(1800.0, 10.0, 600.0, m)) == pytest.approx(
        m * math.exp(600 / m) * math.expm1(1810 / m) / 1800)


def test_p_meets_deadline_is_the_lognormal_cdf_of_the_band():
    """P10 50 d, P90 80 d: mu = ln(sqrt(50 x 80)) = ln 63.246, sigma = ln(80/50) / (2 x 1.28155) = 0.18337.
    A 90-day deadline after 20 days to start leaves 70: z = ln(70/63.246) / 0.18337 = 0.5534, P = 0.7100."""
    mu, sigma = math.log(math.sqrt(50 * 80)), math.log(80 / 50) / (2 * 1.2815516)
    z = (math.log(70) - mu) / sigma
    assert z == pytest.approx(0.5534, abs=1e-3)
    assert float(r.p_meets_deadline(50, 80, 90, 20)) == pytest.approx(0.5 * (1 + math.erf(z / math.sqrt(2))), rel=1e-6)
    assert float(r.p_meets_deadline(50, 80, 90, 20)) == pytest.approx(0.7100, abs=1e-3)


def test_nfs_checkpoint_takes_tens_of_minutes_for_405b():
    assert float(r.checkpoint_write_s(405e9 * 14, 16384, "nfs")) / 60 == pytest.approx(26.4, rel=0.01)
