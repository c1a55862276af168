"""The grouped Monte Carlo (workbook.cost.mcgroups, uncertainty.monte_carlo) against the per-row
evaluation it replaced: every option's bill drawn on its own, on the same draws. Regions of one
instance re-price it (common random numbers: uncertainty.stream_keys)."""
import numpy as np
import pandas as pd
import pytest

from workbook import cost
from workbook.cost import mcgroups, uncertainty as U
from workbook.scenario import parse_scenario

from pricing_helpers import LIVE, SERVE, TRAIN, offering, offers, price, serve_perf, train_perf

REL = 1e-12  # W x price against the price inside the product: rounding only


def per_row(s, priced, n, seed):
    """The Monte Carlo one row at a time (blocks of rows, every row evaluated): the reference."""
    training = s.is_training
    ok = U._feasible(priced).reset_index(drop=True)
    g = U._draws(s, ok, n, seed, True)
    c = s.constraints
    R = len(ok)
    q, q2, within, meets = np.empty((3, R)), np.empty((3, R)), np.full(R, np.nan), np.full(R, np.nan)
    best, winner = np.full(n, np.inf), np.zeros(n, dtype=np.intp)
    for a in range(0, R, 7):
        b = min(R, a + 7)
        d = U._evaluate(g, a, b)
        filled = np.where(np.isnan(d["metric"]), np.inf, d["metric"])
        i = np.argmin(filled, axis=0)
        m = filled[i, np.arange(n)]
        lower = m < best
        best[lower], winner[lower] = m[lower], i[lower] + a
        if c.budget_usd is not None:
            total = d["cost"] if training else d["cost"] * s.pricing.horizon_months
            within[a:b] = np.mean(total <= c.budget_usd, axis=1)
        if training and c.deadline_days is not None:
            meets[a:b] = np.mean(d["days"] <= c.deadline_days, axis=1)
        if training:
            q[:, a:b], q2[:, a:b] = U._percentiles(d["metric"]), U._percentiles(d["days"])
        else:
            q[:, a:b], q2[:, a:b] = U._serving_percentiles(d)
    return ok["option"].to_numpy(), q, q2, np.bincount(winner, minlength=R) / n, within, meets


def regions(base, prices):
    """One instance in several regions, each with its own on-demand and spot price."""
    return [{**base, "offering": f"{base['offering']}-{i}", "region": f"r{i}", "on_demand_usd_per_hour": od,
             "spot_usd_per_hour": sp} for i, (od, sp) in enumerate(prices)]


def catalog_rows(rng, basis="secondary"):
    rows = []
    for name, acc, od in (("h", "H100-SXM5-80GB", 80.0), ("a", "A100-SXM4-80GB", 40.0)):
        base = {**offering(name, acc=acc, od=od, spot=od / 3), "price_basis": basis}
        prices = [(od * f, od * f / rng.uniform(2.0, 4.0)) for f in rng.uniform(0.8, 1.2, 6)]
        prices.append(prices[0])  # a twin at the same prices: ties go to the earlier row
        rows += regions(base, prices)
    return offers(*rows)


def check(s, priced, n=3000, seed=3):
    got = cost.monte_carlo(s, priced, n=n, seed=seed).set_index("option")
    opts, q, q2, p_cheap, within, meets = per_row(s, priced, n, seed)
    got = got.loc[opts]
    second = ["days_p10", "days_p50", "days_p90"] if s.is_training else ["usd_per_month_p10", "usd_per_month_p50",
                                                                          "usd_per_month_p90"]
    np.testing.assert_allclose(got[["p10", "p50", "p90"]].to_numpy().T, q, rtol=REL)
    np.testing.assert_allclose(got[second].to_numpy().T, q2, rtol=REL)
    np.testing.assert_array_equal(got["p_cheapest"].to_numpy(), p_cheap)
    if "p_within_budget" in got:
        np.testing.assert_array_equal(got["p_within_budget"].to_numpy(), within)
        assert 0 < within.mean() < 1
    if "p_meets_deadline" in got:
        np.testing.assert_array_equal(got["p_meets_deadline"].to_numpy(), meets)
    return got


def test_serving_regions_share_one_evaluation_and_match_every_row():
    s = parse_scenario(SERVE)
    perf = pd.concat([serve_perf(), serve_perf(acc="A100-SXM4-80GB", tpot=30.0)], ignore_index=True)
    perf["output_tokens_per_s_low"], perf["output_tokens_per_s_high"] = 700.0, 1200.0
    priced = price(s, perf, offerings=catalog_rows(np.random.default_rng(1)))
    ok = U._feasible(priced).reset_index(drop=True)
    g = U._draws(s, ok, 10, 0, True)
    groups = mcgroups.option_groups(ok, False, [g["eff_rows"], g["spot_rows"], g["price_rows"]])
    assert len(groups["first"]) <= len(ok) / 4  # 14 regions of 2 instances x 4 ways to pay: a few evaluations
    got = check(s, priced)
    twins = got.loc[[o for o in got.index if "-6 |" in o], "p_cheapest"]
    assert (twins == 0).all()  # the twin of the first region never wins a draw: the first row keeps ties


def test_latency_bound_spot_fleets_with_spares_match_every_row():
    s = parse_scenario(LIVE)
    priced = price(s, serve_perf(replicas=6, tp=2), offerings=catalog_rows(np.random.default_rng(2), "provider_page"))
    check(s, priced)


@pytest.mark.parametrize("budget,deadline", [(2.0e5, 11.0), (1.5e5, 10.5)])
def test_training_with_a_budget_and_a_deadline_matches_every_row(budget, deadline):
    s = parse_scenario({**TRAIN, "constraints": {"budget_usd": budget, "deadline_days": deadline}})
    perf = pd.concat([train_perf(low=0.9, high=1.2), train_perf(acc="A100-SXM4-80GB", days=20.0, low=0.9, high=1.3)],
                     ignore_index=True)
    got = check(s, price(s, perf, offerings=catalog_rows(np.random.default_rng(3))))
    assert got["p_meets_deadline"].between(0, 1).all()


def test_a_price_scales_every_percentile():
    """q(c·W + F) = c·q(W) + F for c > 0: the same order statistics."""
    rng = np.random.default_rng(0)
    w = rng.lognormal(0.0, 0.7, (4, 1001))
    prev, nxt, t = mcgroups.rank_positions(w.shape[1], U._PERCENTS)
    y = np.sort(w, axis=1)
    for c, f in ((3.7, 0.0), (0.2, 125.0)):
        got = mcgroups.lerp_ranks(c * y[:, prev].T + f, c * y[:, nxt].T + f, t)
        np.testing.assert_allclose(got, np.percentile(c * w + f, U._PERCENTS * 100, axis=1), rtol=1e-14)
