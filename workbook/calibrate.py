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

The fit (``fit``) is deliberately small: for training a matmul ceiling per accelerator family, one
pooled width constant κ (the element-wise penalty h / (h + κ · ridge point), which also sets how
much FP8 gains) and a mixture-of-experts constant per platform; for inference an HBM-bandwidth
efficiency, a matmul ceiling and a per-collective latency per family. Training predictions are the
multi-chip model's (``workbook.scaling`` through ``perf.training_config``, as in ``estimate``), so
the training parameters are fitted at a fixed point where that model reproduces the published MFU
(``fit_training``). Family values are medians (L1 in log space), pooled values come from a grid
search: see ``perf`` for the formulas. The per-doubling network loss of the earlier model is gone
where the communication model explains the runs; it is fitted (as ``workbook.scaling``'s
synchronisation term) only for a family whose runs hold one model and code at three or more chip
counts beyond one fast domain, and the data leave one only for TPU v5e's MaxText multi-slice runs
(the H100 GPT-3 175B series fits 0).
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from . import catalog, comm, paths
from .errors import InputError
from .profile import Profile, model_profile, profile_from_architecture, train_flops_per_token
from .scenario import Architecture, Parallelism, Workload

RUNS_FILE = "reference_runs"

# --- reading the runs ------------------------------------------------------------------------------


def _key_values(text: str, where: str):
    """``"a=1;b=2"`` as (key, value) string pairs; InputError naming ``where`` on a malformed part."""
    for part in str(text).split(";"):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise InputError(f"{where}: expected key=value pairs separated by ';', got {part!r}")
        k, v = (x.strip() for x in part.split("=", 1))
        yield k, v


def parse_architecture(text: str, where: str = "architecture") -> Architecture:
    """An inline shape ``"layers=48;hidden=6144;..."`` (keys of ``scenario.Architecture``)."""
    data = {}
    for k, v in _key_values(text, where):
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


def parse_parallelism(text, where: str = "parallelism") -> tuple[Parallelism | None, dict]:
    """A published layout ``"tp=8;pp=4;vpp=20;micro_batch=1;recompute=full"``: the pins of
    ``cluster.parallelism`` (tp, pp, dp, ep, cp, zero, micro_batch, recompute) and the grid limits
    that are not scenario keys (``vpp``: interleaved stages per chip)."""
    if not isinstance(text, str) or not text.strip():
        return None, {}
    pins, limits = {}, {}
    for k, v in _key_values(text, where):
        if k == "vpp":
            limits["vpp"] = int(v)
        elif k in Parallelism.model_fields:
            pins[k] = v if k == "recompute" else int(v)
        else:
            raise InputError(f"{where}: unknown key {k!r}{catalog._suggest(k, list(Parallelism.model_fields) + ['vpp'])}")
    try:
        return (Parallelism.model_validate(pins) if pins else None), limits
    except Exception as e:  # pydantic ValidationError -> one line
        raise InputError(f"{where}: {e}".splitlines()[0]) from None


def run_chips(row) -> int:
    """Chips of a training run; when unpublished (Llama 2 model card), one sequence of the published
    global batch per chip (1,024 A100s for Llama 2's 4M-token batches of 4,096-token sequences):
    the package's default layout, an assumption stated in data/README.md."""
    chips = _n(row.get("chips"))
    if chips is None:
        chips = _n(row.get("global_batch_seqs"))
    if chips is None:
        raise InputError(f"reference_runs.csv: run {row.get('run')!r}: chips: expected the chip count or "
                         f"global_batch_seqs of a training run")
    return int(chips)


def run_workload(row) -> Workload:
    """The training workload of a reference run: its model or inline shape, precision, sequence
    length and global batch (``global_batch_seqs``; unpublished: one sequence per chip)."""
    seqs = int(_n(row.get("global_batch_seqs"), run_chips(row)))
    seq = int(row["seq_len"])
    shape = {"model": row["model"]} if isinstance(row.get("model"), str) and row["model"] else {
        "architecture": parse_architecture(row["architecture"], f"reference_runs.csv: run {row.get('run')}: architecture")}
    return Workload(task="training", precision=row["precision"], seq_len=seq, global_batch_tokens=float(seqs * seq),
                    tokens=1e12, **shape)


