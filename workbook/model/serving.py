"""The one serving model: the replica layouts to try, the operating point of each, the deployment a
scenario needs (replicas, TTFT tails under the request rate), the disaggregated alternative and the
tensor-parallel curve.

Every surface that shows a serving figure (the comparison, the decision, the scaling tab's
tensor-parallel curve, the calibration) computes it here, with the same calibrated ``Efficiency``;
the speed of one replica (decode step, prefill, KV budget, serving point) is ``model.replica``'s,
re-exported here.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import comm, disagg, generic, lengths, queueing
from .memo import Memo, hashable
from ..errors import InputError
from ..scenario import Workload
from .efficiency import Efficiency, band, band_scope, default, matmul_precision
from .profile import Profile, weight_bytes
from .replica import (ACTIVATION_BYTES, Layout, _node, decode_step_parts, decode_step_s, ep_alltoall_s,  # noqa: F401
                      kv_budget_bytes, kv_bytes_per_token_held, kv_replicas, tp_ranks_per_chip, max_batch_fit, pp_handoff_s, prefill_s, serving_point, stored_weight_bytes,
                      tp_allreduce_s)

# decode batches the deployment search tries: every batch to 64, then geometric steps to 65,536
BATCH_GRID = np.unique(np.r_[np.arange(1, 65), np.round(np.geomspace(64, 65536, 120))]).astype(float)
# batches shown on the tensor-parallel curve (the chosen batch of each tp is added to them)
TP_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def tp_candidates(acc, chips: int | None = None) -> np.ndarray:
    """Tensor-parallel degrees inside one fast domain: powers of two up to the chips that tensor
    parallelism may span at the intra-node link (``comm.tp_domain_chips``: the node, or a switched
    domain of several nodes such as a GB200 NVL72 rack's 72 GPUs), and the node size; with
    ``chips``, only degrees that divide it."""
    node, dom = _node(acc), comm.tp_domain_chips(acc)
    limit = dom if chips is None else min(dom, chips)
    c = [2 ** k for k in range(0, 12) if 2 ** k <= limit]
    whole = min(node, limit)
    if whole not in c and (chips is None or chips % whole == 0):
        c.append(whole)
    if chips is not None:
        c = [t for t in c if chips % t == 0]
    return np.array(sorted(set(c)), dtype=float)


def _net(acc, net_bytes_per_s=None) -> tuple[float, float]:
    """The network between nodes: per-chip bandwidth (the parameter, else the accelerator's
    ``inter_node_bytes_per_s``) and the per-message latency of data/topology.csv (0 when none)."""
    bw = net_bytes_per_s if net_bytes_per_s is not None else acc.get("inter_node_bytes_per_s")
    bw = math.nan if bw is None or pd.isna(bw) else float(bw)
    return bw, float(comm.topology(acc).net_latency_s or 0.0)


def serving_layouts(p: Profile, acc, w: Workload, headroom: float, pinned: int | None = None,
                    parallelism=None, net_bytes_per_s: float | None = None) -> list[Layout]:
    """The replica layouts to try. A pinned ``parallelism`` (tp, pp, ep of ``cluster.parallelism``)
    is the only layout. Else the single-node tensor-parallel degrees (``tp_candidates``, dividing the
    ``pinned`` chips); when no single node holds the weights and one sequence, tensor parallelism over
    the node with pipeline stages across the fewest nodes that fit (and twice that), and for a
    mixture of experts the experts spread over those nodes (expert parallelism, attention
    tensor-parallel in each node)."""
    bw, lat = _net(acc, net_bytes_per_s)
    I, O = _need_lengths(w)
    if parallelism is not None and any(getattr(parallelism, k) for k in ("tp", "pp", "ep")):
        return [Layout(int(parallelism.tp or 1), int(parallelism.pp or 1), int(parallelism.ep or 1), bw, lat)]
    single = [Layout(int(t), 1, 1, bw, lat) for t in tp_candidates(acc, pinned)]
    if any(max_batch_fit(p, acc, t.tp, I + O, w.weight_precision, w.kv_precision, headroom) >= 1 for t in single):
        return single
    node = int(tp_candidates(acc).max())  # the widest tensor-parallel group on the fast link
    out = []
    for make in ([lambda k: Layout(node, k, 1, bw, lat)]
                 + ([lambda k: Layout(node, 1, node * k, bw, lat)] if p.is_moe else [])):
        fit = [k for k in range(2, 257) if max_batch_fit(p, acc, node, I + O, w.weight_precision, w.kv_precision,
                                                          headroom, make(k)) >= make(k).pp]
        for k in fit[:1] + [2 * k for k in fit[:1]]:
            lay = make(k)
            if pinned is None or pinned % lay.chips == 0:
                out.append(lay)
    return out or single


def _need_lengths(w: Workload) -> tuple[float, float]:
    if w.input_tokens is None or w.output_tokens is None:
        raise InputError("workload.input_tokens / output_tokens: expected prompt and answer lengths for serving")
    return float(w.input_tokens), float(w.output_tokens)


def _as_layout(tp, layout: Layout | None) -> Layout:
    return layout if layout is not None else Layout(int(tp))


def _grid(mb: float, w: Workload, pinned_replicas: int | None) -> np.ndarray:
    """Batches per replica to try: ``BATCH_GRID`` up to what fits; with ``concurrency`` over
    ``pinned_replicas``, exactly concurrency/replicas (rounded up)."""
    if w.concurrency is not None and pinned_replicas:
        return np.array([math.ceil(w.concurrency / pinned_replicas)], dtype=float)
    grid = BATCH_GRID[BATCH_GRID <= mb]
    return grid if len(grid) and grid[-1] == mb else np.append(grid, mb)


def _decode_context(w: Workload, I: float, O: float) -> float | None:
    """The mean tokens a batch slot holds when ``request_lengths`` names a spread of answer lengths
    (``lengths.slot_tokens``: I + E[O²]/(2E[O]), the long answers holding their slots longer): the
    decode context and the KV cache per sequence. None without one (I + O/2 and I + O as before)."""
    d = lengths.dataset(getattr(w, "request_lengths", None))
    return None if d is None else lengths.slot_tokens(I, d, O)


def _seq_tokens(w: Workload, I: float, O: float) -> float:
    """KV-cache tokens one batch slot is sized for: I + O, or with ``request_lengths`` the mean a slot
    holds (``_decode_context``)."""
    ctx = _decode_context(w, I, O)
    return I + O if ctx is None else ctx


def _slo_percentile(w: Workload) -> float:
    return float(getattr(w, "ttft_slo_percentile", 99.0) or 99.0) / 100.0


def ttft_tails(w: Workload, ttft_s, tpot_s, batch, replicas) -> dict:
    """TTFT at the median, the 99th percentile and the SLO's percentile (``ttft_slo_percentile``)
    under ``requests_per_s`` Poisson arrivals (``queueing.ttft_quantile_s``: c = replicas·batch
    slots, service TTFT + O·TPOT); the unloaded TTFT when no load is given."""
    O = float(w.output_tokens or 0)
    if w.requests_per_s is None:
        return {"p50": ttft_s + 0.0 * np.asarray(replicas, dtype=float), "p99": ttft_s + 0.0 * np.asarray(replicas, dtype=float),
                "slo": ttft_s + 0.0 * np.asarray(replicas, dtype=float)}
    servers = np.maximum(np.asarray(replicas, dtype=float) * batch, 1.0)
    q = dict(arrivals_per_s=w.requests_per_s, service_s=ttft_s + O * tpot_s, servers=servers)
    return {"p50": queueing.ttft_quantile_s(0.5, ttft_s, tpot_s, **q),
            "p99": queueing.ttft_quantile_s(0.99, ttft_s, tpot_s, **q),
            "slo": queueing.ttft_quantile_s(_slo_percentile(w), ttft_s, tpot_s, **q)}


_CHOSEN = Memo(4096)


def _value(v):
    """A catalog value as a hashable key: numpy scalars as Python ones, every kind of missing as None."""
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return None
    return v.item() if isinstance(v, np.generic) else v


def record_values(acc) -> tuple:
    """A hashable key of an accelerator record, equal for its catalog row as a dict
    (``catalog.accelerator_record``) and as a Series indexed by id (``catalog.accelerator``): its id and
    its other fields (numpy scalars as Python ones, missing values as None)."""
    name = acc["accelerator"] if "accelerator" in acc else getattr(acc, "name", None)
    return (name, tuple(sorted((str(k), _value(v)) for k, v in acc.items() if k != "accelerator")))


def choose_batch(eff: Efficiency, p: Profile, acc, w: Workload, tp: float, headroom: float,
                 layout: Layout | None = None, pinned: int | None = None) -> dict | None:
    """The operating point of one replica (``tp`` chips, or ``layout``): the largest batch (of
    ``BATCH_GRID`` up to what fits memory) that meets ``tpot_slo_ms`` and ``ttft_slo_ms`` unloaded,
    else the largest that fits; with ``pinned`` chips and ``concurrency``, concurrency/replicas.
    Then ``deployment`` sizes the replicas. None when the weights and one sequence do not fit, or
    the replica cannot run (e.g. tensor parallelism over a link with no published bandwidth); a dict
    with ``reason`` and ``fits`` False when the pinned chips cannot hold the concurrency.

    Remembered per process on the values it reads (``record_values`` of the accelerator, the workload's
    ``hashable`` view, the layout's fields) and handed out as a copy: ``tp_curve`` marks, for each layout,
    the point ``estimate_serving`` chose for it, the same call (its values are numbers and text only)."""
    lay = None if layout is None else (layout.tp, layout.pp, layout.ep, _value(float(layout.net_bytes_per_s)),
                                       _value(float(layout.net_latency_s)))
    key = (eff, p, record_values(acc), hashable(w), float(tp), float(headroom), lay, pinned)
    hit = _CHOSEN.get(key, lambda: _choose_batch(eff, p, acc, w, tp, headroom, layout, pinned))
    return None if hit is None else dict(hit)


def _choose_batch(eff: Efficiency, p: Profile, acc, w: Workload, tp: float, headroom: float,
                  layout: Layout | None = None, pinned: int | None = None) -> dict | None:
    """``choose_batch``, computed."""
    I, O = _need_lengths(w)
    lay = _as_layout(tp, layout)
    cprec = matmul_precision(acc, w.precision, w.fp4_fallback)
    ctx = _decode_context(w, I, O)
    mb = float(max_batch_fit(p, acc, lay.tp, _seq_tokens(w, I, O), w.weight_precision, w.kv_precision, headroom, lay))
    if mb < 1 or (pinned and pinned < lay.chips):
        return None
    pinned_r = int(pinned // lay.chips) if pinned else None
    grid = _grid(mb, w, pinned_r)
    if grid[0] > mb:
        return {"fits": False, "tp": lay.tp, "pp": lay.pp, "ep": lay.ep, "max_batch": int(mb), "chips": pinned,
                "reason": (f"concurrency {w.concurrency} needs {int(grid[0])} sequences per replica on {pinned_r} "
                           f"replicas of {lay.chips} chips; at most {int(mb)} fit")}
    pt = serving_point(eff, p, acc, grid, I, O, lay.tp, cprec, w.weight_precision, w.kv_precision, layout=lay,
                       decode_context=ctx)
    ok = np.ones(grid.shape, dtype=bool)
    if w.tpot_slo_ms is not None:
        ok &= pt["tpot_s"] * 1e3 <= w.tpot_slo_ms
    if w.ttft_slo_ms is not None:
        ok &= pt["ttft_s"] * 1e3 <= w.ttft_slo_ms
    meets = bool(ok.any())
    # throughput grows with batch: the largest batch that meets the targets, else the largest that fits
    j = int(np.flatnonzero(ok)[-1]) if meets else len(grid) - 1
    if w.concurrency is not None and not pinned:  # the deployment's in-flight sequences over the fewest replicas
        b = min(float(grid[j]), float(w.concurrency))
        b = float(math.ceil(w.concurrency / math.ceil(w.concurrency / b)))
        if b != grid[j]:
            grid, j = np.array([b]), 0
            pt = serving_point(eff, p, acc, grid, I, O, lay.tp, cprec, w.weight_precision, w.kv_precision, layout=lay,
                               decode_context=ctx)
    thr = float(pt["output_tokens_per_s"][j])
    if not (thr > 0 and math.isfinite(thr)):
        return None
    return {"fits": True, "tp": lay.tp, "pp": lay.pp, "ep": lay.ep, "layout_chips": lay.chips, "batch": int(grid[j]),
            "max_batch": int(mb), "meets": meets, "ttft_s": float(pt["ttft_s"][j]), "tpot_s": float(pt["tpot_s"][j]),
            "thr": thr, **{k: float(pt[k][j]) for k in ("decode_memory_s", "decode_compute_s", "decode_comm_s")}}


def _min_replicas(w: Workload, c: dict, O: float) -> int:
    """The fewest copies that hold ``concurrency`` at the chosen batch and serve ``requests_per_s``
    with a stable queue (λ·service < replicas·batch); one when neither is given."""
    r = 1
    if w.concurrency is not None:
        r = max(r, math.ceil(w.concurrency / c["batch"]))
    if w.requests_per_s is not None:
        service = c["ttft_s"] + O * c["tpot_s"]
        r = max(r, math.ceil(w.requests_per_s * O / c["thr"]), math.floor(w.requests_per_s * service / c["batch"]) + 1)
    return r


MAX_DEPLOYMENT_CHIPS = 1_000_000   # the scenario's bound on chips (scenario.Chips): a sanity limit, not a fact


def too_many_chips(w: Workload, c: dict) -> dict | None:
    """A refusal (``fits`` False, one-line ``reason``) when the fewest replicas that serve the load
    need more than ``MAX_DEPLOYMENT_CHIPS`` chips: checked before ``deployment`` allocates one array
    element per replica count it searches (a load of 1e12 requests/s asked for 31 TiB)."""
    _, O = _need_lengths(w)
    chips = _min_replicas(w, c, O) * c["layout_chips"]
    if chips <= MAX_DEPLOYMENT_CHIPS:
        return None
    load = f"requests_per_s = {w.requests_per_s:g}" if w.requests_per_s else f"concurrency = {w.concurrency}"
    return {"fits": False, "chips": None,
            "reason": f"{load} needs about {chips:.3g} chips, beyond the {MAX_DEPLOYMENT_CHIPS:,} chips the model plans"}


def deployment(w: Workload, c: dict, pinned: int | None) -> dict:
    """Replicas, batch per replica and TTFT tails of the deployment around the replica point ``c``.

    ``concurrency`` is the in-flight sequences of the whole deployment: spread over the replicas
    (batch = ceil(concurrency / replicas)). Pinned chips: every replica of the pinned chips. Else the
    fewest replicas with a stable queue that meet ``ttft_slo_ms`` at ``ttft_slo_percentile``
    (searched up to 4x the fewest + 8)."""
    I, O = _need_lengths(w)
    if pinned:
        r = np.array([int(pinned // c["layout_chips"])], dtype=float)
    else:
        r0 = _min_replicas(w, c, O)
        r = np.arange(r0, 4 * r0 + 9, dtype=float) if (w.requests_per_s and w.ttft_slo_ms) else np.array([r0], dtype=float)
    b = float(c["batch"])
    tails = ttft_tails(w, c["ttft_s"], c["tpot_s"], b, r)
    ok = np.ones(r.shape, dtype=bool) if w.ttft_slo_ms is None else np.asarray(tails["slo"]) * 1e3 <= w.ttft_slo_ms
    j = int(np.flatnonzero(ok)[0]) if ok.any() else 0
    n = int(r[j])
    in_flight = min(float(w.concurrency), n * b) if w.concurrency is not None else n * b
    return {"replicas": n, "chips": n * c["layout_chips"], "ttft_p50_s": float(np.atleast_1d(tails["p50"])[j]),
            "ttft_p99_s": float(np.atleast_1d(tails["p99"])[j]),
            "ttft_slo_s": float(np.atleast_1d(tails["slo"])[j]), "meets_ttft_tail": bool(ok[j]),
            "total_thr": c["thr"] * in_flight / b}


def _no_fit(p: Profile, acc, w: Workload, headroom: float, pinned, refused: list) -> dict:
    if refused:
        return {"fits": False, "chips": refused[0].get("chips"), "reason": refused[0]["reason"]}
    wb = weight_bytes(p, w.weight_precision)
    need = wb / (float(acc["memory_bytes"]) * (1.0 - headroom))
    where = f"the pinned {pinned} chips" if pinned else "any layout tried"
    return {"fits": False, "chips": int(math.ceil(need)),
            "reason": (f"weights ({wb / 1e9:.0f} GB) and one sequence's KV cache do not fit {where}; needs at "
                       f"least {math.ceil(need)} chips")}


def estimate_serving(p: Profile, acc, w: Workload, headroom: float, pinned: int | None = None,
                     max_chips: int | None = None, eff: Efficiency | None = None, parallelism=None,
                     net_bytes_per_s: float | None = None, disaggregated: bool = True) -> dict:
    """Serving on one accelerator type: TTFT (unloaded, and its P50/P99 under load), TPOT, output
    tokens/s of the whole deployment, the largest batch that fits memory, replicas (model copies) and
    the replica layout (``tp``, ``pp``, ``ep``), as the figures of a comparison row
    (``terms.ESTIMATE_COLUMNS``).

    For each layout of ``serving_layouts`` the replica runs at ``choose_batch`` and ``deployment``
    sizes the replicas; the layout with the fewest chips wins (ties: the lower TPOT). With ``pinned``
    chips the deployment uses exactly those chips (the highest throughput wins). Without
    concurrency and latency targets this is the best throughput that fits memory. ``net_bytes_per_s``
    replaces the accelerator's network between nodes (an offer's own network). With a request rate
    (and no pinned chips, layout or concurrency) the disaggregated prefill/decode layout of
    ``model.disagg`` replaces the colocated one when it meets the targets on fewer chips, or when the
    colocated one misses them (``layout``, ``prefill_chips``, ``decode_chips``, ``prefill_tp``,
    ``decode_tp``, ``kv_transfer_ms``); ``disaggregated=False`` leaves it out."""
    eff = default(eff)
    if p.generic:
        out = generic.serve(eff, p, acc, w, headroom, pinned)
        if max_chips and out.get("chips") and out["chips"] > max_chips:
            out["reason"] = ((out["reason"] + "; ") if out.get("reason") else "") + \
                f"needs {out['chips']} chips > max_chips {max_chips}"
        return out
    best, refused = None, []
    layouts = serving_layouts(p, acc, w, headroom, pinned, parallelism, net_bytes_per_s)
    for lay in layouts:
        c = choose_batch(eff, p, acc, w, lay.tp, headroom, lay, pinned)
        if c is None:
            continue
        if not c["fits"]:
            refused.append(c)
            continue
        big = None if pinned else too_many_chips(w, c)
        if big is not None:
            refused.append(big)
            continue
        c.update(deployment(w, c, pinned))
        c["meets"] = c["meets"] and c["meets_ttft_tail"]
        key = (not c["meets"], c["chips"], c["tpot_s"]) if not pinned else (not c["meets"], -c["total_thr"])
        if best is None or key < best[0]:
            best = (key, c)
    if best is None:
        return _no_fit(p, acc, w, headroom, pinned, refused)
    c = best[1]
    c["layout"] = "colocated"
    split = _disaggregated(eff, p, acc, w, headroom, layouts, pinned, parallelism) if disaggregated else None
    if split is not None and (not c["meets"] or split["chips"] < c["chips"]):
        c = split
    return _serving_row(eff, p, acc, w, c, max_chips)


def _disaggregated(eff: Efficiency, p: Profile, acc, w: Workload, headroom: float, layouts, pinned, parallelism):
    """The cheapest disaggregated deployment (``disagg.plan``) over the single-node layouts, as a
    replica point for ``_serving_row``: ``tp`` the smaller of the two pools' degrees and ``replicas``
    chips / tp (whole units that pack instances), the pools in ``prefill_*``/``decode_*``. None where
    it does not apply (no request rate or no latency target: DistServe's goodput is under SLOs; pinned
    chips or layout; a fixed concurrency) or no pool sizes meet the targets."""
    if w.requests_per_s is None or (w.ttft_slo_ms is None and w.tpot_slo_ms is None) or pinned \
            or w.concurrency is not None or (
            parallelism is not None and any(getattr(parallelism, k) for k in ("tp", "pp", "ep"))):
        return None
    single = [lay for lay in layouts if lay.pp == 1 and lay.ep == 1]
    d = disagg.plan(eff, p, acc, w, single, headroom, BATCH_GRID, matmul_precision(acc, w.precision, w.fp4_fallback))
    if d is None:
        return None
    tp = min(d["prefill_tp"], d["decode_tp"])
    return dict(d, fits=True, tp=tp, pp=1, ep=1, layout_chips=d["decode_layout"].chips, meets=True,
                meets_ttft_tail=True, replicas=d["chips"] // tp, layout="disaggregated")


def _serving_row(eff: Efficiency, p: Profile, acc, w: Workload, c: dict, max_chips: int | None) -> dict:
    """The comparison figures of the chosen deployment ``c``, with P10/P90 bands."""
    I, O = _need_lengths(w)
    lay = c.get("decode_layout") or Layout(c["tp"], c["pp"], c["ep"])
    out = {"fits": True, "chips": c["chips"], "tp": c["tp"], "pp": c["pp"], "ep": c["ep"], "replicas": c["replicas"],
           "batch": c["batch"], "max_batch": c["max_batch"], "meets_slo": c["meets"], "ttft_ms": c["ttft_s"] * 1e3,
           "ttft_ms_p50": c["ttft_p50_s"] * 1e3, "ttft_ms_p99": c["ttft_p99_s"] * 1e3,
           "ttft_ms_at_slo_percentile": c["ttft_slo_s"] * 1e3,
           "tpot_ms": c["tpot_s"] * 1e3, "output_tokens_per_s": c["total_thr"], "reason": "",
           "layout": c.get("layout", "colocated"), "prefill_chips": c.get("prefill_chips"),
           "decode_chips": c.get("decode_chips"), "prefill_tp": c.get("prefill_tp"), "decode_tp": c.get("decode_tp"),
           "kv_transfer_ms": c["kv_transfer_s"] * 1e3 if "kv_transfer_s" in c else math.nan,
           "memory_per_chip_bytes": (stored_weight_bytes(p, w.weight_precision, lay) + c["batch"] * _seq_tokens(w, I, O)
                                     * kv_bytes_per_token_held(p, acc, lay.tp, w.kv_precision)) / lay.chips,
           "calibrated": eff.is_calibrated("decode_memory_efficiency", band_scope(eff, acc))}
    for key, metric in (("output_tokens_per_s", "output_tokens_per_s_per_chip"), ("tpot_ms", "tpot_ms"),
                        ("ttft_ms", "ttft_ms")):
        lo, hi = band(eff, metric, band_scope(eff, acc))
        out[key + "_low"], out[key + "_high"] = out[key] * lo, out[key] * hi
    if not c["meets"]:
        out["reason"] = "misses the latency targets at every batch size (estimated at the largest batch that fits)"
        if not c["meets_ttft_tail"]:
            out["reason"] = (f"misses ttft_slo_ms at P{_slo_percentile(w) * 100:g} under the request rate "
                             f"(P99 {out['ttft_ms_p99']:,.0f} ms)")
    if max_chips and c["chips"] > max_chips:
        out["reason"] = (out["reason"] + "; " if out["reason"] else "") + f"needs {c['chips']} chips > max_chips {max_chips}"
    return out


def tp_curve(p: Profile, acc, w: Workload, tp_values=None, efficiency: Efficiency | None = None, *,
             memory_headroom: float = 0.1, batches=TP_BATCHES, pinned: int | None = None, parallelism=None,
             net_bytes_per_s: float | None = None) -> pd.DataFrame:
    """Throughput and latency of one model replica against its layout (``serving_layouts``, or the
    single-node ``tp_values``) and decode batch, with the operating point of each layout marked
    ``chosen``: exactly the point ``estimate_serving`` evaluates for it (``choose_batch``), so that
    the scaling tab and the decision show one number. Columns: accelerator, tp, pp, ep, batch,
    memory_per_chip_bytes, fits, ttft_ms, tpot_ms, decode_compute_ms, decode_memory_ms,
    decode_comm_ms, output_tokens_per_s, output_tokens_per_s_per_chip, meets_tpot_slo,
    meets_ttft_slo, meets_slo, chosen."""
    if p.generic:
        raise InputError("workload: the tensor-parallel curve needs a transformer shape (workload.model or "
                         "workload.architecture)")
    eff = default(efficiency)
    I, O = _need_lengths(w)
    if tp_values is None:
        layouts = serving_layouts(p, acc, w, memory_headroom, pinned, parallelism, net_bytes_per_s)
    else:
        bw, lat = _net(acc, net_bytes_per_s)
        layouts = [Layout(int(t), 1, 1, bw, lat) for t in sorted({int(t) for t in tp_values})]
    parts = [_curve_rows(eff, p, acc, w, lay, memory_headroom, batches, pinned, I, O) for lay in layouts]
    # one frame of the layouts' columns joined end to end: the rows, values and dtypes of a frame per layout
    # concatenated (``pd.concat(..., ignore_index=True)``), without building a frame per layout
    df = pd.DataFrame({c: np.concatenate([part[c] for part in parts]) for c in parts[0]}) if parts else pd.DataFrame()
    if len(df):
        df["meets_tpot_slo"] = True if w.tpot_slo_ms is None else df["tpot_ms"] <= w.tpot_slo_ms
        df["meets_ttft_slo"] = True if w.ttft_slo_ms is None else df["ttft_ms"] <= w.ttft_slo_ms
        df["meets_slo"] = df["meets_tpot_slo"] & df["meets_ttft_slo"]
    return df


def _curve_rows(eff, p, acc, w, lay: Layout, headroom, batches, pinned, I, O) -> pd.DataFrame:
    cprec = matmul_precision(acc, w.precision, w.fp4_fallback)
    chosen = choose_batch(eff, p, acc, w, lay.tp, headroom, lay, pinned)
    chosen = chosen if chosen and chosen["fits"] else None
    bs = np.array(sorted(set(batches) | ({chosen["batch"]} if chosen else set())), dtype=float)
    pt = serving_point(eff, p, acc, bs, I, O, lay.tp, cprec, w.weight_precision, w.kv_precision, layout=lay,
                       decode_context=_decode_context(w, I, O))
    seq = _seq_tokens(w, I, O)
    mb = float(max_batch_fit(p, acc, lay.tp, seq, w.weight_precision, w.kv_precision, headroom, lay))
    kv = bs * seq * kv_bytes_per_token_held(p, acc, lay.tp, w.kv_precision)
    n = len(bs)
    cols = {
        "accelerator": np.full(n, acc["accelerator"] if "accelerator" in acc else acc.name, dtype=object),
        "tp": np.full(n, lay.tp, dtype=np.int64), "pp": np.full(n, lay.pp, dtype=np.int64),
        "ep": np.full(n, lay.ep, dtype=np.int64), "batch": bs.astype(int),
        "memory_per_chip_bytes": (stored_weight_bytes(p, w.weight_precision, lay) + kv) / lay.chips,
        "fits": bs <= mb, "ttft_ms": pt["ttft_s"] * 1e3, "tpot_ms": pt["tpot_s"] * 1e3,
        "decode_compute_ms": pt["decode_compute_s"] * 1e3, "decode_memory_ms": pt["decode_memory_s"] * 1e3,
        "decode_comm_ms": pt["decode_comm_s"] * 1e3, "output_tokens_per_s": pt["output_tokens_per_s"],
        "output_tokens_per_s_per_chip": pt["output_tokens_per_s"] / lay.chips,
        "chosen": (bs == chosen["batch"]) if chosen else np.zeros(n, dtype=bool)}
    # each column an array of the layout's rows (a scalar repeated, as a frame broadcasts it)
    return {c: np.broadcast_to(v, (n,)) if np.ndim(v) == 0 else np.asarray(v) for c, v in cols.items()}
