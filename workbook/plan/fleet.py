"""A portfolio planned: each workload's analysis (the one pipeline), its need per offer and hour,
the optimiser's choice, and the cost and capacity of every month.

``plan_portfolio(pf, scenarios)`` runs ``analysis.analyse`` once per workload and hands the priced
frames to ``make_plan``, a pure function over them (tests pass small synthetic frames).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import analysis
from ..scenario import Scenario
from ..terms import TERM_MONTHS
from .demand import ENERGY_COLUMNS, HOURS, demand, offer_table
from .optimise import Need, Pool, all_on_demand, assign, blocks, commitment_alternatives, pooled, with_burst
from .portfolio import Portfolio

ASSUMPTIONS = [
    "A month is 730 hours (8,760 / 12, the cloud billing month); hour 0 of month 1 is midnight.",
    "Serving capacity scales with the request rate: in each hour a service needs ceil(share x the instances "
    "its scenario sizes for requests_per_s), so every instance keeps the load and latency it was sized for "
    "(M/G/c queueing on fewer servers is a little worse; not modelled).",
    "A training or fine-tuning job runs from hour 0 of each month it starts in, on the instances and for "
    "the hours its scenario's on-demand plan needs; jobs are not moved into idle committed hours.",
    "Commitments are bought from month 1 in blocks of their term (1-year: months 1-12, 13-24, ...), one "
    "count per block and one term per offering; a commitment is paid for its whole term, also after the "
    "horizon ends (no resale): those hours are in total_usd and in usd_after_horizon.",
    "Above the commitment each workload bursts on the cheaper of on-demand and spot that its scenario "
    "allows; spot for serving pays the spare instances of its availability target, spot for training its "
    "lost work (the analysis's prices); where workloads share an offering the commitment serves them in "
    "proportion to their demand.",
    "Committed prices are the published hourly committed prices (or the scenario's commit discounts where "
    "none is published); the scenario's pricing.utilization is replaced by the plan's hours.",
    "Porting is paid once per workload; monthly servers and purchases are not planned.",
    "all_on_demand_usd: every workload on its cheapest on-demand offer, following its load hour by hour.",
]


@dataclass(frozen=True)
class Plan:
    """The plan (data only): ``rows`` one per month x offering x way to pay x workload (tidy),
    ``commitments`` one per block bought, ``workloads`` one per workload, ``alternatives`` each
    workload's cheapest offer with a commitment, planned alone (what committing would cost more)."""

    portfolio: Portfolio
    rows: pd.DataFrame
    commitments: pd.DataFrame
    workloads: pd.DataFrame
    total_usd: float
    all_on_demand_usd: float
    alternatives: pd.DataFrame | None = None
    analyse_s: float = 0.0
    optimise_s: float = 0.0

    @property
    def savings_usd(self) -> float:
        return self.all_on_demand_usd - self.total_usd


