"""The rules of the decision: software fit, supply, and the hard constraints as structured exclusions.

``apply_constraints`` marks every option a hard constraint rules out: memory fit and latency targets
(from the performance model), chip limit, instance shape, a price to pay with, a spot job that never
finishes, the deadline, the budget, and framework requirements (``framework_fit``: a platform that
cannot run any accepted framework, or CUDA kernels on a non-CUDA platform with no porting budget, is
out; a partial fit adds ``pricing.porting_cost_usd``). Each exclusion is an ``Exclusion`` (a code of
``CONSTRAINTS`` and a sentence); the priced frame carries the codes (``excluded_codes``) for
programs and the joined sentences (``excluded_reason``) for people.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from .. import catalog
from ..cost.rates import porting_usd
from ..terms import usd
from ..scenario import Scenario
from ..terms import FRAMEWORK_LABEL, PLATFORM_LABEL, WEIGHT_ONLY_PRECISIONS, pricing_label

SUPPORT_SCORE = {"native": 1.0, "supported": 2.0 / 3.0, "partial": 1.0 / 3.0, "none": 0.0}

# the hard constraints, in the order their sentences are joined
CONSTRAINTS = ("memory", "precision", "latency", "chips", "instance", "not_priced", "spot", "deadline", "budget",
               "framework", "superseded", "duplicate", "region", "residency", "carbon", "term")
# what a team can move (budget, deadline, chip limit) as against what the hardware cannot do
PHYSICAL = ("memory", "precision", "latency", "instance", "not_priced", "spot")


class Exclusion(NamedTuple):
    """One hard constraint that rules an option out: ``code`` (one of ``CONSTRAINTS``) and the
    sentence for people."""

    code: str
    text: str


# --- fit of the software stack -----------------------------------------------------------------------

def needed_capabilities(s: Scenario) -> list[str]:
    """Capabilities of ``software.csv`` the workload relies on besides its framework."""
    w = s.workload
    caps = ["flash_attention"]
    if w.task == "inference":
        caps.append("vllm")
        if "fp8" in (w.precision, w.kv_precision):
            caps.append("fp8_inference")
        if w.precision in WEIGHT_ONLY_PRECISIONS:
            caps.append("int8_inference")
    else:
        caps.append("hf_transformers")
        if w.precision == "fp8":
            caps.append("fp8_training")
    if w.custom_cuda_kernels:
        caps.append("custom_cuda_kernels")
    return caps


# A port no source prices is never free (issue 25): this stated default, with a wide range, stands in
# where data/effort.csv has no row (or a blank one) for the move. Not a published figure: it is the
# default of the PyTorch -> TPU and Neuron-training rows of data/effort.csv (see their notes).
DEFAULT_PORT_WEEKS = (8.0, 2.0, 26.0)  # engineer-weeks: point, low, high


def porting_effort_range(s: Scenario, platform: str) -> tuple[float, float, float, str]:
    """(engineer-weeks, low, high, where the figure came from) to port the workload to ``platform``:
    ``pricing.porting_weeks`` (no range), else the ``data/effort.csv`` row of the workload's
    framework, the platform, its custom CUDA kernels and its task (a row for the task before one for
    ``any``) with its range, else the stated ``DEFAULT_PORT_WEEKS`` (never zero)."""
    p, w = s.pricing, s.workload
    if p.porting_weeks is not None:
        return float(p.porting_weeks), float(p.porting_weeks), float(p.porting_weeks), "pricing.porting_weeks"
    eff = catalog.effort()
    task = "training" if s.is_training else "inference"
    # the answer depends on the effort table and these four values only: remembered per effort frame read
    answers = _EFFORT.get(eff)
    key = (w.framework, platform, bool(w.custom_cuda_kernels), task)
    if key not in answers:
        answers[key] = _effort_range(eff, *key)
    return answers[key]


_EFFORT = catalog.PerLoad(lambda eff: {})   # porting_effort_range's answers from the data/effort.csv frame read


def _effort_range(eff: pd.DataFrame, framework: str, platform: str, kernels: bool, task: str) -> tuple[float, float, float, str]:
    """``porting_effort_range`` from the ``data/effort.csv`` frame ``eff`` (no ``pricing.porting_weeks``)."""
    rows = eff[(eff["framework"] == framework) & (eff["platform"] == platform)
               & (eff["custom_cuda_kernels"].astype(bool) == kernels)
               & eff["task"].isin([task, "any"])] if len(eff) else eff
    if rows.empty or pd.isna(rows.sort_values("task", key=lambda c: c.eq("any")).iloc[0]["engineer_weeks"]):
        why = "no data/effort.csv row" if rows.empty else "data/effort.csv: not published"
        pt, lo, hi = DEFAULT_PORT_WEEKS
        return pt, lo, hi, f"stated default, {why}"
    r = rows.sort_values("task", key=lambda c: c.eq("any")).iloc[0]
    pt = float(r["engineer_weeks"])
    lo = float(r["engineer_weeks_low"]) if pd.notna(r.get("engineer_weeks_low")) else pt
    hi = float(r["engineer_weeks_high"]) if pd.notna(r.get("engineer_weeks_high")) else pt
    basis = f" ({r['basis']})" if pd.notna(r.get("basis")) else ""
    return pt, lo, hi, f"data/effort.csv{basis}"


def _porting_cost(s: Scenario, platform: str) -> tuple[float, str]:
    """(USD, sentence) of a needed port: ``pricing.porting_cost_usd`` when above 0, else the
    engineer-weeks of ``porting_effort_range`` priced by ``cost.rates.porting_usd``, the range said."""
    p, w = s.pricing, s.workload
    if p.porting_cost_usd > 0:
        return float(p.porting_cost_usd), f"porting {usd(p.porting_cost_usd)} (pricing.porting_cost_usd)"
    weeks, lo, hi, basis = porting_effort_range(s, platform)
    f = p.porting_rework_fraction
    total = float(porting_usd(weeks, p.engineer_usd_per_week, w.stack_changes_per_year, f or 0.0, p.horizon_months))
    rng = f", range {lo:g}-{hi:g} weeks" if hi > lo else ""
    text = (f"porting {usd(total)} = {weeks:g} engineer-weeks x {usd(p.engineer_usd_per_week)}/week "
            f"({basis}{rng})")
    if w.stack_changes_per_year > 0:
        text += (f", with {w.stack_changes_per_year:g} stack changes a year each repeating {f:g} of it over "
                 f"{p.horizon_months:g} months" if f is not None else
                 "; the recurring share of the stack changes is not priced (pricing.porting_rework_fraction)")
    return total, text


# framework_fit's rows by (scenario, accelerator), for the catalog frames they were read from
_FIT_ROWS: dict = {}


def _fit_row(s: Scenario, a: str, support: dict, acc: pd.DataFrame) -> dict:
    """``framework_fit``'s row of one accelerator (``support``: software.csv by (platform,
    capability); ``acc``: the accelerator catalog indexed by id)."""
    plat = acc.loc[a, "platform"]
    w = s.workload
    accepted = list(s.constraints.frameworks or [w.framework])
    caps = needed_capabilities(s)
    options = sorted(((SUPPORT_SCORE.get(support.get((plat, f), "none"), 0.0), f == w.framework, f) for f in accepted),
                     reverse=True)
    fw_score, _, fw = options[0]
    fw_support = support.get((plat, fw), "none")
    reason = None
    port_why = []
    if fw_score == 0:
        reason = ("framework: none of " + ", ".join(FRAMEWORK_LABEL[f] for f in accepted)
                  + f" runs on {PLATFORM_LABEL.get(plat, plat)} (software.csv)")
    else:
        if fw != w.framework:
            port_why.append(f"moving from {FRAMEWORK_LABEL[w.framework]} to {FRAMEWORK_LABEL[fw]}")
        elif fw_support == "partial":
            port_why.append(f"{FRAMEWORK_LABEL[fw]} support on {PLATFORM_LABEL.get(plat, plat)} is partial")
    kernels = support.get((plat, "custom_cuda_kernels"), "none") if w.custom_cuda_kernels else "native"
    if kernels not in ("native", "supported"):
        port_why.append(f"the custom CUDA kernels must be rewritten ({kernels} support)")
    needs_port = bool(port_why) and reason is None
    cost_usd, cost_text = _porting_cost(s, plat) if needs_port else (0.0, "")
    cap_scores = [SUPPORT_SCORE.get(support.get((plat, c), "none"), 0.0) for c in caps]
    eco = float(np.mean([fw_score, *cap_scores]))
    port = float(np.mean([SUPPORT_SCORE.get(support.get((plat, c), "none"), 0.0) for c in ("multi_cloud", "on_prem")]))
    return {"accelerator": a, "platform": plat, "framework": fw, "framework_support": fw_support,
            "needs_porting": needs_port, "porting_why": "; ".join(port_why + ([cost_text] if needs_port else [])),
            "porting_usd": 0.0 if not needs_port or math.isnan(cost_usd) else cost_usd,
            "porting_priced": bool(needs_port and not math.isnan(cost_usd)),
            "framework_reason": reason, "ecosystem_score": eco, "portability_score": port,
            "capabilities": ", ".join([fw, *caps])}


def framework_fit(s: Scenario, accelerators) -> pd.DataFrame:
    """Per accelerator: the platform, the best accepted framework and its support, whether moving
    there needs porting, its cost (``porting_usd``: ``_porting_cost``; 0 where nothing changes or
    the effort is not published, said in ``porting_why``), why it is ruled out
    (``framework_reason``) and the ecosystem and portability scores.

    Accepted frameworks are ``constraints.frameworks`` (default: the workload's own). Porting is
    needed when the framework used is not the workload's, when its support is partial, or when the
    workload's custom CUDA kernels are not natively supported. Ruled out: no accepted framework runs
    (support none), or CUDA kernels that must be rewritten with no porting cost known."""
    sw, acc_table, eff = catalog.software(), catalog.accelerators(), catalog.effort()
    frames = (sw, acc_table, eff)
    if _FIT_ROWS.get("frames") is None or any(a is not b for a, b in zip(_FIT_ROWS["frames"], frames)) \
            or len(_FIT_ROWS) > 4096:
        _FIT_ROWS.clear()
        _FIT_ROWS["frames"] = frames
    scenario_key, tables = s.model_dump_json(), None
    rows = []
    for a in pd.unique(pd.Series(list(accelerators))):
        key = (scenario_key, a)
        if key not in _FIT_ROWS:
            if tables is None:
                tables = ({(r.platform, r.capability): r.support for r in sw.itertuples()},
                          acc_table.set_index("accelerator"))
            _FIT_ROWS[key] = _fit_row(s, a, *tables)
        rows.append(dict(_FIT_ROWS[key]))
    return pd.DataFrame(rows)


def _region_counts(off: pd.DataFrame) -> pd.Series:
    live = off[~catalog.is_superseded(off)]
    return live.drop_duplicates(["accelerator", "provider", "region"]).groupby("accelerator").size()


_REGIONS = catalog.PerLoad(_region_counts)   # the offerings frame's provider-region counts per accelerator


def _provider_regions() -> pd.Series:
    """Provider-regions per accelerator, counted once per offerings frame read."""
    return _REGIONS.get(catalog.offerings())


def supply_scores(accelerators) -> pd.Series:
    """Provider-regions offering each accelerator in the whole catalog, over the most any of
    ``accelerators`` has (1 = as widely offered as the best candidate)."""
    n = _provider_regions()
    accs = list(pd.unique(pd.Series(list(accelerators))))
    counts = pd.Series([float(n.get(a, 0)) for a in accs], index=accs)
    top = counts.max()
    return counts / top if top > 0 else counts



# --- hard constraints --------------------------------------------------------------------------------

def percent_text(x: float) -> str:
    """A percentage with enough digits to be different from zero when it is."""
    a = abs(x)
    return f"{x:.0%}" if a >= 0.01 or a == 0 else f"{x:.1%}" if a >= 0.001 else f"{x:.2%}"


class _Ledger:
    """Collects the exclusions of every row of a priced frame."""

    def __init__(self, priced: pd.DataFrame):
        self.priced = priced
        self.found: list[list[Exclusion]] = [[] for _ in range(len(priced))]

    def add(self, code: str, mask, text) -> None:
        """``text``: one sentence, a Series aligned with the rows, or a function of the positions of the rows ruled
        out that gives theirs (a Series or array in that order, or one sentence): the sentences of the rows that
        pass are then never made."""
        idx = self.priced.index
        if isinstance(mask, pd.Series) and mask.dtype == bool and mask.index.equals(idx):
            mask = mask.to_numpy()  # the rules' usual mask: already aligned booleans, no missing value
        else:
            mask = pd.Series(mask, index=idx).fillna(False).astype(bool).to_numpy()
        if callable(text):
            at = np.flatnonzero(mask)
            if len(at):
                got = text(at)
                values = got.to_numpy() if isinstance(got, pd.Series) else np.broadcast_to(np.asarray(got, dtype=object), len(at))
                for i, v in zip(at, values):
                    self.found[i].append(Exclusion(code, str(v)))
            return
        texts = text if isinstance(text, pd.Series) else pd.Series(text, index=idx)
        values = texts.reindex(idx).to_numpy() if not texts.index.equals(idx) else texts.to_numpy()
        for i in np.flatnonzero(mask):  # positions: the label's row, its text at the same place
            self.found[i].append(Exclusion(code, str(values[i])))


def _user_rtt_bits(w, r) -> list[str]:
    """The part of a latency exclusion that the users' round trip explains (``cost.location``)."""
    if not w.user_locations or w.ttft_slo_ms is None or "user_rtt_ms" not in r:
        return []
    if pd.isna(r["user_rtt_ms"]):
        return [str(r.get("user_rtt_basis") or "round trip to the users not known")]
    tail = r.get("ttft_ms_at_slo_percentile")
    if w.requests_per_s is not None and pd.notna(tail) and tail > w.ttft_slo_ms:
        return [f"TTFT at P{w.ttft_slo_percentile:g} {tail:.0f} ms incl. {r['user_rtt_ms']:.0f} ms round trip to "
                f"{', '.join(w.user_locations)} > {w.ttft_slo_ms:g} ms"]
    return []


def _fit_rules(s: Scenario, priced: pd.DataFrame, ex: _Ledger) -> None:
    """Memory (or a precision the chip has no published peak for) and latency targets."""
    if "fits" in priced:
        fits = priced["fits"].astype("boolean").fillna(False)
        why = priced["reason"].fillna("does not fit in memory") if "reason" in priced else "does not fit in memory"
        why = why.astype(str) if isinstance(why, pd.Series) else pd.Series(why, index=priced.index)
        # a chip with no published peak for the precision has no memory problem
        no_peak = (priced["peak_flops_per_s"].astype(float).isna() if "peak_flops_per_s" in priced
                   else pd.Series(False, index=priced.index))
        ex.add("precision", ~fits & no_peak, "precision: " + why)
        ex.add("memory", ~fits & ~no_peak, "memory: " + why)
    if not s.is_training and "meets_slo" in priced:
        ok = priced["meets_slo"].astype("boolean").fillna(False)
        fits = priced["fits"].astype("boolean").fillna(False) if "fits" in priced else True
        w = s.workload
        late = pd.Series(~ok & fits, index=priced.index).fillna(False).astype(bool)
        parts = pd.Series("", index=priced.index, dtype=object)
        cols = [c for c in ("user_rtt_ms", "user_rtt_basis", "ttft_ms_at_slo_percentile", "ttft_ms", "tpot_ms")
                if c in priced]
        # the sentence of each row ruled out (the rows that pass carry none), from the columns it reads
        for lbl, r in zip(priced.index[late.to_numpy()], priced.loc[late, cols].to_dict("records")):
            bits = _user_rtt_bits(w, r)
            if w.ttft_slo_ms is not None and pd.notna(r.get("ttft_ms")) and r["ttft_ms"] > w.ttft_slo_ms:
                bits.append(f"TTFT {r['ttft_ms']:.0f} ms > {w.ttft_slo_ms:g} ms")
            if w.tpot_slo_ms is not None and pd.notna(r.get("tpot_ms")) and r["tpot_ms"] > w.tpot_slo_ms:
                bits.append(f"{r['tpot_ms']:.0f} ms per token > {w.tpot_slo_ms:g} ms")
            parts[lbl] = "latency: " + (", ".join(bits) if bits else "misses the load or latency targets")
        ex.add("latency", late, parts)


def _spot_rules(s: Scenario, priced: pd.DataFrame, ex: _Ledger) -> None:
    """Spot that never finishes (training) or that no number of spares keeps available (serving)."""
    p = s.pricing
    if "paid_per_used_hour" not in priced:
        return
    never = (np.isinf(priced["paid_per_used_hour"].astype(float)) & (priced["pricing_model"] == "spot")
             & priced["usd_per_instance_hour"].notna())
    if "spot_availability_target" in priced:  # latency-bound serving: no number of spares suffices
        lat = never & priced["spot_availability_target"].notna()
        ex.add("spot", lat, f"spot: with {p.spot_interruptions_per_hour:g} interruptions per instance-hour and "
               f"{p.restart_min:g}-min restarts no number of spare instances meets the "
               f"{p.spot_availability_target:.1%} availability target")
        never = never & priced["spot_availability_target"].isna()
    if never.any():
        rate = (priced["interruptions_per_hour"].astype(float) if "interruptions_per_hour" in priced
                else priced["spot_instances"].astype(float) * p.spot_interruptions_per_hour)
        ex.add("spot", never, lambda at: "spot: the job is interrupted " + rate.iloc[at].map(lambda v: f"{v:.3g}")
               + " times an hour; " f"with {p.restart_min:g}-min restarts it never finishes")


def _limit_rules(s: Scenario, priced: pd.DataFrame, ex: _Ledger) -> None:
    """The deadline and the budget."""
    c, p = s.constraints, s.pricing
    if s.is_training and c.deadline_days is not None and "training_days" in priced:
        t = priced["training_days"].astype(float)
        start = (priced["start_days"].astype(float).fillna(0.0) if "start_days" in priced
                 else pd.Series(0.0, index=priced.index))
        late = t + start > c.deadline_days
        ex.add("deadline", late, lambda at: "deadline: " + start.iloc[at].map(lambda v: f"{v:g} days to start + " if v > 0 else "")
               + t.iloc[at].map(lambda v: f"{v:,.1f}") + f" days > {c.deadline_days:g}")
        if "p_meets_deadline" in priced:
            pm = priced["p_meets_deadline"].astype(float)
            ex.add("deadline", ~late & (pm < c.deadline_confidence),
                   lambda at: "deadline: meets the " + f"{c.deadline_days:g}-day deadline with probability "
                   + pm.iloc[at].map(lambda v: f"{v:.2f}") + f" < deadline_confidence {c.deadline_confidence:g}")
    if c.budget_usd is not None:
        total = priced["cost_usd"] if s.is_training else priced.get("usd_total")
        if total is not None:
            total = total.astype(float)
            ex.add("budget", total > c.budget_usd, lambda at: "budget: " + total.iloc[at].map(usd) + f" > {usd(c.budget_usd)}"
                   + ("" if s.is_training else f" over {p.horizon_months:g} months"))


def _location_rules(s: Scenario, priced: pd.DataFrame, ex: _Ledger) -> None:
    """``candidates.regions`` and ``constraints.data_residency`` on rented offers (bought hardware,
    ``provider_kind`` owned, runs where its owner puts it). Residency reads the region's country in
    ``data/regions.csv``: 'EU' matches a member state, a code its country; a region missing there or
    without a published country cannot show where the data is, so it is ruled out."""
    if "offering" not in priced or "region" not in priced:
        return
    rented = priced["offering"].notna() & (priced.get("provider_kind", pd.Series("", index=priced.index)) != "owned")
    region = priced["region"].fillna("unspecified").astype(str)
    if s.candidates.regions:
        ex.add("region", rented & ~region.isin(s.candidates.regions),
               "region: " + region + " is not in candidates.regions (" + ", ".join(s.candidates.regions) + ")")
    want = s.constraints.data_residency
    if not want:
        return
    reg = catalog.regions().set_index(["provider", "region"])
    keys = list(zip(priced["provider"].fillna(""), region))
    country = pd.Series([reg["country"].get(k) if k in reg.index else None for k in keys], index=priced.index)
    eu = pd.Series([bool(reg["eu_member"].get(k)) if k in reg.index else False for k in keys], index=priced.index)
    ok = country.isin(want) | (eu & ("EU" in want))
    where = country.map(lambda c: f"in {c}" if isinstance(c, str) else "with no published location (data/regions.csv)")
    ex.add("residency", rented & ~ok, "residency: " + region + " is " + where + ", outside constraints.data_residency ("
           + ", ".join(want) + ")")


def _carbon_rules(s: Scenario, priced: pd.DataFrame, ex: _Ledger) -> None:
    """``constraints.max_co2_kg`` on ``co2_kg`` (workbook.cost.energy), and, with a cap or a carbon
    price (``pricing.carbon_usd_per_tonne``), offers whose CO2e cannot be known (no grid intensity or
    chip power: ``energy_reason``): they cannot be shown to be under the cap, nor priced."""
    cap, price = s.constraints.max_co2_kg, s.pricing.carbon_usd_per_tonne
    if "co2_kg" not in priced or (cap is None and price <= 0):
        return
    co2 = priced["co2_kg"].astype(float)
    priced_row = priced["usd_per_instance_hour"].notna()
    why = priced.get("energy_reason", pd.Series("no CO2e figure", index=priced.index)).fillna("no CO2e figure")
    ex.add("carbon", co2.isna() & priced_row, "carbon: " + why.astype(str) + (
        f", so it cannot be shown under constraints.max_co2_kg {cap:,.0f}" if cap is not None
        else ", so pricing.carbon_usd_per_tonne cannot price it"))
    if cap is not None:
        what = "for the run" if s.is_training else f"over {s.pricing.horizon_months:g} months"
        ex.add("carbon", co2 > cap, lambda at: "carbon: " + co2.iloc[at].map(lambda v: f"{v:,.0f}") + f" kg CO2e {what} > "
               f"constraints.max_co2_kg {cap:,.0f}")


def exclusions(s: Scenario, priced: pd.DataFrame, fit: pd.DataFrame | None = None) -> pd.Series:
    """Per option (aligned with ``priced``), the list of ``Exclusion`` that rule it out (empty where
    it passes every hard constraint). ``fit``: the ``framework_fit`` table (computed when absent)."""
    c = s.constraints
    ex = _Ledger(priced)
    _fit_rules(s, priced, ex)
    if c.max_chips is not None and "chips" in priced:
        ch = priced["chips"].astype(float)
        ex.add("chips", ch > c.max_chips, lambda at: "chips: " + ch.iloc[at].map(lambda v: f"{v:,.0f}") + f" > max_chips {c.max_chips:,}")
    if "shape_reason" in priced:
        ex.add("instance", priced["shape_reason"].notna(), priced["shape_reason"])
    if "term_reason" in priced:  # a capacity block that cannot hold the work (workbook.cost.bill)
        ex.add("term", priced["term_reason"].notna(), priced["term_reason"])
    pm = priced["pricing_model"]
    ex.add("not_priced", priced["usd_per_instance_hour"].isna(),
           lambda at: "not priced: no sourced " + pm.iloc[at].map(lambda m: pricing_label(m).replace("a ", "", 1))
           + " price for this accelerator" + np.where(pm.iloc[at] == "purchase", " (data/hardware.csv)", ""))
    _spot_rules(s, priced, ex)
    _limit_rules(s, priced, ex)
    _location_rules(s, priced, ex)
    _carbon_rules(s, priced, ex)
    fit = framework_fit(s, priced["accelerator"].unique()) if fit is None else fit
    reason = priced["accelerator"].map(fit.set_index("accelerator")["framework_reason"])
    ex.add("framework", reason.notna(), reason)
    if "offering" in priced:
        old = priced["offering"].fillna("").astype(str).str.endswith("-superseded")
        ex.add("superseded", old, "superseded: a stale price row kept for history (data/README.md), never recommended")
    if "duplicate_of" in priced:  # another row's price for the same offer is kept (cost.doubt.resolve)
        dup = priced["duplicate_of"].notna()
        ex.add("duplicate", dup, lambda at: "duplicate: another row prices the same offer (provider, instance, region, "
               "way to pay) with a newer or firmer price, " + priced["duplicate_of"].iloc[at].fillna("").astype(str)
               + "; this row is kept as evidence of the price doubt, not ranked")
    return pd.Series(ex.found, index=priced.index, dtype=object)


def excluded_groups(ex: pd.DataFrame) -> pd.DataFrame:
    """The groups of ``recommend``'s excluded table (``_excluded_table``):
    ``ex.assign(offering=ex["offering"].fillna("-")).groupby(["accelerator", "pricing_model", "kinds"],
    sort=False).agg(offerings=("offering", "nunique"), constraint=("excluded_reason", "first")).reset_index()``
    in one pass over the rows as lists (the groupby's frame: groups in order of first appearance, rows with a
    missing key dropped, the distinct offerings, the first reason that is not missing; the key columns keep
    their dtypes)."""
    keys = ("accelerator", "pricing_model", "kinds")
    cols = [ex[k].tolist() for k in keys]
    offering, reason = ex["offering"].fillna("-").tolist(), ex["excluded_reason"].tolist()
    groups: dict = {}
    for a, m, k, o, r in zip(*cols, offering, reason):
        if pd.isna(a) or pd.isna(m) or pd.isna(k):
            continue
        hit = groups.get((a, m, k))
        if hit is None:
            hit = groups[(a, m, k)] = [set(), None]
        if not pd.isna(o):
            hit[0].add(o)
        if hit[1] is None and not pd.isna(r):
            hit[1] = r
    out = {k: pd.Series([key[i] for key in groups], dtype=ex[k].dtype) for i, k in enumerate(keys)}
    out["offerings"] = pd.Series([len(v[0]) for v in groups.values()], dtype="int64")
    out["constraint"] = pd.Series([np.nan if v[1] is None else v[1] for v in groups.values()],
                                  dtype=ex["excluded_reason"].dtype)
    return pd.DataFrame(out)


def apply_constraints(s: Scenario, priced: pd.DataFrame, fit: pd.DataFrame | None = None) -> pd.DataFrame:
    """A copy of ``priced`` with the exclusions: ``excluded_codes`` (a tuple of ``CONSTRAINTS``
    codes, empty where the option passes) and ``excluded_reason`` (the sentences "; "-joined, for
    display; None where it passes). ``fit``: the ``framework_fit`` table (computed when absent)."""
    found = exclusions(s, priced, fit)
    out = priced.drop(columns=[c for c in ("excluded_reason", "excluded_codes") if c in priced])
    at = out.columns.get_loc("price_derivation") if "price_derivation" in out else len(out.columns)
    out.insert(at, "excluded_reason", pd.Series(["; ".join(e.text for e in r) if r else None for r in found],
                                                index=priced.index, dtype=object))
    out["excluded_codes"] = pd.Series([tuple(e.code for e in r) for r in found], index=priced.index, dtype=object)
    return out
