"""Billing and break-even formulas over scalars or arrays (numpy broadcasting).

Each function derives its equation in the docstring, gives an example where useful and says when
it returns inf. Sources: Young 1974 "A first order approximation to the optimum checkpoint
interval" (CACM 17(9)) and Daly 2006 "A higher order estimate of the optimum checkpoint interval
for restart dumps" (FGCS 22(3)) for the work lost per interruption (half a checkpoint interval
plus the restart); the M/G/infinity result (Gross & Harris, "Fundamentals of Queueing Theory": the
number in service is Poisson with mean arrival rate x mean service time, whatever the
service-time distribution) for the instances down at once; the break-even formulas are the
equalities of the billing rules of ``workbook.cost.bill``.
"""
from __future__ import annotations

import math

import numpy as np

from ..terms import DAYS_PER_MONTH, HOURS_PER_MONTH

Z90 = 1.2815515655446004  # standard normal 90th percentile: a P10-P90 band is +/- Z90 sigma


def spot_overhead_factor(interruptions_per_hour, checkpoint_interval_h, restart_h, instances=1):
    """Paid hours per useful hour for a checkpointed job on spot capacity.

    Each interruption loses, on average, half a checkpoint interval of work plus the restart time
    (Young 1974; Daly 2006). A job spread over ``instances`` machines stops when any one is reclaimed,
    at rate n·λ. Wall time W then satisfies W = useful + n·λ·W·(τ/2 + R), so
    W / useful = 1 / (1 - n·λ·(τ/2 + R)), and the job never finishes (inf) when n·λ·(τ/2 + R) >= 1.
    Always >= 1: spot never costs less than its sticker price per useful hour."""
    loss = np.asarray(instances, dtype=float) * np.asarray(interruptions_per_hour, dtype=float) * (
        np.asarray(checkpoint_interval_h, dtype=float) / 2.0 + np.asarray(restart_h, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(loss < 1.0, 1.0 / (1.0 - loss), np.inf)


def spot_serving_factor(interruptions_per_hour, restart_h):
    """Instance-hours held per useful instance-hour for a serving fleet on spot capacity.

    A reclaimed replica is out for the restart time R (no training progress is lost, in-flight
    requests are retried), so a fleet keeps its capacity by holding 1 / (1 - λ·R) times the
    instance-hours (same renewal argument as ``spot_overhead_factor`` with τ = 0, n = 1)."""
    return spot_overhead_factor(interruptions_per_hour, 0.0, restart_h, 1)


_LGAMMA = np.frompyfunc(math.lgamma, 1, 1)
MAX_SPARES = 1e12  # spare instances above which spare_instances answers inf (no such count is bought)
_TAIL_TOL = 2.0 ** -56  # a term below this fraction of the partial sum no longer changes it in float64


def _log_factorial(j):
    """ln j! for an array of non-negative whole numbers (math.lgamma(j + 1) once per distinct j; a few
    elements directly: the same value per element, without ``np.unique``'s sort)."""
    if np.size(j) <= _FEW:
        return _LGAMMA(np.asarray(j) + 1.0).astype(float)
    values, inverse = np.unique(j, return_inverse=True)
    return _LGAMMA(values + 1.0).astype(float)[inverse.reshape(np.shape(j))]


_FEW = 64  # arrays up to this size: per-element work instead of a sort and a gather (poisson_sf)
_STEPS: dict = {}  # poisson_sf's block offsets 1..width, by width (read-only)


def _steps(width: int) -> np.ndarray:
    """``np.arange(1.0, width + 1.0)``, made once per width."""
    out = _STEPS.get(width)
    if out is None:
        out = _STEPS[width] = np.arange(1.0, width + 1.0)
        out.flags.writeable = False
    return out


# Taylor coefficients of Temme's c_0(eta) and c_1(eta) (DLMF 8.12.8-8.12.9) at eta = 0, exact
# fractions derived by power-series arithmetic from eta^2/2 = mu - ln(1 + mu) (mu = lambda - 1): invert
# to mu(eta), expand 1/mu - 1/eta and 1/eta^3 - 1/mu^3 - 1/mu^2 - 1/(12 mu) (the derivation is
# repeated in tests/cost/test_cost_rates.py). The first ones are DLMF 8.12.10's: c_0 = -1/3 + eta/12
# - 2 eta^2/135 + eta^3/864 + ..., c_1 = -1/540 - eta/288 + ...
_C0 = (-1/3, 1/12, -2/135, 1/864, 1/2835, -139/777600, 1/25515, -571/261273600, -281/151559100,
       163879/197522841600, -5221/29554024500, 5246819/782190452736000)
_C1 = (-1/540, -1/288, 1/378, -77/77760, 1/4860, -1/2488320, -2743/151559100, 41969/5486745600,
       -11/6823440, 47207/10158317568000)
TEMME_MIN = 1e5   # k + 1 from which poisson_sf uses Temme's expansion near the mean (see there)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _poly(coef, x):
    out = np.zeros_like(x)
    for c in reversed(coef):
        out = out * x + c
    return out


def _temme_lower(a, mu):
    """P(a, x), the regularized lower incomplete gamma function, for large ``a`` and x = a(1 + mu):
    Temme's uniform expansion (DLMF 8.12.4 with 8.12.1 and 8.12.8-8.12.9; N. M. Temme, "The
    asymptotic expansion of the incomplete gamma functions", SIAM J. Math. Anal. 10 (1979) 757-766),
    P(a, x) = erfc(-eta sqrt(a/2)) / 2 - R_a(eta), R_a(eta) = e^(-a eta^2/2) / sqrt(2 pi a) x
    (c_0(eta) + c_1(eta)/a + ...), eta^2/2 = mu - ln(1 + mu), eta of the sign of mu. The terms kept
    leave |c_2| a^-2 / sqrt(2 pi a) < 6e-16 for a >= 1e5 (c_2(0) = 4.1e-3); against a 50-digit sum of
    the Poisson terms the error measured 5.6e-16 at a = 1e5 and one rounding (1.1e-16) from a = 1e6.
    ``mu`` is passed rather than x so that x - a near the mean keeps its digits; mu - ln(1 + mu) is summed as its series
    (sum_{n >= 2} (-mu)^n / n, 12 terms) for |mu| < 0.01, where the difference would cancel."""
    small = np.abs(mu) < 0.01
    ms = np.where(small, mu, 0.0)
    series = np.zeros_like(mu)
    for n in range(13, 1, -1):
        series = series * -ms + 1.0 / n
    half_eta2 = np.where(small, ms * ms * series, mu - np.log1p(np.where(small, 0.0, mu)))
    eta = np.copysign(np.sqrt(2.0 * np.maximum(half_eta2, 0.0)), mu)
    near = np.abs(eta) < 0.1
    with np.errstate(divide="ignore", invalid="ignore"):
        c0 = np.where(near, _poly(_C0, eta), 1.0 / mu - 1.0 / eta)
        c1 = np.where(near, _poly(_C1, eta), 1.0 / eta ** 3 - 1.0 / mu ** 3 - 1.0 / mu ** 2 - 1.0 / (12.0 * mu))
    r = np.exp(-a * half_eta2) / np.sqrt(2.0 * np.pi * a) * (c0 + c1 / a)
    return _ERFC(-eta * np.sqrt(a / 2.0)).astype(float) / 2.0 - r


def poisson_sf(k, mean):
    """P(N > k) for N ~ Poisson(mean), for any mean; ``k`` (whole numbers) and ``mean`` broadcast.

    The terms p_j = e^-m m^j / j! are formed in log space, ln p_j = -m + j ln m - ln j! (ln j! from
    math.lgamma), so no e^-m underflows to 0 for a large mean; the sum then runs away from the mode,
    where the terms fall off (ratio m/(j+1) above the mean, j/m below it): above the mean
    (k + 1 > m) the tail itself, P(N > k) = sum_{j > k} p_j, starting at p_{k+1}; otherwise the
    complement 1 - sum_{j <= k} p_j, starting at p_k. Each sum stops when a term drops below 2^-56 of
    the partial sum (the terms after it fall faster still), so the tail has a relative error of
    1e-13 to 1e-11 for means of 1e3 to 1e5 (the rounding of ln p_{k+1}), the complement an absolute one of
    ~1e-16; about 9·sqrt(m) terms near the mode, fewer further out. This is the Poisson-incomplete
    gamma identity P(N <= k) = Q(k + 1, m), the regularized upper incomplete gamma function
    (Abramowitz & Stegun 6.5.13 and 26.4.21), summed term by term as in its series (A&S 6.5.29;
    Press et al., Numerical Recipes 3rd ed. 6.2). Exact hand values: m = 0.1, P(N > 0) = 1 - e^-0.1
    = 0.095163 and P(N > 1) = 1 - 1.1·e^-0.1 = 0.0046788. k < 0 gives 1; m = 0 gives 0 for k >= 0.

    From k + 1 >= ``TEMME_MIN`` (1e5) with the mean within half of k + 1 of it, where the sum would
    take 9·sqrt(m) = 2,800 to millions of terms (means of 1e8-1e10 come from spot fleets whose
    reclaim rate x restart nears 1), it is P(k + 1, m) = 1 - Q(k + 1, m) from Temme's expansion
    (``_temme_lower``) instead: a few operations per element, absolute error below 1e-14, and more
    accurate than the sum there, whose ln p_j carries an absolute rounding of ~m·1e-16 (errors of
    1e-10 measured at m = 1e5, ~1e-6 expected at m = 1e10). Further from the mean the sum needs few
    terms (ratio <= 2/3) and is kept. No shipped scenario reaches k + 1 >= 1,000 within half of the
    mean, so their estimates are unchanged."""
    k, m = np.broadcast_arrays(np.floor(np.asarray(k, dtype=float)), np.asarray(mean, dtype=float))
    out = np.where(k < 0, 1.0, 0.0)
    work = np.flatnonzero((k >= 0) & (m > 0))
    kk, mm = k.ravel()[work], m.ravel()[work]
    flat = out.ravel()
    if kk.size and kk.max() + 1.0 >= TEMME_MIN:  # else no row is near enough a large k for Temme's expansion
        a = kk + 1.0
        temme = (a >= TEMME_MIN) & (np.abs(mm - a) < 0.5 * a)
        if temme.any():
            at = a[temme]
            flat[work[temme]] = np.clip(_temme_lower(at, (mm[temme] - at) / at), 0.0, 1.0)
            work, kk, mm = work[~temme], kk[~temme], mm[~temme]
    up = kk + 1.0 > mm                      # the tail falls away from the mode: sum it
    j = np.where(up, kk + 1.0, kk)          # first term: p_{k+1} (tail) or p_k (complement)
    term = np.exp(-mm + j * np.log(mm) - _log_factorial(j))
    total = term.copy()
    # the live rows' state in compact arrays (position in ``work``, mean, side, next j, last term, partial sum),
    # cut only when a row finishes: the same arithmetic per row as indexing every array by the live rows
    # each pass, with a fraction of the numpy calls (a sum of a few rows takes ~10 passes)
    live, ml, ul, jl_, tl, sl = np.arange(work.size), mm, up, j, term, total.copy()
    every_up, none_up = bool(up.all()), not up.any()
    with np.errstate(divide="ignore", invalid="ignore"):  # below j = 0 the complement has no terms
        while live.size:  # a block of terms per pass: sqrt(m) of them (the sum needs ~9 sqrt(m)), at most ~4e6 at once
            top = float(ml.max())
            root = math.ceil(math.sqrt(top)) if top < math.inf else top  # np.ceil(np.sqrt(.)): both exact (NaN, inf as numpy)
            width = int(min(max(8.0, root), max(8, 4_000_000 // live.size)))
            steps = _steps(width)
            # j one step further per term, up (+1) or down (-1): j ± steps is the same float as j + (±1.0)·steps
            jl = (jl_[:, None] + steps if every_up else jl_[:, None] - steps if none_up
                  else jl_[:, None] + np.where(ul, 1.0, -1.0)[:, None] * steps)
            if every_up:  # the tail only: m / j (np.where would pick it for every row)
                ratio = ml[:, None] / jl
            elif none_up:  # the complement only
                ratio = np.where(jl >= 0.0, (jl + 1.0) / ml[:, None], 0.0)
            else:
                ratio = np.where(ul[:, None], ml[:, None] / jl, np.where(jl >= 0.0, (jl + 1.0) / ml[:, None], 0.0))
            t = tl[:, None] * np.cumprod(ratio, axis=1)
            sl = sl + t.sum(axis=1)
            tl, jl_ = t[:, -1], jl[:, -1]
            keep = tl > _TAIL_TOL * sl
            if not keep.all():
                done = ~keep
                total[live[done]] = sl[done]
                live, ml, ul, jl_, tl, sl = live[keep], ml[keep], ul[keep], jl_[keep], tl[keep], sl[keep]
    flat[work] = total if every_up else np.where(up, total, np.maximum(0.0, 1.0 - total))
    out = flat.reshape(k.shape)
    return out if out.ndim else float(out)


def _normal_upper_quantile(p):
    """z with P(Z > z) = p for a standard normal Z, |error| < 4.5e-4 (Abramowitz & Stegun 26.2.23);
    only a starting point for ``spare_instances``' search, which steps to the exact count."""
    p = np.clip(np.asarray(p, dtype=float), 1e-300, 1.0 - 1e-16)
    q = np.minimum(p, 1.0 - p)
    t = np.sqrt(-2.0 * np.log(q))
    z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t ** 3)
    return np.where(p <= 0.5, z, -z)


def _first_guess(n, rho, eps):
    """A spare count near the answer: the Poisson quantile from its normal approximation with the
    Cornish-Fisher skewness term, x_p = m + z·sqrt(m) + (z² - 1)/6 (Cornish & Fisher 1937; the
    Poisson cumulants are all m), less 1/2 for continuity, with m = (n + k)·rho. With s = sqrt(n + k)
    it is the quadratic s²(1 - rho) - z·sqrt(rho)·s - (n + c) = 0, c = (z² - 1)/6 - 1/2, solved
    in closed form; k = ceil(s² - n), at least 0. Within a count or two of the answer for large
    means; the search corrects it either way."""
    z = _normal_upper_quantile(eps)
    c = (z * z - 1.0) / 6.0 - 0.5
    b = z * np.sqrt(rho)
    s = (b + np.sqrt(np.maximum(b * b + 4.0 * (1.0 - rho) * (n + c), 0.0))) / (2.0 * (1.0 - rho))
    return np.maximum(np.ceil(s * s - n), 0.0)


_SPARES: dict = {}   # spare_instances' answers by the exact values and shapes of its arguments (a bounded few)


def spare_instances(instances, interruptions_per_hour, restart_h, availability_target, instances_per_replica=1.0):
    """``_spare_instances`` (below), remembered per process for the very same arguments (their values and
    shapes as float arrays): the pricing's three bills and its recipe search the same fleets at the point
    rate; a copy per call."""
    args = tuple(np.asarray(x, dtype=float) for x in (instances, interruptions_per_hour, restart_h,
                                                        availability_target, instances_per_replica))
    key = tuple((a.shape, a.tobytes()) for a in args)
    out = _SPARES.get(key)
    if out is None:
        if len(_SPARES) >= 256:
            _SPARES.clear()
        out = _SPARES[key] = _spare_instances(*args)
    return out.copy() if isinstance(out, np.ndarray) else out


def _spare_instances(instances, interruptions_per_hour, restart_h, availability_target, instances_per_replica=1.0):
    """Spare spot instances a latency-bound fleet of ``instances`` needs to keep its full capacity
    ``availability_target`` of the time.

    Each instance is reclaimed as a Poisson process at rate r (per hour) and is out for the restart
    time R. The reclaims of a fleet of n + k instances arrive at rate (n + k)·r and each keeps an
    instance out for R, so the number out at a random moment is the number in service of an M/G/inf
    queue: Poisson with mean (n + k)·r·R (Gross & Harris, "Fundamentals of Queueing Theory", M/G/inf:
    arrival rate x mean service time, whatever the service-time distribution). Approximation: the
    exact count is Binomial(n + k, rR / (1 + rR)) (each instance an alternating up/restart renewal
    process); the Poisson form keeps reclaiming instances that are already out, so its tail is
    slightly heavier (conservative) and the two agree when rR << 1 (r = 0.05/h, R = 10 min:
    rR = 0.0083). The spares are spot instances too, hence the n + k.

    Returns the smallest k >= 0 with P(N > k) <= 1 - target, N ~ Poisson((n + k)·r·R), for any
    fleet size (``poisson_sf`` holds for any mean); inf when rR >= 1 (an instance is out more than
    it is up: each spare adds rR >= 1 to the mean, no count catches up), and when k would exceed
    ``MAX_SPARES`` (1e12 spares, reached only with rR within about 1e-5 of 1: no such count can be
    bought, and each test of the sum would take over 1e7 terms; rR = 1 - 1e-7 had made the search
    run for minutes); NaN where n is unknown.
    Example: n = 1, r = 0.05/h, R = 10 min: P(N > 0) = 1 - e^-0.00833 = 0.0083, so a 0.99 target
    needs no spare and a 0.999 target needs one; 100,000 instances at 0.99: mean 850, 921 spares.

    The search: g(k) = P(N > k) at mean (n + k)·rR falls as k grows while rR < 1 (a spare adds 1
    to the threshold and only rR to the mean; for n >= 1 the difference g(k + 1) - g(k) is
    -e^-rR p_{k+1} + sum_i P(Y > i) p_{k+1-i}, Y ~ Poisson(rR), with p_{k+1-i}/p_{k+1} <= (rR)^-i,
    which is <= 0 for rR < 1; below one replica, n < 1, count 0 is tested first). So from
    ``_first_guess`` it gallops (steps 1, 2, 4, ...) up to a
    passing count or down to a failing one, then bisects: the smallest passing k, usually in two or
    three evaluations of ``poisson_sf`` per fleet, without a cap on k.

    A replica that spans u = ``instances_per_replica`` instances (pipeline or expert parallel across
    instances) stops when any of its instances is reclaimed, so spares are whole replicas: the fleet
    is n / u replicas, each reclaimed at rate u·r, and the spares are u x the spare replicas (u = 1:
    the formula above)."""
    u = np.maximum(np.nan_to_num(np.asarray(instances_per_replica, dtype=float), nan=1.0), 1.0)
    n = np.asarray(instances, dtype=float) / u
    rho = np.asarray(interruptions_per_hour, dtype=float) * np.asarray(restart_h, dtype=float) * u
    eps = 1.0 - np.asarray(availability_target, dtype=float)
    n, rho, eps = np.broadcast_arrays(n, rho, eps)
    out = np.full(n.shape, np.nan)
    known = np.isfinite(n) & np.isfinite(rho) & np.isfinite(eps)
    out[known & (rho >= 1.0)] = np.inf
    out[known & (rho < 1.0) & ((rho <= 0.0) | (eps >= 1.0))] = 0.0           # nothing out, or no target
    out[known & (rho > 0.0) & (rho < 1.0) & (eps <= 0.0)] = np.inf  # P(N > k) > 0: never met
    idx = np.flatnonzero(known & (rho > 0.0) & (rho < 1.0) & (eps > 0.0) & (eps < 1.0))
    nn, rr, ee = n.ravel()[idx], rho.ravel()[idx], eps.ravel()[idx]
    # lo fails (-1: no count below 0), hi passes (inf: none found yet); step: the next gallop
    lo, hi = np.full(idx.size, -1.0), np.full(idx.size, np.inf)
    step = np.ones(idx.size)
    cand = _first_guess(nn, rr, ee)
    # beyond MAX_SPARES no count is bought (and each test would sum ~9 sqrt(m) > 1e7 terms): inf
    hi[cand > MAX_SPARES] = np.inf
    lo[cand > MAX_SPARES] = np.inf
    # below one replica (n < 1) the fall of g(k) is not shown at k = 0: test it first
    small = np.flatnonzero(nn < 1.0)
    if small.size:
        zero = small[poisson_sf(0, nn[small] * rr[small]) <= ee[small]]
        hi[zero], cand[zero] = 0.0, 0.0
    live = np.flatnonzero((hi > 0.0) & (lo < np.inf))
    cand = cand[live]
    while live.size:
        ok = poisson_sf(cand, (nn[live] + cand) * rr[live]) <= ee[live]
        hi[live] = np.where(ok, cand, hi[live])
        lo[live] = np.where(ok, lo[live], cand)
        live = live[hi[live] - lo[live] > 1.0]
        l, h, s = lo[live], hi[live], step[live]
        mid = np.floor((l + h) / 2.0)  # bracketed by two tests (l >= 0, h finite): bisect; else gallop
        cand = np.where(np.isinf(h), l + s, np.where(l >= 0.0, mid, np.maximum(h - s, mid)))
        step[live] = 2.0 * s
        keep = cand <= MAX_SPARES    # a gallop past MAX_SPARES: none passes below it, the answer is inf
        live, cand = live[keep], cand[keep]
    flat = out.ravel()
    flat[idx] = hi
    out = flat.reshape(n.shape) * np.broadcast_to(u, n.shape)
    return out if n.ndim else float(out)


SPLIT = 16  # runs a run of rates is cut into (spare_instances_over_rates)


def spare_instances_over_rates(instances, interruptions_per_hour, restart_h, availability_target,
                               instances_per_replica=1.0) -> np.ndarray:
    """``spare_instances`` of F fleets (``instances``, ``restart_h``, ``availability_target`` and
    ``instances_per_replica``: shape (F,) or (F, 1)) at each of N interruption rates (shape (N,) or
    (1, N), a Monte Carlo's draws): the (F, N) array ``spare_instances`` gives on the broadcast
    arguments, found with a few evaluations per fleet instead of a search per (fleet, rate).

    The count grows with the rate: at rate r the number out is Poisson with mean (n + k)·r·R, and
    P(N > k) grows with the mean (d/dm P(N > k) = p_k(m) > 0, from P(N <= k) = Q(k + 1, m), Abramowitz &
    Stegun 6.5.13 and 26.4.21),
    so the smallest passing k at a higher rate is at least the one at a lower rate. Along the rates in
    ascending order k is therefore a step function: it is evaluated at both ends of a run of rates
    (``spare_instances`` on the run's ends of every fleet at once), a run whose ends agree takes their
    count, and any other run is cut into ``SPLIT`` runs; a handful of ``spare_instances`` calls in all
    (log_16 N rounds), each on a few dozen (fleet, rate) pairs per step of k."""
    rates = np.asarray(interruptions_per_hour, dtype=float).reshape(-1)
    cols = np.broadcast_arrays(*(np.asarray(v, dtype=float).reshape(-1) for v in (
        instances, restart_h, availability_target, instances_per_replica)))
    n, rh, tgt, u = (np.array(c) for c in cols)
    F, N = n.size, rates.size
    order = np.argsort(rates, kind="stable")
    r = rates[order]
    k = np.full((F, N), np.nan)
    known = np.zeros((F, N), dtype=bool)
    if F == 0 or N == 0:
        return k

    def count(f, j):
        got = np.asarray(spare_instances(n[f], r[j], rh[f], tgt[f], u[f]), dtype=float)
        k[f, j], known[f, j] = got, True
        return got

    f = np.arange(F)
    lo, hi = np.zeros(F, dtype=np.intp), np.full(F, N - 1, dtype=np.intp)
    k_lo, k_hi = count(f, lo), count(f, hi)
    while f.size:
        split = ~((k_lo == k_hi) | (np.isnan(k_lo) & np.isnan(k_hi))) & (hi - lo > 1)
        f, lo, hi, k_lo, k_hi = f[split], lo[split], hi[split], k_lo[split], k_hi[split]
        if not f.size:
            break
        # the run cut at SPLIT - 1 rates evenly between its ends (fewer, repeated, when it is shorter)
        cut = lo[:, None] + (hi - lo)[:, None] * np.arange(1, SPLIT)[None, :] // SPLIT
        k_cut = count(np.repeat(f, SPLIT - 1), cut.reshape(-1)).reshape(cut.shape)
        ends = np.column_stack([lo, cut, hi])
        k_ends = np.column_stack([k_lo, k_cut, k_hi])
        f = np.repeat(f, SPLIT)
        lo, hi = ends[:, :-1].reshape(-1), ends[:, 1:].reshape(-1)
        k_lo, k_hi = k_ends[:, :-1].reshape(-1), k_ends[:, 1:].reshape(-1)
    # every rate not evaluated lies inside a run whose ends agree: the count of the nearest evaluated rate below
    at = np.maximum.accumulate(np.where(known, np.arange(N), 0), axis=1)
    out = np.empty((F, N))
    out[:, order] = np.take_along_axis(k, at, axis=1)
    return out


def spot_spares_factor(instances, interruptions_per_hour, restart_h, availability_target, instances_per_replica=1.0):
    """Instance-hours paid per instance-hour the load needs for a latency-bound fleet on spot:
    (n + k) / n with k = ``spare_instances``. Every one of the n + k slots is paid every hour (a
    reclaimed instance stops billing, its replacement bills while it starts), so no separate
    lost-hours term; >= 1 always: spot never costs less than n + k instances at the spot price.
    ``instances_per_replica``: spares as whole replicas (``spare_instances``)."""
    n = np.asarray(instances, dtype=float)
    return spares_factor(n, spare_instances(n, interruptions_per_hour, restart_h, availability_target,
                                            instances_per_replica))


def spares_factor(instances, spares):
    """(n + k) / n: the instance-hours paid per instance-hour the load needs with k spares
    (``spot_spares_factor``); inf or NaN where n is 0 or unknown, without a warning."""
    n = np.asarray(instances, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (n + spares) / n


def breakeven_interruptions_spot_spares(spot_usd_per_hour, on_demand_usd_per_hour, restart_h, instances,
                                        availability_target):
    """Interruptions per instance-hour above which a latency-bound spot fleet of n instances costs
    more than on-demand: spot·(n + k)/n < OD allows k_max = ceil(n·(OD/spot - 1)) - 1 spares, and
    the rate r* is where ``spare_instances`` first exceeds k_max (found by bisection: k grows with r).
    0 when even no spare is too dear (spot >= OD). Every argument broadcasts: the bisection runs on
    all fleets at once (60 halvings of [0, 1/R], one ``poisson_sf`` over the array per halving), so a
    table of options costs 60 array evaluations, not 60 per option."""
    spot, od, n, rh, target = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (
        spot_usd_per_hour, on_demand_usd_per_hour, instances, restart_h, availability_target)))
    out = np.zeros(spot.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        k_max = np.ceil(n * (od / spot - 1.0)) - 1.0
        idx = np.flatnonzero((spot > 0) & (od > 0) & (n > 0) & (rh > 0) & (spot < od) & (k_max >= 0))
    if idx.size:
        # k_max spares suffice at rate r when P(N > k_max) <= 1 - target with N ~ Poisson((n + k_max)·r·R)
        # (the test ``spare_instances`` applies at k = k_max; it grows with r, so bisect on it directly:
        # one Poisson tail per step instead of a search over k).
        kk, nk, rr = k_max.ravel()[idx], n.ravel()[idx] + k_max.ravel()[idx], rh.ravel()[idx]
        eps = 1.0 - target.ravel()[idx]
        lo, hi = np.zeros(idx.size), 1.0 / rr  # at r·R = 1 no number of spares suffices
        for _ in range(60):
            mid = (lo + hi) / 2.0
            ok = np.asarray(poisson_sf(kk, nk * mid * rr)) <= eps
            lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
        out.ravel()[idx] = lo
    return out if out.ndim else float(out)


def reserved_factor(utilization, duty_fraction, term_months, horizon_months):
    """Paid hours per used hour for capacity billed every hour of a term (commitment, monthly server,
    purchase).

    The work uses the capacity ``duty_fraction`` of the day (training 1; serving hours_per_day / 24) and keeps a
    fraction ``utilization`` of the paid hours busy; when utilization is below the duty cycle the
    fleet must also cover the peaks, so paid hours are max(1, duty/u) / duty per used hour. A term T
    longer than the horizon of use m is paid in full: x max(T, m) / m."""
    u = np.asarray(utilization, dtype=float)
    duty = np.asarray(duty_fraction, dtype=float)
    term = np.asarray(term_months, dtype=float)
    m = np.asarray(horizon_months, dtype=float)
    return np.maximum(1.0, duty / u) / duty * np.maximum(term, m) / m


# AWS EC2 Capacity Blocks for ML (Amazon EC2 User Guide, "Find and purchase Capacity Blocks" and "Work
# with Capacity Blocks", docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html and
# capacity-blocks-using.html, read 2026-12-01): durations in 1-day increments up to 14 days and 7-day
# increments up to 182 days; up to 64 instances per block and 256 across blocks; the price is charged up
# front; instances are terminated from 30 minutes before the block ends.
CAPACITY_BLOCK_DAY_STEP_UNTIL_DAYS = 14
CAPACITY_BLOCK_WEEK_STEP_DAYS = 7
CAPACITY_BLOCK_MAX_DAYS = 182
CAPACITY_BLOCK_MAX_INSTANCES = 256
CAPACITY_BLOCK_END_MARGIN_H = 0.5


def capacity_block_hours(work_h):
    """Hours of the shortest Capacity Block that holds ``work_h`` hours of work (the rule above): the
    usable hours of a block of D days are 24·D - 0.5 (instances are terminated from 30 minutes before
    its end), D is a whole number of days up to 14 and a multiple of 7 above, at least 1 day, at most
    182. NaN when the work is longer than the longest block or unknown. Examples: 10 days of work
    (240 h) need 11 days (240 > 239.5); 9.5 days, 10; 15 days, 21; 200 days, NaN."""
    h = np.asarray(work_h, dtype=float)
    with np.errstate(invalid="ignore"):
        days = np.maximum(1.0, np.ceil((h + CAPACITY_BLOCK_END_MARGIN_H) / 24.0 - 1e-9))
        step = CAPACITY_BLOCK_WEEK_STEP_DAYS
        days = np.where(days > CAPACITY_BLOCK_DAY_STEP_UNTIL_DAYS, np.ceil(days / step - 1e-9) * step, days)
        days = np.where((days <= CAPACITY_BLOCK_MAX_DAYS) & np.isfinite(h), days, np.nan)
    return days * 24.0


def energy_usd_per_hour(power_w, pue, usd_per_kwh):
    """Electricity for one system at full power: kW x PUE x $/kWh (PUE as defined by The Green Grid,
    facility energy / IT energy)."""
    return np.asarray(power_w, dtype=float) / 1000.0 * pue * usd_per_kwh


def breakeven_months_commit(commit_usd_per_hour, on_demand_usd_per_hour, term_months, utilization=1.0):
    """Months of use after which a commitment of ``term_months`` costs less than on-demand.

    On-demand for m months pays m·730·u·OD (only the used hours); the commitment pays
    max(T, m)·730·C. For m <= T they are equal at m* = T·C / (u·OD). When C/u >= OD the commitment
    never pays (inf); m* <= T otherwise."""
    c = np.asarray(commit_usd_per_hour, dtype=float)
    od = np.asarray(on_demand_usd_per_hour, dtype=float)
    u = np.asarray(utilization, dtype=float)
    m = np.asarray(term_months, dtype=float) * c / (u * od)
    return np.where(c / u < od, m, np.inf)


def breakeven_utilization_commit(commit_usd_per_hour, on_demand_usd_per_hour, term_months=0.0, horizon_months=1.0):
    """Utilization above which a commitment beats on-demand over a horizon of m months:
    C·max(T, m)/m / u = OD  ->  u* = C/OD · max(T, m)/m (> 1 means never)."""
    c = np.asarray(commit_usd_per_hour, dtype=float)
    od = np.asarray(on_demand_usd_per_hour, dtype=float)
    return c / od * np.maximum(term_months, horizon_months) / np.asarray(horizon_months, dtype=float)


def breakeven_months_purchase(purchase_usd, on_demand_usd_per_hour, energy_usd_per_hour_=0.0, utilization=1.0,
                              hosting_usd_per_month=0.0):
    """Months of use after which buying beats renting on-demand.

    Buying costs P + m·(hosting + 730·u·E); renting costs m·730·u·OD, equal at
    m* = P / (730·u·(OD - E) - hosting); never (inf) when the denominator is <= 0."""
    p = np.asarray(purchase_usd, dtype=float)
    margin = HOURS_PER_MONTH * np.asarray(utilization, dtype=float) * (
        np.asarray(on_demand_usd_per_hour, dtype=float) - energy_usd_per_hour_) - hosting_usd_per_month
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(margin > 0, p / margin, np.inf)


def breakeven_interruptions_spot(spot_usd_per_hour, on_demand_usd_per_hour, checkpoint_interval_h, restart_h,
                                 instances=1):
    """Interruptions per instance-hour above which spot costs more than on-demand:
    spot / (1 - n·λ·(τ/2 + R)) = OD  ->  λ* = (1 - spot/OD) / (n·(τ/2 + R))."""
    ratio = np.asarray(spot_usd_per_hour, dtype=float) / np.asarray(on_demand_usd_per_hour, dtype=float)
    k = np.asarray(instances, dtype=float) * (np.asarray(checkpoint_interval_h, dtype=float) / 2.0 + restart_h)
    return np.maximum(0.0, 1.0 - ratio) / k


def spot_goodput_breakeven(spot_usd_per_hour, on_demand_usd_per_hour):
    """The useful fraction of paid spot hours below which spot stops paying: spot / on-demand."""
    return np.asarray(spot_usd_per_hour, dtype=float) / np.asarray(on_demand_usd_per_hour, dtype=float)


def lognormal_from_band(low, high):
    """(mu, sigma) of a log-normal whose P10 and P90 are ``low`` and ``high`` (> 0)."""
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    return (np.log(low) + np.log(high)) / 2.0, (np.log(high) - np.log(low)) / (2.0 * Z90)


WEEKS_PER_MONTH = 52.0 / 12.0  # calendar weeks in an average month


def porting_usd(engineer_weeks, usd_per_week, stack_changes_per_year=0.0, rework_fraction=0.0, horizon_months=12.0):
    """People cost of moving a workload to a platform: the one-off port plus the share of it that
    every later change of the stack repeats over the period of use.

    cost = W·r·(1 + c·f·H/12), with W the engineer-weeks of the port (``data/effort.csv`` or
    ``pricing.porting_weeks``), r the loaded cost of an engineer-week (``pricing.engineer_usd_per_week``:
    BLS median wage / wages' share of compensation), c stack changes a year, f the share of the port
    each repeats and H the months of use. Example: 4 weeks x $3,635 with 6 changes a year at 0.25 over
    12 months = 4 x 3,635 x (1 + 1.5) = $36,350. NaN weeks (not published) give NaN."""
    w = np.asarray(engineer_weeks, dtype=float)
    repeats = np.asarray(stack_changes_per_year, dtype=float) * np.asarray(rework_fraction, dtype=float)
    return w * np.asarray(usd_per_week, dtype=float) * (1.0 + repeats * np.asarray(horizon_months, dtype=float) / 12.0)


def ops_staff_usd_per_month(hosts, hosts_per_engineer, usd_per_week):
    """Operations staff of a cluster per month of use: ceil(hosts / hosts per engineer) engineers,
    each costing ``usd_per_week`` x 52/12 weeks a month (a whole engineer for any part of one: a
    cluster of 1 host still needs someone on call). ``hosts_per_engineer`` None or NaN: 0 (not in
    the bill). Example: 64 hosts at 32 per engineer and $3,635 a week: 2 x 3,635 x 4.33 = $31,503."""
    if hosts_per_engineer is None:
        return np.zeros(np.shape(hosts))
    n = np.ceil(np.asarray(hosts, dtype=float) / float(hosts_per_engineer))
    return n * float(usd_per_week) * WEEKS_PER_MONTH

def hosted_api_usd_per_request(input_tokens, output_tokens, usd_per_million_input_tokens, usd_per_million_output_tokens):
    """What one request costs on a hosted API that bills tokens (the per-token price lists of hosted
    model APIs bill prompt and generated tokens separately): c = (I·p_in + O·p_out) / 10^6 for I prompt
    and O generated tokens at p_in and p_out USD per million. Example: I = 1,000, O = 100, p_in = 3,
    p_out = 15: c = (3,000 + 1,500) / 10^6 = $0.0045."""
    return (np.asarray(input_tokens, dtype=float) * usd_per_million_input_tokens
            + np.asarray(output_tokens, dtype=float) * usd_per_million_output_tokens) / 1e6


def breakeven_requests_per_s_hosted_api(self_hosted_usd_per_month, usd_per_request, hours_per_day=24.0):
    """Request rate (requests/s while the service runs) at which a hosted API's monthly bill equals
    self-hosting's monthly cost M.

    The API bills every request: at λ requests/s for h hours a day, D = 730/24 days a month (the
    billing month of ``terms.HOURS_PER_MONTH``), its bill is A(λ) = λ · 3600 · h · D · c with c the
    cost of one request (``hosted_api_usd_per_request``). The self-hosted fleet sized for the load
    costs M a month whatever the rate up to its capacity (its hours are paid, busy or not). A(λ*) = M
    gives λ* = M / (3600 · h · D · c): below λ* the API costs less, above it (up to the fleet's
    capacity) self-hosting does. inf when c = 0. Example: M = $10,000, c = $0.0045, h = 24:
    λ* = 10,000 / (2,628,000 · 0.0045) = 0.8456 requests/s."""
    c = np.asarray(usd_per_request, dtype=float)
    seconds = 3600.0 * float(hours_per_day) * DAYS_PER_MONTH
    with np.errstate(divide="ignore"):
        return np.where(c > 0, np.asarray(self_hosted_usd_per_month, dtype=float) / (seconds * c), np.inf)
