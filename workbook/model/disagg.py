"""Disaggregated prefill and decode: separate prefill and decode pools, sized to the request rate, with
each prompt's KV cache sent from its prefill replica to a decode replica.

The layout of DistServe (Zhong et al., OSDI 2024, arXiv:2401.09670, §3-4) and Splitwise (Patel et al.,
ISCA 2024, arXiv:2311.18677, §4): prefill instances run prompts alone (no decode batch to slow),
decode instances run decode steps alone (no prompt tokens riding along, the interference that
chunked prefill adds to every colocated step), and the KV cache crosses between them.

- Prefill pool: ``n_p`` replicas, each one server of an M/D/c queue (DistServe §3.1 models a prefill
  instance as M/D/1): service time D = prefill of one prompt (``replica.prefill_s``), wait at the
  SLO's percentile by ``queueing.wait_quantile_s`` (Allen-Cunneen, cs² = 0).
- KV transfer (DistServe §3.3, §4.3): I · ``kv_cache_bytes_per_token`` bytes, each of the replica's tp
  chips sending its 1/tp share in parallel, over the intra-node link when a prefill and a decode
  replica fit one node (or fast domain), else over the network between nodes (the offering's
  ``inter_node_bytes_per_s`` per chip, plus its per-message latency).
- Decode pool: ``n_d`` replicas at batch B, the largest that fits memory and meets ``tpot_slo_ms``
  with decode-only steps (``replica.decode_step_s``); a request holds a decode slot for O·TPOT, so
  the pool is n_d·B servers of an M/D/c queue whose wait is added to TTFT (a conservative bound: the
  first token leaves the prefill pool, the second waits for the slot).
- TTFT at quantile q = prefill + KV transfer + prefill wait(q) + decode-slot wait(q); TPOT = the
  decode-only step at the mean context I + O/2.

Each pool takes its own single-node tensor-parallel degree (DistServe's per-phase parallelism, §4.1):
prefill, compute-bound, gains from more chips per prompt against a tight TTFT; decode, bound by the
weight and KV reads plus two all-reduces per layer, often runs cheaper on fewer. Considered only
with a request rate (the pools are sized to it), no pinned chips or layout, and no fixed
concurrency. Not modelled: a decode replica on other hardware than the prefill one (Splitwise's
mixed pools), and the pools' instances are packed as whole replicas of the smaller degree.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import queueing
from .efficiency import Efficiency
from .profile import Profile, kv_cache_bytes_per_token
from .replica import Layout, decode_step_s, max_batch_fit, prefill_s

# how far beyond the fewest stable replicas the pool search looks (the colocated search's range)
SEARCH_FACTOR, SEARCH_EXTRA = 4, 9
MAX_POOL_CHIPS = 1_000_000   # the scenario's bound on chips (scenario.Chips): a sanity limit


def kv_transfer_s(p: Profile, acc, pre: Layout, dec: Layout, input_tokens: float, kv_precision: str) -> float:
    """Time to move one prompt's KV cache from a prefill replica ``pre`` to a decode replica ``dec``:
    I·kv bytes per token over min(chips of the two) parallel chip-to-chip streams, on the intra-node
    link when both replicas fit one node or fast domain (DistServe §4.3 places the phases so), else
    on the network between nodes (``pre.net_bytes_per_s`` per chip) plus ``pre.net_latency_s``;
    infinite without a published bandwidth."""
    data = float(input_tokens) * kv_cache_bytes_per_token(p, kv_precision)
    both = pre.chips + dec.chips
    node = int(acc.get("chips_per_node") or 1)
    dom = acc.get("fast_domain_chips")
    inside = both <= node or (not pd.isna(dom) and both <= int(dom))
    bw = float(acc["intra_node_bytes_per_s"]) if inside else pre.net_bytes_per_s
    lat = 0.0 if inside else pre.net_latency_s
    if not (bw == bw and bw > 0):
        return math.inf
    return lat + data / (min(pre.chips, dec.chips) * bw)


def decode_point(eff: Efficiency, p: Profile, acc, w, lay: Layout, headroom: float, grid, cprec: str):
    """The decode pool's replica point: the largest batch of ``grid`` that fits memory and meets
    ``tpot_slo_ms`` with decode-only steps at the mean context I + O/2; (batch, TPOT s, max batch) or
    None."""
    I, O = float(w.input_tokens), float(w.output_tokens)
    mb = float(max_batch_fit(p, acc, lay.tp, I + O, w.weight_precision, w.kv_precision, headroom, lay))
    g = grid[grid <= mb]
    if mb < 1 or not len(g):
        return None
    tpot = np.asarray(decode_step_s(eff, p, acc, g, I + O / 2.0, lay.tp, cprec, w.weight_precision, w.kv_precision,
                                    layout=lay), dtype=float)
    ok = np.isfinite(tpot) & (True if w.tpot_slo_ms is None else tpot * 1e3 <= w.tpot_slo_ms)
    if not ok.any():
        return None
    j = int(np.flatnonzero(ok)[-1])
    return float(g[j]), float(tpot[j]), mb


def prefill_point(eff: Efficiency, p: Profile, acc, w, lay: Layout, headroom: float, cprec: str):
    """The prefill pool's service time: one prompt's prefill on ``lay`` (None when the weights and one
    prompt's KV cache do not fit, or the layout cannot run)."""
    I = float(w.input_tokens)
    if max_batch_fit(p, acc, lay.tp, I, w.weight_precision, w.kv_precision, headroom, lay) < 1:
        return None
    t = float(prefill_s(eff, p, acc, I, I, lay.tp, cprec, w.weight_precision, layout=lay))
    return t if math.isfinite(t) and t > 0 else None


def plan(eff: Efficiency, p: Profile, acc, w, layouts, headroom: float, grid, cprec: str) -> dict | None:
    """The cheapest disaggregated deployment over every (prefill, decode) pair of ``layouts`` that meets
    both SLOs at ``ttft_slo_percentile`` under ``requests_per_s``: pool sizes and chips, TTFT tails,
    TPOT, decode batch, KV transfer; None when no pair and pool sizes in the searched range meet them."""
    if not (w.input_tokens and w.output_tokens and w.requests_per_s):
        return None
    pre = {lay: prefill_point(eff, p, acc, w, lay, headroom, cprec) for lay in layouts}
    dec = {lay: decode_point(eff, p, acc, w, lay, headroom, grid, cprec) for lay in layouts}
    best, waits = None, {}   # waits: each pool's wait quantiles, shared by the pairs that have that pool
    for lp, t_pre in pre.items():
        for ld, d in dec.items():
            if t_pre is None or d is None:
                continue
            t_kv = kv_transfer_s(p, acc, lp, ld, float(w.input_tokens), w.kv_precision)
            c = _pools(w, lp, ld, d[0], d[2], t_pre, t_kv, d[1], waits) if math.isfinite(t_kv) else None
            if c is not None and (best is None or (c["chips"], c["ttft_slo_s"]) < (best["chips"], best["ttft_slo_s"])):
                best = c
    return best


MAX_POOL_SIZES = 1024   # pool sizes searched per pool: the grid is at most 1024 x 1024 (8 MB per array)


def _sizes(n0: int) -> np.ndarray:
    """Pool sizes from ``n0`` to SEARCH_FACTOR·n0 + SEARCH_EXTRA: every one, or ``MAX_POOL_SIZES``
    evenly spread (a step below 0.3% of n0) when there are more."""
    hi = SEARCH_FACTOR * n0 + SEARCH_EXTRA
    if hi - n0 <= MAX_POOL_SIZES:
        return np.arange(n0, hi, dtype=float)
    return np.unique(np.round(np.linspace(n0, hi - 1, MAX_POOL_SIZES)))


def _pools(w, lp: Layout, ld: Layout, b: float, mb: float, t_pre: float, t_kv: float, t_dec: float, memo=None):
    """The fewest chips over (prefill replicas, decode replicas) whose TTFT at the SLO's percentile
    meets ``ttft_slo_ms`` (searched from the fewest stable pools to 4x + 9 of each; ties: the lower
    TTFT). ``memo``: a dict where one ``plan`` keeps each pool's wait quantiles (the prefill pool's depend on
    its prefill time and first size only, the decode pool's on its service time, first size and batch; every
    (prefill, decode) pair with that pool reads the same arrays)."""
    lam, O = float(w.requests_per_s), float(w.output_tokens)
    q = float(getattr(w, "ttft_slo_percentile", 99.0) or 99.0) / 100.0
    np0 = math.floor(lam * t_pre) + 1
    nd0 = math.floor(lam * O * t_dec / b) + 1
    if np0 * lp.chips + nd0 * ld.chips > MAX_POOL_CHIPS:   # before one array element per pool size
        return None
    n_p = _sizes(np0)
    n_d = _sizes(nd0)

    memo = {} if memo is None else memo

    def waits(quant):
        kp, kd = ("prefill", quant, lam, t_pre, np0), ("decode", quant, lam, O * t_dec, nd0, b)
        if kp not in memo:
            memo[kp] = np.asarray(queueing.wait_quantile_s(quant, lam, t_pre, n_p), dtype=float)
        if kd not in memo:
            memo[kd] = np.asarray(queueing.wait_quantile_s(quant, lam, O * t_dec, n_d * b), dtype=float)
        return memo[kp], memo[kd]

    def ttft(quant):
        wp, wd = waits(quant)
        return t_pre + t_kv + quant * t_dec + wp[:, None] + wd[None, :]

    def ttft_at(quant, i, k):  # element [i, k] of ttft(quant): the same sum, without the pools' grid
        wp, wd = waits(quant)
        return float(t_pre + t_kv + quant * t_dec + wp[i] + wd[k])

    slo = ttft(q)
    chips = n_p[:, None] * lp.chips + n_d[None, :] * ld.chips
    ok = np.isfinite(slo) if w.ttft_slo_ms is None else slo * 1e3 <= w.ttft_slo_ms
    if not ok.any():
        return None
    i, k = np.unravel_index(int(np.argmin(np.where(ok, chips + slo / (1.0 + slo), np.inf))), chips.shape)
    return {"prefill_replicas": int(n_p[i]), "decode_replicas": int(n_d[k]), "prefill_tp": lp.tp, "decode_tp": ld.tp,
            "prefill_chips": int(n_p[i] * lp.chips), "decode_chips": int(n_d[k] * ld.chips), "chips": int(chips[i, k]),
            "batch": int(b), "max_batch": int(mb), "ttft_s": t_pre + t_kv, "tpot_s": t_dec, "kv_transfer_s": t_kv,
            "ttft_p50_s": ttft_at(0.5, i, k), "ttft_p99_s": ttft_at(0.99, i, k), "ttft_slo_s": float(slo[i, k]),
            "total_thr": n_d[k] * b / t_dec, "decode_layout": ld}
