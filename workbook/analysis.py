"""The one pipeline: a scenario in, every table of the decision out.

``analyse(s)`` runs the performance model on each candidate, checks the software fit, prices every
offering and way to pay, marks the hard constraints, draws the Monte Carlo and recommends, once; the CLI (``estimate``), the five notebooks, the widgets,
the app and the batch reports all call it and read its ``Analysis``. ``summary_json(a)`` is the
``estimate --json`` object (the batch reports' ``summary.json``): its keys (``options``,
``recommendation``, ``monte_carlo``, ...) are a contract that scripts outside the repository read.
"""
from __future__ import annotations

import copy
import datetime as _dt
import math
import os
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from . import catalog, cost, decision, paths, terms
from .calibrate import layouts, own as own_runs
from .cost import reliability
from .decision.rank import reorderable
from .model import estimate, generic as model_generic, offers as model_offers
from .model.efficiency import Efficiency
from .model.memo import Memo
from .model.profile import workload_profile
from .errors import InputError
from .scenario import Scenario, with_overrides
from .terms import usd

COST_KEYS = ("cost_usd", "usd_per_million_tokens", "usd_per_month")
ENERGY_KEYS = ("energy_kwh", "co2_kg", "energy_kwh_per_month", "co2_kg_per_month")  # workbook.cost.energy
# how firm each price is (workbook.cost.doubt): every offer and every option's cheapest offer carry them
PRICE_KEYS = ("price_basis", "price_age_days", "price_doubt_low", "price_doubt_high")
MC_DRAWS = 10000


@dataclass(frozen=True)
class Analysis:
    """Every intermediate table of one scenario's analysis (data only)."""

    scenario: Scenario
    perf: pd.DataFrame                 # one row per accelerator considered (terms.ESTIMATE_COLUMNS)
    priced: pd.DataFrame               # every accelerator x offering x pricing model, excluded ones marked
    mc: pd.DataFrame                   # Monte Carlo summary per option
    recommendation: decision.Recommendation
    fit: pd.DataFrame | None = None    # software fit per accelerator (decision.framework_fit)
    offers: pd.DataFrame | None = None  # every offering x pricing model, ranked (decision.offers_table)
    own_runs: pd.DataFrame | None = None  # the team's runs (scenario.measurements), ``used`` where near
    adjustments: pd.DataFrame | None = None  # the efficiency they changed (calibrate.own.adjust)