def _names(scenarios: list[Scenario]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for s in scenarios:
        seen[s.name] = seen.get(s.name, 0) + 1
        out.append(s.name if seen[s.name] == 1 else f"{s.name}#{seen[s.name]}")
    return out


def needs_of(pf: Portfolio, scenarios: list[Scenario], priced: list[pd.DataFrame]) -> list[Need]:
    """Each workload's feasible offers (with its burst way to pay) and its demand on each."""
    out = []
    for name, w, s, p in zip(_names(scenarios), pf.workloads, scenarios, priced):
        offers = with_burst(offer_table(p, s.is_training))
        out.append(Need(name, s.workload.task, offers, demand(w, s, offers, pf.months)))
    return out


def _row(month, offer, model, workload, instances, hours, cost, energy) -> dict:
    r = {"month": month, "offering": offer["offering"], "accelerator": offer["accelerator"],
         "provider": offer["provider"], "pricing_model": model, "workload": workload,
         "instances": instances, "instance_hours": hours, "cost_usd": cost}
    for col in ENERGY_COLUMNS:
        per = offer.get(f"{col}_per_instance_hour")
        if per is not None and per == per:
            r[col] = hours * per
    return r


def _baseline(pool: Pool, months: int) -> np.ndarray:
    b = np.zeros(months * HOURS)
    if pool.term:
        for (a, z), k in zip(blocks(pool.term, months), pool.counts):
            b[a * HOURS:z * HOURS] = k
    return b


def pool_rows(needs: list[Need], pool: Pool, members, months: int) -> tuple[list[dict], list[dict]]:
    """The months of one pool (commitment and bursts per workload) and its commitments."""
    d, _ = pooled(needs, members)
    base = _baseline(pool, months)
    excess = d - np.minimum(d, base)
    first = needs[members[0][0]].offers.iloc[members[0][1]]
    rows, commits = [], []
    names = ", ".join(needs[i].name for i, _ in members)
    if pool.term:
        used = np.minimum(d, base).reshape(months, HOURS).sum(axis=1)
        for m in range(months):
            k = base[m * HOURS]
            if k:
                rows.append(_row(m + 1, first, pool.term, names, k, used[m], k * pool.commit_usd_per_hour * HOURS, None))
        for (a, z), k in zip(blocks(pool.term, months), pool.counts):
            if k:
                commits.append(_commitment(pool, first, names, a, z, k, used[a:z].sum()))
    for i, j in members:
        share = np.divide(needs[i].demand[j], d, out=np.zeros_like(d), where=d > 0)
        burst = (excess * share).reshape(months, HOURS)
        offer = needs[i].offers.iloc[j]
        for m in np.flatnonzero(burst.sum(axis=1) > 1e-9):
            h = burst[m].sum()
            rows.append(_row(m + 1, offer, offer["burst_model"], needs[i].name, float(np.ceil(burst[m].max() - 1e-9)),
                             h, h * offer["burst_usd_per_hour"], None))
    return rows, commits


def _commitment(pool: Pool, offer, names: str, a: int, z: int, k: int, used_h: float) -> dict:
    term = TERM_MONTHS[pool.term]
    paid_h = k * term * HOURS
    return {"offering": pool.offering, "accelerator": offer["accelerator"], "provider": offer["provider"],
            "pricing_model": pool.term, "term_months": term, "instances": k, "start_month": a + 1,
            "end_month": a + int(term), "workloads": names, "usd_per_instance_hour": pool.commit_usd_per_hour,
            "cost_usd": paid_h * pool.commit_usd_per_hour,
            "usd_after_horizon": k * (term - (z - a)) * HOURS * pool.commit_usd_per_hour,
            "utilization": used_h / paid_h}


def make_plan(pf: Portfolio, scenarios: list[Scenario], priced: list[pd.DataFrame]) -> Plan:
    """The plan from each workload's priced frame (``analysis.analyse(s).priced``): pure."""
    t0 = time.perf_counter()
    needs = needs_of(pf, scenarios, priced)
    empty = [n.name for n in needs if n.offers.empty]
    if empty:
        raise ValueError(f"no feasible offer to plan for {', '.join(empty)} (see `estimate` for the exclusions)")
    choice, pools, alone = assign(needs, pf.months)
    rows, commits = [], []
    for pool in pools:
        members = tuple(sorted((i, choice[i]) for i in pool.members))
        r, c = pool_rows(needs, pool, members, pf.months)
        rows += r
        commits += c
    od_total, od_offers = all_on_demand(needs)
    wl = pd.DataFrame([{"workload": n.name, "task": n.task, "offering": n.offers["offering"].iat[j],
                        "accelerator": n.offers["accelerator"].iat[j], "burst_model": n.offers["burst_model"].iat[j],
                        "instances_at_peak": float(n.demand[j].max()), "porting_usd": float(n.offers["porting_usd"].iat[j]),
                        "all_on_demand_offering": od} for n, j, od in zip(needs, choice, od_offers)])
    rows_df = pd.DataFrame(rows).sort_values(["month", "offering", "pricing_model"], ignore_index=True)
    total = float(rows_df["cost_usd"].sum() + sum(c["usd_after_horizon"] for c in commits) + wl["porting_usd"].sum())
    alt = pd.DataFrame(commitment_alternatives(needs, alone, choice))
    return Plan(pf, rows_df, pd.DataFrame(commits), wl, total, od_total, alt, optimise_s=time.perf_counter() - t0)


def plan_portfolio(pf: Portfolio, scenarios: list[Scenario], n_draws: int = 1000) -> Plan:
    """Each workload through ``analysis.analyse`` (its Monte Carlo cut to ``n_draws``: the plan reads
    only the priced frame), then ``make_plan``."""
    t0 = time.perf_counter()
    priced = [analysis.analyse(s, n_draws=n_draws).priced for s in scenarios]
    t1 = time.perf_counter()
    p = make_plan(pf, scenarios, priced)
    return dataclasses.replace(p, analyse_s=t1 - t0)