def training_prediction(row) -> dict:
    """The multi-chip model's best configuration for a training run (``perf.training_config``, the
    code path of ``estimate``), with the run's published layout pinned (``parallelism``) and the
    rest searched. Raises InputError when no layout fits (the run should then be excluded)."""
    from . import perf

    acc = perf.accelerator_record(row["accelerator"])
    par, limits = parse_parallelism(row.get("parallelism"), f"reference_runs.csv: run {row.get('run')}: parallelism")
    cfg = perf.training_config(run_profile(row), acc, run_chips(row), run_workload(row), par, CALIBRATION_HEADROOM,
                               **limits)
    if cfg is None:
        raise InputError(f"reference_runs.csv: run {row.get('run')!r}: no parallel layout fits memory")
    return cfg


def predict_run(row, acc: dict | None = None, mem_eff=None, latency_s=None, ceiling=None):
    """The model's figure for one run, in the run's ``metric`` (array when ``mem_eff``/``latency_s`` are
    arrays: the fit evaluates a grid at once).

    Training: the MFU of the best configuration of ``workbook.scaling`` (``training_prediction``:
    compute at ``perf.compute_efficiency`` plus communication, bubbles, recomputation and optimizer
    time), the same code as ``estimate``. Inference: ``perf.serving_point`` at the run's batch per
    replica (or, for saturated runs, the largest batch that fits memory with vLLM's default 10%
    headroom, capped by the engine's ``max_batch``), divided per chip."""
    from . import perf

    if row["kind"] == "training":
        return training_prediction(row)["mfu"]
    p = run_profile(row)
    acc = perf.accelerator_record(row["accelerator"]) if acc is None else acc
    tp = int(_n(row.get("tp"), 1))
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

KAPPA_GRID = np.arange(0.0, 12.0001, 0.25)
MEM_GRID = np.arange(0.10, 1.0001, 0.02)
LAT_GRID = np.arange(0.0, 300e-6 + 1e-12, 10e-6)
CEIL_GRID = np.arange(0.05, 1.0001, 0.025)
# the fixed point of the training fit: start values (any reasonable values reach the same point) and
# the stopping rule
FIT_START = {("width_hidden_per_ridge", "pooled"): 4.0, ("matmul_ceiling", "pooled"): 0.6,
             ("moe_bytes_per_flop", "pooled"): 0.0}
FIT_PASSES = 6
FIT_TOLERANCE = 0.005
# the synchronisation loss per doubling of fast domains (``perf.network_loss``): fitted only for a
# family with a controlled series, one model and framework at >= GAMMA_MIN_SCALES chip counts beyond
# one fast domain
GAMMA_GRID = np.arange(0.0, 0.1001, 0.0025)
GAMMA_MIN_SCALES = 3


