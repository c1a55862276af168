"""The recommendation: the top-ranked option that passes every hard constraint, with its reasons in
plain words (one sentence per criterion), the runner-up (the best option on a different
accelerator), what would flip it, the ranking and the exclusions.
"""
from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import catalog, cost, terms
from ..terms import latency_label, metric_unit, usd
from ..model.profile import mlperf_benchmark
from ..scenario import Scenario
from ..terms import DAYS_PER_MONTH, FRAMEWORK_LABEL, PLATFORM_LABEL, PRICING_MODEL_IDS, pricing_label
from .balance import balance_flags
from .evidence import STALE_DAYS, age_days, price_valid_date, price_words  # noqa: F401 - price_words: re-exported
from .nearest import nearest_changes, physical_hints
from .rank import (TIE_BREAKERS, break_ties, describe, flip_conditions, metric_of, p_cheaper, rank, ranking_table,
                   reorderable, ties, weights)
from .rules import excluded_groups, percent_text

TIE_LISTED = 3  # tied offers named one by one in the tie sentence (the rest: a count)


def _clean(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    if v is pd.NA:
        return None
    return v


def _json_records(df, n=None) -> list[dict]:
    if df is None or df.empty:
        return []
    d = df if n is None else df.head(n)
    return [{k: _clean(v) for k, v in r.items()} for r in d.to_dict("records")]


@dataclass(repr=False)
class Recommendation:
    """What to choose and why. ``ranking`` is one row per accelerator x way to pay (best offering);
    ``excluded`` lists what the hard constraints ruled out and why."""

    scenario: str
    accelerator: str | None
    offering: str | None
    provider: str | None
    pricing_model: str | None
    reasons: list[str]
    runner_up: dict | None
    flip_conditions: list[str]
    ranking: pd.DataFrame
    excluded: pd.DataFrame
    metric: str = "cost_usd"
    figures: dict = field(default_factory=dict)
    description: str = ""
    warnings: list[str] = field(default_factory=list)   # recommendation_warnings: stale prices, uncalibrated, optimistic
    nearest_changes: list[dict] = field(default_factory=list)  # nothing feasible: nearest.nearest_changes
    ties: list = field(default_factory=list)  # offers tied with the choice (rank.ties), as records
    unit: str = ""  # the words after the ranking figure (terms.metric_unit)
    # every ranked option (``option``, ``rank``, ``score``) after the tie-breakers: offers_table's ranks, not ranked twice
    ranked: pd.DataFrame | None = None

    def headline(self) -> str:
        """The choice in one sentence."""
        if self.accelerator is None:
            return "No option passes the hard constraints."
        return self.description or (f"{self.accelerator} on {pricing_label(self.pricing_model)} "
                                    f"({self.provider}, {self.offering})")

    def as_dict(self) -> dict:
        """JSON-ready (the ``recommendation`` of ``estimate --json``): the choice, reasons, runner-up,
        flip conditions, top of the ranking, exclusions."""
        return {"scenario": self.scenario, "summary": self.headline(), "accelerator": self.accelerator,
                "offering": self.offering,
                "provider": self.provider, "pricing_model": self.pricing_model, "metric": self.metric,
                "unit": self.unit or None,
                "figures": {k: _clean(v) for k, v in self.figures.items()},
                "reasons": list(self.reasons), "warnings": list(self.warnings),
                "runner_up": ({k: _clean(v) for k, v in self.runner_up.items()} if self.runner_up else None),
                "flip_conditions": list(self.flip_conditions),
                "ranking": _json_records(self.ranking, 15), "excluded": _json_records(self.excluded),
                "nearest_changes": list(self.nearest_changes),
                "ties": [{k: _clean(v) for k, v in t.items()} for t in self.ties]}


def _excluded_table(priced: pd.DataFrame) -> pd.DataFrame:
    """What the hard constraints ruled out: one row per accelerator x way to pay x set of
    constraints (``excluded_codes``), with the number of offerings and the reason of the least bad
    of them."""
    cols = ["option", "accelerator", "pricing_model", "offerings", "constraint"]
    out = priced["excluded_reason"].notna()
    if not out.any():
        return pd.DataFrame(columns=cols)
    metric = priced.loc[out, "metric"].iloc[0] if "metric" in priced else "cost_usd"
    # the columns read below, not a copy of every priced column
    ex = priced.loc[out, list(dict.fromkeys(c for c in ("accelerator", "pricing_model", "offering", "excluded_reason",
                                                        "excluded_codes", metric) if c in priced))]
    ex["kinds"] = ex["excluded_codes"].map(", ".join)
    ex = ex.sort_values(metric, na_position="last", kind="stable")
    g = excluded_groups(ex)
    g["option"] = (g["accelerator"] + " | " + g["offerings"].map(lambda k: f"{k} offering{'s' if k != 1 else ''}")
                   + " | " + g["pricing_model"])
    order = {m: i for i, m in enumerate(PRICING_MODEL_IDS)}
    g["_o"] = g["pricing_model"].map(order)
    return g.sort_values(["accelerator", "_o"], kind="stable")[cols].reset_index(drop=True)


def _unit(s: Scenario) -> str:
    return metric_unit(s.is_training, s.workload.generic is not None)


def _fmt_cost(s: Scenario, v: float) -> str:
    return usd(v) + ("" if s.is_training else " " + _unit(s))


def _choose(ranked: pd.DataFrame) -> tuple[pd.Series, int | None]:
    """The winner (top of the ranking) and the runner-up's row: the best option on another
    accelerator, else the second option."""
    win = ranked.iloc[0]
    others = np.flatnonzero((ranked["accelerator"] != win["accelerator"]).to_numpy())  # positions, not a filtered copy
    runner_idx = int(ranked.index[others[0]]) if len(others) else (1 if len(ranked) > 1 else None)
    return win, runner_idx


def _reason_cost(s: Scenario, priced, ranked, win, ru, n_draws: int, seed: int) -> list[str]:
    """The cost sentences: point estimate, band, Monte Carlo, and whether it is the cheapest."""
    training, metric, w = s.is_training, metric_of(s), s.workload
    unit = _unit(s)
    each = f", {w.output_tokens} output tokens each" if w.output_tokens else ""
    load = f" at your load ({w.requests_per_s:g} requests/s{each})" if not training and w.requests_per_s else ""
    monthly = "" if training else f" ({usd(win['usd_per_month'])} a month)"
    lo_, hi_ = win[metric + "_low"], win[metric + "_high"]
    band = (f"band {usd(lo_)}-{usd(hi_)} from the performance estimate"
            if pd.notna(lo_) and pd.notna(hi_) and hi_ > lo_ * 1.005 else "the performance estimate gives no band")
    out = []
    if ru is not None:
        # One figure per sentence: the point estimate (as in the key figures and estimate --json), its
        # band, and the Monte Carlo median that the ranking uses, labelled as such.
        diff = 1 - win[metric] / ru[metric]
        rel = f"{abs(diff):.0%} {'less' if diff >= 0 else 'more'}"
        median = (f" (Monte Carlo median {usd(win['cost_value'])})"
                  if abs(win["cost_value"] - win[metric]) > 0.005 * abs(win[metric]) else "")
        out.append(f"{describe(win)} costs {usd(win[metric])} {unit}{monthly}{load}{median}; {band}. That is "
                   f"{rel} than the runner-up, {describe(ru)} ({usd(ru[metric])}).")
        p_win = p_cheaper(s, priced, win["option"], ru["option"], n=n_draws, seed=seed)
        extra = ""
        if "p_cheapest" in win and pd.notna(win.get("p_cheapest")):
            extra = f"; it is the cheapest of all {len(ranked)} feasible options in {win['p_cheapest']:.0%} of them"
        out.append(f"It is cheaper than the runner-up in {p_win:.0%} of {n_draws:,} Monte Carlo draws "
                   f"(efficiency, prices within their doubt, spot price, utilization and interruptions varied){extra}.")
    else:
        out.append(f"{describe(win)} is the only option that passes every hard constraint: "
                   f"{usd(win[metric])} {unit}{monthly}{load}; {band}.")
    cheapest = ranked.loc[ranked[metric].astype(float).idxmin()]  # by the point estimate, as the sentences quote
    if cheapest["option"] != win["option"]:
        out.append(f"It is not the cheapest: {describe(cheapest)} costs {usd(cheapest[metric])} "
                   f"({1 - cheapest[metric] / win[metric]:.0%} less) but scores lower on the other criteria.")
    return out


def _tie_cause(t) -> str:
    fixed = getattr(t, "p_top_leads_fixed_prices", np.nan)
    if getattr(t, "cause", "") == "price doubt":
        return f"; at the catalog's prices it would lead in {fixed:.0%}: the doubt of the prices makes the tie"
    return ""


def _tie_words(t) -> str:
    """How the top offer stands against one tied offer (a row of ``rank.ties``). An offer that scores
    the same in every draw (gap zero at the point estimate and at P10 and P90: the same plan at the
    same price, e.g. the same instance in another region, whose price doubt is drawn once per
    instance) is said to be level, not "leading in 0% of the draws"."""
    if t.score_gap == 0 and t.gap_p10 == 0 and t.gap_p90 == 0:
        return "level with the first in every draw: the same plan at the same price"
    return (f"the first leads by {t.score_gap:.3f} at the point estimate but in only {t.p_top_leads:.0%} of the draws, "
            f"gap P10-P90 {t.gap_p10:+.3f} to {t.gap_p90:+.3f}{_tie_cause(t)}")


def _reason_tie(ranked: pd.DataFrame, top, tied: pd.DataFrame, n: int) -> list[str]:
    """The tie, when the top score's lead is within the model's noise and the doubt of the prices
    (``rank.ties``), what makes it (``cause``), and how the tie-breakers (``rank.TIE_BREAKERS``) decided it."""
    if tied.empty:
        return []
    shown = tied.head(TIE_LISTED)  # the rest: a count (the ranking has them)
    # each option's ranked row by position, named by its option as ``ranked.set_index("option").loc[o]`` names
    # it (the fields ``describe`` and ``price_words`` read), not the wide ranked frame re-indexed by option
    at: dict = {}
    for i, o in enumerate(ranked["option"].tolist()):
        at.setdefault(o, i)
    names = {o: ranked.iloc[at[o]].rename(o) for o in [top["option"], *shown["option"]] if o in at}
    others = "; ".join(f"{describe(names[t.option])} (score {names[t.option]['score']:.3f}: {_tie_words(t)})"
                       for t in shown.itertuples())
    if len(tied) > len(shown):
        others += f"; and {len(tied) - len(shown)} more tied offer(s), in the ranking with their scores"
    prices = ", ".join(f"{describe(names[o])}: {price_words(names[o])}"
                       for o in [top["option"], *shown["option"]] if o in names)
    decided = (f"Decided by the tie-breakers, {' then '.join(TIE_BREAKERS)}: {describe(ranked.iloc[0])}"
               if reorderable(tied) else
               f"Kept first: {describe(ranked.iloc[0])}, at the catalog's prices (the tie-breakers, "
               f"{' then '.join(TIE_BREAKERS)}, order only ties of the model's noise, not ties of price doubt)")
    return [f"Tie within the model's noise and the doubt of the prices ({n:,} joint Monte Carlo draws): "
            f"{describe(top)} (score {top['score']:.3f}) and {others}. {decided}. Prices: {prices}."]


def _reason_price(win) -> list[str]:
    """The basis and age of the chosen option's price, with its doubt (``price_words``)."""
    if win.get("pricing_model") == "purchase":
        return [f"Its list price: {price_words(win)}."]
    return [f"Its price: {price_words(win)}."]


def _reason_freshness(win, today: _dt.date | None = None) -> list[str]:
    """Say where the reader looks first that the winning price is stale: undated or older than
    ``STALE_DAYS`` (``price_as_of``, when the price was valid; prices.is_stale)."""
    valid = price_valid_date(win)
    if valid is None:
        return [f"Check its price before committing: the {describe(win)} price has no date of validity "
                "(price_as_of is blank in data/offerings.csv), so it counts as stale."]
    age = age_days(valid, today or _dt.date.today())
    if age > STALE_DAYS:
        return [f"Check its price before committing: the {describe(win)} price is dated {valid.isoformat()} "
                f"({age / 30.4:.0f} months old, over the one-year freshness limit; see the "
                f"assumptions ledger)."]
    return []


def recommendation_warnings(s: Scenario, perf_df: pd.DataFrame, win, today: _dt.date | None = None) -> list[str]:
    """What a reader must know before acting on the choice (``recommendation.warnings``): a price
    that is undated or older than a year (``price_as_of``, issue 12), an estimate outside the
    calibrated range (``calibrated`` False: no published run of this chip family set its efficiency,
    so the wider band applies), a host short for the workload (``balance.balance_flags``: CPU per chip,
    host RAM for loading, NVMe for checkpoints), a generic (non-transformer) model, whose estimate borrows the
    transformer-fitted ceilings and is optimistic (docs/explanation/limits.md), and an instance shape no
    source confirms (``shape_confirmed`` false, ``unconfirmed_shape``)."""
    out = []
    valid = price_valid_date(win)
    age = age_days(valid, today or _dt.date.today()) if valid is not None else np.nan
    if valid is None:
        out.append(f"Undated price: {win['offering']} ({pricing_label(win['pricing_model'])}) has no price_as_of; "
                   "check the provider's current price before acting.")
    elif age > STALE_DAYS:
        out.append(f"Stale price: {win['offering']} ({pricing_label(win['pricing_model'])}) was valid on "
                   f"{valid.isoformat()}, {age / 365.25:.1f} years ago; check the provider's current price.")
    row = perf_df[perf_df["accelerator"] == win["accelerator"]]
    bench = mlperf_benchmark(s.workload.generic, s.workload.task) if s.workload.generic is not None else None
    if s.workload.generic is not None and bench is None:
        out.append(f"Optimistic, uncalibrated estimate ({terms.GENERIC_ESTIMATE_LABEL}): a generic (non-transformer) "
                   "model runs at the efficiency fitted on published ResNet-50 runs (MLPerf, NVIDIA "
                   "DeepLearningExamples); no run of this model checks it, so read time and cost as lower bounds.")
    elif bench is not None:
        out.append(f"Generic estimate {terms.GENERIC_CALIBRATED_LABEL.format(benchmark=bench)}: its efficiency (and, "
                   f"for training, a fixed time per step) is fitted on the published {bench} runs of "
                   "data/reference_runs.csv; chips and per-chip batches those runs do not cover are extrapolated.")
    elif "calibrated" in row and len(row) and row["calibrated"].iloc[0] is not None and not bool(row["calibrated"].iloc[0]):
        # the parameter whose family value makes the estimate "calibrated" (estimate.py, serving.py): the family
        # may have published runs that set other parameters, so the sentence names this one, not "no run"
        what = ("decode efficiency (decode_memory_efficiency)" if s.workload.task == "inference"
                else "matmul ceiling (matmul_ceiling)")
        out.append(f"Uncalibrated estimate: {win['accelerator']}'s chip family has no fitted {what} of its own; the "
                   "value used is pooled or borrowed from a related family, and the wider uncalibrated band applies "
                   "(data/efficiency.csv lists what its published runs do set).")
    if unconfirmed_shape(win):
        out.append(f"Unconfirmed shape: {win['offering']} is priced as {win['chips_per_instance']:.0f} chip(s) per "
                   "instance, a shape no source confirms the provider sells (data/offerings.csv shape_confirmed "
                   "false); check the provider's minimum order before acting.")
    return out + balance_flags(s, win)[0]


def unconfirmed_shape(row) -> bool:
    """True where the offering's ``shape_confirmed`` is false: no source confirms the provider sells
    ``chips_per_instance`` chips per instance (blank counts as confirmed: the source lists the shape)."""
    v = row.get("shape_confirmed")
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and v is not pd.NA and not bool(v)


def _reason_time(s: Scenario, win) -> str:
    """How long the run takes (training) or the latency and fleet (serving)."""
    w = s.workload
    if s.is_training:
        c = s.constraints
        dl = ""
        if c.deadline_days and pd.notna(win.get("p_meets_deadline", np.nan)):
            wait = (f"after {win['start_days']:g} days to start ({win.get('start_days_source')}) "
                    if win.get("start_days", 0) > 0 else "")
            dl = (f"; {wait}it meets the {c.deadline_days:g}-day deadline with "
                  f"probability {win['p_meets_deadline']:.2f} (deadline_confidence {c.deadline_confidence:g})")
        elif c.deadline_days:
            dl = f", inside the {c.deadline_days:g}-day deadline"
        band = ""
        days = float(win["training_days"])
        unit, scale = ("hours", 24.0) if days < 2 else ("days", 1.0)
        if ("training_days_low" in win and pd.notna(win["training_days_low"]) and pd.notna(win["training_days_high"])
                and win["training_days_high"] > win["training_days_low"] * 1.005):
            band = f" (band {win['training_days_low'] * scale:.1f}-{win['training_days_high'] * scale:.1f})"
        return (f"It finishes in {days * scale:.1f} {unit}{band} on {win['chips']:,.0f} chips "
                f"({win['instances']:,.0f} x {win['instance']}){dl}.")
    bits = []
    tail = win.get("ttft_ms_at_slo_percentile")
    lat = "request latency" if w.generic is not None else "TTFT"
    if pd.notna(tail) and w.requests_per_s is not None:
        note = ([f"target {w.ttft_slo_ms:g}"] if w.ttft_slo_ms else []) + [f"{win['ttft_ms']:.0f} ms unloaded"]
        bits.append(f"{lat} {tail:.0f} ms at P{w.ttft_slo_percentile:g} under {w.requests_per_s:g} requests/s "
                    f"({'; '.join(note)})")
    elif pd.notna(win.get("ttft_ms")):
        bits.append(f"{lat} {win['ttft_ms']:.0f} ms" + (f" (target {w.ttft_slo_ms:g})" if w.ttft_slo_ms else ""))
    if pd.notna(win.get("user_rtt_ms")):
        bits[-1:] = [b + f", incl. {win['user_rtt_ms']:.0f} ms round trip to {', '.join(w.user_locations)}"
                     for b in bits[-1:]]
    if pd.notna(win.get("tpot_ms")):
        bits.append(f"{win['tpot_ms']:.0f} ms per output token" + (f" (target {w.tpot_slo_ms:g})" if w.tpot_slo_ms else ""))
    fleet = f"{win['chips']:,.0f} chip{'s' if win['chips'] != 1 else ''}"
    if win.get("layout") == "disaggregated":
        fleet += (f" disaggregated: {win['prefill_chips']:,.0f} prefill chips at TP {win['prefill_tp']:.0f} and "
                  f"{win['decode_chips']:,.0f} decode chips at TP {win['decode_tp']:.0f}, "
                  f"{win['kv_transfer_ms']:.1f} ms to move each prompt's KV cache")
    elif w.generic is not None and pd.notna(win.get("replicas")):
        fleet += f" ({win['replicas']:,.0f} data-parallel cop{'ies' if win['replicas'] != 1 else 'y'} of the model)"
    elif pd.notna(win.get("replicas")) and pd.notna(win.get("tp")):
        dims = "".join(f" x {k.upper()} {win[k]:.0f}" for k in ("pp", "ep") if pd.notna(win.get(k)) and win[k] > 1)
        fleet += f" ({win['replicas']:,.0f} replica{'s' if win['replicas'] != 1 else ''} x TP {win['tp']:.0f}{dims})"
    has_slo = w.ttft_slo_ms is not None or w.tpot_slo_ms is not None
    return (f"It {'meets the latency targets' if has_slo else 'serves the load'} with {fleet} on "
            f"{win['instances']:,.0f} x {win['instance']}: " + ", ".join(bits) + ".")


def _reason_ecosystem(s: Scenario, win) -> str:
    fw = FRAMEWORK_LABEL[win["framework"]]
    plat = PLATFORM_LABEL.get(win.get("platform"), win.get("platform"))
    if not win["needs_porting"]:
        return (f"It runs {fw} with '{win['framework_support']}' support on {plat} (software.csv); "
                f"ecosystem score {win['ecosystem_score']:.2f}, portability {win['portability_score']:.2f}.")
    cost = win.get("porting_usd", 0.0)
    port = (f"a porting cost of {usd(cost)} is included" if pd.notna(cost) and cost > 0
            else "no porting cost is included (set pricing.porting_weeks or pricing.porting_cost_usd)")
    sw = catalog.software()
    here = sw[(sw["platform"] == win["platform"]) & sw["capability"].isin(list(FRAMEWORK_LABEL))]
    good = [FRAMEWORK_LABEL[c] for c, sup in zip(here["capability"], here["support"]) if sup in ("native", "supported")]
    route = f"it runs {' or '.join(good)} well on {plat}; " if good else ""
    return f"It needs porting ({win['porting_why']}, software.csv): {route}{port}."


def _port_note(win) -> str:
    """The headline's word on a needed port: the move and the porting cost included (decision.rules
    framework_fit: data/effort.csv, or the stated default), so a cheaper chip that needs a port is
    never read as a drop-in choice."""
    if not bool(win.get("needs_porting", False)):
        return ""
    plat = PLATFORM_LABEL.get(win.get("platform"), win.get("platform"))
    cost = win.get("porting_usd", 0.0)
    paid = f", {usd(cost)} porting included" if pd.notna(cost) and cost > 0 else ""
    return f" - needs a port of your {FRAMEWORK_LABEL[win['framework']]} code to {plat}{paid}"


def _reason_term(s: Scenario, win) -> list[str]:
    """What the way to pay adds: idle hours of a term, spare spot instances or lost spot hours."""
    p = s.pricing
    if win["pricing_model"] == "capacity_block" and pd.notna(win.get("block_days", np.nan)):
        what = (f"holds the {win['training_days']:,.1f}-day run" if s.is_training
                else f"covers your {p.horizon_months:g}-month horizon")
        return [f"The capacity block is {win['block_days']:,.0f} days, paid up front, the shortest that {what} "
                f"({win['price_derivation']})."]
    if s.is_training and win["kind"] == "reserved" and pd.notna(win.get("contract_usd", np.nan)):
        host = win.get("hosting_usd", 0.0)
        host = (f" Hosting the bought systems (colocation, network, support, cost of capital) is {usd(host)} of "
                f"the bill ({win['price_derivation']})." if pd.notna(host) and host > 0 else "")
        return [f"The {win['term_months']:g}-month term is paid in full: the contract is {usd(win['contract_usd'])}, "
                f"of which {p.commitment_backfill_fraction:.0%} of the hours after the run are filled by other work "
                "(pricing.commitment_backfill_fraction)." + host]
    if win["kind"] == "reserved":
        term = win["term_months"]
        return [f"{pricing_label(win['pricing_model']).capitalize()} is paid for {term:g} months whether used "
                f"or not; at {p.utilization:.0%} utilization over your {p.horizon_months:g}-month horizon it pays "
                f"{win['paid_per_used_hour']:.2f} hours per hour of work ({win['price_derivation']})."]
    if win["pricing_model"] == "spot" and pd.notna(win.get("spot_availability_target", np.nan)):
        k, n = float(win["spare_instances"]), float(win["instances"])
        u = float(win.get("instances_per_replica", 1.0)) if pd.notna(win.get("instances_per_replica")) else 1.0
        # replicas out at once (a replica of u instances is out when any of them is): Poisson((n + k) r R)
        short = float(cost.poisson_sf(int(round(k / u)), (n + k) * p.spot_interruptions_per_hour * p.restart_h))
        target = f"{p.spot_availability_target * 100:g}% availability target"
        how = (f"with {k:.0f} spare instance{'' if k == 1 else 's'} ({target}): +{k / n:.0%} instance-hours; "
               if k > 0 else f"with 0 spare instances ({target}): ")
        return [f"It keeps the latency targets through spot interruptions ({p.spot_interruptions_per_hour:g} per "
                f"instance-hour, a {p.restart_min:g}-min restart each) {how}the fleet is short of capacity "
                f"{short:.2%} of the time (instances out at once: Poisson, M/G/inf; "
                "pricing.spot_availability_target)."]
    if s.is_training and pd.notna(win.get("goodput", np.nan)):
        return [f"Failures and checkpoints: {win['interruptions_per_hour']:.3g} interruptions an hour on "
                f"{win['hosts']:,.0f} hosts, a {win['checkpoint_write_s']:.2g}-s checkpoint every "
                f"{win['checkpoint_interval_min']:.0f} min (Young/Daly optimum) and {p.restart_min:g}-min restarts "
                f"leave a goodput of {win['goodput']:.1%}."]
    if win["pricing_model"] == "spot":
        how = f"a {p.restart_min:g}-min restart each"
        return [f"Spot interruptions ({p.spot_interruptions_per_hour:g} per instance-hour, {how}) add "
                f"{percent_text(win['paid_per_used_hour'] - 1)} to the hours paid."]
    return []


def _reason_score(s: Scenario, win, ru) -> str:
    wts = weights(s)
    return ("Weighted score " + f"{win['score']:.2f} of 1 (weights: "
            + ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in wts.items() if v > 0)
            + (f"); runner-up {ru['score']:.2f}." if ru is not None else ")."))


