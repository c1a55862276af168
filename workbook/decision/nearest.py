"""When nothing passes the hard constraints: the nearest change that would make an option feasible.

Every option the constraints rule out carries its codes (``excluded_codes``, ``rules.CONSTRAINTS``)
and the figures that broke them (``chips``, ``training_days``, ``cost_usd``/``usd_total``,
``ttft_ms``/``tpot_ms``), so the relaxation each option needs is read off the priced frame: the chip
limit raised to its chip count, the deadline moved to its training time, the budget raised to its
cost, the latency target moved to its latency. Options ruled out only by such limits are ranked by
the largest factor they need (the smallest stretch first); an option that needs another way of paying
or a change the frame cannot price (memory, precision, framework) is named in words.
"""
from __future__ import annotations

import math

import pandas as pd

from ..scenario import Scenario
from ..terms import metric_unit, usd
from .rank import describe, metric_of

MOVABLE = ("chips", "deadline", "budget", "latency", "carbon")


def _needed(s: Scenario, r: pd.Series) -> dict[str, tuple[float | None, float]] | None:
    """The scenario keys one excluded option needs moved, as key -> (current, needed); None when a
    code outside ``MOVABLE`` also rules it out."""
    codes = set(r["excluded_codes"])
    if not codes or codes - set(MOVABLE):
        return None
    c, w, out = s.constraints, s.workload, {}
    if "chips" in codes:
        out["constraints.max_chips"] = (c.max_chips, float(math.ceil(r["chips"])))
    if "deadline" in codes:
        out["constraints.deadline_days"] = (c.deadline_days, math.ceil(float(r["training_days"]) * 10) / 10)
    if "budget" in codes:
        total = r["cost_usd"] if s.is_training else r.get("usd_total")
        if pd.isna(total):
            return None
        out["constraints.budget_usd"] = (c.budget_usd, float(total))
    if "carbon" in codes:
        if c.max_co2_kg is None or pd.isna(r.get("co2_kg")):
            return None
        out["constraints.max_co2_kg"] = (c.max_co2_kg, float(math.ceil(r["co2_kg"])))
    if "latency" in codes:
        for key, col, slo in (("workload.ttft_slo_ms", "ttft_ms", w.ttft_slo_ms),
                              ("workload.tpot_slo_ms", "tpot_ms", w.tpot_slo_ms)):
            v = r.get(col)
            if slo is not None and pd.notna(v) and v > slo:
                out[key] = (slo, float(math.ceil(v)))
        if not out:
            return None
    return out


def _stretch(change: dict) -> float:
    """The largest factor by which one of the changed limits moves (1.5 = 50% more)."""
    return max((new / old if old else math.inf) for old, new in change.values())


def _fmt(key: str, v) -> str:
    if v is None:
        return "none"
    if key.endswith("budget_usd"):
        return usd(v)
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"


def nearest_changes(s: Scenario, priced: pd.DataFrame, n: int = 3) -> list[dict]:
    """Up to ``n`` changes of the scenario, smallest stretch first, that each make one option feasible:
    ``{"changes": {key: (current, needed)}, "stretch": factor, "option": row, "text": sentence}``
    (one per distinct set of keys, the option needing the smallest stretch for it)."""
    if priced.empty or "excluded_codes" not in priced:
        return []
    metric = metric_of(s)
    found = []
    for _, r in priced[priced["excluded_codes"].map(len) > 0].iterrows():
        change = _needed(s, r)
        if change:
            found.append((_stretch(change), tuple(sorted(change)), float(r.get(metric, math.nan)), change, r))
    found.sort(key=lambda t: (t[0], t[2]))
    out, seen = [], set()
    for stretch, keys, _cost, change, r in found:
        if any(set(k) <= set(keys) for k in seen):   # a subset of these keys already suffices
            continue
        seen.add(keys)
        what = " and ".join(f"{k} from {_fmt(k, old)} to {_fmt(k, new)}" for k, (old, new) in change.items())
        unit = metric_unit(s.is_training, s.workload.generic is not None)
        out.append({"changes": change, "stretch": round(stretch, 3), "option": r,
                    "text": f"Change {what}: then {describe(r)} passes every hard constraint "
                            f"({usd(r[metric])} {unit})."})
        if len(out) == n:
            break
    return out


def physical_hints(s: Scenario, priced: pd.DataFrame) -> list[str]:
    """Changes the priced frame cannot price, named in words when they are what rules options out."""
    codes = set(c for cs in priced.get("excluded_codes", pd.Series(dtype=object)) for c in cs)
    w, out = s.workload, []
    if codes & {"memory", "precision"}:
        out.append(f"The model does not fit (or has no peak) in {w.precision} on some chips: try more chips "
                   "(constraints.max_chips, cluster.chips), another precision (workload.precision, e.g. fp8 or "
                   "int8 for serving) or a chip with more memory (candidates.accelerators).")
    if "framework" in codes:
        out.append("Some chips are out for the framework: accept another one (constraints.frameworks) or set a "
                   "porting budget (pricing.porting_cost_usd).")
    if "not_priced" in codes or "spot" in codes:
        out.append("Some ways to pay have no price or never finish on spot: add pricing models (pricing.models) "
                   "or providers (candidates.clouds).")
    return out