def _training_features(df: pd.DataFrame, table: dict) -> pd.DataFrame:
    """Per training run, under the parameters ``table``: the best configuration's MFU and the matmul
    efficiency it ran at; ``share`` = MFU / efficiency is the fraction of the step the scaling model
    gives to matmul work at that efficiency (compute over step, in model FLOPs)."""
    from . import perf

    rows = []
    with perf.using_parameters(table):
        for _, r in df.iterrows():
            p = run_profile(r)
            acc = perf.accelerator_record(r["accelerator"])
            cfg = training_prediction(r)
            peak = perf._peak(acc, r["precision"])
            chips = run_chips(r)
            domain = comm.topology(pd.Series(acc), chips).domain_chips
            core = cfg["step_time_s"] - cfg["sync_s"]  # the step without the synchronisation term
            rows.append({"run": r["run"], "family": acc["family"], "platform": acc["platform"], "hidden": p.hidden,
                         "ridge": peak / float(acc["memory_bytes_per_s"]), "peak": peak, "dp_bw": perf.dp_bytes_per_s(acc),
                         "moe_x": (p.params_total / p.params_active - 1.0) if p.is_moe else 0.0,
                         "chips": chips, "doublings": float(np.log2(max(chips / max(domain, 1), 1.0))),
                         "series": f"{_n(r.get('model'), '')}|{_n(r.get('architecture'), '')}|{_n(r.get('framework'), '')}",
                         "mfu": cfg["mfu"], "share": cfg["mfu"] * cfg["step_time_s"] / core / cfg["efficiency"],
                         "obs": float(r["value"]), "split": r["split"]})
    return pd.DataFrame(rows)


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
    from . import perf

    target = f["obs"] / f["share"]
    dense = f[f["moe_x"] == 0]
    td = np.log(target[dense.index].to_numpy())
    fam = dense["family"].to_numpy()
    fams = sorted(set(fam))
    dbl = dense["doublings"].to_numpy()
    own_gamma = {fm: _has_series(dense[fam == fm]) for fm in fams}
    log1p_g = np.log1p(GAMMA_GRID[:, None] * dbl[None, :])  # (gamma, runs)
    best = None
    for k in KAPPA_GRID:
        lw = np.log(perf.width_factor(dense["hidden"].to_numpy(), k * dense["ridge"].to_numpy()))
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
    w = perf.width_factor(dense["hidden"].to_numpy(), kappa * dense["ridge"].to_numpy())
    ceilings = {}
    for fm in fams:
        m = fam == fm
        ceilings[fm] = float(np.exp(np.median(td[m] - np.log(w[m]) + np.log1p(gammas[fm] * dbl[m]))))
        params[("matmul_ceiling", fm)] = ceilings[fm]
        prov[("matmul_ceiling", fm)] = list(dense.loc[m, "run"])
        if own_gamma[fm]:
            params[("network_loss_per_doubling", fm)] = gammas[fm]
            prov[("network_loss_per_doubling", fm)] = list(dense.loc[m, "run"])
    params[("matmul_ceiling", "pooled")] = float(np.median(list(ceilings.values())))
    prov[("matmul_ceiling", "pooled")] = runs_dense
    # families without runs take the median of their kind (a GPU's matmuls behave like other GPUs'
    # more than like a TPU's systolic arrays)
    kinds = {r["family"]: r["kind"] for r in perf._acc_records().values()}
    for kind in sorted({kinds[fm] for fm in fams}):
        members = [fm for fm in fams if kinds[fm] == kind]
        params[("matmul_ceiling", kind)] = float(np.median([ceilings[fm] for fm in members]))
        prov[("matmul_ceiling", kind)] = [r for fm in members for r in prov[("matmul_ceiling", fm)]]
    # mixture of experts: target = dense / (1 + c·x·peak·dense/bw)  =>  c = (dense/target − 1)·bw / (x·peak·dense)
    cs = {}
    for i, r in f[f["moe_x"] > 0].iterrows():
        ceil = params.get(("matmul_ceiling", r["family"]), params[("matmul_ceiling", "pooled")])
        g = params.get(("network_loss_per_doubling", r["family"]), 0.0)
        dense_eff = ceil * float(perf.width_factor(r["hidden"], kappa * r["ridge"])) / (1.0 + g * r["doublings"])
        c = max((dense_eff / target[i] - 1.0) * r["dp_bw"] / (r["moe_x"] * r["peak"] * dense_eff), 0.0)
        cs.setdefault(r["platform"], []).append((c, r["run"]))
    allc = [c for v in cs.values() for c in v]
    params[("moe_bytes_per_flop", "pooled")] = float(np.median([c for c, _ in allc])) if allc else 0.0
    prov[("moe_bytes_per_flop", "pooled")] = [r for _, r in allc]
    for plat, v in cs.items():
        params[("moe_bytes_per_flop", plat)] = float(np.median([c for c, _ in v]))
        prov[("moe_bytes_per_flop", plat)] = [r for _, r in v]
    return params, prov


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
    tr = runs[(runs["kind"] == "training") & (runs["split"] == "fit")]
    table = dict(FIT_START)
    params, prov = table, {}
    for _ in range(FIT_PASSES):
        params, prov = _fit_on_shares(_training_features(tr, table))
        if _close(params, table, FIT_TOLERANCE):
            break
        table = params
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
    "matmul_ceiling": ("fraction of the dense peak of the compute precision",
                       "fixed point with the multi-chip model: median over the family's dense training runs of "
                       "(MFU / scaling-model compute share) / width; gpu/tpu/asic = median over the calibrated "
                       "families of that kind (used by families without runs); pooled = median over families"),
    "inference_matmul_ceiling": ("fraction of the dense peak of the compute precision",
                                 "grid search on the family's inference runs (prefill and compute-bound decode); "
                                 "pooled = median of families that constrain it"),
    "width_hidden_per_ridge": ("hidden units per FLOP/byte of ridge point",
                               "grid search (L1 of log error) over all dense training runs, at the fixed point"),
    "moe_bytes_per_flop": ("bytes per FLOP", "each MoE training run solved exactly at the fixed point, median per "
                           "platform; pooled = median of all"),
    "network_loss_per_doubling": ("per doubling of fast domains (step-time fraction)",
                                  f"grid search at the fixed point, only for a family whose fit runs hold one model "
                                  f"and framework at >= {GAMMA_MIN_SCALES} chip counts beyond one fast domain; none "
                                  f"(0) for every other family"),
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
    df.to_csv(path or paths.DATA_DIR / "efficiency.csv", index=False)
    catalog.load.cache_clear()
    perf._param_file.cache_clear()
    return df


