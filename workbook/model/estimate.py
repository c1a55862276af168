"""A scenario on each candidate accelerator: chip-count planning, training and serving estimates,
and the comparison table (``compare``) that the cost model, the decision and the notebooks build on.

Multi-chip training time is ``model.training``'s best configuration (tensor, pipeline, data, expert
and context parallelism, ZeRO, recomputation, micro-batch) over a practical grid
(``search.practical_limits``), the same search the calibration runs, so that the efficiency is not
charged twice for communication and bubbles. Generic (non-transformer) workloads use the sharded
data-parallel model ``data_parallel_fallback``. Serving is ``model.serving.estimate_serving``.

Every function takes the ``Efficiency`` it evaluates with (default: the fitted parameters of
``data/efficiency.csv``); results are cached per process on hashable values (profile, accelerator
record, workload, pins, efficiency), so a widget that changes one input re-plans only what changed.
"""
from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd

from .. import catalog, terms
from ..errors import InputError
from ..scenario import Parallelism, Scenario, Workload
from . import frames, generic, moe, search, serving
from .efficiency import (FP4_REFUSAL, Efficiency, band, band_scope, candidate_precision, compute_efficiency, default,
                         matmul_precision, network_loss, peak, scope_of)
from .memo import Memo, Record, hashable
from .memo import record_key as _acc_key
from .profile import (Profile, activation_bytes, fine_tune_flops_per_token, optimizer_bytes_per_trainable_param, trainable_params,
                      training_state_bytes_per_param, training_weight_bytes_per_param, workload_profile)

COLUMNS = list(terms.ESTIMATE_COLUMNS)


_CONFIGS = Memo(8192)
_PLANS = Memo(4096)
_SERVING = Memo(2048)


# --- training ------------------------------------------------------------------------------------------

def _recompute_choices(w) -> tuple:
    return terms.RECOMPUTE if w.recompute == "auto" else (w.recompute,)


def _train_flops_per_token(p: Profile, w) -> float:
    """Model FLOPs per trained token (``profile.fine_tune_flops_per_token``): with frozen weights
    (``trainable_fraction`` < 1 or LoRA) 4N for the frozen part (forward and activation gradients)
    and 6 per trainable weight (Kaplan et al. 2020 §2.1 split of 6N)."""
    if p.generic:
        return math.nan
    return float(fine_tune_flops_per_token(p, w))


def training_tokens(w) -> float:
    """Tokens a training run processes (``tokens``; generic models: ``samples``)."""
    if w.tokens is not None:
        return float(w.tokens)
    return float(w.samples) * (w.seq_len if w.generic is None else 1.0)


def _tokens_per_step(w, chips):
    return float(w.global_batch_tokens) if w.global_batch_tokens else w.seq_len * np.asarray(chips, dtype=float)


