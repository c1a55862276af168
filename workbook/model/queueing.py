"""Waiting for a slot under Poisson arrivals: the M/G/c queue of a continuous-batching deployment.

A deployment of ``r`` replicas that each keep ``B`` sequences in flight is ``c = r·B`` servers (batch
slots, as in vLLM's ``max_num_seqs``); a request holds a slot from admission to its last token, so
the service time is ``S = TTFT + O·TPOT``. Arrivals are Poisson at ``λ`` requests/s.

- Erlang C (the probability that an arrival waits, M/M/c) from Erlang B, computed in log space from
  the Poisson distribution: B(c, a) = P(N = c)/P(N ≤ c) for N ~ Poisson(a), C = B / (1 − ρ(1 − B))
  (Kleinrock 1975, "Queueing Systems" vol. 1 §3.6; Tijms 2003, "A First Course in Stochastic
  Models" §5.1).
- M/G/c by the Allen–Cunneen approximation (Allen 1990, "Probability, Statistics and Queueing
  Theory" §6; Tijms 2003 §9.6): the M/M/c wait scaled by (1 + cs²)/2, cs² the squared coefficient of
  variation of the service time (0 for fixed prompt and answer lengths); the wait tail
  P(W > t) ≈ C · exp(−(c/S − λ)·t / ((1 + cs²)/2)).
"""
from __future__ import annotations

import math

import numpy as np


MAX_EXACT_SERVERS = 100_000   # beyond, the Poisson terms are not summed one by one (0.8 MB each)
# Poisson terms further than this many standard deviations below the load are left out of the
# cumulative sum of ``erlang_c`` (their share is below e^-800: nothing a float can hold), so a
# deployment of thousands of slots costs a window around the load, not every k from 0.
_WINDOW_SD = 40.0
_MEMO: dict = {}
_MEMO_SIZE = 4096


def _erlang_c(c: np.ndarray, a: float) -> np.ndarray:
    kmax = int(np.nanmax(c))
    k0 = max(0, min(kmax, int(a - _WINDOW_SD * (math.sqrt(a) + 1.0))))
    k = np.arange(k0, kmax + 1, dtype=float)
    # ln k! = ln k0! + sum of ln (k0+1)..k
    log_k_factorial = math.lgamma(k0 + 1.0) + np.concatenate(([0.0], np.cumsum(np.log(k[1:]))))
    logpmf = k * math.log(a) - a - log_k_factorial
    logcdf = np.logaddexp.accumulate(logpmf)
    ci = np.clip(c.astype(int), k0, kmax) - k0   # counts below the window have c < a: they wait (1)
    b = np.exp(logpmf[ci] - logcdf[ci])
    rho = a / c
    return np.where(rho < 1, b / (1.0 - rho * (1.0 - b)), 1.0)


def _erlang_c_normal(c, a: float, servers):
    """Erlang C for more than ``MAX_EXACT_SERVERS`` servers without an array per server: the Poisson
    (a) pmf and cdf at c from their normal approximation with continuity correction (central limit;
    the relative error of b = pmf/cdf is O(1/sqrt(a)), below 0.3% where waiting is likely, a > 1e5;
    where a is small the wait probability is 0 to float precision either way)."""
    sd = math.sqrt(a)
    z = (np.floor(c) + 0.5 - a) / sd
    erfc = np.vectorize(math.erfc, otypes=[float])
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        logpmf = -0.5 * ((np.floor(c) - a) / sd) ** 2 - 0.5 * math.log(2 * math.pi * a)
        logcdf = np.log(0.5 * erfc(-z / math.sqrt(2.0)))
        b = np.exp(logpmf - logcdf)
        rho = a / c
        out = np.where(rho < 1, b / (1.0 - rho * (1.0 - b)), 1.0)
    return out if np.ndim(servers) else float(out[0])


def erlang_c(servers, offered_load):
    """Probability that an arrival waits in an M/M/c queue with ``servers`` servers and offered load
    a = λ·S (Erlang C); 1 when a ≥ c (the queue grows without bound). Broadcasts over ``servers``.
    Results are remembered per process on (servers, load): the serving planner asks the same
    question for every candidate and offer."""
    c = np.atleast_1d(np.asarray(servers, dtype=float))
    a = float(offered_load)
    if a <= 0:
        return np.zeros_like(c) if np.ndim(servers) else 0.0
    kmax = int(np.nanmax(c))
    if kmax > MAX_EXACT_SERVERS:
        return _erlang_c_normal(c, a, servers)
    key = (a, c.shape, c.tobytes())
    out = _MEMO.get(key)
    if out is None:
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        out = _MEMO[key] = _erlang_c(c, a)
        out.setflags(write=False)
    return out.copy() if np.ndim(servers) else float(out[0])


def wait_quantile_s(quantile, arrivals_per_s, service_s, servers, service_cv2=0.0):
    """The ``quantile`` (0.5, 0.99) of the wait for a free slot in an M/G/c queue (Allen–Cunneen):
    0 when the chance of waiting is below 1 − quantile, else ln(C / (1 − q)) · (1 + cs²)/2 / (c/S − λ);
    infinite when λ·S ≥ c. Broadcasts over ``servers``."""
    c = np.asarray(servers, dtype=float)
    lam, s = float(arrivals_per_s), float(service_s)
    pw = np.asarray(erlang_c(c, lam * s), dtype=float)
    slack = c / s - lam
    factor = (1.0 + service_cv2) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(pw > 1.0 - quantile, np.log(pw / (1.0 - quantile)) * factor / slack, 0.0)
    t = np.where(slack > 0, t, np.inf)
    return t if np.ndim(servers) else float(t)


def ttft_quantile_s(quantile, ttft_s, tpot_s, arrivals_per_s, service_s, servers, service_cv2=0.0):
    """Time to first token at ``quantile`` under load: the prompt's prefill, plus the rest of the
    decode step in progress when the request arrives (uniform over one step: quantile·TPOT), plus the
    wait for a free slot (``wait_quantile_s``). The sum of the parts' quantiles bounds the quantile
    of the sum from above."""
    return ttft_s + quantile * tpot_s + wait_quantile_s(quantile, arrivals_per_s, service_s, servers, service_cv2)