def _runner_up(s: Scenario, ru, metric: str) -> dict | None:
    if ru is None:
        return None
    return {"accelerator": ru["accelerator"], "offering": ru["offering"], "provider": ru["provider"],
            "pricing_model": ru["pricing_model"], "score": float(ru["score"]), metric: float(ru[metric]),
            "summary": f"{describe(ru)}: {_fmt_cost(s, ru[metric])} (point estimate), score {ru['score']:.2f}"}


def _figures(s: Scenario, win, metric: str) -> dict:
    figures = {metric: float(win[metric]), f"{metric}_low": float(win[f"{metric}_low"]),
               f"{metric}_high": float(win[f"{metric}_high"]), "score": float(win["score"]),
               "chips": float(win["chips"]), "instances": float(win["instances"])}
    if s.is_training:
        figures["training_days"] = float(win["training_days"])
    else:
        figures["usd_per_month"] = float(win["usd_per_month"])
        figures.update(_latency_figures(s, win))
    for k in ("hosting_usd", "user_rtt_ms"):  # the bill's hosting and the users' round trip, where they count
        if pd.notna(win.get(k)) and (k == "user_rtt_ms" or win[k] > 0):
            figures[k] = float(win[k])
    if "p_cheapest" in win and pd.notna(win.get("p_cheapest")):
        figures["p_cheapest"] = float(win["p_cheapest"])
    figures[f"{metric}_p50"] = float(win["cost_value"])
    for k in ("energy_kwh", "co2_kg", "energy_kwh_per_month", "co2_kg_per_month"):  # workbook.cost.energy
        if k in win and pd.notna(win.get(k)):
            figures[k] = float(win[k])
    figures.update(_question_figures(s, win))
    return figures


