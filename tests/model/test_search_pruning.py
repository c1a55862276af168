"""``search.best_config`` prices only the layouts that fit and can be the fastest (``search._candidates``):
its answer must be exactly the first row of the full ``search`` table, whatever number of rows it prices
first (``FIRST_ROWS``), for dense and MoE models, GPUs and TPUs, the fitted and a fixed efficiency."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arch_strategies import small_models as _small_models
from workbook import catalog
from workbook.model import profile as prof
from workbook.model import search
from workbook.model.efficiency import Efficiency
from workbook.scenario import Parallelism, Workload

HALF = Efficiency.fixed(0.5)


def _train(model=None, seq_len=4096, batch_tokens=4e6, architecture=None, **kw):
    return Workload(task="training", model=model, architecture=architecture, tokens=1e12, seq_len=seq_len,
                    global_batch_tokens=batch_tokens, **kw)


def _same(cfg: dict | None, table) -> None:
    """``cfg`` (best_config) is the first row of ``table`` (search), column for column, to the bit."""
    if table.empty:
        assert cfg is None
        return
    assert cfg is not None
    first = table.iloc[0]
    for col in table.columns:
        a, b = cfg[col], first[col]
        if isinstance(b, float) and math.isnan(b):
            assert isinstance(a, float) and math.isnan(a), col
        else:
            assert a == b, (col, a, b)


@pytest.mark.parametrize("first_rows", [1, 8, 256])
@pytest.mark.parametrize("model,acc,chips,seq,pin", [
    ("llama-3.1-70b", "H100-SXM5-80GB", 1024, 8192, None),
    ("llama-3.1-70b", "A100-SXM4-80GB", 512, 4096, None),
    ("mixtral-8x7b", "H100-SXM5-80GB", 64, 4096, None),
    ("llama-2-7b", "TPU-v5e", 256, 4096, None),
    ("llama-3.1-405b", "MI300X", 512, 8192, None),
    ("llama-3.1-405b", "H100-SXM5-80GB", 2048, 8192, Parallelism(tp=8)),
])
@pytest.mark.parametrize("fitted", [False, True])
def test_best_config_is_the_first_row_of_the_whole_search(monkeypatch, first_rows, model, acc, chips, seq, pin, fitted):
    monkeypatch.setattr(search, "FIRST_ROWS", first_rows)
    p, a, w = prof.model_profile(model), catalog.accelerator(acc), _train(model, seq, 16e6)
    eff = Efficiency.from_csv() if fitted else HALF
    limits = search.practical_limits(a, seq_len=seq, experts=p.experts)
    _same(search.best_config(p, a, chips, w, pin, eff, **limits), search.search(p, a, chips, w, pin, eff, **limits))
    _same(search.best_config(p, a, chips, w, pin, eff), search.search(p, a, chips, w, pin, eff))


def test_nothing_that_fits_gives_none_and_an_empty_search(monkeypatch):
    monkeypatch.setattr(search, "FIRST_ROWS", 1)
    p, a, w = prof.model_profile("llama-3.1-405b"), catalog.accelerator("H100-SXM5-80GB"), _train("llama-3.1-405b", 8192)
    assert search.best_config(p, a, 8, w, efficiency=HALF) is None
    assert search.search(p, a, 8, w, efficiency=HALF).empty


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(arch=_small_models(), chips=st.sampled_from([8, 32, 128, 512]), seq=st.sampled_from([2048, 8192]),
       acc=st.sampled_from(["A100-SXM4-40GB", "H100-SXM5-80GB", "MI300X", "TPU-v5p", "TPU-v5e", "Trainium2"]),
       first_rows=st.sampled_from([1, 4, 64]), sync_loss=st.sampled_from([None, 0.0, 0.04]))
def test_pruning_never_changes_the_fastest_layout(monkeypatch, arch, chips, seq, acc, first_rows, sync_loss):
    monkeypatch.setattr(search, "FIRST_ROWS", first_rows)
    p, a = prof.profile_from_architecture(arch), catalog.accelerator(acc)
    w = _train(architecture=arch, seq_len=seq, batch_tokens=max(chips, 64) * seq)
    eff = Efficiency.from_csv()
    _same(search.best_config(p, a, chips, w, efficiency=eff, sync_loss=sync_loss),
          search.search(p, a, chips, w, efficiency=eff, sync_loss=sync_loss))


def test_candidates_price_fewer_rows_than_the_grid_on_a_large_search():
    # the pruning is what makes the search cheaper: on 1,024 H100s most of the 70B grid is never priced in full
    p, a, w = prof.model_profile("llama-3.1-70b"), catalog.accelerator("H100-SXM5-80GB"), _train("llama-3.1-70b", 8192, 16e6)
    grid = search.configurations(p, 1024, w)
    r = search._candidates(p, a, 1024, w, grid, Efficiency.from_csv(), topology=None, overlap=search.DEFAULT_OVERLAP,
                           memory_headroom=None, sync_loss=None, parallelism=None)
    assert len(grid["tp"]) > 2 * search.FIRST_ROWS
    priced = sum(len(cols["tp"]) for _, cols in r)  # the priced parts (rows, columns)
    assert search.FIRST_ROWS <= priced < len(grid["tp"]) / 2
