"""Calibration: the performance model against published runs (``data/reference_runs.csv``).

``python -m workbook calibrate`` prints, for every run, the published figure converted to one
definition, the model's prediction and the error, then the median absolute error per kind and per
accelerator family, on every run and on the held-out runs alone. ``--write`` refits the efficiency
parameters on the runs marked ``split = fit`` and writes ``data/efficiency.csv`` (each number with
the runs that set it).

One definition per metric (what ``value`` holds in ``reference_runs.csv``):
- training ``mfu``: model FLOPs utilisation, ``(6N + 12·L·H·Q·S) · tokens/s / (chips · dense peak of
  the compute precision)``, PaLM's definition (Chowdhery et al. 2022, App. B); N = weights in
  matmuls per token (``profile.train_flops_per_token``). Published figures on other bases (tokens/s,
  sequences/s, GPU-hours, hardware TFLOP/s with recomputation) are converted by ``convert``.
- inference ``output_tokens_per_s_per_chip`` (generated tokens per second over all chips of the run),
  ``tpot_ms`` (time per output token), ``ttft_ms`` (time to first token).

The fit (``fit``) is deliberately small: a matmul ceiling per accelerator family, a width penalty,
an FP8 speed-up fraction and a mixture-of-experts overhead for training; an HBM-bandwidth efficiency
and a per-collective latency per family for inference. Family values are medians (L1 in log
space), pooled values come from a grid search: see ``perf`` for the formulas.
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from . import catalog
from .errors import InputError
from .profile import Profile, model_profile, profile_from_architecture, train_flops_per_token
from .scenario import Architecture

RUNS_FILE = "reference_runs"

# --- reading the runs ------------------------------------------------------------------------------


def parse_architecture(text: str, where: str = "architecture") -> Architecture:
    """An inline shape ``"layers=48;hidden=6144;..."`` (keys of ``scenario.Architecture``)."""
    data = {}
    for part in str(text).split(";"):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise InputError(f"{where}: expected key=value pairs separated by ';', got {part!r}")
        k, v = (x.strip() for x in part.split("=", 1))
        if k not in Architecture.model_fields:
            raise InputError(f"{where}: unknown key {k!r}{catalog._suggest(k, list(Architecture.model_fields))}")
        data[k] = v.lower() in ("true", "1", "yes") if k in ("gated_mlp", "tied_embeddings") else int(float(v))
    try:
        return Architecture.model_validate(data)
    except Exception as e:  # pydantic ValidationError -> one line
        raise InputError(f"{where}: {e}".splitlines()[0]) from None


def run_profile(row) -> Profile:
    """The workload profile of one reference run: its catalog model or its inline architecture."""
    model = row.get("model")
    if isinstance(model, str) and model:
        return model_profile(model)
    arch = row.get("architecture")
    if not isinstance(arch, str) or not arch:
        raise InputError(f"reference_runs.csv: run {row.get('run')!r}: expected a model id or an architecture")
    return profile_from_architecture(parse_architecture(arch, f"reference_runs.csv: run {row.get('run')}: architecture"),
                                     str(row.get("run")))


def megatron_hw_flops_per_token(p: Profile, seq_len) -> float:
    """Hardware FLOPs per token counted by Megatron-LM / Megatron-DeepSpeed *with* full activation
    recomputation (a second forward pass): 96·L·h²·(1 + S/(6h) + V/(16·L·h)) per token.

    Narayanan et al. 2021 (arXiv 2104.04473) §5.1, eq. (3); the same formula with
    ``checkpoint_activations_factor = 4`` is what Megatron-DeepSpeed (BLOOM) logs as TFLOP/s."""
    L, h, V = p.layers, p.hidden, p.vocab
    return 96.0 * L * h * h * (1.0 + seq_len / (6.0 * h) + V / (16.0 * L * h))


def convert(row, acc: pd.Series | None = None) -> float:
    """The published figure of one run in the package's one definition (see module docstring).

    ``basis`` says how the publisher counted:
    - ``mfu_palm``: MFU in % with the same definition (MaxText, Megatron-LM, llm-foundry count
      6N + 12·L·H·Q·S over the dense peak of the compute precision): divided by 100, unchanged;
    - ``tokens_per_s_per_chip`` / ``seqs_per_s_total`` / ``gpu_hours_total`` (with ``train_tokens``):
      turned into tokens/s per chip, then MFU = train_flops_per_token · tokens/s / peak;
    - ``hw_tflops_per_chip_recompute``: achieved TFLOP/s counted with recomputation
      (``megatron_hw_flops_per_token``) -> tokens/s -> MFU;
    - ``output_tokens_per_s_total``: generated tokens/s of the whole run -> per chip;
    - ``tpot_ms`` / ``ttft_ms``: unchanged.
    """
    basis = row["basis"]
    v = float(row["published_value"])
    if basis in ("tpot_ms", "ttft_ms"):
        return v
    if basis == "output_tokens_per_s_total":
        return v / float(row["chips"])
    if basis == "mfu_palm":
        return v / 100.0
    p = run_profile(row)
    acc = catalog.accelerator(row["accelerator"]) if acc is None else acc
    peak = float(catalog.peak_flops_per_s(acc, row["precision"]))
    seq = float(row["seq_len"])
    if basis == "tokens_per_s_per_chip":
        tps = v
    elif basis == "seqs_per_s_total":
        tps = v * seq / float(row["chips"])
    elif basis == "gpu_hours_total":
        tps = float(row["train_tokens"]) / (v * 3600.0)
    elif basis == "hw_tflops_per_chip_recompute":
        tps = v * 1e12 / megatron_hw_flops_per_token(p, seq)
    else:
        raise InputError(f"reference_runs.csv: run {row['run']!r}: basis: unknown {basis!r}")
    return float(train_flops_per_token(p, seq)) * tps / peak


@functools.lru_cache(maxsize=None)
def _runs_cached() -> pd.DataFrame:
    df = catalog.load(RUNS_FILE).copy()
    dup = df["run"][df["run"].duplicated()]
    if len(dup):
        raise InputError(f"data/{RUNS_FILE}.csv: run: duplicate id {dup.iloc[0]!r}")
    used = df["split"] != "excluded"
    known = catalog.resolve_map("accelerators")
    for i in np.flatnonzero(used.to_numpy()):
        row = df.iloc[i]
        if row["accelerator"] not in known:
            raise InputError(f"data/{RUNS_FILE}.csv: row {i + 2}: accelerator: unknown id {row['accelerator']!r}"
                             f"{catalog._suggest(row['accelerator'], set(known.values()))}")
        if pd.isna(row["value"]) or pd.isna(row["metric"]):
            raise InputError(f"data/{RUNS_FILE}.csv: row {i + 2}: value: expected the converted figure for a used run")
    acc = catalog.accelerators().set_index("accelerator")
    df["accelerator"] = [catalog.resolve("accelerators", a) if u else a for a, u in zip(df["accelerator"], used)]
    df["family"] = [acc.loc[a, "family"] if u else None for a, u in zip(df["accelerator"], used)]
    return df


def reference_runs(include_excluded: bool = False) -> pd.DataFrame:
    """``data/reference_runs.csv``, validated, with each run's accelerator ``family``.

    Excluded runs (``split = excluded``: no usable throughput, a chip not in the catalog, a feature
    the profile does not model) are dropped unless ``include_excluded``."""
    df = _runs_cached()
    return df.copy() if include_excluded else df[df["split"] != "excluded"].reset_index(drop=True)


# --- predictions -----------------------------------------------------------------------------------

CALIBRATION_HEADROOM = 0.1  # vLLM's default gpu_memory_utilization = 0.9 (vLLM engine arguments)


def _n(x, default=None):
    return default if x is None or (isinstance(x, float) and np.isnan(x)) or x is pd.NA else x


def predict_run(row, acc: dict | None = None, mem_eff=None, latency_s=None, ceiling=None):
    """The model's figure for one run, in the run's ``metric`` (array when ``mem_eff``/``latency_s`` are
    arrays: the fit evaluates a grid at once).

    Training: ``perf.compute_efficiency(acc, precision, "train", profile, tp)`` times
    ``perf.network_scale(acc, chips)`` is the predicted MFU (no network term when chips are unknown).
    Inference: ``perf.serving_point`` at the run's batch per replica (or, for saturated runs, the
    largest batch that fits memory with vLLM's default 10% headroom, capped by the engine's
    ``max_batch``), divided per chip."""
    from . import perf

    p = run_profile(row)
    acc = perf.accelerator_record(row["accelerator"]) if acc is None else acc
    tp = int(_n(row.get("tp"), 1))
    if row["kind"] == "training":
        chips = _n(row.get("chips"))
        scale = perf.network_scale(acc, chips, perf.parameter("network_loss_per_doubling", acc["family"])) if chips else 1.0
        return perf.compute_efficiency(acc, row["precision"], "train", p, tp=tp) * scale
    chips = int(_n(row.get("chips"), tp))
    replicas = max(chips // tp, 1)
    wprec = _n(row.get("weight_precision"), row["precision"])
    kvprec = _n(row.get("kv_precision"), "bf16")
    I, O = _n(row.get("input_tokens")), _n(row.get("output_tokens"))
    if _n(row.get("batch")) is not None:
        b = float(row["batch"]) / replicas
    else:
        b = float(perf.max_batch_fit(p, acc, tp, (I or 0) + (O or 0), wprec, kvprec, CALIBRATION_HEADROOM))
        if _n(row.get("max_batch")) is not None:
            b = min(b, float(row["max_batch"]) / replicas)
        b = max(b, 1.0)
    pt = perf.serving_point(p, acc, b, I, O, tp, row["precision"], wprec, kvprec, mem_eff=mem_eff, latency_s=latency_s,
                            ceiling=ceiling, static=row.get("batching") == "static")
    metric = row["metric"]
    if metric == "output_tokens_per_s_per_chip":
        return pt["output_tokens_per_s"] / tp
    if metric == "tpot_ms":
        return pt["tpot_s"] * 1e3
    if metric == "ttft_ms":
        return pt["ttft_s"] * 1e3
    raise InputError(f"reference_runs.csv: run {row['run']!r}: metric: unknown {metric!r}")


# --- the fit ---------------------------------------------------------------------------------------

H0_GRID = np.arange(0.0, 2001.0, 25.0)
BETA_GRID = np.array([0.0, 0.5, 1.0])
F_GRID = np.arange(0.0, 1.0001, 0.02)
GAMMA_GRID = np.arange(0.0, 0.1001, 0.005)
GAMMA_MIN_SCALES = 3
MEM_GRID = np.arange(0.10, 1.0001, 0.02)
LAT_GRID = np.arange(0.0, 300e-6 + 1e-12, 10e-6)
CEIL_GRID = np.arange(0.05, 1.0001, 0.025)


def _training_features(df: pd.DataFrame) -> pd.DataFrame:
    from . import perf

    rows = []
    for _, r in df.iterrows():
        p = run_profile(r)
        acc = perf.accelerator_record(r["accelerator"])
        bf16 = perf._peak(acc, "bf16")
        chips = _n(r.get("chips"))
        rows.append({"run": r["run"], "family": acc["family"], "platform": acc["platform"], "hidden": p.hidden,
                     "tp": float(_n(r.get("tp"), 1)), "ratio": perf._peak(acc, r["precision"]) / bf16,
                     "peak_bf16": bf16, "dp_bw": perf.dp_bytes_per_s(acc),
                     "doublings": float(np.log2(max(float(chips) / float(acc["fast_domain_chips"] or 1), 1.0)))
                     if chips is not None else 0.0,
                     "moe_x": (p.params_total / p.params_active - 1.0) if p.is_moe else 0.0,
                     "obs": float(r["value"]), "split": r["split"]})
    return pd.DataFrame(rows)


def fit_training(runs: pd.DataFrame) -> tuple[dict, dict]:
    """Fit the training efficiency on the ``split == "fit"`` training runs.

    Grid search over the pooled parameters (width scale h0, TP exponent β, FP8 matmul fraction f,
    network loss per doubling γ); for each point the family ceilings are the medians of observed /
    (other factors) over the family's dense runs (the L1 optimum in log space), and the point with the
    smallest sum of |log(observed/predicted)| wins. Then each MoE run is solved exactly for the MoE
    bytes-per-FLOP constant and the platform takes the median (pooled median where a platform has no
    MoE run). Returns (parameters, provenance: parameter key -> run ids)."""
    from . import perf

    tr = _training_features(runs[(runs["kind"] == "training") & (runs["split"] == "fit")])
    dense = tr[tr["moe_x"] == 0]
    logobs = np.log(dense["obs"].to_numpy())
    fam = dense["family"].to_numpy()
    fams = sorted(set(fam))
    ratio = dense["ratio"].to_numpy()
    dbl = dense["doublings"].to_numpy()
    chips_seen = runs[(runs["kind"] == "training") & (runs["split"] == "fit")].assign(family=tr["family"].to_numpy())
    # a family gets its own network loss only when its runs span at least GAMMA_MIN_SCALES chip counts
    own_gamma = {fm: chips_seen.loc[chips_seen["family"] == fm, "chips"].dropna().nunique() >= GAMMA_MIN_SCALES
                 for fm in fams}
    log1p_g = np.log1p(GAMMA_GRID[:, None] * dbl[None, :])  # (G, runs)
    best = None
    for beta in BETA_GRID:
        h_eff = dense["hidden"].to_numpy() / dense["tp"].to_numpy() ** beta
        w = np.log(perf.width_factor(h_eff[None, :], H0_GRID[:, None]))  # (H, runs)
        for f in F_GRID:
            lp = np.log(perf.low_precision_speedup(ratio, f) / ratio)
            base0 = logobs[None, :] - w - lp[None, :]  # (H, runs)
            loss = np.zeros(len(H0_GRID))
            choice = {}
            for fm in fams:
                m = fam == fm
                gi = np.arange(len(GAMMA_GRID)) if own_gamma[fm] else np.array([0])
                b = base0[:, m][None, :, :] + log1p_g[gi][:, None, :][:, :, m]  # (g, H, n)
                med = np.median(b, axis=2, keepdims=True)
                l_f = np.abs(b - med).sum(axis=2)  # (g, H)
                k = np.argmin(l_f, axis=0)  # best gamma per h0
                loss += l_f[k, np.arange(len(H0_GRID))]
                choice[fm] = gi[k]
            i = int(np.argmin(loss))
            if best is None or loss[i] < best[0] - 1e-9:
                best = (loss[i], H0_GRID[i], beta, f, {fm: float(GAMMA_GRID[choice[fm][i]]) for fm in fams})
    _, h0, beta, f, gammas = best
    # families without a scaling series take the pooled network loss (median of the fitted families)
    own = [gammas[fm] for fm in fams if own_gamma[fm]]
    g = float(np.median(own)) if own else 0.0
    runs_dense = list(dense["run"])
    params = {("width_scale_hidden", "pooled"): float(h0), ("width_tp_exponent", "pooled"): float(beta),
              ("fp8_matmul_time_fraction", "pooled"): float(f), ("network_loss_per_doubling", "pooled"): g}
    prov = {k: runs_dense for k in params}
    prov[("network_loss_per_doubling", "pooled")] = list(dense.loc[dense["family"].map(own_gamma), "run"])
    w = perf.width_factor(dense["hidden"].to_numpy() / dense["tp"].to_numpy() ** beta, h0)
    lp = perf.low_precision_speedup(ratio, f) / ratio
    ceilings = {}
    for fm in fams:
        m = fam == fm
        gf = gammas[fm] if own_gamma[fm] else g
        ceilings[fm] = float(np.exp(np.median(logobs[m] - np.log(w[m] * lp[m]) + np.log1p(gf * dbl[m]))))
        params[("matmul_ceiling", fm)] = ceilings[fm]
        prov[("matmul_ceiling", fm)] = list(dense.loc[m, "run"])
        if own_gamma[fm]:
            params[("network_loss_per_doubling", fm)] = gammas[fm]
            prov[("network_loss_per_doubling", fm)] = prov[("matmul_ceiling", fm)]
    params[("matmul_ceiling", "pooled")] = float(np.median(list(ceilings.values())))
    prov[("matmul_ceiling", "pooled")] = runs_dense
    gam = {fm: params.get(("network_loss_per_doubling", fm), g) for fm in fams}
    # mixture of experts: obs = dense / (1 + c·x·rate/bw)  =>  c = (dense/obs − 1)·bw / (x·rate)
    cs = {}
    for _, r in tr[tr["moe_x"] > 0].iterrows():
        ceil = params.get(("matmul_ceiling", r["family"]), params[("matmul_ceiling", "pooled")])
        sp = perf.low_precision_speedup(r["ratio"], f)
        eff = ceil * perf.width_factor(r["hidden"] / r["tp"] ** beta, h0)
        dense_pred = eff * sp / r["ratio"] / (1.0 + gam.get(r["family"], g) * r["doublings"])
        rate = r["peak_bf16"] * sp * eff
        c = max((dense_pred / r["obs"] - 1.0) * r["dp_bw"] / (r["moe_x"] * rate), 0.0)
        cs.setdefault(r["platform"], []).append((c, r["run"]))
    allc = [c for v in cs.values() for c in v]
    if allc:
        params[("moe_bytes_per_flop", "pooled")] = float(np.median([c for c, _ in allc]))
        prov[("moe_bytes_per_flop", "pooled")] = [r for _, r in allc]
        for plat, v in cs.items():
            params[("moe_bytes_per_flop", plat)] = float(np.median([c for c, _ in v]))
            prov[("moe_bytes_per_flop", plat)] = [r for _, r in v]
    return params, prov


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
    from . import perf

    inf = runs[(runs["kind"] == "inference") & (runs["split"] == "fit")]
    fams = {}
    for _, r in inf.iterrows():
        fams.setdefault(perf.accelerator_record(r["accelerator"])["family"], []).append(r)
    keys = ("decode_memory_efficiency", "tp_collective_latency_s", "inference_matmul_ceiling")
    grids = {"decode_memory_efficiency": MEM_GRID, "tp_collective_latency_s": LAT_GRID, "inference_matmul_ceiling": CEIL_GRID}
    table = dict(train_params)
    for k in keys:  # placeholders: every prediction below passes its own values
        table[(k, "pooled")] = 1.0

    def loss_grid(rows, fixed):
        axes = [np.array([fixed[k]]) if k in fixed else grids[k] for k in keys]
        m, l, c = np.meshgrid(*axes, indexing="ij")
        with perf.using_parameters(table):
            loss = sum(np.abs(np.log(predict_run(r, mem_eff=m, latency_s=l, ceiling=c) / r["value"])) for r in rows)
        return loss, axes

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
    return params, prov


def _predict_all(runs: pd.DataFrame, table: dict) -> np.ndarray:
    from . import perf

    with perf.using_parameters(table):
        return np.array([float(predict_run(r)) for _, r in runs.iterrows()])


def _pooled_table(table: dict) -> dict:
    """The same parameters with every family-specific value removed (family-out predictions)."""
    from . import perf

    fams = set(perf._acc_records()[a]["family"] for a in perf._acc_records())
    return {k: v for k, v in table.items() if k[1] not in fams}


BAND_MIN_RUNS = 5


def fit(runs: pd.DataFrame | None = None) -> tuple[dict, dict]:
    """Fit every efficiency parameter and the P10/P90 bands. Returns (parameters, provenance)."""
    runs = reference_runs() if runs is None else runs
    params, prov = fit_training(runs)
    ip, iprov = fit_inference(runs, params)
    params.update(ip)
    prov.update(iprov)
    # bands: observed/predicted over every used run (fit + holdout)
    pred = _predict_all(runs, params)
    fam_out = _predict_all(runs, _pooled_table(params))
    ratio = runs["value"].to_numpy() / pred
    ratio_out = runs["value"].to_numpy() / fam_out
    for metric in sorted(set(runs["metric"])):
        m = (runs["metric"] == metric).to_numpy()
        for scope, sel, r in [("pooled", m, ratio), ("uncalibrated", m, ratio_out)]:
            params[(f"band_p10_{metric}", scope)] = float(np.quantile(r[sel], 0.1))
            params[(f"band_p90_{metric}", scope)] = float(np.quantile(r[sel], 0.9))
            prov[(f"band_p10_{metric}", scope)] = prov[(f"band_p90_{metric}", scope)] = list(runs.loc[sel, "run"])
        for fam in sorted(set(runs.loc[m, "family"])):
            sel = m & (runs["family"] == fam).to_numpy()
            if sel.sum() >= BAND_MIN_RUNS:
                params[(f"band_p10_{metric}", fam)] = float(np.quantile(ratio[sel], 0.1))
                params[(f"band_p90_{metric}", fam)] = float(np.quantile(ratio[sel], 0.9))
                prov[(f"band_p10_{metric}", fam)] = prov[(f"band_p90_{metric}", fam)] = list(runs.loc[sel, "run"])
    return params, prov


# --- parameters file -------------------------------------------------------------------------------

PARAM_DOCS = {
    "matmul_ceiling": ("fraction of dense BF16 peak", "median over the family's dense training runs of MFU / "
                       "(width · low-precision · network factors); pooled = median over families"),
    "inference_matmul_ceiling": ("fraction of dense BF16 peak", "grid search on the family's inference runs "
                                 "(prefill and compute-bound decode); pooled = median of families that constrain it"),
    "width_scale_hidden": ("hidden units", "grid search (L1 of log error) over all dense training runs"),
    "width_tp_exponent": ("exponent", "grid search (L1 of log error) over all dense training runs"),
    "fp8_matmul_time_fraction": ("fraction of a BF16 step", "grid search over all dense training runs (the FP8 runs "
                                 "identify it)"),
    "network_loss_per_doubling": ("per doubling of chips beyond the fast domain", "grid search per family whose runs "
                                  f"span >= {GAMMA_MIN_SCALES} chip counts; pooled = median of those families"),
    "moe_bytes_per_flop": ("bytes per FLOP", "each MoE training run solved exactly, median per platform; pooled = "
                           "median of all"),
    "decode_memory_efficiency": ("fraction of HBM bandwidth", "grid search on the family's inference runs; pooled = "
                                 "median of families that constrain it"),
    "tp_collective_latency_s": ("s per all-reduce", "grid search on the family's tensor-parallel inference runs; "
                                "pooled = median of families that constrain it"),
}


def _doc(name: str) -> tuple[str, str]:
    if name.startswith("band_p"):
        return ("observed / predicted", f"{'10th' if 'p10' in name else '90th'} percentile over every used run of the "
                f"metric (family with >= {BAND_MIN_RUNS} runs, else pooled; 'uncalibrated' = predictions from pooled "
                f"parameters)")
    return PARAM_DOCS[name]


def parameters_frame(params: dict, prov: dict, as_of: str | None = None) -> pd.DataFrame:
    """The fitted parameters as the rows of ``data/efficiency.csv`` (schema ``catalog.SCHEMAS['efficiency']``)."""
    as_of = as_of or pd.Timestamp.today().date().isoformat()
    rows = []
    for (name, scope), v in sorted(params.items()):
        unit, method = _doc(name)
        runs = prov.get((name, scope), [])
        rows.append({"parameter": name, "scope": scope, "value": float(f"{v:.6g}"), "unit": unit, "n_runs": len(runs),
                     "runs": ";".join(runs), "method": method,
                     "source": "fitted by workbook/calibrate.py on data/reference_runs.csv (split = fit; bands: all used runs)",
                     "as_of": as_of})
    return pd.DataFrame(rows, columns=list(catalog.SCHEMAS["efficiency"]))


def write_parameters(path=None) -> pd.DataFrame:
    """Refit and write ``data/efficiency.csv``; clears the caches so the new values are used."""
    from . import perf

    params, prov = fit()
    df = parameters_frame(params, prov)
    df.to_csv(path or catalog.DATA_DIR / "efficiency.csv", index=False)
    catalog.load.cache_clear()
    perf._param_file.cache_clear()
    return df


# --- the calibration table ---------------------------------------------------------------------------

KIND_OF_METRIC = {"mfu": "training", "output_tokens_per_s_per_chip": "inference throughput",
                  "tpot_ms": "inference TPOT", "ttft_ms": "inference TTFT"}


def calibration_table(runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per used run: published figure, the same in the one definition (``value``), the model's
    ``predicted`` figure with data/efficiency.csv, and ``error`` = predicted / value − 1."""
    runs = reference_runs() if runs is None else runs
    pred = np.array([float(predict_run(r)) for _, r in runs.iterrows()])
    out = runs[["run", "kind", "family", "accelerator", "model", "chips", "precision", "published_value",
                "published_metric", "metric", "value", "split"]].copy()
    out["model"] = out["model"].fillna("(inline shape)")
    out["predicted"] = pred
    out["error"] = pred / out["value"] - 1.0
    out["kind"] = out["metric"].map(KIND_OF_METRIC)
    return out