TAIL_KEYS = ("ttft_ms_p50", "ttft_ms_p99", "ttft_ms_at_slo_percentile")
# the serving layout of the chosen option (model.serving; disaggregated prefill/decode pools)
SERVING_LAYOUT_KEYS = ("layout", "prefill_chips", "decode_chips", "prefill_tp", "decode_tp", "kv_transfer_ms")


def with_tails(perf_df: pd.DataFrame, win) -> pd.Series:
    """The chosen option's row with its accelerator's TTFT tails under load (``perf_df``: the serving
    model's ``ttft_ms_p50``/``ttft_ms_p99``/``ttft_ms_at_slo_percentile``, which the priced frame
    does not carry)."""
    win = win.copy()
    row = perf_df[perf_df["accelerator"] == win["accelerator"]] if "accelerator" in perf_df else perf_df.iloc[:0]
    for k in TAIL_KEYS:
        if k not in win or pd.isna(win.get(k)):
            win[k] = float(row[k].iloc[0]) if k in row and len(row) and pd.notna(row[k].iloc[0]) else np.nan
    for k in SERVING_LAYOUT_KEYS:
        if k not in win or pd.isna(win.get(k)):
            win[k] = row[k].iloc[0] if k in row and len(row) and pd.notna(row[k].iloc[0]) else None
    return win


