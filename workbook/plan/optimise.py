"""The fleet's cheapest mix of commitments and bursts over the horizon (pure functions over arrays
and DataFrames).

On one offering, with hourly demand d_t instances (the sum of the workloads placed there) and a
burst price p_t per instance-hour (on-demand or spot, whichever is cheaper for the workload that
needs the hour; the demand-weighted mean where workloads share the hour), b committed instances on
a term of T hours at c per instance-hour cost

    cost(b) = b * c * T + sum_t p_t * max(d_t - b, 0)

a convex, piecewise-linear function of b (the newsvendor form, Porteus, "Foundations of Stochastic
Inventory Theory", 2002, ch. 1: the k-th committed instance pays for itself when
p * hours(d_t >= k) > c * T, i.e. when it is busy more than c/p of the term, the break-even
utilization of a reserved instance).
``commitment_curve`` evaluates it for every integer b at once over the sorted demand. Each term
is bought in blocks from month 1 (1-year: months 1-12, 13-24, ...; 3-year: 1-36, ...), each block
with its own count; a block is paid for its whole term even when the horizon ends first (no
resale: the hours after the horizon are in the cost and reported as ``usd_after_horizon``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..terms import TERM_MONTHS
from .demand import BURST_MODELS, COMMIT_MODELS, HOURS


@dataclass(frozen=True)
class Need:
    """One workload's need: its feasible offers (``demand.offer_table``) and its instances per offer
    and hour (``demand.demand``, shape (offers, hours))."""

    name: str
    task: str
    offers: pd.DataFrame
    demand: np.ndarray
    _columns: dict = field(default_factory=dict, compare=False, repr=False)

    def col(self, name: str) -> np.ndarray:
        """Column ``name`` of ``offers`` as an array, made once (the search reads single cells thousands
        of times: an array index, not a pandas lookup)."""
        if name not in self._columns:
            self._columns[name] = self.offers[name].to_numpy()
        return self._columns[name]


@dataclass(frozen=True)
class Pool:
    """The choice on one offering: ``term`` (a commit model, or None for bursts only), the committed
    instances of each block of the term (``counts``) and the cost over the horizon."""

    offering: str
    members: tuple[int, ...]
    term: str | None
    counts: tuple[int, ...]
    commit_usd_per_hour: float
    cost_usd: float


def _sort_key(d: np.ndarray) -> np.ndarray:
    """``d`` itself, or as int16 when every value is a whole number within int16's range (a serving demand
    in instances): the same order, and numpy's stable sort of 16-bit integers is a radix sort (about 7x
    faster than the float sort on 8,760 hours)."""
    if len(d) and np.abs(d).max() < 2.0 ** 15:
        whole = d.astype(np.int16)
        if np.array_equal(whole, d):
            return whole
    return d


def commitment_curve(demand, burst_usd_per_hour, commit_usd_per_hour: float, paid_hours: float):
    """``(b, cost)`` for every integer b from 0 to ceil(max demand): b * c * paid_hours plus the
    burst above b, sum_t p_t max(d_t - b, 0), from suffix sums over the sorted demand (one sort,
    one ``searchsorted``; O(T log T))."""
    d = np.asarray(demand, float).ravel()
    p = np.broadcast_to(np.asarray(burst_usd_per_hour, float), d.shape).ravel()
    order = np.argsort(_sort_key(d), kind="stable")
    ds, ps = d[order], p[order]
    suf_pd = np.concatenate([np.cumsum((ps * ds)[::-1])[::-1], [0.0]])
    suf_p = np.concatenate([np.cumsum(ps[::-1])[::-1], [0.0]])
    b = np.arange(0, int(math.ceil(ds[-1] - 1e-9)) + 1 if len(ds) else 1)
    idx = np.searchsorted(ds, b, side="right")
    return b, b * commit_usd_per_hour * paid_hours + suf_pd[idx] - b * suf_p[idx]


def blocks(term: str, months: int) -> list[tuple[int, int]]:
    """Month ranges [start, end) (0-based) of the successive commitments of ``term`` from month 1."""
    n = int(TERM_MONTHS[term])
    return [(m, min(m + n, months)) for m in range(0, months, n)]


def best_commitment(d: np.ndarray, p: np.ndarray, c: float, term: str, months: int) -> tuple[tuple[int, ...], float]:
    """The cheapest count per block of ``term`` and the total cost (commitments + bursts) on the
    horizon; ties go to fewer instances."""
    counts, total = [], 0.0
    paid = TERM_MONTHS[term] * HOURS
    for a, z in blocks(term, months):
        b, cost = commitment_curve(d[a * HOURS:z * HOURS], p[a * HOURS:z * HOURS], c, paid)
        k = int(np.argmin(cost))
        counts.append(int(b[k]))
        total += float(cost[k])
    return tuple(counts), total


def pooled(needs: list[Need], members: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Summed demand and the demand-weighted burst price per hour of ``members`` ((need, row) pairs
    on one offering)."""
    d = sum(needs[i].demand[j] for i, j in members)
    pd_ = sum(needs[i].demand[j] * needs[i].col("burst_usd_per_hour")[j] for i, j in members)
    p = np.divide(pd_, d, out=np.zeros_like(d), where=d > 0)
    return d, p


