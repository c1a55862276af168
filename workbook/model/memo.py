"""Caches keyed on values: a hashable view of pydantic models, dicts and lists (``hashable``) and a
bounded least-recently-used cache that counts its misses (``Memo``), for the per-process caches of
``model.estimate`` (layout searches, training plans, serving estimates), ``analysis`` (comparisons,
shared analyses) and ``views.charts.base`` (drawn charts)."""
from __future__ import annotations

from collections import OrderedDict

from pydantic import BaseModel


def hashable(x):
    """A hashable view of a value made of pydantic models, dicts, lists and scalars (NaN as None), to
    key caches on what a result depends on."""
    if isinstance(x, BaseModel):  # its JSON (NaN as null, like None here): one fast call, not a walk of its dump
        return (type(x).__name__, x.model_dump_json())
    if isinstance(x, dict):
        return tuple(sorted((str(k), hashable(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(hashable(v) for v in x)
    if isinstance(x, float) and x != x:
        return None
    return x


class Memo:
    """A bounded least-recently-used cache keyed on ``hashable`` views of the arguments."""

    def __init__(self, size: int):
        self.size, self.data, self.misses = size, OrderedDict(), 0

    def __len__(self) -> int:
        return len(self.data)

    def clear(self) -> None:
        self.data.clear()

    def get(self, key, compute):
        if key in self.data:
            self.data.move_to_end(key)
            return self.data[key]
        self.misses += 1
        value = self.data[key] = compute()
        if len(self.data) > self.size:
            self.data.popitem(last=False)
        return value