def _latency_figures(s: Scenario, win) -> dict:
    """Serving latency of the choice: TTFT at the SLO's percentile under the request rate (else
    unloaded), with the percentile and target, and the time per output token with its target."""
    w, out = s.workload, {}
    tail = win.get("ttft_ms_at_slo_percentile")
    if pd.notna(tail) and w.requests_per_s is not None:
        out.update(ttft_ms_at_slo_percentile=float(tail), ttft_slo_percentile=float(w.ttft_slo_percentile))
    elif pd.notna(win.get("ttft_ms")):
        out["ttft_ms"] = float(win["ttft_ms"])
    if pd.notna(win.get("tpot_ms")):
        out["tpot_ms"] = float(win["tpot_ms"])
    for k in ("ttft_slo_ms", "tpot_slo_ms"):
        if getattr(w, k) is not None:
            out[k] = float(getattr(w, k))
    return out


def hosted_api_reference(s: Scenario, win) -> dict:
    """A hosted API at the scenario's quoted price (``pricing.hosted_api_usd_per_million_*_tokens``) as
    a reference beside the chosen self-hosted option (never ranked): its cost per million output
    tokens (prompt tokens included: c / O · 10^6, ``cost.rates.hosted_api_usd_per_request``), its
    monthly bill at the option's load (requests = output tokens a month / O) and the request rate at
    which that bill equals the option's monthly cost (``cost.rates.breakeven_requests_per_s_hosted_api``).
    Empty for training or without a quote."""
    p, w = s.pricing, s.workload
    if s.is_training or p.hosted_api_usd_per_million_output_tokens is None or not w.output_tokens:
        return {}
    c = float(cost.rates.hosted_api_usd_per_request(w.input_tokens or 0, w.output_tokens,
                                                    p.hosted_api_usd_per_million_input_tokens,
                                                    p.hosted_api_usd_per_million_output_tokens))
    month = float(win["usd_per_month"])
    requests_per_month = float(win["tokens_per_month"]) / w.output_tokens
    return {"hosted_api_usd_per_million_output_tokens": c / w.output_tokens * 1e6,
            "hosted_api_usd_per_month": c * requests_per_month,
            "hosted_api_breakeven_requests_per_s": float(cost.rates.breakeven_requests_per_s_hosted_api(
                month, c, w.hours_per_day)),
            "requests_per_s": requests_per_month / (3600.0 * w.hours_per_day * DAYS_PER_MONTH)}


