"""Monte Carlo, histogram and tornado (workbook.cost.uncertainty)."""
import time

import numpy as np
import pandas as pd
import pytest

from workbook import cost
from workbook.errors import InputError
from workbook.scenario import parse_scenario

from pricing_helpers import LIVE, SERVE, offering, offers, price, serve_perf


def _mc_setup():
    s = parse_scenario(SERVE)
    perf = pd.concat([serve_perf(), serve_perf(acc="A100-SXM4-80GB", tpot=30.0)], ignore_index=True)
    perf["output_tokens_per_s_low"], perf["output_tokens_per_s_high"] = 700.0, 1200.0
    o = offers(offering("o1"), offering("o2", od=60.0, spot=25.0), offering("a1", acc="A100-SXM4-80GB", od=40.0,
                                                                            spot=12.0, c1=np.nan, c3=np.nan))
    return s, price(s, perf, offerings=o)


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
                                               "spot_price_p90_over_p10": 1.0, "price_doubt_scale": 0.0}})
    p2 = price(s2, serve_perf(), offerings=offers(offering("o1")))
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


def test_monte_carlo_rederives_spares_for_each_interruption_rate():
    """One instance, 10-min restarts, 99%: 0.05/h needs no spare (above); 0.1/h: m = 0.01667,
    P(N > 0) = 0.0165 > 0.01, so one spare (k = 1: m = 0.0333, P(N > 1) = 0.00054)."""
    s = parse_scenario({**LIVE, "pricing": {**LIVE["pricing"], "restart_min": 10}})
    p = price(s, serve_perf(), offerings=offers(offering("o1")))
    spot = p[p["pricing_model"] == "spot"]
    out = cost.bill.bill(spot, False, hours_multiplier=np.ones((1, 2)), price_mult=1.0, utilization=0.5,
                    interruptions_per_hour=np.array([[0.05, 0.1]]))
    np.testing.assert_allclose(out["factor"][0], [1.0, 2.0])
    np.testing.assert_allclose(out["cost"][0], [730 * 20.0, 2 * 730 * 20.0])


@pytest.mark.parametrize("n", [1, 2, 3, 10, 11, 999, 10000])
def test_percentiles_read_from_sorted_rows_are_numpys_to_the_bit(n):
    """``sorted_percentiles`` reads P10/P50/P90 at their ranks of sorted rows instead of calling
    np.percentile (another partition): the same floats, unbounded draws (inf) included."""
    from workbook.cost.uncertainty import sorted_percentiles

    rng = np.random.default_rng(n)
    x = rng.lognormal(size=(7, n)) * 10.0 ** rng.uniform(-3, 9, size=(7, 1))
    x[rng.random(x.shape) < 0.15] = np.inf
    x[0] = np.inf
    y = np.sort(x, axis=1)
    with np.errstate(invalid="ignore"):
        want = np.percentile(y, [10, 50, 90], axis=1)
        got = sorted_percentiles(y)
    assert np.array_equal(want, got, equal_nan=True)


def _spy_known(monkeypatch, module) -> list:
    """Replace ``module.known`` (``cost.mcspares.known``) by a spy; the list it fills: per call, whether
    the spares table had the answer."""
    used, real = [], module.known

    def spy(*a):
        k = real(*a)
        used.append(k is not None)
        return k
    monkeypatch.setattr(module, "known", spy)
    return used


def test_monte_carlo_spares_made_once_equal_those_of_each_block(analysed, monkeypatch):
    """The Monte Carlo's spares of latency-bound spot fleets, made once for every block of rows
    (``cost.mcspares``), give the same summary as each block computing its own (the frame to the bit), on the
    shipped serving scenarios with such fleets; and a block reads them (the table is used, not recomputed)."""
    import importlib

    from workbook import load_scenario
    bill_mod = importlib.import_module("workbook.cost.mcspares")
    unc = importlib.import_module("workbook.cost.uncertainty")
    for name in ("embedding-service", "small-model-cheap"):
        s, priced = load_scenario(name), analysed(name, n_draws=200).priced
        used = _spy_known(monkeypatch, bill_mod)
        once = cost.monte_carlo(s, priced, n=3000, seed=5)
        monkeypatch.setattr(unc, "mc_spares", lambda *a: None)
        each = cost.monte_carlo(s, priced, n=3000, seed=5)
        monkeypatch.undo()
        pd.testing.assert_frame_equal(once, each, check_exact=True)
        assert any(used)