def price(s: Scenario, perf_df: pd.DataFrame, fit: pd.DataFrame | None = None,
          offerings: pd.DataFrame | None = None, systems: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every option priced, with its exclusions: framework_fit -> price_options (with the porting
    cost of the fit) -> apply_constraints. ``offerings``/``systems`` replace the catalogs (tests)."""
    fit = decision.framework_fit(s, perf_df["accelerator"]) if fit is None else fit
    priced = cost.price_options(s, perf_df, fit, offerings=offerings, systems=systems)
    # one block per dtype (pricing adds its columns one at a time): every later row filter takes each
    # block once, not each column
    return decision.apply_constraints(s, priced, fit).copy()


def offer_performance(s: Scenario, perf_df: pd.DataFrame, eff: Efficiency | None = None) -> pd.DataFrame | None:
    """Training: the performance of every offering on its own shape and network, sized for the
    deadline at ``constraints.deadline_confidence`` after the offer's start days
    (``model.offers.plan_offers``); accelerators that fit nowhere keep their comparison row. None for
    serving (the per-accelerator rows are priced)."""
    if not s.is_training or perf_df.empty:
        return None
    shapes = cost.offer_prices(s).drop_duplicates("offering")
    shapes = shapes[shapes["accelerator"].isin(perf_df["accelerator"])]
    fits = perf_df.set_index("accelerator")["fits"].astype("boolean").fillna(False)
    ok = shapes[shapes["accelerator"].map(fits).fillna(False).astype(bool)]
    q = {}
    for _, r in perf_df[perf_df["fits"].astype("boolean").fillna(False)].iterrows():
        d = float(r["training_days"])
        q[r["accelerator"]] = reliability.deadline_quantile(float(r["training_days_low"]) / d,
                                                            float(r["training_days_high"]) / d,
                                                            s.constraints.deadline_confidence)
    # the columns the plans and the start days read, not every price column of the offers
    ok = ok[[c for c in ("offering", "accelerator", "provider", "chips_per_instance", "inter_node_bytes_per_s") if c in ok]]
    planned = model_offers.plan_offers(s, ok, lambda sh, n: reliability.lead_time(
        sh["provider"], sh["accelerator"], n, s.constraints.start_days)["start_days"], q, eff=eff)
    rest = shapes[~shapes["offering"].isin(ok["offering"])][["offering", "accelerator"]]
    rest = rest.merge(perf_df, on="accelerator", how="left")
    out = pd.concat([planned, rest], ignore_index=True) if len(rest) else planned
    return out if len(out) else None


# precisions tried, in order, when nothing fits in the scenario's own (serving quantises weights; training
# can run its matmuls in FP8: Micikevicius et al. 2022, "FP8 Formats for Deep Learning")
OTHER_PRECISIONS = {"inference": ("fp8", "int8", "int4"), "training": ("fp8",), "fine-tuning": ("fp8",)}


# scenario keys the performance model never reads (money, the decision's weights, labels): a change to
# them (the app's utilization or pricing controls) reuses the comparison
_NOT_PERFORMANCE = {"name", "title", "description", "pricing", "weights", "measurements"}
_COMPARES = Memo(64)


def compare(s: Scenario, eff: Efficiency | None) -> pd.DataFrame:
    """``model.estimate.compare``, cached per process on the scenario's performance inputs, the
    efficiency and the data files' state (``paths.data_state``); a copy per call."""
    key = (s.model_dump_json(exclude=_NOT_PERFORMANCE), eff, paths.data_state())
    return _COMPARES.get(key, lambda: estimate.compare(s, eff)).copy()


_BEFORE_DECISION = Memo(4)


def _core(s: Scenario, eff: Efficiency | None, n_draws: int, seed: int, share: bool = False):
    """Performance, software fit, per-offer plans, prices, Monte Carlo and the recommendation. With
    ``share`` (``shared_analyse``: the app, the report kernel), the tables before the decision are kept
    per process for equal inputs but the weights, which only ``decision.recommend`` reads (the app's
    weight sliders), and handed out as copies."""
    def tables():
        perf_df = compare(s, eff)
        fit = decision.framework_fit(s, perf_df["accelerator"])
        offer_perf = offer_performance(s, perf_df, eff)
        priced = price(s, perf_df if offer_perf is None else offer_perf, fit)
        return perf_df, fit, priced, cost.monte_carlo(s, priced, n=n_draws, seed=seed)
    if share:
        key = (s.model_dump_json(exclude={"weights"}), eff, int(n_draws), int(seed), _dt.date.today(),
               paths.data_state([s.measurements] if s.measurements else []))
        perf_df, fit, priced, mc = (t.copy() for t in _BEFORE_DECISION.get(key, tables))
    else:
        perf_df, fit, priced, mc = tables()
    return perf_df, fit, priced, mc, decision.recommend(s, perf_df, priced, mc, n_draws=n_draws, seed=seed)


def precision_changes(s: Scenario, priced: pd.DataFrame, eff: Efficiency | None = None,
                      n_draws: int = 1000) -> list[dict]:
    """When nothing passes and memory, a chip limit or a missing peak rules options out: the first
    other precision (``OTHER_PRECISIONS``) with which an option passes every hard constraint, as a
    nearest change (the ``nearest_changes`` entry format, key ``workload.precision``). Empty when none does."""
    codes = {c for cs in priced.get("excluded_codes", pd.Series(dtype=object)) for c in cs}
    w = s.workload
    if not codes & {"memory", "precision", "chips"}:  # too many chips: often the weights that do not fit
        return []
    for p in OTHER_PRECISIONS[w.task]:
        if p == w.precision:
            continue
        try:
            rec = _core(with_overrides(s, **{"workload.precision": p}), eff, n_draws, 0)[-1]
        except InputError:
            continue
        if rec.accelerator is not None:
            metric, fig = rec.metric, rec.figures.get(rec.metric)
            unit = terms.metric_unit(s.is_training, s.workload.generic is not None)
            return [{"changes": {"workload.precision": {"from": w.precision, "to": p}}, "stretch": None,
                     "accelerator": rec.accelerator, "offering": rec.offering, "pricing_model": rec.pricing_model,
                     metric: fig, "text": f"Change workload.precision from {w.precision} to {p}: then {rec.headline()} "
                                          f"passes every hard constraint ({usd(fig)} {unit})."}]
    return []


# Where the analyses of one process are shared (the report kernel, which runs the five notebooks of a
# scenario and its summary estimate, and the app's kernel): set by the report runner and the app.
SHARE_ENV = "WORKBOOK_SHARE_ANALYSIS"
_SHARED = Memo(8)


def shared_analyse(s: Scenario, n_draws: int = MC_DRAWS, seed: int = 0, measurements: bool = True) -> Analysis:
    """``analyse`` computed once per process for equal inputs (the scenario's content, the draws, the
    seed and the data files' state) and handed out as a deep copy, so a caller that changes its tables
    changes only its own. ``analyse`` calls it when ``WORKBOOK_SHARE_ANALYSIS`` is set (the report
    kernel: notebooks 02, 04, 05 and the summary share one analysis; the app)."""
    key = (s.model_dump_json(), int(n_draws), int(seed), bool(measurements),
           paths.data_state([s.measurements] if s.measurements else []))
    return copy.deepcopy(_SHARED.get(key, lambda: _analyse(s, n_draws, seed, measurements, share=True)))


def analyse(s: Scenario, n_draws: int = MC_DRAWS, seed: int = 0, measurements: bool = True) -> Analysis:
    """The whole analysis of ``s``: performance per accelerator (``options``) and per offering
    (training), software fit, prices and exclusions, Monte Carlo, recommendation, offers. With
    ``s.measurements`` (and ``measurements`` true) the efficiency is the published calibration
    adjusted to the team's runs near the workload (``calibrate.own.scenario_efficiency``). When no
    option passes, the nearest changes include another precision that would make one pass
    (``precision_changes``). Where ``WORKBOOK_SHARE_ANALYSIS`` is set, equal inputs are computed
    once per process (``shared_analyse``)."""
    if os.environ.get(SHARE_ENV):
        return shared_analyse(s, n_draws, seed, measurements)
    return _analyse(s, n_draws, seed, measurements)


def _analyse(s: Scenario, n_draws: int, seed: int, measurements: bool, share: bool = False) -> Analysis:
    use = s.measurements if measurements else None
    eff, adjustments, runs = own_runs.scenario_efficiency(s.model_copy(update={"measurements": use}),
                                                          workload_profile(s.workload))
    perf_df, fit, priced, mc, rec = _core(s, eff, n_draws, seed, share)
    if rec.accelerator is None:
        extra = precision_changes(s, priced, eff)
        rec.nearest_changes = list(rec.nearest_changes) + extra
        rec.flip_conditions = [c["text"] for c in extra] + list(rec.flip_conditions)
    tied = [t["option"] for t in rec.ties]
    offers = decision.offers_table(s, priced, mc, tied, reorderable(rec.ties), ranked=rec.ranked)
    return Analysis(s, perf_df, priced, mc, rec, fit, offers, runs, adjustments)


def _decision_row(label: str, a: Analysis, chips: list[str], key: str) -> dict:
    rec, perf = a.recommendation, a.perf.set_index("accelerator")
    row = {"calibration": label, "recommendation": rec.headline(), "accelerator": rec.accelerator,
           "pricing_model": rec.pricing_model, rec.metric: rec.figures.get(rec.metric)}
    for chip in chips:
        for suffix in ("", "_low", "_high"):
            row[f"{chip} {key}{suffix}"] = perf.loc[chip, key + suffix] if chip in perf.index else None
    return row


def with_and_without_measurements(s: Scenario, a: Analysis | None = None, n_draws: int = MC_DRAWS,
                                  seed: int = 0) -> pd.DataFrame:
    """The decision with the published calibration only and with the team's runs
    (``s.measurements``): one row each, the recommendation, its figure (``Recommendation.metric``)
    and, for every chip the runs moved, its estimate with the band (``mfu`` for training,
    ``output_tokens_per_s`` for serving). ``a``: the scenario's analysis already made (with its
    measurements), reused. Without measurements, one row saying so."""
    a = analyse(s, n_draws=n_draws, seed=seed) if a is None else a
    if not s.measurements:
        return pd.DataFrame([{**_decision_row("published runs only", a, [], ""),
                              "note": "the scenario names no measurements (key `measurements`: a CSV of the team's runs)"}])
    key = "mfu" if s.is_training else "output_tokens_per_s"
    chips = [] if a.adjustments is None else sorted(set(a.adjustments["accelerator"]))
    plain = analyse(s, n_draws=n_draws, seed=seed, measurements=False)
    return pd.DataFrame([_decision_row("published runs only", plain, chips, key),
                         _decision_row("with the team's runs", a, chips, key)])


def jsonable(x):
    """JSON-ready copy: numpy scalars and arrays to Python, NaN, infinities and pandas NA to None,
    dates to ISO strings, pydantic models to dicts."""
    t = type(x)  # the common exact types first (a numpy float is a float subclass: not here)
    if t is str or t is int or t is bool or x is None:
        return x
    if t is float:
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if x is pd.NA or x is pd.NaT:
        return None
    if isinstance(x, np.generic):
        return jsonable(x.item())
    if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):
        return jsonable(x.tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    if hasattr(x, "model_dump"):
        return jsonable(x.model_dump())
    if isinstance(x, (_dt.date, _dt.datetime)):
        return x.isoformat()
    return str(x)


def records(df: pd.DataFrame) -> list[dict]:
    """A frame as a list of JSON-ready dicts (``jsonable`` of ``to_dict("records")``). Columns of a
    numpy float, integer or bool dtype are converted a column at a time (``tolist``; NaN and
    infinities to None), so are string columns (missing values to None) and the others (each value
    through ``jsonable``, as ``to_dict`` and ``jsonable`` gave them)."""
    cols = list(df.columns)
    if not cols or not df.columns.is_unique:
        return [jsonable(row) for row in df.to_dict("records")]
    dtypes = list(df.dtypes)
    fast = [isinstance(dt, np.dtype) and dt.kind in "fiub" for dt in dtypes]
    text = [isinstance(dt, pd.StringDtype) for dt in dtypes]
    columns = []
    for i, ((_, col), f) in enumerate(zip(df.items(), fast)):   # items(): each column by position, as iloc[:, i]
        if f:
            a = col.to_numpy()
            v = a.tolist()
            if a.dtype.kind == "f":  # NaN and infinities to None: only where numpy finds them
                for j in np.flatnonzero(~np.isfinite(a)).tolist():
                    v[j] = None
            columns.append(v)
        elif text[i]:  # strings as they are, a missing value (NaN or NA) through ``jsonable`` (None)
            columns.append([x if type(x) is str else jsonable(x) for x in col.to_numpy(dtype=object).tolist()])
        else:  # object and extension columns (nullable ints and booleans, lists): each value as it is
            columns.append([jsonable(x) for x in col.to_numpy(dtype=object).tolist()])
    keys = [str(c) for c in cols]
    return [dict(zip(keys, row)) for row in zip(*columns)]


_ENTRY_KEYS = ("usd_per_chip_hour_effective", "spare_instances", "as_of", "porting_usd", "hosting_usd", "user_rtt_ms",
               *PRICE_KEYS, *[k + x for k in COST_KEYS for x in ("", "_low", "_high")], *ENERGY_KEYS)


def option_costs(priced: pd.DataFrame) -> dict[str, dict]:
    """Per accelerator, the cheapest passing offering per pricing model (``cost_usd``, else
    ``usd_per_million_tokens``; the first row of the lowest figure, pricing models in order of first
    appearance) with its cost figures and bands: the ``costs`` of each ``estimate --json`` option.
    One pass over the columns as arrays, not a filter and a group-by per accelerator."""
    rows = priced[priced["excluded_reason"].isna()] if "excluded_reason" in priced else priced
    cols = {c: rows[c].to_numpy(dtype=object) for c in ("accelerator", "pricing_model", "offering", "provider",
                                                         "block_days", "cost_usd", "usd_per_million_tokens", *_ENTRY_KEYS)
            if c in rows}
    present = [k for k in _ENTRY_KEYS if k in cols]
    missing = {c: pd.isna(cols[c]) for c in ("pricing_model", "cost_usd", "usd_per_million_tokens") if c in cols}
    by_acc: dict = {}
    for i, a in enumerate(cols["accelerator"]):
        by_acc.setdefault(a, []).append(i)
    out = {}
    for a, idx in by_acc.items():
        key = "cost_usd" if "cost_usd" in cols and not missing["cost_usd"][idx].all() else "usd_per_million_tokens"
        groups: dict = {}
        for i in idx:
            if not missing["pricing_model"][i]:  # group-by leaves out a missing pricing model
                groups.setdefault(cols["pricing_model"][i], []).append(i)
        entries = {}
        for pm, g in groups.items():
            g = [i for i in g if not missing[key][i]]
            if not g:
                continue
            b = g[int(np.argmin(np.array([cols[key][i] for i in g], dtype=float)))]
            entry = {"offering": cols["offering"][b] if "offering" in cols else None,
                     "provider": cols["provider"][b] if "provider" in cols else None}
            entry.update({k: jsonable(cols[k][b]) for k in present})
            if pm == "capacity_block" and "block_days" in cols:  # the block bought (workbook.cost.bill)
                entry["block_days"] = jsonable(cols["block_days"][b])
            entries[pm] = entry
        out[a] = entries
    return out


def _option_costs(priced: pd.DataFrame, accelerator: str) -> dict:
    """Cheapest offering per pricing model for one accelerator, with cost figures and bands (``option_costs``)."""
    return option_costs(priced[priced["accelerator"] == accelerator]).get(accelerator, {})


def _option_energy(costs: dict) -> dict:
    """``energy_kwh`` and ``co2_kg`` of an accelerator's option: those of its cheapest passing offer
    (the first way to pay in ``costs`` with the lowest cost; training: the run, serving: over the
    horizon), None where it has none or its region has no grid intensity."""
    key = next((k for k in ("cost_usd", "usd_per_million_tokens") if any(e.get(k) is not None for e in costs.values())), None)
    if key is None:
        return {"energy_kwh": None, "co2_kg": None}
    best = min((e for e in costs.values() if e.get(key) is not None), key=lambda e: e[key])
    return {"energy_kwh": best.get("energy_kwh"), "co2_kg": best.get("co2_kg")}


def published_layouts(a: Analysis) -> list[dict]:
    """Training: each option's chosen layout next to the nearest published one
    (``calibrate.layouts.layout_comparison``); [] for serving and generic models."""
    s = a.scenario
    if not s.is_training or a.perf.empty:
        return []
    p = workload_profile(s.workload)
    if p.generic:
        return []
    out = []
    for opt in records(a.perf):
        if not opt.get("fits"):
            continue
        item = layouts.layout_comparison(opt, p.params_total, catalog.accelerator_record(opt["accelerator"]),
                                         s.workload.seq_len, p.is_moe)
        if item is not None:
            out.append(item)
    return out


def summary_json(a: Analysis) -> dict:
    """The JSON object of ``estimate --json`` (and of the reports' ``summary.json``)."""
    s = a.scenario
    options = records(a.perf)
    keep = ["accelerator", "excluded_reason", "pricing_model", "offering", "provider", "block_days",
            "usd_per_chip_hour_effective", "spare_instances", "as_of", "porting_usd", "hosting_usd", "user_rtt_ms",
            *PRICE_KEYS, *[k + x for k in COST_KEYS for x in ("", "_low", "_high")], *ENERGY_KEYS]
    slim = a.priced[[c for c in keep if c in a.priced]]   # the columns option_costs reads
    costs = option_costs(slim)
    for opt in options:
        opt["costs"] = costs.get(opt["accelerator"], {})
        opt.update(_option_energy(opt["costs"]))
    rec = a.recommendation
    # monte_carlo, offers and own_runs are JSON-ready already (records): not walked again
    out = jsonable({
        "scenario": s.name,
        "title": s.title,
        "task": s.workload.task,
        "estimate_label": model_generic.estimate_label(s.workload),
        "options": None,
        "recommendation": rec.as_dict() if rec is not None else None,
        "monte_carlo": None,
        "offers": None,
        "own_runs": None,
        "published_layouts": published_layouts(a),
        "generated_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "workbook_version": paths.VERSION,
        "catalog_versions": catalog.catalog_versions(),
    })
    out.update(options=jsonable(options), monte_carlo=records(a.mc), offers=records(a.offers) if a.offers is not None else [],
               own_runs=records(a.adjustments) if a.adjustments is not None else [])
    return out