def _reason_hosted_api(s: Scenario, win, ref: dict) -> list[str]:
    """The hosted API reference in one sentence (``hosted_api_reference``)."""
    if not ref:
        return []
    p = s.pricing
    be, now = ref["hosted_api_breakeven_requests_per_s"], ref["requests_per_s"]
    side = (f"your {now:.3g} requests/s are above it, so self-hosting costs less" if now >= be else
            f"your {now:.3g} requests/s are below it, so the API costs less (a larger load needs a larger fleet: "
            f"compare {usd(ref['hosted_api_usd_per_million_output_tokens'])} with this option's "
            f"{usd(win['usd_per_million_tokens'])} per million output tokens)")
    return [f"Reference, not an offer: a hosted API at your quoted price "
            f"({usd(p.hosted_api_usd_per_million_input_tokens)} per million input and "
            f"{usd(p.hosted_api_usd_per_million_output_tokens)} per million output tokens) costs "
            f"{usd(ref['hosted_api_usd_per_million_output_tokens'])} per million output tokens (input tokens "
            f"included), {usd(ref['hosted_api_usd_per_month'])} a month at your load; its bill equals this "
            f"option's {usd(win['usd_per_month'])} a month at {be:.3g} requests/s (break-even): {side}."]


def _p_within(limit: float, lo: float, hi: float) -> float:
    """P(X <= limit) for X log-normal with P10 ``lo`` and P90 ``hi`` (the performance band's reading,
    assumptions ledger "performance band"): z = (ln limit - mu) / sigma, mu = (ln lo + ln hi) / 2,
    sigma = (ln hi - ln lo) / (2 x 1.2816)."""
    if not (lo > 0 and hi > lo):
        return float(limit >= lo) if lo > 0 else float("nan")
    mu, sigma = (math.log(lo) + math.log(hi)) / 2, (math.log(hi) - math.log(lo)) / (2 * 1.2816)
    return 0.5 * (1 + math.erf((math.log(limit) - mu) / (sigma * math.sqrt(2))))


