"""Caches keyed on values: a hashable view of pydantic models, dicts and lists (``hashable``), of an accelerator
record (``record_key``, with ``Record``, the record as the layout search reads it) and a
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


def record_key(acc) -> tuple:
    """A hashable key of an accelerator record (NaN as None, so equal records give equal keys)."""
    return tuple((k, None if isinstance(v, float) and v != v else v) for k, v in dict(acc).items())


class Record(dict):
    """An accelerator record as the layout search reads it (``rec[k]``, ``rec.get(k)``, ``rec.name``
    None as on a Series built from a dict): a dict, a tenth of the cost of building a pandas Series."""
    name = None


class Memo:
    """A bounded least-recently-used cache keyed on ``hashable`` views of the arguments."""

    def __init__(self, size: int):
        self.size, self.data, self.misses = size, OrderedDict(), 0

    def __len__(self) -> int:
        return len(self.data)

    def clear(self) -> None:
        self.data.clear()

    def __contains__(self, key) -> bool:
        return key in self.data

    def put(self, key, value) -> None:
        """Store a value computed elsewhere (counted as a miss, as ``get`` counts what it computes)."""
        self.misses += 1
        self.data[key] = value
        self.data.move_to_end(key)
        if len(self.data) > self.size:
            self.data.popitem(last=False)

    def get(self, key, compute):
        if key in self.data:
            self.data.move_to_end(key)
            return self.data[key]
        self.misses += 1
        value = self.data[key] = compute()
        if len(self.data) > self.size:
            self.data.popitem(last=False)
        return value
