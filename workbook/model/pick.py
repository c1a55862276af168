"""The layout search's choice from its priced rows (``search.best_config`` and ``best_configs``): the fastest layout
that fits, ties to less memory, then smaller tp and pp, then the first in grid order (``_pick``), as a dict of Python
scalars; and the row cuts of what the search prices (``_take``, ``_grid_rows``)."""
from __future__ import annotations

import numpy as np

from .training import RESULT_COLUMNS, _acc_name


def _take(d: dict, idx, n: int) -> dict:
    """``d`` with its per-row arrays (length ``n``) cut to the rows ``idx``; other values as they are."""
    return {k: (v[idx] if type(v) is np.ndarray and v.shape == (n,) else v) for k, v in d.items()}


# the grid's columns ``training._finish`` reads (``_compute_parts`` reads ``tp`` alone): the layout search cuts only
# these to the rows it prices, once, from the whole grid (the recompute labels and masks come from ``_grid_arrays``)
_FINISH_GRID = ("tp", "pp", "dp", "ep", "cp", "vpp", "zero", "micro_batch", "microbatches")


def _grid_rows(grid: dict, idx) -> dict:
    """The grid's ``_FINISH_GRID`` columns at the rows ``idx`` (``_take``'s arrays for those keys)."""
    return {k: grid[k][idx] for k in _FINISH_GRID}


def _py(v):
    return v.item() if hasattr(v, "item") else v


def _pick(parts: list, counts, acc, group=None) -> list:
    """``best_config``'s answer per chip count of ``counts`` from priced parts [(rows, columns)] (``group``: each
    row's count, by its index in ``counts``; None: one count): the fastest that fits, ties to less memory, then
    smaller tp and pp, then the first in grid order; None where none fits."""
    if len(parts) == 1:  # one part: its columns as they are (the concatenation of one array is a copy of it)
        rows, r = parts[0]
        n = len(rows)
        col = {k: (v if type(v) is np.ndarray and v.shape == (n,) else np.broadcast_to(v, n))
               for k in ("fits", "step_time_s", "memory_per_chip_bytes", "tp", "pp") for v in (r[k],)}
    else:
        rows = np.concatenate([pos for pos, _ in parts])
        col = {k: np.concatenate([np.broadcast_to(r[k], len(pos)) for pos, r in parts])
               for k in ("fits", "step_time_s", "memory_per_chip_bytes", "tp", "pp")}
    ok = np.flatnonzero(col["fits"] & np.isfinite(col["step_time_s"]))
    out = []
    name = None
    for k, chips in enumerate(counts):
        sel = ok if group is None else ok[group[rows[ok]] == k]
        if not len(sel):
            out.append(None)
            continue
        step = col["step_time_s"][sel]
        sel = sel[step == step.min()]  # the fastest step: the sort's first key, so only its ties are sorted further
        keys = (rows[sel], col["pp"][sel], col["tp"][sel], col["memory_per_chip_bytes"][sel], col["step_time_s"][sel])
        i = int(sel[np.lexsort(keys)[0]])  # the last key first; the grid position breaks the last ties
        for pos, r in parts:  # the part that holds it
            if i < len(pos):
                break
            i -= len(pos)
        n = len(pos)
        # row i of each priced column as a Python scalar: ``v.item(i)`` of an array of n rows (``v[i].item()``; an
        # object array's element itself), else one value for every row (``np.broadcast_to(v, n)[i]``)
        cfg = {c: (v.item(i) if type(v) is np.ndarray and v.shape == (n,) else _py(np.broadcast_to(v, n)[i]))
               for c in RESULT_COLUMNS for v in (r[c],)}
        if name is None:
            name = _acc_name(acc)
        cfg.update(recompute=str(cfg["recompute"]), fits=bool(cfg["fits"]), chips=int(chips), accelerator=name)
        out.append(cfg)
    return out
