"""The fleet plan's array paths equal the loops they replaced: a training job's hourly demand (every
offer at once, job by job) against the per-offer loop, and the commitment curve's integer sort key
against the float sort, on random inputs."""
import math

import numpy as np
import pandas as pd
import pytest

from workbook.plan import demand, optimise
from workbook.plan.portfolio import Portfolio
from workbook.scenario import load_scenario


def _training_demand_ref(w, offers, months):
    """``demand.demand`` of a training workload before it ran every offer at once (commit 686d801)."""
    T = months * demand.HOURS
    out = np.zeros((len(offers), T))
    for i, (n, h) in enumerate(zip(offers["instances"].to_numpy(float), offers["job_hours"].to_numpy(float))):
        for m in demand.job_starts(w, months):
            t0 = (m - 1) * demand.HOURS
            full = int(math.floor(h))
            out[i, t0:min(T, t0 + full)] += n
            if t0 + full < T:
                out[i, t0 + full] += n * (h - full)
    return out


@pytest.fixture(scope="module")
def tune():
    return load_scenario("llama-8b-finetune")


@pytest.mark.parametrize("seed", range(40))
def test_training_demand_equals_the_per_offer_loop(tune, seed):
    """Jobs shorter and longer than the gap between starts (overlapping), whole and fractional hours,
    jobs that run past the horizon."""
    rng = np.random.default_rng(seed)
    months = int(rng.integers(1, 8))
    k = int(rng.integers(1, 12))
    offers = pd.DataFrame({"instances": rng.choice([1.0, 2.0, 3.0, 16.0, 0.5], k),
                           "job_hours": rng.choice([0.3, 1.0, 20.5, 700.25, 730.0, 1500.7, 4000.0], k)})
    start = int(rng.integers(1, months + 1))
    w = Portfolio.model_validate({"name": "t", "months": months, "workloads": [
        {"scenario": "llama-8b-finetune", "start_month": start, "repeat_every_months": int(rng.integers(1, 3))}]}).workloads[0]
    np.testing.assert_array_equal(demand.demand(w, tune, offers, months), _training_demand_ref(w, offers, months))


@pytest.mark.parametrize("seed", range(60))
def test_commitment_curve_sorts_whole_demands_as_the_float_sort_does(seed):
    """The int16 key gives the float sort's permutation (ties kept in order), so the same curve; values
    outside int16 or with fractions keep the float key."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    d = np.ceil(rng.random(n) * rng.choice([1.0, 5.0, 40.0, 4e4])) * rng.choice([0.0, 1.0], n, p=[0.2, 0.8])
    if seed % 3 == 0:
        d[rng.integers(0, n)] += 0.5
    key = optimise._sort_key(d)
    np.testing.assert_array_equal(np.argsort(key, kind="stable"), np.argsort(d, kind="stable"))
    assert key.dtype == (np.int16 if np.array_equal(np.floor(d), d) and d.max() < 2 ** 15 else np.float64)