def pool_cost(needs: list[Need], members: tuple[tuple[int, int], ...], months: int) -> Pool:
    """The cheapest of bursts only and each term some member allows, on one offering."""
    d, p = pooled(needs, members)
    offering = needs[members[0][0]].col("offering")[members[0][1]]
    best = Pool(offering, tuple(i for i, _ in members), None, (), math.nan, float((d * p).sum()))
    for term in COMMIT_MODELS:
        prices = [needs[i].col(f"{term}_usd_per_hour")[j] for i, j in members]
        prices = [x for x in prices if x == x]
        if not prices or not d.any():
            continue
        c = min(prices)
        counts, cost = best_commitment(d, p, c, term, months)
        if cost < best.cost_usd - 1e-6 and any(counts):
            best = Pool(offering, best.members, term, counts, c, cost)
    return best


def with_burst(offers: pd.DataFrame) -> pd.DataFrame:
    """``burst_model`` and ``burst_usd_per_hour``: the cheaper of on-demand and spot per offer."""
    prices = offers[[f"{m}_usd_per_hour" for m in BURST_MODELS]]
    out = offers.copy()
    out["burst_usd_per_hour"] = prices.min(axis=1)
    out["burst_model"] = [BURST_MODELS[k] for k in np.nanargmin(prices.to_numpy(float), axis=1)]
    return out


@dataclass
class _Search:
    needs: list[Need]
    months: int
    cache: dict = field(default_factory=dict)

    def pool(self, members) -> Pool:
        key = tuple(sorted(members))
        if key not in self.cache:
            self.cache[key] = pool_cost(self.needs, key, self.months)
        return self.cache[key]

    def porting(self, i: int, j: int) -> float:
        return float(self.needs[i].col("porting_usd")[j])

    def total(self, choice: list[int]) -> float:
        pools = _groups(self.needs, choice).values()
        return sum(self.pool(m).cost_usd for m in pools) + sum(self.porting(i, j) for i, j in enumerate(choice))


def _groups(needs: list[Need], choice: list[int]) -> dict[str, list]:
    groups: dict[str, list] = {}
    for i, j in enumerate(choice):
        groups.setdefault(needs[i].col("offering")[j], []).append((i, j))
    return groups


def _rows_of(needs: list[Need]) -> list[dict[str, int]]:
    return [{o: j for j, o in enumerate(n.offers["offering"])} for n in needs]


def _moves(needs: list[Need], choice: list[int], rows: list[dict[str, int]], alone: list[list[float]]):
    """Trial assignments: every need that can run on a shared offering moved there together; then
    one need at a time, onto its cheapest offer alone or an offering another need uses."""
    shared = {o for i, r in enumerate(rows) for o in r if sum(o in q for q in rows) > 1}
    for o in sorted(shared):
        yield [rows[i].get(o, choice[i]) for i in range(len(needs))]
    for i in range(len(needs)):
        used = {needs[k].col("offering")[choice[k]] for k in range(len(needs)) if k != i}
        for j in sorted({int(np.argmin(alone[i]))} | {rows[i][o] for o in used if o in rows[i]}):
            yield choice[:i] + [j] + choice[i + 1:]


def assign(needs: list[Need], months: int, rounds: int = 10) -> tuple[list[int], list[Pool], list[list[Pool]]]:
    """Each need's offer (row index) and the pools: every need starts on its cheapest offer alone
    (every offer priced); then moves are tried (``_moves``: all needs that can share an offering
    pooled on it, one need onto an offering another uses) and kept while they lower the total, until
    none does. Workloads share a commitment only on the same offering; a local search, not a proof
    of the optimum when several workloads could pool on several offerings. Also returns each need's
    pool alone on each of its offers (``alone[i][j]``)."""
    search = _Search(needs, months)
    pools_alone = [[search.pool(((i, j),)) for j in range(len(n.offers))] for i, n in enumerate(needs)]
    alone = [[p.cost_usd + search.porting(i, j) for j, p in enumerate(ps)] for i, ps in enumerate(pools_alone)]
    choice = [int(np.argmin(a)) for a in alone]
    rows = _rows_of(needs)
    now = search.total(choice)
    for _ in range(rounds):
        moved = False
        for trial in list(_moves(needs, choice, rows, alone)):
            cost = search.total(trial)
            if cost < now - 1e-6:
                choice, now, moved = trial, cost, True
        if not moved:
            break
    return choice, [search.pool(tuple(sorted(m))) for m in _groups(needs, choice).values()], pools_alone


def commitment_alternatives(needs: list[Need], alone: list[list[Pool]], choice: list[int]) -> list[dict]:
    """For each need whose plan commits nothing: its cheapest offer alone that would commit, and what
    it costs more than the plan's choice (why no commitment was bought)."""
    out = []
    for i, n in enumerate(needs):
        best = None
        for j, p in enumerate(alone[i]):
            total = p.cost_usd + float(n.col("porting_usd")[j])
            if p.term and (best is None or total < best[0]):
                best = (total, j, p)
        if best is None:
            continue
        chosen = alone[i][choice[i]].cost_usd + float(n.col("porting_usd")[choice[i]])
        total, j, p = best
        out.append({"workload": n.name, "offering": p.offering, "pricing_model": p.term, "instances": max(p.counts),
                    "cost_usd": total, "usd_more_than_chosen_alone": total - chosen})
    return out


def all_on_demand(needs: list[Need]) -> tuple[float, list[str | None]]:
    """Every need on its cheapest on-demand offer, hour by hour (porting included): the plan's
    comparison. NaN when a need has no on-demand offer."""
    total, chosen = 0.0, []
    for n in needs:
        od = n.offers["on_demand_usd_per_hour"].to_numpy(float)
        cost = n.demand.sum(axis=1) * od + n.offers["porting_usd"].to_numpy(float)
        if not np.isfinite(cost).any():
            return math.nan, chosen + [None]
        k = int(np.nanargmin(cost))
        total += float(cost[k])
        chosen.append(n.offers["offering"].iat[k])
    return total, chosen
