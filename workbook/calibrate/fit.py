"""Fit the efficiency parameters on the reference runs and write ``data/efficiency.csv`` (each number
with the runs that set it); the ``calibrate`` command is ``calibrate.command``.

The fit (``fit``) is deliberately small: for training a matmul ceiling per accelerator family, one
pooled width constant κ (the element-wise penalty h / (h + κ · ridge point), which also sets how
much FP8 gains) and a mixture-of-experts constant per platform; for inference an HBM-bandwidth
efficiency, a matmul ceiling and a per-collective latency per family. Training predictions are the
multi-chip model's (``model.training`` through ``model.estimate.training_config``, as in
``estimate``), so the training parameters are fitted at a fixed point where that model reproduces
the published MFU (``fit_training``). Every trial is an explicit ``Efficiency`` value passed to the
model (``Efficiency.from_table``): nothing global changes while fitting. Family values are medians
(L1 in log space), pooled values come from a grid search: see ``model.efficiency`` for the formulas.
The per-doubling network loss is fitted (as ``model.training``'s synchronisation term) only for a
family whose runs hold one model and code at three or more chip counts beyond one fast domain, and
the data leave one only for TPU v5e's MaxText multi-slice runs (the H100 GPT-3 175B series fits 0).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import catalog
from ..model import comm, mamf, moe
from ..model.efficiency import Efficiency, dp_bytes_per_s, precision_ratio, width_factor, peak
from . import generic
from ..model.generic import STEP_OVERHEAD
from ..model.efficiency import FREE_METRIC
from .bands import BAND_LEVEL, BAND_MIN_RUNS, conformal_band, prediction_band, t_quantile  # noqa: F401 (re-exported)
from .layouts import free_prediction
from .runs import predict_run, reference_runs, run_chips, run_profile, run_rows, training_prediction, _n

# --- the fit ---------------------------------------------------------------------------------------

KAPPA_GRID = np.arange(0.0, 12.0001, 0.25)
MEM_GRID = np.arange(0.10, 1.0001, 0.02)
LAT_GRID = np.arange(0.0, 60e-6 + 1e-12, 1e-6)  # per latency step of a collective (replica.collective_steps)
CEIL_GRID = np.arange(0.05, 1.0001, 0.025)
# the fixed point of the training fit: start values (any reasonable values reach the same point) and
# the stopping rule
FIT_START = {("width_hidden_per_ridge", "pooled"): 4.0, ("matmul_ceiling", "pooled"): 0.6,
             ("moe_bytes_per_flop", "pooled"): 0.0, ("moe_host_s_per_layer", "gpu"): 0.0}
FIT_PASSES = 6
FIT_TOLERANCE = 0.005
# the synchronisation loss per doubling of fast domains (``efficiency.network_loss``): fitted only for a
# family with a controlled series, one model and framework at >= GAMMA_MIN_SCALES chip counts beyond
# one fast domain
GAMMA_GRID = np.arange(0.0, 0.1001, 0.0025)
GAMMA_MIN_SCALES = 3


def _training_features(df: pd.DataFrame, table: dict) -> pd.DataFrame:
    """Per training run, under the parameters ``table``: the best configuration's MFU and the matmul
    efficiency it ran at; ``share`` = MFU / efficiency is the fraction of the step the scaling model
    gives to matmul work at that efficiency (compute over step, in model FLOPs)."""
    eff = Efficiency.from_table(table)
    rows = []
    for r in run_rows(df[~generic.generic_rows(df)]):  # generic runs have their own fit (fit_generic)
        p = run_profile(r)
        acc = catalog.accelerator_record(r["accelerator"])
        cfg = training_prediction(r, eff)
        pk = peak(acc, r["precision"])
        chips = run_chips(r)
        domain = comm.topology(pd.Series(acc), chips).domain_chips
        core = cfg["step_time_s"] - cfg["sync_s"]  # the step without the synchronisation term
        rows.append({"run": r["run"], "family": acc["family"], "platform": acc["platform"], "hidden": p.hidden,
                     "ridge": pk / float(acc["memory_bytes_per_s"]), "peak": pk, "dp_bw": dp_bytes_per_s(acc),
                     "mamf": mamf.fraction(acc, mamf.REFERENCE_PRECISION) * precision_ratio(eff, acc, r["precision"]),
                     "kind": acc["kind"],
                     "moe_x": (p.params_total / p.params_active - 1.0) if p.is_moe else 0.0,
                     "chips": chips, "doublings": float(np.log2(max(chips / max(domain, 1), 1.0))),
                     "series": f"{_n(r.get('model'), '')}|{_n(r.get('architecture'), '')}|{_n(r.get('framework'), '')}",
                     "mfu": cfg["mfu"], "share": cfg["mfu"] * cfg["step_time_s"] / core / cfg["efficiency"],
                     "step": cfg["step_time_s"], **_moe_host_features(p, acc, cfg, table),
                     "obs": float(r["value"]), "split": r["split"]})
    return pd.DataFrame(rows)


def _moe_host_features(p, acc, cfg: dict, table: dict) -> dict:
    """A GPU MoE run's host-waiting MoE layer passes per step (``model.moe.host_passes`` x micro-batches,
    the pipeline bubble repeating them (p-1)/v times) and the host time per pass it was priced at; 0
    passes for dense runs and non-GPU chips (``moe_host_s_per_layer`` is fitted on GPUs only)."""
    if not p.is_moe or str(acc["kind"]) != "gpu":
        return {"moe_host_passes": 0.0, "moe_host_now": 0.0}
    m, pp, v = float(cfg["microbatches"]), float(cfg["pp"]), float(cfg["vpp"])
    layers = math.ceil(p.layers / (pp * v)) * v
    passes = float(moe.host_passes(layers, cfg["recompute"] == "full")) * (m + (pp - 1.0) / v)
    return {"moe_host_passes": passes, "moe_host_now": moe.host_s_per_layer(Efficiency.from_table(table), acc)}


def _has_series(f: pd.DataFrame) -> bool:
    """Whether runs ``f`` (one family) hold one model and framework at >= GAMMA_MIN_SCALES chip
    counts beyond one fast domain: the only evidence that separates a loss per doubling of domains
    from differences between models and codes."""
    beyond = f[f["doublings"] > 0]
    return bool(len(beyond)) and int(beyond.groupby("series")["chips"].nunique().max()) >= GAMMA_MIN_SCALES


def _fit_on_shares(f: pd.DataFrame) -> tuple[dict, dict]:
    """One refit of the training parameters on ``target = observed MFU / share`` (the matmul
    efficiency each run needs under the scaling model, its synchronisation term left out): κ by grid
    search (L1 of log error over every dense run) and, for a family with a controlled series
    (``_has_series``), its γ by the same grid search; each family's ceiling the median of
    target · (1 + γ·doublings) / width over its dense runs (the L1 optimum in log space), the pooled
    ceiling the median over families; each MoE run solved exactly for the MoE constant c, the
    platform taking the median (pooled: median of all)."""
    target = f["obs"] / f["share"] / f["mamf"]  # in units of the chip's measured matmul ceiling (1 = unmeasured)
    dense = f[f["moe_x"] == 0]
    td = np.log(target[dense.index].to_numpy())
    fam = dense["family"].to_numpy()
    fams = sorted(set(fam))
    dbl = dense["doublings"].to_numpy()
    own_gamma = {fm: _has_series(dense[fam == fm]) for fm in fams}
    log1p_g = np.log1p(GAMMA_GRID[:, None] * dbl[None, :])  # (gamma, runs)
    best = None
    for k in KAPPA_GRID:
        lw = np.log(width_factor(dense["hidden"].to_numpy(), k * dense["ridge"].to_numpy()))
        loss, gammas = 0.0, {}
        for fm in fams:
            m = fam == fm
            gi = np.arange(len(GAMMA_GRID)) if own_gamma[fm] else np.array([0])
            x = td[m][None, :] - lw[m][None, :] + log1p_g[gi][:, m]  # (gamma, runs)
            l1 = np.abs(x - np.median(x, axis=1, keepdims=True)).sum(axis=1)
            j = int(np.argmin(l1))
            loss += float(l1[j])
            gammas[fm] = float(GAMMA_GRID[gi[j]])
        if best is None or loss < best[0] - 1e-9:
            best = (loss, float(k), gammas)
    _, kappa, gammas = best
    runs_dense = list(dense["run"])
    params = {("width_hidden_per_ridge", "pooled"): kappa}
    prov = {("width_hidden_per_ridge", "pooled"): runs_dense}
    w = width_factor(dense["hidden"].to_numpy(), kappa * dense["ridge"].to_numpy())
    ceilings = {}
    for fm in fams:
        m = fam == fm
        ceilings[fm] = min(float(np.exp(np.median(td[m] - np.log(w[m]) + np.log1p(gammas[fm] * dbl[m])))), 1.0)
        params[("matmul_ceiling", fm)] = ceilings[fm]
        prov[("matmul_ceiling", fm)] = list(dense.loc[m, "run"])
        if own_gamma[fm]:
            params[("network_loss_per_doubling", fm)] = gammas[fm]
            prov[("network_loss_per_doubling", fm)] = list(dense.loc[m, "run"])
    params[("matmul_ceiling", "pooled")] = float(np.median(list(ceilings.values())))
    prov[("matmul_ceiling", "pooled")] = runs_dense
    # families without runs take the median of their kind (a GPU's matmuls behave like other GPUs'
    # more than like a TPU's systolic arrays)
    kinds = {r["family"]: r["kind"] for r in catalog.accelerator_records().values()}
    for kind in sorted({kinds[fm] for fm in ceilings}):
        members = [fm for fm in ceilings if kinds[fm] == kind]
        params[("matmul_ceiling", kind)] = float(np.median([ceilings[fm] for fm in members]))
        prov[("matmul_ceiling", kind)] = [r for fm in members for r in prov[("matmul_ceiling", fm)]]
    _fit_moe(f, target, kappa, params, prov)
    return params, prov


def _fit_moe(f: pd.DataFrame, target, kappa: float, params: dict, prov: dict) -> None:
    """The mixture-of-experts parameters, into ``params``/``prov``: on GPUs each MoE run solved exactly
    for the host time per MoE layer pass (``model.moe.host_s``: the step's shortfall over its
    host-waiting passes, added to the time it was priced with), median per platform and for the kind
    ``gpu``, and c = 0; elsewhere each run solved exactly for the MoE constant c, median per
    platform (pooled: the median of all, GPU runs counting 0)."""
    # mixture of experts: target = dense / (1 + c·x·peak·dense/bw)  =>  c = (dense/target − 1)·bw / (x·peak·dense)
    cs, ts = {}, {}
    for i, r in f[(f["moe_x"] > 0) & (f["moe_host_passes"] > 0)].iterrows():  # GPU MoE runs: the host time (model.moe.host_s)
        t = r["moe_host_now"] + (r["step"] * r["mfu"] / r["obs"] - r["step"]) / r["moe_host_passes"]
        ts.setdefault(r["platform"], []).append((max(t, 0.0), r["run"]))
        ts.setdefault(r["kind"], []).append((max(t, 0.0), r["run"]))
        cs.setdefault(r["platform"], []).append((0.0, r["run"]))
    for scope, v in ts.items():
        params[("moe_host_s_per_layer", scope)] = float(np.median([t for t, _ in v]))
        prov[("moe_host_s_per_layer", scope)] = [r for _, r in v]
    for i, r in f[(f["moe_x"] > 0) & (f["moe_host_passes"] == 0)].iterrows():
        ceil = params.get(("matmul_ceiling", r["family"]),
                          params.get(("matmul_ceiling", r["kind"]), params[("matmul_ceiling", "pooled")])) * r["mamf"]
        g = params.get(("network_loss_per_doubling", r["family"]), 0.0)
        dense_eff = ceil * float(width_factor(r["hidden"], kappa * r["ridge"])) / (1.0 + g * r["doublings"])
        c = max((dense_eff / (target[i] * r["mamf"]) - 1.0) * r["dp_bw"] / (r["moe_x"] * r["peak"] * dense_eff), 0.0)
        cs.setdefault(r["platform"], []).append((c, r["run"]))
    allc = [c for v in cs.values() for c in v]
    params[("moe_bytes_per_flop", "pooled")] = float(np.median([c for c, _ in allc])) if allc else 0.0
    prov[("moe_bytes_per_flop", "pooled")] = [r for _, r in allc]
    for plat, v in cs.items():
        params[("moe_bytes_per_flop", plat)] = float(np.median([c for c, _ in v]))
        prov[("moe_bytes_per_flop", plat)] = [r for _, r in v]


def _close(a: dict, b: dict, tol: float) -> bool:
    return set(a) == set(b) and all(abs(a[k] - b[k]) <= tol * max(abs(a[k]), abs(b[k]), 1e-12) for k in a)


def fit_training(runs: pd.DataFrame) -> tuple[dict, dict]:
    """Fit the training efficiency on the ``split == "fit"`` training runs, with the multi-chip
    model switched on.

    Published MFU is end to end: it already contains the run's communication, pipeline bubbles,
    recomputation and optimizer time. The scaling model adds those explicitly, so the efficiency is
    fitted to observed MFU / share, where share (``_training_features``) is the fraction of the
    run's best configuration (its published layout pinned, ``parallelism``) that is matmul work.
    The share depends on the efficiency (faster matmuls expose more communication), so the fit
    iterates to a fixed point: from ``FIT_START``, price every run, refit (``_fit_on_shares``), and
    repeat until no parameter moves more than ``FIT_TOLERANCE`` (relative; at most ``FIT_PASSES``
    passes). Returns (parameters, provenance: parameter key -> run ids)."""
    tr = runs[(runs["kind"] == "training") & (runs["split"] == "fit") & ~generic.generic_rows(runs)]
    unmeasured = _unmeasured_precision(tr)
    table = dict(FIT_START)
    params, prov = table, {}
    for _ in range(FIT_PASSES):
        params, prov = _fit_on_shares(_training_features(tr[~unmeasured], table))
        if _close(params, table, FIT_TOLERANCE):
            break
        table = params
    _fit_precision_ratios(tr[unmeasured], params, prov)
    return params, prov


RATIO_BISECTIONS = 24


def _unmeasured_precision(tr: pd.DataFrame) -> pd.Series:
    """Training runs at a low precision (fp8, int8) whose chip has no measured GEMM rate at that
    precision relative to BF16 (``mamf.precision_ratio`` None): they set ``matmul_ratio_<precision>``
    (``_fit_precision_ratios``), not the ceilings."""
    return pd.Series([mamf.precision_ratio(catalog.accelerator_record(a), pr) is None
                      for a, pr in zip(tr["accelerator"], tr["precision"])], index=tr.index, dtype=bool)


def _fit_precision_ratios(tr: pd.DataFrame, params: dict, prov: dict) -> None:
    """``matmul_ratio_<precision>`` per kind (gpu, tpu, asic) and family, into ``params``: each
    low-precision run without a measured ratio solved exactly (bisection on the ratio, the other
    parameters at their fit) for the GEMM rate of its precision, as a fraction of its peak, relative
    to BF16's fraction of the BF16 peak; the median per family and per kind. The ratio is what a
    same-code BF16/low-precision pair measures (MaxText GPT-3 175B on v6e-256: BF16 and AQT int8)."""
    found: dict = {}
    for r in run_rows(tr):
        acc = catalog.accelerator_record(r["accelerator"])
        name = f"matmul_ratio_{r['precision']}"
        lo, hi = 0.02, 1.0

        def mfu(x):
            t = {**params, (name, str(acc["family"])): x}
            return training_prediction(r, Efficiency.from_table(t))["mfu"]

        if mfu(hi) < float(r["value"]):
            x = hi
        else:
            for _ in range(RATIO_BISECTIONS):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if mfu(mid) < float(r["value"]) else (lo, mid)
            x = 0.5 * (lo + hi)
        for scope in (str(acc["family"]), str(acc["kind"])):
            found.setdefault((name, scope), []).append((x, r["run"]))
    for key, v in found.items():
        params[key] = float(np.median([x for x, _ in v]))
        prov[key] = [run for _, run in v]


# A parameter is "not identified" by a family's runs when every value within IDENTIFY_TOL (mean
# |log error| per run) of the best fit spans more than IDENTIFY_SPAN of its grid.
IDENTIFY_TOL = 0.05
IDENTIFY_SPAN = 0.5


def fit_inference(runs: pd.DataFrame, train_params: dict) -> tuple[dict, dict]:
    """Fit, per family, the decode memory efficiency, the inference matmul ceiling and the
    per-collective TP latency on the ``split == "fit"`` inference runs (throughput, TPOT and TTFT).

    A grid search minimises the sum of |log(observed/predicted)| over the family's runs. A parameter
    that the family's runs do not constrain (values within ``IDENTIFY_TOL`` of the best fit span more
    than ``IDENTIFY_SPAN`` of its grid; e.g. HBM efficiency when every run is compute-bound, the TP
    latency without tensor-parallel runs) takes the pooled value, the median over the families that do
    constrain it, and the others are refitted with it fixed."""
    inf = runs[(runs["kind"] == "inference") & (runs["split"] == "fit") & ~generic.generic_rows(runs)]
    fams = {}
    for r in run_rows(inf):
        fams.setdefault(catalog.accelerator_record(r["accelerator"])["family"], []).append(r)
    keys = ("decode_memory_efficiency", "tp_collective_latency_s", "inference_matmul_ceiling")
    grids = {"decode_memory_efficiency": MEM_GRID, "tp_collective_latency_s": LAT_GRID, "inference_matmul_ceiling": CEIL_GRID}
    table = dict(train_params)
    for k in keys:  # placeholders: every prediction below passes its own values
        table[(k, "pooled")] = 1.0

    def loss_grid(rows, fixed):
        # Open grids (``sparse=True``): each term of a prediction is computed over the axes it depends on
        # and broadcast over the others (a run without tensor parallelism does not depend on the TP
        # latency: 36 of the 84 fit runs), the same values as on the full grid; the whole fit 0.65x CPU.
        axes = [np.array([fixed[k]]) if k in fixed else grids[k] for k in keys]
        m, l, c = np.meshgrid(*axes, indexing="ij", sparse=True)
        eff = Efficiency.from_table(table)
        loss = sum(np.abs(np.log(predict_run(r, mem_eff=m, latency_s=l, ceiling=c, eff=eff) / r["value"])) for r in rows)
        return np.broadcast_to(loss, tuple(len(ax) for ax in axes)), axes

    def solve(rows, fixed):
        loss, axes = loss_grid(rows, fixed)
        idx = np.unravel_index(int(np.argmin(loss)), loss.shape)
        best = {k: float(ax[i]) for k, ax, i in zip(keys, axes, idx)}
        identified = {}
        for d, k in enumerate(keys):
            if k in fixed:
                continue
            sl = list(idx)
            sl[d] = slice(None)
            prof = loss[tuple(sl)]
            near = axes[d][prof <= prof.min() + IDENTIFY_TOL * len(rows)]
            identified[k] = (near.max() - near.min()) <= IDENTIFY_SPAN * (axes[d].max() - axes[d].min())
        return best, identified

    first = {f: solve(rows, {}) for f, rows in fams.items()}
    params, prov = {}, {}
    for k in keys:
        vals = [first[f][0][k] for f in fams if first[f][1][k]]
        params[(k, "pooled")] = float(np.median(vals)) if vals else float(np.median(grids[k]))
        prov[(k, "pooled")] = [r["run"] for f in fams if first[f][1][k] for r in fams[f]]
    for f, rows in fams.items():
        best, ident = first[f]
        fixed = {k: params[(k, "pooled")] for k in keys if not ident[k]}
        if fixed:
            best, _ = solve(rows, fixed)
        for k in keys:
            if k not in fixed:
                params[(k, f)] = best[k]
                prov[(k, f)] = [r["run"] for r in rows]
    params.update(_fit_prefill(fams, {**table, **params}, prov))
    return params, prov


def _fit_prefill(fams: dict, table: dict, prov: dict) -> dict:
    """``prefill_matmul_ceiling`` per family with static-batch time-to-first-token fit runs (there TTFT
    is the batch's prefill and nothing else; under continuous batching at a concurrency, as NVIDIA
    NIM's, it also holds the wait behind other prompts and the client's overheads, which a prefill
    ceiling must not absorb): a grid search of the prefill's ceiling alone on those runs (sum of
    |log error|), the family's other parameters fixed at their fit; a family without such runs gets
    one where its chunked-prefill runs identify it (``_fit_chunked_prefill``), else keeps its
    ``inference_matmul_ceiling`` for prefill."""
    eff = Efficiency.from_table(table)
    out = {}
    for f, rows in fams.items():
        ttft = [r for r in rows if r["metric"] == "ttft_ms" and r.get("batching") == "static"]
        if not ttft:
            out.update(_fit_chunked_prefill(f, rows, table, prov))
            continue
        loss = sum(np.abs(np.log(predict_run(r, eff=eff, prefill_ceiling=CEIL_GRID) / r["value"])) for r in ttft)
        out[("prefill_matmul_ceiling", f)] = float(CEIL_GRID[int(np.argmin(loss))])
        prov[("prefill_matmul_ceiling", f)] = [r["run"] for r in ttft]
    return out


def _fit_chunked_prefill(f: str, rows: list, table: dict, prov: dict) -> dict:
    """A family without static-batch TTFT runs: its prompt chunks' ceiling and its decode steps'
    ceiling fitted together on all its inference fit runs (a grid over both, sum of |log error|, its
    HBM efficiency and collective latency fixed at their fit), the prefill's at least the decode's.
    A prompt chunk is one matmul of thousands of rows (up to ``model.replica.STEP_TOKENS``), a decode
    step's matmuls have as many rows as the batch, and a GEMM's rate rises with its size: fewer
    partial tiles and partial waves of tiles over the multiprocessors (NVIDIA, "Matrix Multiplication
    Background User's Guide", DU-09799-001, 2023, §2.3 and §3). Kept only where the runs identify it
    (the ``IDENTIFY_TOL`` rule on the prefill axis) and it exceeds the decode ceiling; the family's
    ``inference_matmul_ceiling`` is replaced by the joint fit's. Blackwell's runs, 128 to 20,000 prompt
    tokens, set it; MI300X's (128-token prompts) and Hopper's do not."""
    eff = Efficiency.from_table(table)
    c, pf = np.meshgrid(CEIL_GRID, CEIL_GRID, indexing="ij")
    loss = sum(np.abs(np.log(predict_run(r, eff=eff, ceiling=c, prefill_ceiling=pf) / r["value"])) for r in rows)
    loss = np.where(pf >= c - 1e-12, loss, np.inf)
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    if j <= i:
        return {}
    prof = loss[i, :]
    near = CEIL_GRID[prof <= prof[j] + IDENTIFY_TOL * len(rows)]
    if near.max() - near.min() > IDENTIFY_SPAN * (CEIL_GRID.max() - CEIL_GRID.min()):
        return {}
    runs = [r["run"] for r in rows]
    prov[("prefill_matmul_ceiling", f)] = runs
    prov[("inference_matmul_ceiling", f)] = runs
    return {("prefill_matmul_ceiling", f): float(CEIL_GRID[j]), ("inference_matmul_ceiling", f): float(CEIL_GRID[i])}


def _predict_all(rows: list[dict], eff: Efficiency) -> np.ndarray:
    """``predict_run`` of every run of ``rows`` (``run_rows``, made once by the caller, which predicts the
    same runs with several efficiencies)."""
    return np.array([float(predict_run(r, eff=eff)) for r in rows])


def _pooled(eff: Efficiency) -> Efficiency:
    """The same parameters with every family-specific value removed (family-out predictions)."""
    return eff.without_scopes({r["family"] for r in catalog.accelerator_records().values()})


CV_FOLDS = 4  # the cross-validation of the bands: every fourth fit run per family and metric, as the hold-out rule


def cv_folds(runs: pd.DataFrame) -> np.ndarray:
    """Fold of each run: its position among the runs of its family and metric, in file order, modulo
    ``CV_FOLDS`` (the hold-out rule's every-fourth, applied again inside the fit split)."""
    return (runs.groupby(["family", "metric"], sort=False).cumcount() % CV_FOLDS).to_numpy()


def _fit_params(runs: pd.DataFrame) -> dict:
    params, _ = fit_training(runs)
    params.update(fit_inference(runs, params)[0])
    params.update(fit_generic(runs, params)[0])
    return params


GENERIC_SCALE = {"generic_mfu": "generic_train_scale", "generic_samples_per_s_per_chip": "generic_inference_scale"}
GENERIC_PASSES = 4
GENERIC_OVERHEAD_GRID_S = np.arange(0.0, 10.01e-3, 0.25e-3)  # model.generic: 0-10 ms per step


def _generic_scale(rows: pd.DataFrame, params: dict, name: str) -> tuple[float, float]:
    """The pooled factor (median of observed / predicted, iterated because exposed communication and
    the fixed step time do not scale with it) and the L1 log error it leaves."""
    scale, eff = 1.0, None
    recs, values = run_rows(rows), rows["value"].to_numpy()
    for _ in range(GENERIC_PASSES):
        eff = Efficiency.from_table({**params, (name, "pooled"): scale})
        scale *= float(np.exp(np.median(np.log(values / _predict_all(recs, eff)))))
    eff = Efficiency.from_table({**params, (name, "pooled"): scale})
    return scale, float(np.abs(np.log(values / _predict_all(recs, eff))).sum())


def fit_generic(runs: pd.DataFrame, params: dict) -> tuple[dict, dict]:
    """The efficiency scale of generic (non-transformer) models, per work (training, inference): the
    transformer-fitted efficiency times a pooled factor, the median over the generic ``fit`` runs of
    observed / predicted (L1 in log space). Training also fits the fixed time of a step
    (``model.generic``), by grid search of the L1 log error with the factor refitted at each value:
    runs at different images per chip (MLPerf ResNet-50 at 16 to 408 per GPU) tell the two apart.
    No generic fit run: no factor (1, the transformer efficiency) and no fixed time."""
    out, prov = {}, {}
    g = runs[generic.generic_rows(runs) & (runs["split"] == "fit")]
    for metric, name in GENERIC_SCALE.items():
        rows = g[g["metric"] == metric]
        if not len(rows):
            continue
        extra = {}
        if metric == "generic_mfu":
            fits = [(_generic_scale(rows, {**params, (STEP_OVERHEAD, "pooled"): t0}, name)[1], t0)
                    for t0 in GENERIC_OVERHEAD_GRID_S]
            extra = {(STEP_OVERHEAD, "pooled"): float(min(fits)[1])}
            out.update(extra)
            prov[(STEP_OVERHEAD, "pooled")] = list(rows["run"])
        out[(name, "pooled")] = _generic_scale(rows, {**params, **extra}, name)[0]
        prov[(name, "pooled")] = list(rows["run"])
    return out, prov


def _free_log_ratios(rows: pd.DataFrame, eff: Efficiency) -> np.ndarray:
    """log(observed / free-search MFU) of training runs (``layouts.free_prediction``: nothing of the
    published layout pinned, as ``estimate`` searches); NaN where nothing fits memory."""
    out = []
    for r in run_rows(rows):
        cfg = free_prediction(r, eff)
        out.append(math.nan if cfg is None else math.log(float(r["value"]) / float(cfg["mfu"])))
    return np.array(out, dtype=float)


def free_rows(runs: pd.DataFrame) -> np.ndarray:
    """The runs a free layout search predicts: transformer training runs (metric ``mfu``), with or
    without a published layout (without one, the calibration searches freely already)."""
    return ((runs["metric"] == "mfu") & ~generic.generic_rows(runs)).to_numpy()


def cv_residuals(runs: pd.DataFrame) -> pd.DataFrame:
    """Out-of-sample residuals of the ``fit`` runs: for each fold, every parameter refitted on the
    other folds (``fit_training``, ``fit_inference``) and the fold predicted, with the family's own
    values (``log_ratio``) and with pooled values only (``log_ratio_pooled``); training runs also
    searched freely (``log_ratio_free``, ``log_ratio_free_pooled``; ``free_rows``). In-sample
    residuals understate the error on unseen runs where a family's parameters rest on a few runs;
    these do not."""
    fit_runs = runs[runs["split"] == "fit"].reset_index(drop=True)
    folds = cv_folds(fit_runs)
    free = free_rows(fit_runs)
    out = fit_runs[["run", "family", "metric", "value"]].copy()
    for c in ("log_ratio", "log_ratio_pooled", "log_ratio_free", "log_ratio_free_pooled"):
        out[c] = np.nan
    for k in range(CV_FOLDS):
        test = folds == k
        train = runs.copy()
        train.loc[train["run"].isin(set(fit_runs.loc[test, "run"])), "split"] = "holdout"
        eff = Efficiency.from_table(_fit_params(train))
        sub = fit_runs[test]
        recs, values = run_rows(sub), sub["value"].to_numpy()
        out.loc[test, "log_ratio"] = np.log(values / _predict_all(recs, eff))
        out.loc[test, "log_ratio_pooled"] = np.log(values / _predict_all(recs, _pooled(eff)))
        out.loc[test & free, "log_ratio_free"] = _free_log_ratios(fit_runs[test & free], eff)
        out.loc[test & free, "log_ratio_free_pooled"] = _free_log_ratios(fit_runs[test & free], _pooled(eff))
    return out


def _bands(runs: pd.DataFrame) -> tuple[dict, dict]:
    """The band parameters of every metric from the cross-validated residuals of the ``fit`` runs
    (``cv_residuals``; held-out runs stay unseen, so their coverage tests the band): per family with
    >= BAND_MIN_RUNS fit runs of the metric, pooled over families, and 'uncalibrated' (families
    predicted from pooled values only). Mixture-of-experts MFU runs form their own scope
    (``model.moe.band_scope``) and stay out of the dense ones. Predictions with the layout pinned
    get the Student-t band (``bands.prediction_band``); a freely searched training estimate
    (``bands.FREE_METRIC``, what ``estimate`` shows when nothing of the layout is pinned) gets the
    split-conformal band (``bands.conformal_band``) of the same runs searched freely, same scopes."""
    cv = cv_residuals(runs)
    is_moe = {r["run"] for r in run_rows(runs) if r["metric"] == "mfu" and run_profile(r).is_moe}
    moe_runs = cv["run"].isin(is_moe).to_numpy()
    params, prov = {}, {}

    def put(metric, scope, sel, column):
        sel = sel & cv[column].notna().to_numpy()
        lo, hi = (conformal_band if metric == FREE_METRIC else prediction_band)(cv.loc[sel, column].to_numpy())
        if math.isnan(lo):
            return
        params[(f"band_p10_{metric}", scope)], params[(f"band_p90_{metric}", scope)] = lo, hi
        prov[(f"band_p10_{metric}", scope)] = prov[(f"band_p90_{metric}", scope)] = list(cv.loc[sel, "run"])

    for metric in [*sorted(set(cv["metric"])), FREE_METRIC]:
        m = (cv["metric"] == ("mfu" if metric == FREE_METRIC else metric)).to_numpy()
        col = "log_ratio_free" if metric == FREE_METRIC else "log_ratio"
        if metric in ("mfu", FREE_METRIC):
            put(metric, moe.BAND_SCOPE, m & moe_runs, col)
            m = m & ~moe_runs
        put(metric, "pooled", m, col)
        put(metric, "uncalibrated", m, col + "_pooled")
        for fam in sorted(set(cv.loc[m, "family"])):
            sel = m & (cv["family"] == fam).to_numpy()
            if sel.sum() >= BAND_MIN_RUNS:
                put(metric, fam, sel, col)
    return params, prov


def fit(runs: pd.DataFrame | None = None) -> tuple[dict, dict]:
    """Fit every efficiency parameter and the P10/P90 bands. Returns (parameters, provenance)."""
    runs = reference_runs() if runs is None else runs
    params, prov = fit_training(runs)
    ip, iprov = fit_inference(runs, params)
    params.update(ip)
    prov.update(iprov)
    gp, gprov = fit_generic(runs, params)
    params.update(gp)
    prov.update(gprov)
    bp, bprov = _bands(runs)
    params.update(bp)
    prov.update(bprov)
    return params, prov
