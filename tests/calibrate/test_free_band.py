"""The band of a freely searched training estimate (what every ``estimate`` without a pinned layout
shows): split-conformal order statistics of the fit runs searched freely (``calibrate.bands``), and
its coverage on the held-out runs searched the same way."""
import math

import numpy as np
import pytest

from workbook import scenario as sc
from workbook.calibrate import bands, cases
from workbook.calibrate.layouts import free_vs_published
from workbook.calibrate.runs import reference_runs
from workbook.model import moe
from workbook.model.efficiency import FREE_METRIC, Efficiency
from workbook.model.estimate import estimate_training
from workbook.model.profile import model_profile
from workbook.scenario import Parallelism


@pytest.mark.parametrize("n,ranks", [(8, (0, 0)), (9, (1, 9)), (10, (1, 10)), (19, (2, 18)), (80, (8, 73))])
def test_conformal_ranks_by_hand(n, ranks):
    """Lei et al. 2018 §2.2 / Angelopoulos & Bates 2021 §1, two equal tails of 10%: k_lo = floor((n+1)/10),
    k_hi = ceil(9(n+1)/10); n = 19: floor(2) = 2, ceil(18) = 18; n = 80: floor(8.1) = 8, ceil(72.9) = 73;
    n = 8: floor(0.9) = 0, too few for an 80% interval."""
    assert bands.conformal_ranks(n) == ranks


def test_conformal_ranks_cover_at_least_80_percent():
    """(k_hi - k_lo)/(n + 1) >= 0.8: the finite-sample guarantee for exchangeable residuals."""
    for n in range(9, 300):
        lo, hi = bands.conformal_ranks(n)
        assert (hi - lo) / (n + 1) >= 0.8 - 1e-12, n


def test_conformal_band_on_a_small_residual_set_by_hand():
    """19 ratios observed/predicted, a search that is optimistic (median 0.92): the band is the 2nd
    and 18th smallest ratios, 0.70 and 1.08, off-centre around the estimate as the residuals are."""
    ratios = [0.55, 0.70, 0.78, 0.82, 0.85, 0.87, 0.89, 0.90, 0.91, 0.92,
              0.93, 0.94, 0.95, 0.97, 0.99, 1.01, 1.04, 1.08, 1.20]
    rng = np.random.default_rng(0)
    lr = np.log(rng.permutation(ratios))  # order does not matter
    lo, hi = bands.conformal_band(lr)
    assert (lo, hi) == pytest.approx((0.70, 1.08))
    assert math.log(hi) < -math.log(lo)  # off-centre: more room below the estimate than above
    # a NaN (a run nothing fits) is dropped, not ranked; too few residuals give no band
    assert bands.conformal_band(np.append(lr, np.nan)) == pytest.approx((0.70, 1.08))
    assert all(math.isnan(v) for v in bands.conformal_band(lr[:8]))


def test_a_free_search_gets_the_free_band_and_a_pinned_layout_the_pinned_one():
    eff = Efficiency.from_table({("band_p10_mfu", "pooled"): 0.8, ("band_p90_mfu", "pooled"): 1.2,
                                 (f"band_p10_{FREE_METRIC}", "pooled"): 0.7, (f"band_p90_{FREE_METRIC}", "pooled"): 1.05})
    p = model_profile("llama-3.1-70b")
    assert moe.training_band(p, "nvidia-hopper", eff) == (0.7, 1.05)
    assert moe.training_band(p, "nvidia-hopper", eff, Parallelism(tp_comm_overlap=True)) == (0.7, 1.05)  # a switch, no layout
    assert moe.training_band(p, "nvidia-hopper", eff, Parallelism(tp=8)) == (0.8, 1.2)
    assert moe.training_band(p, "nvidia-hopper", eff, Parallelism(recompute="full")) == (0.8, 1.2)
    older = Efficiency.from_table({("band_p10_mfu", "pooled"): 0.8, ("band_p90_mfu", "pooled"): 1.2})
    assert moe.training_band(p, "nvidia-hopper", older) == (0.8, 1.2)  # no free band fitted: the pinned one
    # a ratio band above 1 is widened to hold the estimate itself
    high = Efficiency.from_table({(f"band_p10_{FREE_METRIC}", "pooled"): 1.1, (f"band_p90_{FREE_METRIC}", "pooled"): 1.3})
    assert moe.training_band(p, "nvidia-hopper", high) == (1.0, 1.3)


def test_estimate_shows_the_free_band_of_the_shipped_fit():
    """``estimate`` searches the layout freely: its MFU band is the fitted band_p10/p90_mfu_free."""
    s = sc.load_scenario("llama-70b-pretrain")
    row = estimate_training(s, "H100-SXM5-80GB")
    eff = Efficiency.from_csv()
    lo, hi = moe.training_band(model_profile(s.workload.model), "nvidia-hopper", eff)
    assert (lo, hi) == (min(eff.get(f"band_p10_{FREE_METRIC}", "nvidia-hopper"), 1.0),
                        max(eff.get(f"band_p90_{FREE_METRIC}", "nvidia-hopper"), 1.0))
    assert row["mfu_low"] / row["mfu"] == pytest.approx(lo)
    assert row["training_days_high"] / row["training_days"] == pytest.approx(1 / lo)


def test_the_free_band_covers_the_held_out_runs_searched_freely():
    """Fitted on the fit runs only (cross-validated), the band of a free search holds >= 75% of the
    held-out published-layout runs searched freely (measured 82%, 23 of 28; before, with the pinned
    band moved to the free prediction, 68%). The three ZeRO-3 GPT-3 175B runs held out by design, which
    the search overrates 2-4x, are among the misses."""
    runs = reference_runs()
    s = cases.case_summary(runs=runs, free=free_vs_published(runs)).set_index("case").loc[cases.FREE_ROW]
    assert s["n_holdout"] >= 25
    assert s["band_coverage_holdout"] >= 0.75
