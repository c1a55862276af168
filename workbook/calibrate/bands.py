"""The P10-P90 bands of the estimates, from out-of-sample residuals log(observed/predicted) of the
``fit`` runs (``calibrate.fit.cv_residuals``): the statistics, no model.

- ``prediction_band``: the Student-t prediction interval of one new observation, for predictions with
  the published layout pinned (the calibration's own) and the serving metrics;
- ``conformal_band``: the split-conformal interval, order statistics of the residuals with no shape
  assumed, for the training estimate users get: a free layout search (``efficiency.FREE_METRIC``;
  residuals from ``calibrate.layouts.free_prediction``). Those residuals are biased (the search lands
  above the published MFU more often than below: median observed/predicted about 0.94) with a long low
  tail (runs the search overrates by 2x and more), which a mean ± t·s band, symmetric in log space,
  does not follow. The band keeps the bias visible (off-centre around the estimate); the point
  estimate gets no hidden correction.

The residuals are K-fold out-of-sample (every fit run predicted by parameters fitted without its
fold), not one held-out split: the cross-conformal / CV+ form (Vovk 2015, Annals of Mathematics and
Artificial Intelligence 74:9; Barber, Candès, Ramdas & Tibshirani 2021, Annals of Statistics 49:486),
whose guarantee is 1 − 2α in the worst case and about 1 − α in practice; the held-out runs, never
fitted, check it (``calibrate.cases``).
"""
from __future__ import annotations

import math

import numpy as np

# a family gets a band of its own when its spread is known to 20%: the relative standard error of a
# sample standard deviation is about 1/sqrt(2(n - 1)), so n >= 1 + 1/(2 * 0.2^2) = 13.5 residuals
BAND_SPREAD_RSE = 0.2
BAND_MIN_RUNS = math.ceil(1 + 1 / (2 * BAND_SPREAD_RSE ** 2))
BAND_LEVEL = 0.9  # the band is P10-P90: a two-sided 80% prediction interval


def t_quantile(p: float, dof: float) -> float:
    """Quantile ``p`` of Student's t with ``dof`` degrees of freedom: exact for 1 and 2, else the
    Cornish-Fisher expansion about the normal quantile (Abramowitz & Stegun 26.7.5; error below 1e-3
    for dof >= 3 at p = 0.9)."""
    if dof <= 1.0:
        return float(np.tan(np.pi * (p - 0.5)))
    if dof <= 2.0:
        return float((2 * p - 1) * np.sqrt(2.0 / (4 * p * (1 - p))))
    z = float(np.sqrt(2.0) * _erfinv(2 * p - 1))
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    return z + g1 / dof + g2 / dof ** 2 + g3 / dof ** 3


def _erfinv(y: float) -> float:
    """Inverse error function by Newton's method on math.erf (no SciPy dependency)."""
    x = 0.0
    for _ in range(60):
        x -= (math.erf(x) - y) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def prediction_band(log_ratio: np.ndarray) -> tuple[float, float]:
    """P10 and P90 of observed/predicted for a new run from out-of-sample residuals ``log_ratio`` =
    log(observed/predicted): the Student-t prediction interval mean ± t(0.9, n − 1) · s ·
    sqrt(1 + 1/n), s the sample standard deviation (the textbook interval for one new observation,
    e.g. Montgomery & Runger, Applied Statistics and Probability for Engineers, §8.4). Few residuals
    give a wide band through t and sqrt(1 + 1/n)."""
    r = np.asarray(log_ratio, dtype=float)
    n = len(r)
    if n < 2:
        return (math.nan, math.nan)
    s = float(np.std(r, ddof=1))
    half = t_quantile(BAND_LEVEL, n - 1) * s * math.sqrt(1.0 + 1.0 / n)
    return float(math.exp(r.mean() - half)), float(math.exp(r.mean() + half))


def conformal_ranks(n: int, level: float = 2 * BAND_LEVEL - 1) -> tuple[int, int]:
    """The 1-based ranks (k_lo, k_hi) of the sorted residuals that bound a two-sided ``level``
    interval with equal tails α/2, α = 1 − level: k_lo = ⌊(n + 1)·α/2⌋, k_hi = ⌈(n + 1)·(1 − α/2)⌉
    (split conformal prediction: Vovk, Gammerman & Shafer, Algorithmic Learning in a Random World,
    2005; Lei et al. 2018, JASA 113:1094, §2.2; Angelopoulos & Bates 2021, arXiv:2107.07511, §1).
    For exchangeable residuals a new one lies in [r_(k_lo), r_(k_hi)] with probability
    (k_hi − k_lo)/(n + 1) >= ``level``. (0, 0) when n is too small for that (k_lo < 1 or k_hi > n:
    n < 2/α − 1, 9 residuals at 80%)."""
    a = (1.0 - level) / 2.0
    k_lo = math.floor(round((n + 1) * a, 9))
    k_hi = math.ceil(round((n + 1) * (1.0 - a), 9))
    return (0, 0) if k_lo < 1 or k_hi > n else (k_lo, k_hi)


def conformal_band(log_ratio: np.ndarray, level: float = 2 * BAND_LEVEL - 1) -> tuple[float, float]:
    """P10 and P90 of observed/predicted for a new run: exp of the order statistics
    ``conformal_ranks`` of the out-of-sample residuals ``log_ratio`` = log(observed/predicted), the
    empirical-quantile interval from residuals (Hyndman & Athanasopoulos, Forecasting: Principles and
    Practice, 3rd ed., §5.5 "bootstrapped prediction intervals") with the finite-sample ranks of
    split conformal prediction. No shape is assumed, so a skewed or biased residual set gives an
    off-centre band: the bias shows in the band, the point estimate is not corrected. NaN, NaN
    when the residuals are too few."""
    r = np.sort(np.asarray(log_ratio, dtype=float))
    r = r[~np.isnan(r)]
    k_lo, k_hi = conformal_ranks(len(r), level)
    if k_lo == 0:
        return (math.nan, math.nan)
    return float(math.exp(r[k_lo - 1])), float(math.exp(r[k_hi - 1]))
