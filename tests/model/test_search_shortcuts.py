"""Shortcuts of the layout search give the direct path's answers: the shared grids' recompute masks
(``search.configurations(..., _masks=True)``, read by ``training._grid_arrays``) are the labels compared row by
row, and ``search._pick`` (``model.pick``: only the ties of the fastest step sorted, each value read with ``ndarray.item``)
picks the row and builds the dict the full sort and the per-column ``np.broadcast_to`` did (the reference
below, the code it replaced)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arch_strategies import same_arrays
from arch_strategies import small_models as _small_models
from workbook.model import profile as prof
from workbook.model import search, training
from workbook.model.pick import _py
from workbook.model.training import RESULT_COLUMNS, _acc_name
from workbook.scenario import Parallelism, Workload


def _train(architecture, seq_len, batch_tokens):
    return Workload(task="training", architecture=architecture, tokens=1e12, seq_len=seq_len,
                    global_batch_tokens=batch_tokens)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arch=_small_models(), chips=st.sampled_from([1, 8, 24, 64, 136, 512, 1000]),
       seq=st.sampled_from([2048, 8192, 32768]), batch_seqs=st.sampled_from([1, 7, 64, 512]),
       pin=st.sampled_from([None, Parallelism(micro_batch=2), Parallelism(zero=3), Parallelism(recompute="selective")]),
       limits=st.sampled_from([{}, {"micro_batches": (1, 2, 4, 8), "recompute_choices": ("none", "full")},
                               {"recompute_choices": ("none", "selective", "full")}, {"distributed_optimizer": False}]))
def test_the_masked_grid_is_the_grid_and_its_labels(arch, chips, seq, batch_seqs, pin, limits):
    p = prof.profile_from_architecture(arch)
    w = _train(arch, seq, batch_seqs * seq)
    plain = search.configurations(p, chips, w, pin, **limits)
    masked = search.configurations(p, chips, w, pin, **limits, _masks=True)
    if not len(plain["tp"]):
        return
    assert masked.keys() == plain.keys() | {"_full", "_sel"}
    same_arrays(masked, plain)
    assert masked["_full"].dtype == bool and masked["_full"].tolist() == (plain["recompute"] == "full").tolist()
    assert masked["_sel"].dtype == bool and masked["_sel"].tolist() == (plain["recompute"] == "selective").tolist()
    a, b = training._grid_arrays(plain), training._grid_arrays(masked)
    assert a.keys() == b.keys()
    same_arrays(b, a)


def _reference_pick(parts: list, counts, acc, group=None) -> list:
    """``search._pick`` before the change (verbatim): every fitting row lexsorted, each value through
    ``np.broadcast_to`` and ``_py``."""
    if len(parts) == 1:
        rows, r = parts[0]
        col = {k: np.broadcast_to(r[k], len(rows)) for k in ("fits", "step_time_s", "memory_per_chip_bytes", "tp", "pp")}
    else:
        rows = np.concatenate([pos for pos, _ in parts])
        col = {k: np.concatenate([np.broadcast_to(r[k], len(pos)) for pos, r in parts])
               for k in ("fits", "step_time_s", "memory_per_chip_bytes", "tp", "pp")}
    ok = np.flatnonzero(col["fits"] & np.isfinite(col["step_time_s"]))
    out = []
    for k, chips in enumerate(counts):
        sel = ok if group is None else ok[group[rows[ok]] == k]
        if not len(sel):
            out.append(None)
            continue
        keys = (rows[sel], col["pp"][sel], col["tp"][sel], col["memory_per_chip_bytes"][sel], col["step_time_s"][sel])
        i = int(sel[np.lexsort(keys)[0]])
        for pos, r in parts:
            if i < len(pos):
                break
            i -= len(pos)
        n = len(pos)
        cfg = {c: _py(v[i] if type(v) is np.ndarray and v.shape == (n,) else np.broadcast_to(v, n)[i])
               for c in RESULT_COLUMNS for v in (r[c],)}
        out.append(cfg | {"recompute": str(cfg["recompute"]), "fits": bool(cfg["fits"]), "chips": int(chips),
                          "accelerator": _acc_name(acc)})
    return out


def _priced(rng, rows: np.ndarray, scalar_cols: tuple) -> dict:
    """Priced columns for ``rows`` with many ties (a few distinct steps, memories, tp and pp), some rows that do not
    fit or have no finite step; ``scalar_cols`` given as one value for every row."""
    n = len(rows)
    r = {}
    for c in RESULT_COLUMNS:
        if c in ("tp", "pp", "dp", "ep", "cp", "vpp", "zero", "micro_batch", "microbatches", "global_batch_seqs"):
            r[c] = rng.choice([1, 2, 4], n).astype(np.int64)
        elif c == "recompute":
            r[c] = np.array(["none", "full"], dtype=object)[rng.integers(0, 2, n)]
        elif c == "fits":
            r[c] = rng.random(n) < 0.8
        elif c == "step_time_s":
            r[c] = rng.choice([1.5, 2.0, 2.0000000000000004, np.inf, np.nan], n, p=[0.3, 0.3, 0.2, 0.1, 0.1])
        elif c == "memory_per_chip_bytes":
            r[c] = rng.choice([1e9, 2e9, 3e9], n)
        else:
            r[c] = rng.random(n)
    for c in scalar_cols:
        r[c] = r[c][0].item() if c != "recompute" else "full"
    return r


def test_pick_equals_the_full_sort_on_random_parts():
    rng = np.random.default_rng(0)
    acc = pd.Series({"family": "H100"}, name="H100-SXM5-80GB")
    for trial in range(400):
        n_counts = int(rng.integers(1, 4))
        sizes = [int(rng.integers(1, 40)) for _ in range(int(rng.integers(1, 3)))]
        total = sum(sizes) + int(rng.integers(0, 20))  # positions of the grid: parts take some of them
        perm = rng.permutation(total)
        parts, at = [], 0
        for size in sizes:
            rows = np.sort(perm[at:at + size])
            at += size
            scalar = tuple(rng.choice(["efficiency", "global_batch_seqs", "dequant_s", "recompute"],
                                      int(rng.integers(0, 3)), replace=False)) if trial % 3 == 0 else ()
            parts.append((rows, _priced(rng, rows, scalar)))
        group = rng.integers(0, n_counts, total) if n_counts > 1 or trial % 2 else None
        counts = [int(c) for c in rng.integers(8, 4096, n_counts)] if group is not None else [512]
        assert repr(search._pick(parts, counts, acc, group)) == repr(_reference_pick(parts, counts, acc, group))


def test_a_given_workload_key_is_the_workload_s_own():
    """``best_config(..., workload_key=hashable(w))`` (``estimate.training_config`` hands its cache key's) gives the
    answer and the shared grid of the call that makes the key itself."""
    from workbook import catalog
    from workbook.model.memo import Record, hashable
    from workbook.model.profile import workload_profile
    w = Workload(task="training", model="llama-3.1-70b", tokens=1e12, seq_len=8192, global_batch_tokens=4e6)
    p, a = workload_profile(w), Record(catalog.accelerator_record("H100-SXM5-80GB"))
    limits = search.practical_limits(a, seq_len=w.seq_len, experts=p.experts)
    for chips in (256, 512, 1016):
        search._GRIDS.clear()
        direct = search.best_config(p, a, chips, w, **limits)
        assert len(search._GRIDS) == 1
        keyed = search.best_config(p, a, chips, w, workload_key=hashable(w), **limits)
        assert len(search._GRIDS) == 1  # the same grid, found under the same key
        assert repr(keyed) == repr(direct)
    batch = search.best_configs(p, a, [504, 512], w, workload_key=hashable(w), **limits)
    assert repr(batch) == repr([search.best_config(p, a, n, w, **limits) for n in (504, 512)])


def test_the_first_guess_with_its_matmul_efficiency_given():
    """``estimate.data_parallel_fallback`` with ``matmul_efficiency`` (``choose_training_chips`` computes it once for
    its two passes) gives the arrays it computes itself, to the bit."""
    from workbook import catalog
    from workbook.model import estimate
    from workbook.model.efficiency import compute_efficiency, default
    from workbook.model.profile import workload_profile
    from workbook.scenario import load_scenario
    for name in ("llama-70b-pretrain", "llama-8b-finetune", "llama2-7b-pretrain"):
        s = load_scenario(name)
        w, p = s.workload, workload_profile(s.workload)
        for acc_name in ("H100-SXM5-80GB", "A100-SXM4-80GB", "TPU-v5p", "MI300X"):
            acc = catalog.accelerator_record(acc_name)
            e = compute_efficiency(default(None), acc, w.precision, "train", p)
            counts = np.unique(np.round(np.geomspace(1, 4096, 96))) * 8
            a = estimate.data_parallel_fallback(p, acc, counts, w, 0.1, w.global_batch_tokens)
            b = estimate.data_parallel_fallback(p, acc, counts, w, 0.1, w.global_batch_tokens, matmul_efficiency=e)
            assert a.keys() == b.keys()
            for k in a:
                assert a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes(), (name, acc_name, k)