def test_both_draws_share_their_spares_and_equal_two_calls(analysed, monkeypatch):
    """``mc_draws_both`` makes the spares of the latency-bound spot fleets once for its two evaluations
    (``cost.mcspares``): each array equals its own ``mc_draws`` call's (to the bit), and the second evaluation
    reads the table (on the shipped serving scenarios with such fleets)."""
    import importlib

    from workbook import load_scenario
    sp = importlib.import_module("workbook.cost.mcspares")
    for name in ("chat-70b-realtime", "embedding-service", "small-model-cheap"):
        s, priced = load_scenario(name), analysed(name, n_draws=200).priced
        ok = priced[priced["excluded_reason"].isna()]
        rows = pd.concat([ok[ok["kind"] == "spot"].head(20), ok[ok["kind"] != "spot"].head(20)])
        used = _spy_known(monkeypatch, sp)
        both = cost.mc_draws_both(s, rows, n=2000, seed=3)
        monkeypatch.undo()
        alone = (cost.mc_draws(s, rows, n=2000, seed=3), cost.mc_draws(s, rows, n=2000, seed=3, price_doubt=False))
        for got, want in zip(both, alone):
            assert got.keys() == want.keys()
            for k in want:
                a, b = np.asarray(got[k]), np.asarray(want[k])
                assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (name, k)
        assert any(used) and (rows["kind"] == "spot").any()


def _keys_by_pandas(priced: pd.DataFrame, cols: tuple) -> np.ndarray:
    """``offer_keys``/``stream_keys`` as they were: pandas string methods (verbatim, the reference)."""
    if all(k in priced for k in cols):
        parts = [priced[k].fillna("-").astype(str).str.strip().str.lower() for k in cols]
        key = parts[0]
        for part in parts[1:]:
            key = key + "|" + part
        return key.where(priced["instance"].notna(), priced["offering"].fillna("-").astype(str)).to_numpy()
    return priced["offering"].fillna("-").astype(str).to_numpy()


def test_offer_and_stream_keys_equal_the_pandas_string_methods(analysed):
    """The keys made a row at a time in Python equal the pandas expression they replace (values, types, dtype) on
    every shipped scenario's priced rows and on a frame with blanks, padding, capitals and numbers."""
    from workbook.cost import uncertainty as unc
    from workbook.scenario import scenario_names
    odd = pd.DataFrame({"provider": [" AWS ", None, "gcp", "Az", np.nan], "instance": ["P5.48xlarge ", "a3", None, 7, "x"],
                        "region": ["us-east-1", None, "EU ", "r", "R2"], "offering": ["o1", None, "o3", 4.0, "o5"]})
    frames = [analysed(n, n_draws=200).priced for n in scenario_names()] + [odd, odd.drop(columns="region")]
    for fr in frames:
        for got, cols in ((unc.stream_keys(fr), ("provider", "instance")), (unc.offer_keys(fr), ("provider", "instance", "region"))):
            want = _keys_by_pandas(fr, cols)
            assert got.dtype == want.dtype and got.tolist() == want.tolist()
            assert [type(v) for v in got] == [type(v) for v in want]


def test_monte_carlo_summary_does_not_depend_on_its_block_of_rows(analysed, monkeypatch):
    """``monte_carlo`` evaluates its option groups ``BLOCK_ROWS`` at a time: one row, a few, the default, the
    former 48 and every row at once give the same summary to the bit (percentiles, the cheapest per draw with its
    tie rule, the budget and deadline shares), on shipped serving and training scenarios."""
    import importlib

    from workbook import load_scenario
    unc = importlib.import_module("workbook.cost.uncertainty")
    for name in ("chat-70b-realtime", "embedding-service", "llama-8b-finetune"):
        s, priced = load_scenario(name), analysed(name, n_draws=200).priced
        want = cost.monte_carlo(s, priced, n=1500, seed=4)
        for rows in (1, 5, 48, 100000):
            monkeypatch.setattr(unc, "BLOCK_ROWS", rows)
            pd.testing.assert_frame_equal(cost.monte_carlo(s, priced, n=1500, seed=4), want, check_exact=True)
        monkeypatch.undo()
