"""The layout search over several chip counts at once (``search.best_configs``: one grid over layouts x
counts) gives each count exactly ``best_config``'s answer, and the planner's prefetch of two counts
(``estimate.prefetch_training_configs``) leaves every plan as it was; ``search.configurations`` builds
its product of micro-batch, interleaving, recomputation and ZeRO as indices into the base rows: the
same grid, row for row, as expanding the arrays step by step (the reference below, the code it replaced)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arch_strategies import same_arrays
from arch_strategies import small_models as _small_models
from workbook import catalog
from workbook.errors import InputError
from workbook.model import estimate, search
from workbook.model import profile as prof
from workbook.model.efficiency import Efficiency
from workbook.model.profile import Profile
from workbook.model.search import (INTERLEAVE, MAX_CP, MICRO_BATCHES, ZERO_STAGES, _check_transformer, _divisors,
                                   _global_batch_seqs, _pin_error, _recompute_options)
from workbook.scenario import Parallelism, Workload, load_scenario

HALF = Efficiency.fixed(0.5)


def _train(model=None, seq_len=4096, batch_tokens=4e6, architecture=None, **kw):
    return Workload(task="training", model=model, architecture=architecture, tokens=1e12, seq_len=seq_len,
                    global_batch_tokens=batch_tokens, **kw)


def _equal(a, b) -> None:
    """Two answers of the search (dict, None or an exception) are the same, every value to the bit."""
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert type(a) is type(b) and str(a) == str(b)
        return
    assert repr(a) == repr(b)  # floats' repr is exact: equal text, equal bits


def _singles(p, a, counts, w, pin, eff, **kw) -> list:
    out = []
    for n in counts:
        try:
            out.append(search.best_config(p, a, n, w, pin, eff, **kw))
        except InputError as e:
            out.append(e)
    return out


@pytest.mark.parametrize("model,acc,counts,seq,pin", [
    ("llama-3.1-70b", "H100-SXM5-80GB", (1024, 1016, 512, 8, 2048), 8192, None),
    ("llama-3.1-70b", "A100-SXM4-80GB", (384, 376, 392), 4096, None),
    ("mixtral-8x7b", "H100-SXM5-80GB", (64, 56, 128), 4096, None),
    ("llama-2-7b", "TPU-v5e", (256, 248, 64, 512), 4096, None),  # a torus: counts on different slices
    ("llama-3.1-405b", "MI300X", (512, 504), 8192, None),
    ("llama-3.1-405b", "H100-SXM5-80GB", (2048, 2040, 1024, 12), 8192, Parallelism(tp=8)),  # 2040, 12: tp8 pp.. fails
])
@pytest.mark.parametrize("fitted", [False, True])
@pytest.mark.parametrize("first_rows", [4, 256])
def test_batched_counts_give_each_count_its_own_answer(monkeypatch, model, acc, counts, seq, pin, fitted, first_rows):
    monkeypatch.setattr(search, "FIRST_ROWS", first_rows)
    p, a, w = prof.model_profile(model), catalog.accelerator(acc), _train(model, seq, 16e6)
    eff = Efficiency.from_csv() if fitted else HALF
    limits = search.practical_limits(a, seq_len=seq, experts=p.experts)
    for kw in (limits, {}):
        got = search.best_configs(p, a, counts, w, pin, eff, **kw)
        assert len(got) == len(counts)
        for g, ref in zip(got, _singles(p, a, counts, w, pin, eff, **kw)):
            _equal(g, ref)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(arch=_small_models(), counts=st.lists(st.sampled_from([8, 16, 24, 32, 96, 128, 136, 512]), min_size=2, max_size=4),
       seq=st.sampled_from([2048, 8192]),
       acc=st.sampled_from(["A100-SXM4-40GB", "H100-SXM5-80GB", "MI300X", "TPU-v5p", "TPU-v5e", "Trainium2"]),
       first_rows=st.sampled_from([1, 4, 64]), sync_loss=st.sampled_from([None, 0.0, 0.04, -0.01]))
def test_batched_counts_on_random_models(monkeypatch, arch, counts, seq, acc, first_rows, sync_loss):
    monkeypatch.setattr(search, "FIRST_ROWS", first_rows)
    p, a = prof.profile_from_architecture(arch), catalog.accelerator(acc)
    w = _train(architecture=arch, seq_len=seq, batch_tokens=512 * seq)
    eff = Efficiency.from_csv()
    got = search.best_configs(p, a, counts, w, efficiency=eff, sync_loss=sync_loss)
    for g, ref in zip(got, _singles(p, a, counts, w, None, eff, sync_loss=sync_loss)):
        _equal(g, ref)


def test_a_count_that_cannot_be_laid_out_is_handed_back_not_raised():
    p, a, w = prof.model_profile("llama-3.1-70b"), catalog.accelerator("H100-SXM5-80GB"), _train("llama-3.1-70b", 4096)
    got = search.best_configs(p, a, (12, 64), w, Parallelism(tp=8, pp=2), HALF)
    assert isinstance(got[0], InputError) and isinstance(got[1], dict)
    with pytest.raises(InputError):
        search.best_config(p, a, 12, w, Parallelism(tp=8, pp=2), HALF)


@pytest.mark.parametrize("name", ["llama-70b-pretrain", "llama-8b-finetune"])
def test_the_prefetch_leaves_every_plan_as_it_was(monkeypatch, name):
    """Every training plan of a shipped scenario's comparison, with the planner's batched prefetch and with
    each count searched alone (the prefetch turned off), every cache emptied in between."""
    from workbook import analysis, cost
    s = load_scenario(name)
    cost.offer_prices(s)

    def plans():
        for memo in (estimate._CONFIGS, estimate._PLANS, search._GRIDS, analysis._COMPARES):
            memo.clear()
        return (analysis.compare(s, None).to_csv(), analysis.offer_performance(s, analysis.compare(s, None)).to_csv())

    batched = plans()
    monkeypatch.setattr(estimate, "prefetch_training_configs", lambda *a, **k: None)
    alone = plans()
    assert batched == alone


# --- configurations: the grid as indices, against the step-by-step expansion it replaced ---------------

def _reference_configurations(p: Profile, chips: int, w: Workload, parallelism: Parallelism | None = None, *,
                   max_tp: int | None = None, max_pp: int | None = None, micro_batches=None, interleave=None,
                   vpp: int | None = None, min_cp_tokens: int | None = None, max_cp: int | None = None,
                   recompute_choices=None, sequence_parallel: bool = True, flash_attention: bool = True,
                   distributed_optimizer: bool = True, zero_stages=None) -> dict:
    """``search.configurations`` as it was before its product became indices (a verbatim copy)."""
    _check_transformer(p)
    par = parallelism or Parallelism()
    B = _global_batch_seqs(w)
    s = w.seq_len
    tp_opts = [t for t in _divisors(chips) if p.heads % t == 0 and (max_tp is None or t <= max_tp)]
    cp_opts = [1] + [c for c in _divisors(chips) if 1 < c <= MAX_CP and c & (c - 1) == 0 and s % (2 * c) == 0]
    if par.tp is not None:
        if par.tp not in [t for t in _divisors(chips) if p.heads % t == 0]:
            _pin_error("tp", par.tp, f"it must divide {chips} chips and the {p.heads} attention heads")
        tp_opts = [par.tp]
    if par.cp is not None:
        if par.cp not in cp_opts:
            _pin_error("cp", par.cp, f"it must be a power of two dividing {chips} chips with seq_len "
                       f"{s} divisible by 2·cp")
        cp_opts = [par.cp]
    else:
        cp_opts = [c for c in cp_opts if c == 1 or ((min_cp_tokens is None or s / c >= min_cp_tokens)
                                                     and (max_cp is None or c <= max_cp))]
    rows = []
    is_moe = p.is_moe  # a property: read once, not per (tp, cp, pp)
    for tp in tp_opts:
        for cp in cp_opts:
            if chips % (tp * cp):
                continue
            rest = chips // (tp * cp)
            for pp in _divisors(rest):
                if pp > p.layers or (max_pp is not None and pp > max_pp and par.pp is None):
                    continue
                if par.pp is not None and pp != par.pp:
                    continue
                dp = rest // pp
                if par.dp is not None and dp != par.dp:
                    continue
                if dp > B:
                    continue
                eps = [e for e in _divisors(dp) if p.experts % e == 0] if is_moe else [1]
                if par.ep is not None:
                    eps = [e for e in eps if e == par.ep]
                for ep in eps:
                    rows.append((tp, cp, pp, dp, ep))
    software = {"sequence_parallel": bool(sequence_parallel), "flash_attention": bool(flash_attention)}
    empty = {k: np.zeros(0, dtype=int) for k in ("tp", "cp", "pp", "dp", "ep", "micro_batch", "vpp", "zero")} | {
        "recompute": np.zeros(0, dtype=object), "microbatches": np.zeros(0, dtype=int)} | software
    if not rows:
        pins = {k: v for k, v in par.model_dump(exclude_none=True).items() if k in ("tp", "pp", "dp", "cp", "ep")}
        if pins:
            raise InputError(f"cluster.parallelism: {pins} cannot be laid out on {chips} chips "
                             f"(tp·pp·dp·cp must equal the chip count, dp ≤ {B} sequences per batch"
                             + (f", ep must divide dp and the {p.experts} experts" if p.is_moe else "") + ")")
        return empty
    base = np.array(rows, dtype=np.int64)
    mb_grid = MICRO_BATCHES if micro_batches is None else tuple(micro_batches)
    mbs = np.array([par.micro_batch] if par.micro_batch is not None else mb_grid, dtype=np.int64)
    # base x micro-batch
    g = np.repeat(base, len(mbs), axis=0)
    mb = np.tile(mbs, len(base))
    if par.micro_batch is None:  # no micro-batch larger than a data-parallel rank's share of the batch
        keep = mb <= np.ceil(B / g[:, 3])
        g, mb = g[keep], mb[keep]
    m = np.ceil(B / (g[:, 3] * mb)).astype(np.int64)
    # x interleaving
    vs = np.array([vpp] if vpp is not None else (INTERLEAVE if interleave is None else tuple(interleave)), dtype=np.int64)
    g = np.repeat(g, len(vs), axis=0)
    mb = np.repeat(mb, len(vs))
    m = np.repeat(m, len(vs))
    v = np.tile(vs, len(g) // len(vs))
    pp = g[:, 2]
    layers_per_chunk = np.ceil(p.layers / (pp * v))
    keep = (v == 1) | ((pp > 1) & (m % pp == 0) & (layers_per_chunk >= 1) & (pp * v <= p.layers))
    g, mb, m, v = g[keep], mb[keep], m[keep], v[keep]
    # x recompute x ZeRO
    rc_opts = _recompute_options(w, par)
    if recompute_choices is not None and len(rc_opts) > 1:
        rc_opts = tuple(recompute_choices)
    rcs = np.array(rc_opts, dtype=object)
    stages = ZERO_STAGES if zero_stages is None else tuple(zero_stages)
    zs = np.array([par.zero] if par.zero is not None else stages if distributed_optimizer else (0,), dtype=np.int64)
    n_base = len(g)
    reps = len(rcs) * len(zs)
    g = np.repeat(g, reps, axis=0)
    mb, m, v = np.repeat(mb, reps), np.repeat(m, reps), np.repeat(v, reps)
    rc = np.tile(np.repeat(rcs, len(zs)), n_base)
    z = np.tile(np.tile(zs, len(rcs)), n_base)
    keep = (z == 0) | (g[:, 3] * g[:, 1] > 1) | (par.zero is not None)  # ZeRO needs data-parallel replicas
    g, mb, m, v, rc, z = g[keep], mb[keep], m[keep], v[keep], rc[keep], z[keep]
    return {"tp": g[:, 0], "cp": g[:, 1], "pp": g[:, 2], "dp": g[:, 3], "ep": g[:, 4], "micro_batch": mb,
            "microbatches": m, "vpp": v, "recompute": rc, "zero": z} | software



def _same_grid(got: dict, ref: dict) -> None:
    assert got.keys() == ref.keys()
    same_arrays(got, ref)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arch=_small_models(), chips=st.sampled_from([1, 6, 8, 24, 64, 96, 128, 136, 512, 1000, 4096]),
       seq=st.sampled_from([2048, 4096, 8192, 32768]), batch_seqs=st.sampled_from([1, 7, 64, 512, 4096]),
       pin=st.sampled_from([None, Parallelism(micro_batch=2), Parallelism(zero=3), Parallelism(zero=0, micro_batch=1)]),
       limits=st.sampled_from([{}, {"micro_batches": (1, 2, 4, 8), "recompute_choices": ("none", "full")},
                               {"vpp": 2}, {"interleave": (1, 3)}, {"zero_stages": (0, 1)},
                               {"distributed_optimizer": False, "max_tp": 8, "max_pp": 4}]))
def test_configurations_equal_the_step_by_step_expansion(arch, chips, seq, batch_seqs, pin, limits):
    p = prof.profile_from_architecture(arch)
    w = _train(architecture=arch, seq_len=seq, batch_tokens=batch_seqs * seq)
    _same_grid(search.configurations(p, chips, w, pin, **limits), _reference_configurations(p, chips, w, pin, **limits))