def _question_figures(s: Scenario, win) -> dict:
    """The figures that answer the scenario's own question: chips billed (whole instances) next to
    chips used (spare spot instances included); the deadline and the chance of meeting it (training); the hours the night's work
    takes against the batch window (batch serving: work = demand x hours_per_day, done at the fleet's
    output tokens/s)."""
    out = {"chips_billed": float(win["chips_billed"])}
    c, w = s.constraints, s.workload
    if s.is_training and c.deadline_days:
        out["deadline_days"] = float(c.deadline_days)
        lo, hi = win.get("training_days_low"), win.get("training_days_high")
        if pd.notna(lo) and pd.notna(hi):
            out["p_meets_deadline"] = _p_within(float(c.deadline_days), float(lo), float(hi))
    if not s.is_training and w.batch_window_hours and pd.notna(win.get("demand_tokens_per_s")) \
            and win.get("output_tokens_per_s"):
        out["batch_window_hours"] = float(w.batch_window_hours)
        out["batch_hours_needed"] = float(w.hours_per_day * win["demand_tokens_per_s"] / win["output_tokens_per_s"])
    return out


def _nothing_feasible(s: Scenario, priced, ranked, excluded, metric: str) -> Recommendation:
    """No option passes: the most common reasons, and the nearest changes that would make one pass
    (``nearest.nearest_changes``; JSON ``nearest_changes``: keys with ``from``/``to``, the option, a sentence)."""
    why = excluded.groupby("constraint").size().sort_values(ascending=False)
    reasons = ["Every option is ruled out. Most common reasons: "
               + "; ".join(f"{k} ({v} option group{'s' if v != 1 else ''})" for k, v in why.head(3).items())]
    near = nearest_changes(s, priced)
    flips = [c["text"] for c in near] + physical_hints(s, priced)
    flips = flips or ["Relax a constraint (budget, deadline, max_chips, frameworks) or add candidates."]
    as_json = [{"changes": {k: {"from": _clean(a), "to": _clean(b)} for k, (a, b) in c["changes"].items()},
                "stretch": _clean(c["stretch"]), "accelerator": c["option"]["accelerator"],
                "offering": c["option"]["offering"], "pricing_model": c["option"]["pricing_model"],
                metric: _clean(c["option"][metric]), "text": c["text"]} for c in near]
    return Recommendation(s.name, None, None, None, None, reasons, None, flips, ranked, excluded, metric,
                          nearest_changes=as_json, unit=_unit(s))