# --- the calibration table ---------------------------------------------------------------------------

KIND_OF_METRIC = {"mfu": "training", "output_tokens_per_s_per_chip": "inference throughput",
                  "tpot_ms": "inference TPOT", "ttft_ms": "inference TTFT"}


def _table_cache_key() -> str:
    """Content hash of what the table of the shipped runs depends on: every data CSV (runs, catalogs,
    data/efficiency.csv), the package's Python source (the model) and the pandas/numpy versions."""
    import hashlib
    from pathlib import Path

    h = hashlib.sha256(f"pandas {pd.__version__} numpy {np.__version__}\n".encode())
    pkg = Path(__file__).resolve().parent
    for f in sorted(paths.DATA_DIR.glob("*.csv")) + sorted(pkg.rglob("*.py")):
        h.update(f"{f.name} {hashlib.sha256(f.read_bytes()).hexdigest()}\n".encode())
    return h.hexdigest()


_TABLES: dict[str, pd.DataFrame] = {}


def calibration_table(runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per used run: published figure, the same in the one definition (``value``), the model's
    ``predicted`` figure with data/efficiency.csv, and ``error`` = predicted / value − 1.

    The table of the shipped runs (``runs`` None, about 0.6 s) is cached by content: in memory and as
    a pickle in ``$WORKBOOK_CACHE_DIR`` (default ``~/.cache/workbook``), keyed by ``_table_cache_key``
    (any change to a data file or to the package source gives a new key). Callers get a copy."""
    if runs is not None:
        return _calibration_table(runs)
    import os
    from pathlib import Path

    key = _table_cache_key()
    if key not in _TABLES:
        folder = Path(os.environ.get("WORKBOOK_CACHE_DIR") or Path.home() / ".cache" / "workbook")
        path = folder / f"calibration-{key[:32]}.pkl"
        try:
            _TABLES[key] = pd.read_pickle(path)
        except Exception:  # missing, unreadable or from another pandas: compute it
            _TABLES[key] = _calibration_table(reference_runs())
            try:
                folder.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.{os.getpid()}")
                _TABLES[key].to_pickle(tmp)
                os.replace(tmp, path)
            except OSError:  # read-only home: the in-memory cache still holds
                pass
    return _TABLES[key].copy()


def _calibration_table(runs: pd.DataFrame) -> pd.DataFrame:
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
