"""The break-even table (workbook.cost.breakeven) against the per-row reference it replaced: every
option's figures worked out, then the cheapest per accelerator x model kept; and the spot fleets'
interruption rates solved over arrays against the one-fleet bisection."""
import math

import numpy as np
import pandas as pd
import pytest

from workbook import cost
from workbook.cost.breakeven import _BREAKEVEN_COLUMNS, _breakeven_entry
from workbook.scenario import parse_scenario

from pricing_helpers import LIVE, TRAIN

REL = 1e-13  # the array bisection's Poisson tails are summed in other blocks: last-bit differences only


def one_fleet_rate(spot, od, restart_h, n, target):
    """The one-fleet bisection as it was (scalar ``poisson_sf`` per halving): the reference."""
    if not (spot > 0 and od > 0 and n > 0 and restart_h > 0) or spot >= od:
        return 0.0
    k_max = math.ceil(n * (od / spot - 1.0)) - 1
    if k_max < 0:
        return 0.0
    eps, lo, hi = 1.0 - target, 0.0, 1.0 / restart_h
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if float(cost.poisson_sf(k_max, (n + k_max) * mid * restart_h)) <= eps:
            lo = mid
        else:
            hi = mid
    return lo


def test_array_bisection_matches_one_fleet_at_a_time():
    rng = np.random.default_rng(7)
    m = 60
    od = rng.uniform(1.0, 100.0, m)
    spot = od * rng.choice([0.1, 0.3, 0.6, 0.95, 1.0, 1.2], m)
    n = np.round(rng.lognormal(1.5, 1.2, m)) + rng.choice([0.0, 0.5], m)
    n[::37] = 0.0
    restart_h = rng.choice([1 / 60, 10 / 60, 0.5, 2.0], m)
    target = rng.choice([0.3, 0.9, 0.99, 0.999, 0.99999], m)
    got = cost.breakeven_interruptions_spot_spares(spot, od, restart_h, n, target)
    ref = np.array([one_fleet_rate(*a) for a in zip(spot, od, restart_h, n, target)])
    assert got.shape == (m,)
    assert (ref == 0.0).sum() > 5 and (ref > 0.0).sum() > 25
    np.testing.assert_allclose(got, ref, rtol=REL, atol=0.0)
    # one fleet at a time through the array function is a scalar again
    assert isinstance(cost.breakeven_interruptions_spot_spares(20.0, 80.0, 10 / 60, 1, 0.99), float)
    assert cost.breakeven_interruptions_spot_spares(20.0, 80.0, 10 / 60, 1, 0.99) == pytest.approx(ref_one := one_fleet_rate(
        20.0, 80.0, 10 / 60, 1, 0.99), rel=REL) and ref_one > 0


def reference_table(s, priced):
    """The table as it was built: every non-on-demand row's figures, then the cheapest kept."""
    rows = []
    ok = priced[priced["usd_per_instance_hour"].notna()].copy()
    ok["usd_per_chip_hour"] = ok["usd_per_instance_hour"] / ok["chips_per_instance"]
    for acc, g in ok.groupby("accelerator", sort=True):
        od = g[g["pricing_model"] == "on_demand"]
        if od.empty:
            continue
        od_best = od.loc[od["usd_per_chip_hour"].idxmin()]
        od_price = od_best["usd_per_chip_hour"]
        for _, r in g[g["pricing_model"] != "on_demand"].iterrows():
            price = r["usd_per_chip_hour"]
            entry = {"accelerator": acc, "pricing_model": r["pricing_model"], "offering": r["offering"],
                     "usd_per_chip_hour": price, "on_demand_offering": od_best["offering"],
                     "on_demand_usd_per_chip_hour": od_price, "price_ratio": price / od_price,
                     "months_to_beat_on_demand": np.nan, "utilization_to_beat_on_demand": np.nan,
                     "max_interruptions_per_hour": np.nan, "min_useful_fraction": np.nan}
            entry.update(_breakeven_entry(s, r, od_price))
            rows.append(entry)
    out = pd.DataFrame(rows, columns=_BREAKEVEN_COLUMNS)
    if len(out):
        out = out.sort_values("usd_per_chip_hour").groupby(["accelerator", "pricing_model"], sort=True).head(1)
        out = out.sort_values(["accelerator", "pricing_model"]).reset_index(drop=True)
    return out


def random_priced(rng, m, spares):
    """A priced table of ``m`` rows: 5 accelerators (one without on-demand), ties in price, NaN prices,
    an unread wide column; spot fleets with an availability target when ``spares``."""
    accs = np.array(["B200", "H100", "MI300X", "TPU-v5e", "L4"])
    models = np.array(["on_demand", "spot", "commit_1y", "commit_3y", "purchase", "capacity_block", "monthly"])
    acc = rng.choice(accs, m)
    model = rng.choice(models, m)
    model[acc == "L4"] = "spot"  # no on-demand row: no break-even
    cpi = rng.choice([1, 4, 8], m)
    price = np.round(rng.uniform(1.0, 40.0, m), 0) * cpi  # whole dollars a chip: many equal prices
    price = np.where(model == "on_demand", price + 10.0 * cpi, price)  # on-demand dearer: spot pays below it
    price = np.where(model == "spot", np.round(price / 4.0), price)
    price[rng.random(m) < 0.05] = np.nan
    term = np.select([model == "commit_1y", model == "commit_3y", model == "purchase", model == "monthly"],
                     [12.0, 36.0, 48.0, 1.0], np.nan)
    d = pd.DataFrame({"accelerator": acc, "pricing_model": model, "offering": [f"o{i}" for i in range(m)],
                      "usd_per_instance_hour": price, "chips_per_instance": cpi, "term_months": term,
                      "hosting_usd_per_instance_hour": np.where(model == "purchase", 0.5 * cpi, np.nan),
                      "energy_usd_per_instance_hour": 0.3 * cpi, "checkpoint_interval_s": rng.choice([np.nan, 1800.0], m),
                      "spot_instances": rng.choice([np.nan, 4.0, 64.0], m), "wide": [list(range(5))] * m})
    if spares:
        d["instances"] = np.round(rng.lognormal(2.0, 1.5, m))
        d["spot_availability_target"] = rng.choice([0.99, 0.999, np.nan], m)
    return d.set_index(pd.Index(rng.permutation(m) * 3))  # index labels neither positions nor sorted


@pytest.mark.parametrize("scenario,spares,seed", [(TRAIN, False, 1), (TRAIN, False, 2), (LIVE, True, 3),
                                                  (LIVE, True, 4), (LIVE, True, 5)])
def test_table_matches_every_row_then_the_cheapest(scenario, spares, seed):
    s = parse_scenario(scenario)
    priced = random_priced(np.random.default_rng(seed), 150, spares)
    got, ref = cost.breakeven(s, priced), reference_table(s, priced)
    assert len(ref) > 15 and (ref["pricing_model"] == "spot").any()
    assert ref["max_interruptions_per_hour"].gt(0).any()
    exact = [c for c in _BREAKEVEN_COLUMNS if c != "max_interruptions_per_hour"]
    pd.testing.assert_frame_equal(got[exact], ref[exact], check_exact=True)
    np.testing.assert_allclose(got["max_interruptions_per_hour"], ref["max_interruptions_per_hour"], rtol=REL, atol=0.0)


def test_table_without_on_demand_is_empty():
    s = parse_scenario(TRAIN)
    priced = random_priced(np.random.default_rng(0), 50, False)
    priced = priced[priced["pricing_model"] != "on_demand"]
    got = cost.breakeven(s, priced)
    assert got.empty and list(got.columns) == _BREAKEVEN_COLUMNS