def recommend(s: Scenario, perf_df: pd.DataFrame, priced: pd.DataFrame, mc: pd.DataFrame | None = None,
              n_draws: int = 10000, seed: int = 0) -> Recommendation:
    """The top-ranked option that passes every hard constraint (``priced`` carries the exclusions of
    ``apply_constraints``), with reasons in plain sentences (numbers included), the runner-up (best
    option on another accelerator), the conditions that would flip the decision, the ranking and the
    exclusions."""
    metric = metric_of(s)
    ranked = rank(s, priced, mc)
    excluded = _excluded_table(priced)
    if ranked.empty:
        return _nothing_feasible(s, priced, ranked, excluded, metric)
    tied = ties(s, priced, ranked, n=min(n_draws, 2000), seed=seed)
    top = ranked.iloc[0]
    ranked = break_ties(ranked, reorderable(tied))
    win, runner_idx = _choose(ranked)
    win = win if s.is_training else with_tails(perf_df, win)
    ru = ranked.iloc[runner_idx] if runner_idx is not None else None
    reasons = _reason_tie(ranked, top, tied, min(n_draws, 2000))
    reasons += _reason_cost(s, priced, ranked, win, ru, n_draws, seed)
    reasons += _reason_price(win)
    reasons += _reason_freshness(win)
    reasons.append(_reason_time(s, win))
    reasons.append(_reason_ecosystem(s, win))
    reasons += _reason_term(s, win)
    api = hosted_api_reference(s, win)
    reasons += _reason_hosted_api(s, win, api)
    reasons.append(_reason_score(s, win, ru))
    flips = flip_conditions(s, priced, ranked, mc, runner_idx)
    return Recommendation(s.name, win["accelerator"], win["offering"], win["provider"], win["pricing_model"],
                          reasons, _runner_up(s, ru, metric), flips, ranking_table(ranked, s), excluded, metric,
                          {**_figures(s, win, metric), **{k: v for k, v in api.items() if k.startswith("hosted_api")}},
                          describe(win) + _port_note(win), recommendation_warnings(s, perf_df, win),
                          ties=tied.to_dict("records"), unit=_unit(s),
                          ranked=ranked[["option", "rank", "score"]].copy())