def error_summary(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Median absolute error per kind and accelerator family: on every used run and on the held-out
    runs alone (``n``, ``median_abs_error``, ``n_holdout``, ``median_abs_error_holdout``)."""
    t = calibration_table() if table is None else table
    t = t.assign(abs_error=t["error"].abs())
    rows = []
    for (kind, fam), g in t.groupby(["kind", "family"], sort=True):
        h = g[g["split"] == "holdout"]
        rows.append({"kind": kind, "family": fam, "n": len(g), "median_abs_error": g["abs_error"].median(),
                     "n_holdout": len(h), "median_abs_error_holdout": h["abs_error"].median() if len(h) else np.nan})
    for kind, g in t.groupby("kind", sort=True):
        h = g[g["split"] == "holdout"]
        rows.append({"kind": kind, "family": "(all)", "n": len(g), "median_abs_error": g["abs_error"].median(),
                     "n_holdout": len(h), "median_abs_error_holdout": h["abs_error"].median() if len(h) else np.nan})
    order = list(KIND_OF_METRIC.values())
    df = pd.DataFrame(rows)
    df["_k"] = df["kind"].map(order.index)
    return df.sort_values(["_k", "family"]).drop(columns="_k").reset_index(drop=True)


def summary_markdown(summary: pd.DataFrame | None = None) -> str:
    """The per-kind, per-family error table as GitHub markdown (for the README)."""
    s = error_summary() if summary is None else summary
    lines = ["| kind | family | runs | median abs. error | held-out runs | median abs. error (held out) |",
             "|---|---|---:|---:|---:|---:|"]
    for _, r in s.iterrows():
        ho = "-" if pd.isna(r["median_abs_error_holdout"]) else f"{r['median_abs_error_holdout']:.0%}"
        lines.append(f"| {r['kind']} | {r['family']} | {r['n']} | {r['median_abs_error']:.0%} | {r['n_holdout']} | {ho} |")
    return "\n".join(lines)


# --- command line -------------------------------------------------------------------------------------

def add_arguments(p) -> None:
    p.add_argument("--write", action="store_true", help="refit the parameters and write data/efficiency.csv first")
    p.add_argument("--markdown", action="store_true", help="print only the summary as a markdown table")
    p.add_argument("--csv", action="store_true", help="print the per-run table as CSV")
    p.add_argument("--params", action="store_true", help="print the fitted parameters (data/efficiency.csv)")


def run(args) -> int:
    import sys

    if args.write:
        df = write_parameters()
        print(f"wrote data/efficiency.csv ({len(df)} parameters)", file=sys.stderr)
    if args.params:
        df = catalog.load("efficiency")[["parameter", "scope", "value", "unit", "n_runs"]]
        with pd.option_context("display.max_rows", None, "display.width", 200):
            print(df.to_string(index=False))
        return 0
    table = calibration_table()
    summary = error_summary(table)
    if args.markdown:
        print(summary_markdown(summary))
        return 0
    if args.csv:
        table.to_csv(sys.stdout, index=False)
        return 0
    view = table[["run", "family", "metric", "published_value", "published_metric", "value", "predicted", "error", "split"]].copy()
    view["error"] = (view["error"] * 100).round(1).astype(str) + "%"
    for c in ("value", "predicted"):
        view[c] = view[c].map(lambda v: f"{v:.4g}")
    view["published_metric"] = view["published_metric"].str.slice(0, 34)
    with pd.option_context("display.max_rows", None, "display.width", 250, "display.max_colwidth", 60):
        print(view.to_string(index=False))
        print()
        s = summary.copy()
        for c in ("median_abs_error", "median_abs_error_holdout"):
            s[c] = s[c].map(lambda v: "-" if pd.isna(v) else f"{v:.1%}")
        print(s.to_string(index=False))
    return 0