def data_parallel_fallback(p: Profile, acc: dict, chips, w, headroom: float, tokens_per_step=None,
                           eff: Efficiency | None = None, matmul_efficiency: float | None = None):
    """Sharded data parallelism, vectorised over ``chips``: the multi-chip model of generic
    (non-transformer) workloads, which ``model.training`` cannot split into layers, and the first
    guess of a chip count (``choose_training_chips``) that the scaling search then refines.

    The better of two layouts that fit memory:
    - ZeRO-3 / FSDP over all chips (Rajbhandari et al. 2020): weights, gradients and optimizer states
      split n ways; per step each chip moves 3·2·N·(n−1)/n bytes (all-gather forward and backward,
      reduce-scatter gradients: ZeRO §7);
    - hybrid sharding (HSDP; PyTorch FSDP ``HYBRID_SHARD``, Zhao et al. 2023): ZeRO-3 inside the fast
      domain of k chips, replicas across domains; 3·2·N·(k−1)/k bytes over the fast links plus an
      all-reduce of the 2·N/k-byte gradient shard, 2·(2N/k)·(m−1)/m bytes, over the network.
    Each chip holds one sequence's activations (the cheapest recomputation that fits) and two layers
    of gathered weights. Traffic inside the fast domain uses ``intra_node_bytes_per_s``, across it the
    per-chip ``inter_node_bytes_per_s``; communication overlaps with compute and only the excess is
    exposed ('How to Scale Your Model' ch. 5); compute runs at ``compute_efficiency`` (or ``matmul_efficiency``, its value). Returns
    arrays: step_time_s, compute_s, exposed_comm_s, memory_per_chip_bytes, fits, recompute (index
    into none/selective/full, −1 if nothing fits)."""
    eff = default(eff)
    n = np.asarray(chips, dtype=float)
    tokens = float(tokens_per_step) if tokens_per_step else w.seq_len * n
    frac = trainable_params(p, w) / p.params_total if not p.generic else w.trainable_fraction
    grad_b = 4.0 if w.precision == "fp32" else 2.0
    weight_b = training_weight_bytes_per_param(p, w) if not p.generic else grad_b
    bpp = weight_b + (grad_b + optimizer_bytes_per_trainable_param(w)) * frac  # frozen weights at their stored precision (QLoRA)
    usable = float(acc["memory_bytes"]) * (1.0 - headroom)
    fast = float(acc.get("fast_domain_chips") or acc.get("chips_per_node") or 1)
    k = np.minimum(n, fast)
    m = n / k
    gathered = 2.0 * 2.0 * p.params_total / max(p.layers, 1)
    intra = float(acc["intra_node_bytes_per_s"]) if not pd.isna(acc["intra_node_bytes_per_s"]) else math.nan
    inter = float(acc["inter_node_bytes_per_s"]) if not pd.isna(acc["inter_node_bytes_per_s"]) else math.nan
    bw_all = np.where(n <= fast, intra, min(intra, inter) if inter == inter else math.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        comm_fsdp = np.where(n > 1, 3.0 * 2.0 * p.params_total * (n - 1.0) / n / bw_all, 0.0)
        comm_hsdp = (np.where(k > 1, 3.0 * 2.0 * p.params_total * (k - 1.0) / k / intra, 0.0)
                     + np.where(m > 1, 2.0 * (2.0 * p.params_total / k) * (m - 1.0) / m / inter, 0.0))
    layouts = [(p.params_total * bpp / n + gathered, np.where(np.isnan(comm_fsdp), np.inf, comm_fsdp)),
               (p.params_total * bpp / k + gathered, np.where(np.isnan(comm_hsdp), np.inf, comm_hsdp))]
    pk = peak(acc, w.precision)
    e = compute_efficiency(eff, acc, w.precision, "train", p) if matmul_efficiency is None else matmul_efficiency
    flops = _train_flops_per_token(p, w) * tokens if not p.generic else p.train_flops_per_sample * tokens
    compute = flops / (n * pk * e)
    best = {"step_time_s": np.full(n.shape, np.inf), "compute_s": compute * np.ones(n.shape),
            "exposed_comm_s": np.full(n.shape, np.nan), "memory_per_chip_bytes": np.full(n.shape, np.nan),
            "fits": np.zeros(n.shape, dtype=bool), "recompute": np.full(n.shape, -1.0)}
    acts = [(i, activation_bytes(p, w.seq_len, 1, rc) if not p.generic else 0.0)
            for i, rc in enumerate(terms.RECOMPUTE) if rc in _recompute_choices(w)]  # one sequence's, for both layouts
    for state_bytes, comm in layouts:
        rec_idx = np.full(n.shape, -1.0)
        mem = np.full(n.shape, np.nan)
        for i, act in acts:
            m_rc = state_bytes + act
            take = (rec_idx < 0) & (m_rc <= usable)
            rec_idx = np.where(take, i, rec_idx)
            mem = np.where(take | np.isnan(mem) & (rec_idx < 0), m_rc, mem)
        exposed = np.maximum(comm - compute, 0.0)
        step = compute + exposed
        fits = (rec_idx >= 0) & np.isfinite(comm)
        better = fits & (~best["fits"] | (step < best["step_time_s"]))
        unset = ~best["fits"] & ~fits & np.isnan(best["memory_per_chip_bytes"])
        for key, val in (("step_time_s", step), ("exposed_comm_s", exposed), ("memory_per_chip_bytes", mem),
                         ("recompute", rec_idx)):
            best[key] = np.where(better, val, np.where(unset, val, best[key]) if key == "memory_per_chip_bytes" else best[key])
        best["fits"] = best["fits"] | fits
    return best


def choose_training_chips(p: Profile, acc: dict, s: Scenario, eff: Efficiency | None = None) -> int | None:
    """First guess of the chip count for training when the scenario pins none (``estimate_training``
    refines it with the scaling search).

    Rule: candidates are whole nodes (multiples of ``chips_per_node``) up to
    ``constraints.max_chips`` (else the accelerator's ``max_cluster_chips``, else 65,536 as a search
    bound). Among those where the model fits in memory, take the fewest chips that finish by
    ``constraints.deadline_days``; with no deadline, the fewest chips that fit; when no count meets
    the deadline, the count with the shortest time. Evaluated with ``data_parallel_fallback`` (fast,
    vectorised) on ~96 geometrically spaced node counts, then on every count between the last one
    that misses and the first one that meets."""
    node = int(acc.get("chips_per_node") or 1)
    cap = _chip_cap(acc, s)
    if s.constraints.max_chips and s.constraints.max_chips < node:
        return _first_feasible(p, acc, s, np.array([float(s.constraints.max_chips)]), eff)
    max_nodes = max(cap // node, 1)
    # coarse geometric grid of node counts, then every count between the last miss and the first hit
    coarse = np.unique(np.round(np.geomspace(1, max_nodes, min(max_nodes, 96)))) * node
    e = None if p.generic else compute_efficiency(default(eff), acc, s.workload.precision, "train", p)  # both passes' fallback's
    pick = _first_feasible(p, acc, s, coarse, eff, return_index=True, matmul_efficiency=e)
    if pick is None:
        return None
    i, best = pick
    if i > 0 and best is not None:
        lo, hi = int(coarse[i - 1]) // node, int(coarse[i]) // node
        fine = np.unique(np.round(np.linspace(lo + 1, hi, min(hi - lo, 512)))) * node
        refined = _first_feasible(p, acc, s, fine, eff, matmul_efficiency=e)
        best = refined if refined is not None else best
    return best


def _chip_cap(acc: dict, s: Scenario) -> int:
    """The most chips a plan may use: the largest published cluster or slice of the chip
    (``max_cluster_chips``; multislice beyond it is not sourced) and ``constraints.max_chips``,
    whichever is lower (65,536 when neither is given)."""
    cap = int(acc["max_cluster_chips"]) if not pd.isna(acc.get("max_cluster_chips")) else 65536
    return min(cap, int(s.constraints.max_chips)) if s.constraints.max_chips else cap


def _first_feasible(p: Profile, acc: dict, s: Scenario, counts: np.ndarray, eff: Efficiency | None,
                    return_index: bool = False, matmul_efficiency: float | None = None):
    """The fewest of ``counts`` chips that fit and meet the deadline (no deadline: that fit); when
    none meets the deadline, the count with the shortest time. None when nothing fits (``matmul_efficiency``: the fallback's)."""
    w = s.workload
    r = data_parallel_fallback(p, acc, counts, w, s.constraints.min_memory_headroom, w.global_batch_tokens, eff, matmul_efficiency)
    ok = r["fits"]
    if not ok.any():
        return None
    step = generic.train_step_time_s(r["step_time_s"], default(eff)) if p.generic else r["step_time_s"]
    with np.errstate(divide="ignore", invalid="ignore"):
        days = training_tokens(w) / (_tokens_per_step(w, counts) / step) / 86400.0
    dl = s.constraints.deadline_days
    good = ok & (days <= dl) if dl is not None else ok
    if good.any():
        i = int(np.flatnonzero(good)[0])
        return (i, int(counts[i])) if return_index else int(counts[i])
    i = int(np.argmin(np.where(ok, days, np.inf)))
    return (0, int(counts[i])) if return_index else int(counts[i])


def training_config(p: Profile, acc, chips: int, w: Workload, parallelism: Parallelism | None = None,
                    headroom: float = 0.1, eff: Efficiency | None = None, _keys=None, **limits) -> dict | None:
    """The fastest parallel layout of ``chips`` chips (``search.best_config`` over
    ``search.practical_limits`` with the efficiency ``eff``; ``parallelism`` pins dimensions like
    ``cluster.parallelism``; ``limits`` add grid limits such as a published ``vpp``), or None when
    nothing fits in memory. A step is ``global_batch_tokens`` (default: one sequence per chip). The
    one multi-chip path of ``estimate_training`` and the calibration; cached per process on the
    values it depends on (``_keys``: (``record_key(acc)``, ``hashable(w)``) made once by the planner)."""
    eff = default(eff)
    if w.global_batch_tokens is None:
        w = w.model_copy(update={"global_batch_tokens": float(w.seq_len) * int(chips)})
        _keys = _keys and (_keys[0], None)
    key = _config_key(p, acc, chips, w, parallelism, headroom, eff, limits, _keys)

    def compute():
        a = Record(acc)
        try:
            return search.best_config(p, a, int(chips), w, parallelism, eff, memory_headroom=headroom, workload_key=key[3],
                                        sync_loss=network_loss(eff, a), **(search.practical_limits(a, seq_len=w.seq_len, experts=p.experts,
                                                                           framework=w.training_framework) | limits))
        except InputError as e:  # cached too: a count that cannot be priced stays so
            return e

    cfg = _CONFIGS.get(key, compute)
    if isinstance(cfg, InputError):
        raise cfg
    return None if cfg is None else dict(cfg)


def _config_key(p: Profile, acc, chips: int, w: Workload, par, headroom: float, eff: Efficiency, limits: dict, keys=None) -> tuple:
    ak, hw = keys or (None, None)
    return (p, _acc_key(acc) if ak is None else ak, int(chips), hashable(w) if hw is None else hw, hashable(par),
            float(headroom), tuple(sorted(limits.items())), eff)


def prefetch_training_configs(p: Profile, acc, counts, w: Workload, par: Parallelism | None, headroom: float, eff: Efficiency,
                              keys=None) -> None:
    """``training_config``'s answers (an ``InputError`` too) for counts of one plan, cached by one search over layouts
    x counts (``search.best_configs``); with a global batch that grows with the count, or on a failure, nothing."""
    if w.global_batch_tokens is None:
        return
    keys = (_acc_key(acc), hashable(w)) if keys is None else keys
    todo = {int(n): _config_key(p, acc, n, w, par, headroom, eff, {}, keys) for n in counts}
    todo = {n: k for n, k in todo.items() if k not in _CONFIGS}
    if len(todo) < 2:
        return
    a = Record(acc)
    try:  # training_config computes (and raises) them one by one
        found = search.best_configs(p, a, list(todo), w, par, eff, memory_headroom=headroom, sync_loss=network_loss(eff, a), workload_key=keys[1],
                                    **search.practical_limits(a, seq_len=w.seq_len, experts=p.experts, framework=w.training_framework))
    except Exception:  # noqa: BLE001
        return
    for key, cfg in zip(todo.values(), found):
        if cfg is None or isinstance(cfg, (dict, InputError)):
            _CONFIGS.put(key, cfg)


def _pinned_unit(acc: dict, par: Parallelism | None) -> tuple[int, int | None]:
    """Chip counts a pinned layout allows: multiples of the node and of tp·pp·cp, or exactly
    tp·pp·cp·dp when dp is pinned too."""
    node = int(acc.get("chips_per_node") or 1)
    if par is None:
        return node, None
    inner = (par.tp or 1) * (par.pp or 1) * (par.cp or 1)
    if par.dp is not None:
        return inner, inner * par.dp
    return math.lcm(node, inner), None


class _Planner:
    """The search for the fewest chips that meet the deadline (``plan_training``), in steps:
    ``start`` (a first guess), ``grow`` (double until a layout fits), ``step_up`` (towards the
    deadline), ``probe_down`` (below a first hit) and ``bisect`` (between a miss and a hit)."""

    def __init__(self, p: Profile, acc: dict, s: Scenario, pinned: int | None, par: Parallelism | None,
                 eff: Efficiency, unit: int | None = None):
        self.p, self.acc, self.s, self.w, self.par, self.eff = p, acc, s, s.workload, par, eff
        self.pinned, self.headroom, self.dl = pinned, s.constraints.min_memory_headroom, s.constraints.deadline_days
        self.unit, self.exact = _pinned_unit(acc, par)
        if unit is not None and self.exact is None:
            self.unit = math.lcm(self.unit, int(unit))
        self.top = max(self.unit, (_chip_cap(acc, s) // self.unit) * self.unit)
        self.keys = (_acc_key(acc), hashable(self.w))  # the cache keys' parts every count shares, made once

    def cfg_at(self, n: int):
        try:
            return training_config(self.p, self.acc, n, self.w, self.par, self.headroom, self.eff, self.keys)
        except InputError as e:
            if self.pinned or not str(e).startswith("cluster.parallelism"):
                raise  # the catalog cannot price this accelerator (no network figure, ...)
            return None  # a pinned layout that does not divide this count

    def days(self, n: int, cfg: dict) -> float:
        return training_tokens(self.w) / (float(_tokens_per_step(self.w, n)) / float(cfg["step_time_s"])) / 86400.0

    def round_up(self, n: float) -> int:
        return int(math.ceil(n / self.unit)) * self.unit

    def start(self) -> int:
        """``choose_training_chips``'s guess; where the sharded data-parallel model fits nowhere, the
        count whose states fit half the memory and whose matmuls alone could meet the deadline."""
        p, w, acc = self.p, self.w, self.acc
        guess = choose_training_chips(p, acc, self.s, self.eff)
        if guess is None:
            state = p.params_total * training_state_bytes_per_param("fp32" if w.precision == "fp32" else "bf16", w.optimizer)
            guess = state / (0.5 * float(acc["memory_bytes"]) * (1.0 - self.headroom))
            if self.dl is not None:
                flops = _train_flops_per_token(p, w) * training_tokens(w)
                rate = peak(acc, w.precision) * compute_efficiency(self.eff, acc, w.precision, "train", p)
                guess = max(guess, flops / (self.dl * 86400.0 * rate))
        return min(self.top, max(self.unit, self.round_up(guess)))

    def grow(self, n: int):
        cfg = self.cfg_at(n)
        for _ in range(6):  # double until a layout fits
            if cfg is not None or n >= self.top:
                break
            n = min(self.top, 2 * n)
            cfg = self.cfg_at(n)
        return n, cfg

    def step_up(self, n: int, cfg: dict):
        """Steps towards the deadline by the square of the shortfall and at least 5% (throughput per
        chip falls as chips grow: a proportional step lands short). Returns (largest miss, first hit
        or None, last count, its configuration)."""
        lo = None
        for _ in range(8):
            d = self.days(n, cfg)
            if d <= self.dl:
                return lo, (n, cfg), n, cfg
            lo = n
            if n >= self.top:
                return lo, None, n, cfg  # the shortest time within the cap still misses
            n = min(self.top, max(n + self.unit, self.round_up(n * max((d / self.dl) ** 2, 1.05))))
            cfg = self.cfg_at(n) or cfg
        return lo, None, n, cfg

    def probe_down(self, hi: tuple):
        """The first count met the deadline: look below it for a count that misses."""
        lo = None
        for _ in range(3):
            if lo is not None or hi[0] <= self.unit:
                break
            m = min(hi[0] - self.unit, max(self.unit, int(hi[0] * self.days(*hi) / self.dl) // self.unit * self.unit))
            c = self.cfg_at(m)
            if c is not None and self.days(m, c) <= self.dl:
                hi = (m, c)
            else:
                lo = m
        return lo, hi

    def _regula_falsi(self, lo: int, d_lo, hi: tuple) -> int:
        """The next count between ``lo`` (a miss) and ``hi`` (a hit): interpolation of log days
        against log chips when both ends are known, else the midpoint."""
        mid = (lo + hi[0]) // 2 // self.unit * self.unit
        d_hi = self.days(*hi)
        if d_lo is not None and d_lo > self.dl >= d_hi and d_lo > d_hi:
            x = math.log(lo) + (math.log(d_lo) - math.log(self.dl)) * (math.log(hi[0]) - math.log(lo)) / (
                math.log(d_lo) - math.log(d_hi))
            guess = self.round_up(math.exp(x))
            if lo < guess < hi[0]:
                mid = guess
        return mid

    def bisect(self, lo: int, hi: tuple) -> tuple:
        """Whole units between a miss and a hit, at most 10 steps."""
        c_lo = self.cfg_at(lo)
        d_lo = self.days(lo, c_lo) if c_lo is not None else None
        for _ in range(10):
            if hi[0] - lo <= self.unit:
                break
            mid = self._regula_falsi(lo, d_lo, hi)
            if mid <= lo:
                break
            if mid - self.unit > lo:  # searched next if mid meets the deadline: both in one grid
                prefetch_training_configs(self.p, self.acc, (mid, mid - self.unit), self.w, self.par, self.headroom, self.eff, self.keys)
            c = self.cfg_at(mid)
            if c is not None and self.days(mid, c) <= self.dl:
                hi = (mid, c)
                if mid - self.unit > lo:  # one unit fewer: usually the miss that closes the bracket
                    c2 = self.cfg_at(mid - self.unit)
                    if c2 is not None and self.days(mid - self.unit, c2) <= self.dl:
                        hi = (mid - self.unit, c2)
                    else:
                        lo, d_lo = mid - self.unit, (self.days(mid - self.unit, c2) if c2 is not None else None)
            else:
                lo, d_lo = mid, (self.days(mid, c) if c is not None else None)
        return hi

    def run(self):
        if self.pinned or self.exact:
            n = int(self.pinned or self.exact)
            return n, self.cfg_at(n)
        n, cfg = self.grow(self.start())
        if cfg is None or self.dl is None:
            return n, cfg
        lo, hi, n, cfg = self.step_up(n, cfg)
        if hi is None:
            return n, cfg
        if lo is None:
            lo, hi = self.probe_down(hi)
        return hi if lo is None else self.bisect(lo, hi)


def plan_training(p: Profile, acc: dict, s: Scenario, pinned: int | None, par: Parallelism | None,
                  eff: Efficiency | None = None, unit: int | None = None):
    """(chips, configuration) for a transformer: the pinned count, else the fewest whole nodes whose
    best layout (``training_config``) meets ``constraints.deadline_days`` (no deadline: the fewest
    that fit), starting from ``choose_training_chips`` and refined by proportional steps and a
    bisection (``_Planner``); (count, None) when nothing fits. At most ~16 searches, each cached;
    the plan itself is cached on the profile, accelerator, workload, constraints, pins and efficiency."""
    eff = default(eff)
    key = (p, _acc_key(acc), hashable(s.workload), hashable(s.constraints), pinned, hashable(par), eff, unit)

    def compute():
        try:
            return _Planner(p, acc, s, pinned, par, eff, unit).run()
        except InputError as e:
            return e

    out = _PLANS.get(key, compute)
    if isinstance(out, InputError):
        raise out
    n, cfg = out
    return n, (None if cfg is None else dict(cfg))


def checkpoint_bytes(p: Profile, w) -> float:
    """Bytes of one training checkpoint: the weights (2 bytes each in bf16/fp16, 4 in fp32) plus, for
    the trainable share, the optimizer's fp32 master copy and moments = the training state without
    the gradients: ``training_state_bytes_per_param`` less weights and gradients, 12 bytes for Adam
    (ZeRO, Rajbhandari et al. 2020 §3.1), so 14 bytes per parameter for mixed-precision Adam.
    LoRA (``lora_rank``): only the adapters and their optimizer states, the frozen base is never
    rewritten (PEFT's ``save_pretrained`` writes the adapter weights alone; Hu et al. 2021 §4.2).
    Generic models: the same per ``params``."""
    prec = "fp32" if w.precision == "fp32" else "bf16"
    weight = 4.0 if prec == "fp32" else 2.0
    if getattr(w, "lora_rank", None) and not p.generic:
        return float(trainable_params(p, w)) * (weight + optimizer_bytes_per_trainable_param(w))
    state = training_state_bytes_per_param(prec, w.optimizer)
    return float(p.params_total) * (weight + (state - 2.0 * weight) * w.trainable_fraction)


def _with_bands(out: dict, lo: float, hi: float) -> None:
    """observed = predicted · ratio: throughput scales with the ratio, times with its inverse. The
    upper ratio is capped where it would put MFU above 1: no run exceeds the chip's dense peak."""
    if out["mfu"] > 0 and out["mfu"] * hi > 1.0:
        hi = max(1.0 / out["mfu"], 1.0)
    for k, scale in (("tokens_per_s", 1), ("mfu", 1), ("step_time_s", -1), ("training_days", -1), ("chip_hours", -1)):
        a, b = (out[k] * lo ** scale, out[k] * hi ** scale)
        out[k + "_low"], out[k + "_high"] = min(a, b), max(a, b)


def _generic_training(p: Profile, acc: dict, s: Scenario, pinned: int | None, eff: Efficiency) -> dict:
    """Step time and memory of a generic (non-transformer) model: sharded data parallelism."""
    w, headroom = s.workload, s.constraints.min_memory_headroom
    n = pinned or choose_training_chips(p, acc, s, eff)
    if n is None:
        fb = data_parallel_fallback(p, acc, float(_chip_cap(acc, s)), w, headroom, eff=eff)
        return {"fits": False, "reason": f"does not fit in memory on up to {_chip_cap(acc, s)} chips "
                                         f"({float(fb['memory_per_chip_bytes']) / 1e9:.0f} GB per chip needed)"}
    r = data_parallel_fallback(p, acc, float(n), w, headroom, w.global_batch_tokens, eff)
    if not bool(r["fits"]):
        return {"chips": int(n), "fits": False,
                "reason": f"does not fit: {float(r['memory_per_chip_bytes']) / 1e9:.0f} GB per chip needed "
                          f"(sharded data parallel, ZeRO-3)"}
    return {"chips": int(n), "fits": True, "step_time_s": float(generic.train_step_time_s(r["step_time_s"], eff)),
            "memory_per_chip_bytes": float(r["memory_per_chip_bytes"])}


def _transformer_training(p: Profile, acc: dict, s: Scenario, pinned, par, eff: Efficiency, unit=None) -> dict:
    """Step time, memory and layout of a transformer: the planned chip count's best configuration."""
    try:
        n, cfg = plan_training(p, acc, s, pinned, par, eff, unit)
    except InputError as e:  # a pinned layout that cannot be laid out, no network figure, ...
        return {"chips": pinned, "fits": False, "reason": "; ".join(e.problems)}
    if cfg is None:
        return {"chips": int(n), "fits": False, "reason": f"no parallel layout fits memory on {n} chips"}
    return {"chips": int(n), "fits": True, "step_time_s": float(cfg["step_time_s"]),
            "memory_per_chip_bytes": float(cfg["memory_per_chip_bytes"]), **{k: cfg[k] for k in terms.LAYOUT_KEYS}}


def estimate_training(s: Scenario, accelerator: str, chips: int | None = None, eff: Efficiency | None = None) -> dict:
    """Training (or fine-tuning) time on one accelerator type: step time, tokens/s, MFU, days and
    chip-hours with P10/P90 bands, and the parallel layout (``terms.LAYOUT_KEYS``: tp, pp, dp, ep, cp,
    zero, recompute, micro_batch) of ``model.training``'s best configuration.

    ``chips`` pinned, else the scenario's ``cluster`` (whose ``parallelism`` pins dimensions), else
    the fewest whole nodes that meet ``constraints.deadline_days`` (``plan_training``). One step =
    ``global_batch_tokens`` (default: one sequence per chip). Generic (non-transformer) workloads use
    ``data_parallel_fallback`` and report no layout."""
    acc = catalog.accelerator_record(accelerator)
    on_cluster = s.cluster is not None and catalog.resolve("accelerators", s.cluster.accelerator) == acc["accelerator"]
    pinned = chips or (s.cluster.chips if on_cluster else None)
    return estimate_training_on(s, acc, pinned, s.cluster.parallelism if on_cluster else None, eff)


def estimate_training_on(s: Scenario, acc: dict, pinned: int | None, par: Parallelism | None = None,
                         eff: Efficiency | None = None, unit: int | None = None, deadline_days=None) -> dict:
    """``estimate_training`` on an accelerator record (the catalog's, or as one offering sells it:
    ``offer_record``): ``pinned`` chips, else planned in multiples of ``unit`` chips (whole
    instances) for ``deadline_days`` (default the scenario's); the row also gives the model state a
    checkpoint writes (``checkpoint_bytes``)."""
    eff = default(eff)
    w = s.workload
    p = workload_profile(w)
    out = blank_row(acc)
    out["peak_flops_per_s"] = pk = peak(acc, w.precision)
    if math.isnan(pk):
        out["reason"] = f"no published dense {w.precision} peak"
        return out
    if p.generic and p.train_flops_per_sample is None:
        out["reason"] = "workload.generic.train_flops_per_sample is needed for a training estimate"
        return out
    plan_s = s
    if deadline_days is not None and s.constraints.deadline_days is not None:
        plan_s = s.model_copy(update={"constraints": s.constraints.model_copy(update={"deadline_days": deadline_days})})
    out.update(_generic_training(p, acc, plan_s, pinned, eff) if p.generic
               else _transformer_training(p, acc, plan_s, pinned, par, eff, unit))
    out["checkpoint_bytes"] = checkpoint_bytes(p, w)
    if not out["fits"]:
        return out
    n = out["chips"]
    tps = float(_tokens_per_step(w, n)) / out["step_time_s"]
    days = training_tokens(w) / tps / 86400.0
    flops_token = p.train_flops_per_sample if p.generic else _train_flops_per_token(p, w)
    out.update(tokens_per_s=tps, mfu=flops_token * tps / (n * pk), training_days=days, chip_hours=days * 24.0 * n,
               calibrated=(not p.generic) and eff.is_calibrated("matmul_ceiling", band_scope(eff, acc)))
    # A generic (non-transformer) model: the transformer-fitted ceiling times the factor fitted on the
    # published ResNet-50 runs, with their band (else the uncalibrated transformer band)
    lo_hi = band(eff, "generic_mfu", "pooled") if p.generic else (math.nan, math.nan)
    _with_bands(out, *(lo_hi if not math.isnan(lo_hi[0]) else band(eff, "mfu", "generic") if p.generic else moe.training_band(p, band_scope(eff, acc), eff, par)))
    dl = s.constraints.deadline_days
    out["meets_deadline"] = bool(days <= dl) if dl is not None else None
    if dl is not None and days > dl:
        out["reason"] = f"misses the {dl:g}-day deadline ({days:.0f} days on {n} chips)"
    if s.constraints.max_chips and n > s.constraints.max_chips:
        out["reason"] = (out["reason"] + "; " if out["reason"] else "") + f"needs {n} chips > max_chips {s.constraints.max_chips}"
    return out


# --- serving -------------------------------------------------------------------------------------------

def estimate_inference(s: Scenario, accelerator: str, chips: int | None = None, eff: Efficiency | None = None) -> dict:
    """Serving on one accelerator type (``serving.estimate_serving``) as a comparison row; ``chips``
    (or a pinned ``cluster``) fixes the deployment's chips."""
    w = s.workload
    acc = catalog.accelerator_record(accelerator)
    out = blank_row(acc)
    cprec = matmul_precision(acc, w.precision, w.fp4_fallback)
    out["peak_flops_per_s"] = peak(acc, cprec)
    if math.isnan(out["peak_flops_per_s"]) or (w.kv_cache_precision == "fp4" and math.isnan(peak(acc, "fp4"))):
        out["reason"] = (FP4_REFUSAL if cprec == "fp4" else f"no published dense {cprec} peak" if math.isnan(out["peak_flops_per_s"])
                         else "kv_cache_precision fp4: an FP4 KV cache needs FP4 tensor cores")
        return out
    here = s.cluster is not None and catalog.resolve("accelerators", s.cluster.accelerator) == acc["accelerator"]
    pinned = chips or (s.cluster.chips if here else None)
    out.update(_serving(workload_profile(w), acc, w, s.constraints.min_memory_headroom, pinned, s.constraints.max_chips,
                        default(eff), s.cluster.parallelism if here else None))
    return out


def _serving(p: Profile, acc: dict, w: Workload, headroom: float, pinned, max_chips, eff: Efficiency, par):
    """``serving.estimate_serving``, cached per process on the values it is given (a redraw that
    changes no serving input, such as the app's pricing controls, reuses it); a copy per call."""
    key = (p, _acc_key(acc), hashable(w), float(headroom), pinned, max_chips, eff, hashable(par))
    return copy.deepcopy(_SERVING.get(key, lambda: serving.estimate_serving(p, acc, w, headroom, pinned, max_chips, eff,
                                                                             par)))


# --- the comparison ------------------------------------------------------------------------------------

def blank_row(acc: dict) -> dict:
    """A comparison row with no figures yet (every column of ``terms.ESTIMATE_COLUMNS``)."""
    out = {c: math.nan for c in COLUMNS}
    out.update(accelerator=acc["accelerator"], family=acc["family"], chips=None, fits=False, reason="",
               memory_per_chip_bytes=math.nan, max_batch=None, batch=None, meets_slo=None, replicas=None,
               meets_deadline=None, calibrated=False, peak_flops_per_s=math.nan, **{k: None for k in terms.LAYOUT_KEYS})
    return out


def candidate_accelerators(s: Scenario) -> list[str]:
    """The accelerators a scenario compares: the pinned ``cluster``; else ``candidates.accelerators``;
    else every catalog chip with a published peak for the workload's compute precision."""
    if s.cluster is not None:
        return [catalog.resolve("accelerators", s.cluster.accelerator)]
    if s.candidates.accelerators:
        return [catalog.resolve("accelerators", a) for a in s.candidates.accelerators]
    return catalog.usable_accelerators(candidate_precision(s.workload.precision, s.workload.fp4_fallback))


def compare(s: Scenario, eff: Efficiency | None = None) -> pd.DataFrame:
    """One row per accelerator considered: chips, fits, reason, and the training or serving figures
    with ``_low``/``_high`` bands (columns ``terms.ESTIMATE_COLUMNS``; the ``estimate --json`` option
    keys). Training rows carry the parallel layout of the best configuration (``terms.LAYOUT_KEYS``)."""
    est = estimate_inference if s.workload.task == "inference" else estimate_training
    df = pd.DataFrame([est(s, a, eff=eff) for a in candidate_accelerators(s)], columns=COLUMNS)
    if not len(df):
        return df
    for c in terms.INT_COLUMNS:
        df[c] = frames.whole_numbers(df[c])
    df["recompute"] = df["recompute"].astype(object).where(df["recompute"].notna(), None)
    for c in terms.BOOL_COLUMNS:
        df[c] = df[c].astype("boolean")
    return df
