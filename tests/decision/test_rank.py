"""The ranking (workbook.decision.rank): it moves the expected way when weights move; flip conditions hold."""
import numpy as np
import pandas as pd

from workbook import decision

from pricing_helpers import decide, offering, offers, scenario


def test_cost_weight_picks_the_cheaper_run_and_time_weight_the_faster():
    """A100: 8 x 240 h x $30 = $57,600; H100: 8 x 120 h x $100 = $96,000 but twice as fast."""
    cheap, _ = decide(scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}))
    fast, _ = decide(scenario({"cost": 0.1, "time": 1, "ecosystem": 0, "portability": 0}))
    assert cheap.accelerator == "A100-SXM4-80GB"
    assert fast.accelerator == "H100-SXM5-80GB"
    assert cheap.runner_up["accelerator"] == "H100-SXM5-80GB"


def test_ecosystem_weight_moves_the_choice_toward_native_support():
    """TPU v5e is cheaper but PyTorch support on TPU is partial (software.csv); the port's effort is
    pinned to one week (pricing.porting_weeks) so that only the ecosystem weight moves the choice."""
    perf = pd.DataFrame({"accelerator": ["TPU-v5e", "A100-SXM4-80GB"], "chips": [64, 64], "fits": [True, True],
                         "reason": [None, None], "training_days": [10.0, 10.0]})
    o = offers(offering("t", acc="TPU-v5e", od=20.0, spot=np.nan, c1=np.nan, c3=np.nan),
               offering("a", acc="A100-SXM4-80GB", od=30.0, spot=np.nan, c1=np.nan, c3=np.nan))
    week = {"porting_weeks": 1}
    cheap, _ = decide(scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}, pricing=week), perf, o)
    eco, _ = decide(scenario({"cost": 0.3, "time": 0, "ecosystem": 1, "portability": 0}, pricing=week), perf, o)
    assert cheap.accelerator == "TPU-v5e"
    assert eco.accelerator == "A100-SXM4-80GB"


def test_weight_flip_threshold_really_flips_the_ranking():
    s = scenario({"cost": 0.6, "time": 0.4, "ecosystem": 0, "portability": 0})
    rec, priced = decide(s)
    ranked = decision.rank(s, priced)
    flips = [f for f in rec.flip_conditions if f.startswith("If the time weight")]
    assert flips, rec.flip_conditions
    new = float(flips[0].split(" to ")[1].split(" ")[0])
    after = decision.rank(scenario({"cost": 0.6, "time": new + 0.02, "ecosystem": 0, "portability": 0}), priced)
    assert after.iloc[0]["accelerator"] != ranked.iloc[0]["accelerator"]


def test_pareto_front():
    front = decision.pareto_front([1, 2, 3, 2], [3, 2, 1, 3])
    assert list(front) == [True, True, True, False]


def test_pareto_front_matches_every_pair_compared():
    """The one-sort front against the definition (every pair compared), with ties, inf and NaN."""
    def every_pair(c, t):
        c, t = np.asarray(c, float), np.asarray(t, float)
        le = (c[None, :] <= c[:, None]) & (t[None, :] <= t[:, None])
        lt = (c[None, :] < c[:, None]) | (t[None, :] < t[:, None])
        return ~(le & lt).any(axis=1)
    rng = np.random.default_rng(0)
    for i in range(400):
        n = int(rng.integers(0, 30))
        c = rng.choice([1.0, 2.0, 3.0, np.nan, np.inf, -np.inf], n) if i % 2 else rng.integers(0, 6, n).astype(float)
        t = rng.choice([1.0, 2.0, np.nan, np.inf], n) if i % 3 else rng.uniform(0, 1, n)
        np.testing.assert_array_equal(decision.pareto_front(c, t), every_pair(c, t))


def test_option_rows_and_both_score_draws_equal_the_separate_calls(analysed):
    """``rank._option_rows`` is the drop-duplicates / set_index / loc it replaces (columns, order, values), and
    ``score_draws_both`` (one set of draws, ``cost.mc_draws_both``) gives the arrays of the two ``score_draws``
    calls, with and without the price doubt, to the bit; on a serving and a training scenario."""
    import importlib

    from workbook import load_scenario
    rk = importlib.import_module("workbook.decision.rank")
    for name in ("small-model-cheap", "llama-8b-finetune"):
        a = analysed(name, n_draws=200)
        s, priced = load_scenario(name), a.priced
        ranked = rk.rank(s, priced, a.mc)
        rows = ranked.head(4)
        old = priced.drop_duplicates("option").set_index("option").loc[rows["option"]].reset_index()
        new = rk._option_rows(priced, rows["option"])
        assert list(new.columns) == list(old.columns)
        pd.testing.assert_frame_equal(new, old, check_dtype=False)
        both = rk.score_draws_both(s, priced, rows, 300, 3)
        for got, doubt in zip(both, (True, False)):
            want = rk.score_draws(s, priced, rows, 300, 3, price_doubt=doubt)
            assert np.array_equal(got, want, equal_nan=True)
