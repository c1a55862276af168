"""The decision: hard constraints first, then a transparent weighted ranking, the recommendation
with its reasons in plain words, the runner-up, what would flip it, and the assumptions ledger.

1. **Hard constraints** (``apply_constraints``) rule options out, each with the reason: memory fit
   and latency targets (from ``perf.compare``), chip limit, instance shape, a price to pay with,
   a spot job that never finishes, the deadline, the budget, and framework requirements
   (``framework_fit``: a platform that cannot run any accepted framework, or CUDA kernels on a
   non-CUDA platform with no porting budget, is out; a partial fit adds
   ``pricing.porting_cost_usd``).
2. **Ranking** (``rank``) of the options left, by the scenario's ``weights``:
   - cost: cheapest / this option's cost (training: USD per run; serving: USD per million output
     tokens; Monte Carlo P50 when given), so 1 is the cheapest;
   - time: fastest / this option's time (training days; serving time per output token);
   - ecosystem: mean support of the capabilities the workload needs on the chip's platform
     (``software.csv``), on an equally spaced scale native 1, supported 2/3, partial 1/3, none 0;
   - portability: mean support of ``multi_cloud`` and ``on_prem`` on the same scale;
   - supply risk: provider-regions offering the chip in ``offerings.csv`` / the most any candidate
     has (more places to buy = less risk of waiting for capacity).
   The score is the weight-averaged criterion score (0-1); the Pareto front of cost vs time is marked.
3. **The recommendation** is the top-ranked option; the runner-up is the best option on a different
   accelerator. Flip conditions are solved exactly where the score is linear (a weight), by
   bisection where it is not (a price), and from the break-even formulas of ``cost``.
"""
from __future__ import annotations


import datetime as _dt
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import catalog, cost
from .narrative import usd
from .scenario import Scenario

SUPPORT_SCORE = {"native": 1.0, "supported": 2.0 / 3.0, "partial": 1.0 / 3.0, "none": 0.0}
CRITERIA = ("cost", "time", "ecosystem", "portability", "supply_risk")
STALE_DAYS = 180
FRAMEWORK_LABEL = {"pytorch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow"}
PLATFORM_LABEL = {"cuda": "CUDA", "rocm": "ROCm", "tpu": "TPU (XLA)", "neuron": "AWS Neuron"}


# --- fit of the software stack -----------------------------------------------------------------------

def needed_capabilities(s: Scenario) -> list[str]:
    """Capabilities of ``software.csv`` the workload relies on besides its framework."""
    w = s.workload
    caps = ["flash_attention"]
    if w.task == "inference":
        caps.append("vllm")
        if "fp8" in (w.precision, w.kv_precision):
            caps.append("fp8_inference")
        if w.precision in ("int8", "int4"):
            caps.append("int8_inference")
    else:
        caps.append("hf_transformers")
        if w.precision == "fp8":
            caps.append("fp8_training")
    if w.custom_cuda_kernels:
        caps.append("custom_cuda_kernels")
    return caps


def framework_fit(s: Scenario, accelerators) -> pd.DataFrame:
    """Per accelerator: the platform, the best accepted framework and its support, whether moving
    there needs porting (``porting_usd``), why it is ruled out (``framework_reason``) and the
    ecosystem and portability scores.

    Accepted frameworks are ``constraints.frameworks`` (default: the workload's own). Porting is
    needed when the framework used is not the workload's, when its support is partial, or when the
    workload's custom CUDA kernels are not natively supported. Ruled out: no accepted framework runs
    (support none), or CUDA kernels that must be rewritten with no porting cost given."""
    sw = catalog.software()
    support = {(r.platform, r.capability): r.support for r in sw.itertuples()}
    acc = catalog.accelerators().set_index("accelerator")
    w = s.workload
    accepted = list(s.constraints.frameworks or [w.framework])
    caps = needed_capabilities(s)
    rows = []
    for a in pd.unique(pd.Series(list(accelerators))):
        plat = acc.loc[a, "platform"]
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
        if w.custom_cuda_kernels:
            k = support.get((plat, "custom_cuda_kernels"), "none")
            if k == "none" and s.pricing.porting_cost_usd <= 0 and reason is None:
                reason = (f"framework: the custom CUDA kernels do not run on {PLATFORM_LABEL.get(plat, plat)} and no "
                          "porting cost is given (pricing.porting_cost_usd)")
            elif k not in ("native", "supported"):
                port_why.append(f"the custom CUDA kernels must be rewritten ({k} support)")
        cap_scores = [SUPPORT_SCORE.get(support.get((plat, c), "none"), 0.0) for c in caps]
        eco = float(np.mean([fw_score, *cap_scores]))
        port = float(np.mean([SUPPORT_SCORE.get(support.get((plat, c), "none"), 0.0) for c in ("multi_cloud", "on_prem")]))
        needs_port = bool(port_why) and reason is None
        rows.append({"accelerator": a, "platform": plat, "framework": fw, "framework_support": fw_support,
                     "needs_porting": needs_port, "porting_why": "; ".join(port_why),
                     "porting_usd": s.pricing.porting_cost_usd if needs_port else 0.0,
                     "framework_reason": reason, "ecosystem_score": eco, "portability_score": port,
                     "capabilities": ", ".join([fw, *caps])})
    return pd.DataFrame(rows)


def _provider_regions() -> pd.Series:
    off = catalog.offerings()
    off = off[~cost._is_superseded(off)]
    return off.drop_duplicates(["accelerator", "provider", "region"]).groupby("accelerator").size()


def supply_scores(accelerators) -> pd.Series:
    """Provider-regions offering each accelerator in the whole catalog, over the most any of
    ``accelerators`` has (1 = as widely offered as the best candidate)."""
    n = _provider_regions()
    accs = list(pd.unique(pd.Series(list(accelerators))))
    counts = pd.Series([float(n.get(a, 0)) for a in accs], index=accs)
    top = counts.max()
    return counts / top if top > 0 else counts


# --- hard constraints --------------------------------------------------------------------------------

_usd = usd  # money in words' units (workbook.narrative.usd)


def _pct(x: float) -> str:
    """A percentage with enough digits to be different from zero when it is."""
    a = abs(x)
    return f"{x:.0%}" if a >= 0.01 or a == 0 else f"{x:.1%}" if a >= 0.001 else f"{x:.2%}"


def apply_constraints(s: Scenario, priced: pd.DataFrame) -> pd.Series:
    """Why each option is ruled out ("; "-joined), or None where it passes every hard constraint."""
    c = s.constraints
    p = s.pricing
    training = cost.is_training(s)
    reasons: list[list[str]] = [[] for _ in range(len(priced))]
    idx = {lbl: i for i, lbl in enumerate(priced.index)}

    def add(mask, text):
        mask = pd.Series(mask, index=priced.index).fillna(False).astype(bool)
        texts = text if isinstance(text, pd.Series) else pd.Series(text, index=priced.index)
        for lbl in priced.index[mask.to_numpy()]:
            reasons[idx[lbl]].append(str(texts[lbl]))

    if "fits" in priced:
        fits = priced["fits"].astype("boolean").fillna(False)
        why = priced["reason"].fillna("does not fit in memory") if "reason" in priced else "does not fit in memory"
        why = why.astype(str) if isinstance(why, pd.Series) else pd.Series(why, index=priced.index)
        # perf's reason says what failed: a missing peak for the precision is not a memory problem
        kind = why.str.contains("peak", case=False).map({True: "precision: ", False: "memory: "})
        add(~fits, kind + why)
    if not training and "meets_slo" in priced:
        ok = priced["meets_slo"].astype("boolean").fillna(False)
        fits = priced["fits"].astype("boolean").fillna(False) if "fits" in priced else True
        parts = []
        for _, r in priced.iterrows():
            bits = []
            if s.workload.ttft_slo_ms is not None and pd.notna(r.get("ttft_ms")) and r["ttft_ms"] > s.workload.ttft_slo_ms:
                bits.append(f"TTFT {r['ttft_ms']:.0f} ms > {s.workload.ttft_slo_ms:g} ms")
            if s.workload.tpot_slo_ms is not None and pd.notna(r.get("tpot_ms")) and r["tpot_ms"] > s.workload.tpot_slo_ms:
                bits.append(f"{r['tpot_ms']:.0f} ms per token > {s.workload.tpot_slo_ms:g} ms")
            parts.append("latency: " + (", ".join(bits) if bits else "misses the load or latency targets"))
        add(~ok & fits, pd.Series(parts, index=priced.index))
    if c.max_chips is not None and "chips" in priced:
        ch = priced["chips"].astype(float)
        add(ch > c.max_chips, "chips: " + ch.map(lambda v: f"{v:,.0f}") + f" > max_chips {c.max_chips:,}")
    if "shape_reason" in priced:
        add(priced["shape_reason"].notna(), priced["shape_reason"])
    add(priced["usd_per_instance_hour"].isna(),
        "not priced: no sourced " + priced["pricing_model"].map(lambda m: cost.MODEL_LABEL.get(m, m).replace("a ", "", 1))
        + " price for this accelerator" + np.where(priced["pricing_model"] == "purchase", " (data/hardware.csv)", ""))
    if "paid_per_used_hour" in priced:
        never = (np.isinf(priced["paid_per_used_hour"].astype(float)) & (priced["pricing_model"] == "spot")
                 & priced["usd_per_instance_hour"].notna())
        if "spot_availability_target" in priced:  # latency-bound serving: no number of spares suffices
            lat = never & priced["spot_availability_target"].notna()
            add(lat, f"spot: with {p.spot_interruptions_per_hour:g} interruptions per instance-hour and "
                f"{p.restart_min:g}-min restarts no number of spare instances meets the "
                f"{p.spot_availability_target:.1%} availability target")
            never = never & priced["spot_availability_target"].isna()
        if never.any():
            rate = priced["spot_n"].astype(float) * p.spot_interruptions_per_hour
            add(never, "spot: the job is interrupted " + rate.map(lambda v: f"{v:.3g}") + " times an hour; with "
                f"{p.checkpoint_interval_min:g}-min checkpoints and {p.restart_min:g}-min restarts it never finishes")
    if training and c.deadline_days is not None and "time_days" in priced:
        t = priced["time_days"].astype(float)
        add(t > c.deadline_days, "deadline: " + t.map(lambda v: f"{v:,.1f}") + f" days > {c.deadline_days:g}")
    if c.budget_usd is not None:
        total = priced["cost_usd"] if training else priced.get("usd_total")
        if total is not None:
            total = total.astype(float)
            add(total > c.budget_usd, "budget: " + total.map(_usd) + f" > {_usd(c.budget_usd)}"
                + ("" if training else f" over {p.horizon_months:g} months"))
    if "framework_reason" in priced:
        add(priced["framework_reason"].notna(), priced["framework_reason"])
    return pd.Series(["; ".join(r) if r else None for r in reasons], index=priced.index, dtype=object)


# --- ranking -----------------------------------------------------------------------------------------

def _weights(s: Scenario) -> dict[str, float]:
    return s.weights.model_dump()


def _criteria(s: Scenario, feasible: pd.DataFrame, mc: pd.DataFrame | None) -> pd.DataFrame:
    training = cost.is_training(s)
    metric = "cost_usd" if training else "usd_per_million_tokens"
    df = feasible.copy()
    df["cost_value"] = df[metric].astype(float)
    if mc is not None and len(mc) and "p50" in mc:
        p50 = mc.set_index("option")["p50"]
        df["cost_value"] = df["option"].map(p50).fillna(df["cost_value"])
        df["p_cheapest"] = df["option"].map(mc.set_index("option")["p_cheapest"])
        if "p_cheapest_accelerator" in mc:
            df["p_cheapest_accelerator"] = df["option"].map(mc.set_index("option")["p_cheapest_accelerator"])
        if training and "days_p50" in mc:
            df["time_days_p50"] = df["option"].map(mc.set_index("option")["days_p50"])
    if training:
        df["time_value"] = df["time_days"].astype(float)
    else:
        df["time_value"] = df["tpot_ms"].astype(float) if "tpot_ms" in df else np.nan
    fit = framework_fit(s, df["accelerator"].unique())
    df = df.merge(fit[["accelerator", "ecosystem_score", "portability_score", "framework", "framework_support",
                       "needs_porting", "porting_why"]], on="accelerator", how="left")
    df["supply_score"] = df["accelerator"].map(supply_scores(df["accelerator"].unique()))
    return df


def _score(df: pd.DataFrame, w: dict[str, float], cost_values=None) -> pd.DataFrame:
    cv = df["cost_value"].to_numpy(float) if cost_values is None else cost_values
    tv = df["time_value"].to_numpy(float)
    out = pd.DataFrame(index=df.index)
    out["cost_score"] = np.nanmin(cv) / cv
    out["time_score"] = np.nanmin(tv) / tv if np.isfinite(tv).any() else 1.0
    out["time_score"] = out["time_score"].fillna(0.0)
    out["ecosystem_score"] = df["ecosystem_score"].to_numpy(float)
    out["portability_score"] = df["portability_score"].to_numpy(float)
    out["supply_risk_score"] = df["supply_score"].to_numpy(float)
    total = sum(w.values())
    out["score"] = sum(w[k] * out[f"{k}_score"] for k in CRITERIA) / total
    return out


def pareto_front(cost_values, time_values) -> np.ndarray:
    """True where no other option is at least as cheap and as fast and strictly better in one."""
    c = np.asarray(cost_values, dtype=float)
    t = np.asarray(time_values, dtype=float)
    le = (c[None, :] <= c[:, None]) & (t[None, :] <= t[:, None])
    lt = (c[None, :] < c[:, None]) | (t[None, :] < t[:, None])
    dominated = (le & lt).any(axis=1)
    return ~dominated


def rank(s: Scenario, priced: pd.DataFrame, mc: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every option that passes the hard constraints, scored and sorted (best first), with its
    criterion scores, weighted score and Pareto flag (cost vs time)."""
    metric = "cost_usd" if cost.is_training(s) else "usd_per_million_tokens"
    feasible = priced[priced["excluded_reason"].isna() & priced[metric].notna()]
    if feasible.empty:
        return pd.DataFrame()
    df = _criteria(s, feasible, mc)
    sc = _score(df, _weights(s))
    df = pd.concat([df.drop(columns=[c for c in sc.columns if c in df]), sc], axis=1)
    df["pareto"] = pareto_front(df["cost_value"], df["time_value"].fillna(np.inf))
    df = df.sort_values(["score", "cost_value"], ascending=[False, True], kind="stable").reset_index(drop=True)
    df.insert(0, "rank", np.arange(1, len(df) + 1))
    return df


def ranking_table(ranked: pd.DataFrame, s: Scenario) -> pd.DataFrame:
    """The ranking a stakeholder reads: the best offering of each accelerator x way to pay."""
    if ranked.empty:
        return ranked
    training = cost.is_training(s)
    best = ranked.drop_duplicates(["accelerator", "pricing_model"]).copy()
    best["rank"] = np.arange(1, len(best) + 1)
    cols = ["rank", "accelerator", "pricing_model", "provider", "offering", "region"]
    cols += (["cost_usd", "cost_usd_low", "cost_usd_high", "time_days"] if training
             else ["usd_per_million_tokens", "usd_per_million_tokens_low", "usd_per_million_tokens_high",
                   "usd_per_month", "tpot_ms"])
    cols += [c for c in ("p_cheapest",) if c in best]
    cols += ["cost_score", "time_score", "ecosystem_score", "portability_score", "supply_risk_score", "score", "pareto",
             "option"]
    return best[[c for c in cols if c in best]].reset_index(drop=True)


# --- the recommendation ------------------------------------------------------------------------------

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

    def as_dict(self) -> dict:
        """JSON-ready: the choice, reasons, runner-up, flip conditions, top of the ranking, exclusions."""
        def clean(v):
            if isinstance(v, (np.generic,)):
                v = v.item()
            if isinstance(v, float) and not np.isfinite(v):
                return None
            if v is pd.NA:
                return None
            return v

        def records(df, n=None):
            if df is None or df.empty:
                return []
            d = df if n is None else df.head(n)
            return [{k: clean(v) for k, v in r.items()} for r in d.to_dict("records")]

        return {"scenario": self.scenario, "summary": self.headline(), "accelerator": self.accelerator,
                "offering": self.offering,
                "provider": self.provider, "pricing_model": self.pricing_model, "metric": self.metric,
                "figures": {k: clean(v) for k, v in self.figures.items()},
                "reasons": list(self.reasons),
                "runner_up": ({k: clean(v) for k, v in self.runner_up.items()} if self.runner_up else None),
                "flip_conditions": list(self.flip_conditions),
                "ranking": records(self.ranking, 15), "excluded": records(self.excluded)}

    def summary(self) -> pd.DataFrame:
        """The recommendation as a two-column table (renders well in notebooks and reports)."""
        rows = [("recommendation", self.headline())]
        if self.runner_up:
            rows.append(("runner-up", self.runner_up.get("summary", "")))
        rows += [("why", r) for r in self.reasons]
        rows += [("what would change it", f) for f in self.flip_conditions]
        return pd.DataFrame(rows, columns=["", "detail"])

    def __repr__(self) -> str:
        lines = [f"Recommendation: {self.headline()}"] + [f"  - {r}" for r in self.reasons]
        if self.runner_up:
            lines.append(f"Runner-up: {self.runner_up.get('summary', '')}")
        lines += ["What would change it:"] + [f"  - {f}" for f in self.flip_conditions]
        return "\n".join(lines)

    def headline(self) -> str:
        if self.accelerator is None:
            return "No option passes the hard constraints."
        return self.description or (f"{self.accelerator} on {cost.MODEL_LABEL.get(self.pricing_model, self.pricing_model)} "
                                    f"({self.provider}, {self.offering})")

    def _repr_html_(self) -> str:
        import html
        items = "".join(f"<li>{html.escape(r)}</li>" for r in self.reasons)
        flips = "".join(f"<li>{html.escape(f)}</li>" for f in self.flip_conditions)
        ru = html.escape(self.runner_up.get("summary", "")) if self.runner_up else "none"
        return (f"<h3>Recommendation: {html.escape(self.headline())}</h3><ul>{items}</ul>"
                f"<p><b>Runner-up:</b> {ru}</p><p><b>What would change the decision:</b></p><ul>{flips}</ul>")


def _describe(r: pd.Series) -> str:
    where = ", ".join(str(x) for x in (r.get("provider"), r.get("instance"), r.get("region")) if pd.notna(x) and x)
    return f"{r['accelerator']} on {cost.MODEL_LABEL.get(r['pricing_model'], r['pricing_model'])} ({where})"


def _excluded_table(priced: pd.DataFrame) -> pd.DataFrame:
    """What the hard constraints ruled out: one row per accelerator x way to pay x kind of
    constraint, with the number of offerings and the reason of the least bad of them."""
    cols = ["option", "accelerator", "pricing_model", "offerings", "constraint"]
    ex = priced[priced["excluded_reason"].notna()].copy()
    if ex.empty:
        return pd.DataFrame(columns=cols)
    ex["kinds"] = ex["excluded_reason"].str.findall(r"(?:^|; )([a-z ]+):").str.join(", ")
    metric = ex["metric"].iloc[0] if "metric" in ex else "cost_usd"
    ex = ex.sort_values(metric, na_position="last", kind="stable")
    g = (ex.assign(offering=ex["offering"].fillna("-"))
         .groupby(["accelerator", "pricing_model", "kinds"], sort=False)
         .agg(offerings=("offering", "nunique"), constraint=("excluded_reason", "first")).reset_index())
    g["option"] = (g["accelerator"] + " | " + g["offerings"].map(lambda k: f"{k} offering{'s' if k != 1 else ''}")
                   + " | " + g["pricing_model"])
    order = {m: i for i, m in enumerate(cost.PRICING_MODELS)}
    g["_o"] = g["pricing_model"].map(order)
    return g.sort_values(["accelerator", "_o"], kind="stable")[cols].reset_index(drop=True)


def _unit(s: Scenario) -> str:
    return "per run" if cost.is_training(s) else "per million output tokens"


def _fmt_cost(s: Scenario, v: float) -> str:
    return _usd(v) + (" per million output tokens" if not cost.is_training(s) else "")


def _p_cheaper(s: Scenario, priced: pd.DataFrame, a: str, b: str, n: int = 10000, seed: int = 0) -> float:
    sub = priced[priced["option"].isin([a, b])].drop_duplicates("option").set_index("option").loc[[a, b]].reset_index()
    d = cost.mc_draws(s, sub, n=n, seed=seed)
    return float(np.mean(d["metric"][0] < d["metric"][1]))


def _weight_flips(s: Scenario, ranked: pd.DataFrame) -> list[str]:
    """For each criterion: the weight (others unchanged) at which another option overtakes the winner.
    The score difference is linear in one weight w_k: D(w_k') = D + (w_k' - w_k)·d_k."""
    w = _weights(s)
    win_row = ranked.iloc[0]
    rivals = ranked.iloc[1:]
    rivals = rivals[(rivals["accelerator"] != win_row["accelerator"]) | (rivals["pricing_model"] != win_row["pricing_model"])]
    if rivals.empty:
        return []
    sc = rivals[[f"{k}_score" for k in CRITERIA]].to_numpy(float)
    win = win_row[[f"{k}_score" for k in CRITERIA]].to_numpy(float)
    d = win[None, :] - sc  # per rival x criterion
    D = d @ np.array([w[k] for k in CRITERIA])
    out = []
    for j, k in enumerate(CRITERIA):
        dk = d[:, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            new = w[k] - D / dk
        # strictly inside (0, 1): at the threshold the two tie; beyond it the rival leads
        ok = np.isfinite(new) & (dk != 0) & (new > 1e-9) & (new < 1) & (D > 0)
        if not ok.any():
            continue
        i = int(np.argmin(np.where(ok, np.abs(new - w[k]), np.inf)))
        rival = rivals.iloc[i]
        direction = "rose" if new[i] > w[k] else "fell"
        name = k.replace("_", " ")
        digits = 2 if abs(new[i] - w[k]) >= 0.01 else 3 if abs(new[i] - w[k]) >= 0.001 else 4
        out.append(f"If the {name} weight {direction} from {w[k]:.{digits}f} to {new[i]:.{digits}f} (others "
                   f"unchanged), {_describe(rival)} would rank first.")
    return out


def _price_flip(s: Scenario, ranked: pd.DataFrame, runner_idx: int) -> str | None:
    """The winner's cost increase at which the runner-up overtakes (bisection on a multiplier; only
    the cost score moves, so the rest of each score is computed once)."""
    w = _weights(s)
    if w["cost"] <= 0:
        return None
    total = sum(w.values())
    cv = ranked["cost_value"].to_numpy(float)
    rest = (ranked[[f"{k}_score" for k in CRITERIA if k != "cost"]].to_numpy(float)
            @ np.array([w[k] for k in CRITERIA if k != "cost"]))
    others_min = np.nanmin(np.delete(cv, 0)) if len(cv) > 1 else np.inf

    def gap(mult):
        c0 = cv[0] * mult
        cmin = min(c0, others_min)
        s0 = (w["cost"] * cmin / c0 + rest[0]) / total
        sr = (w["cost"] * cmin / cv[runner_idx] + rest[runner_idx]) / total
        return s0 - sr

    if gap(1.0) <= 0:
        return None
    lo, hi = 1.0, 1.0
    for _ in range(60):
        hi *= 1.5
        if gap(hi) < 0:
            break
    else:
        return None
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
    return (f"If the recommended option cost {_pct(hi - 1)} more than estimated, "
            f"{_describe(ranked.iloc[runner_idx])} would rank first.")


def _utilization_flip(s: Scenario, winner: pd.Series, priced: pd.DataFrame) -> str | None:
    """Break-even utilisation between a commitment and on-demand on the same offering."""
    p = s.pricing
    same = priced[(priced["offering"] == winner["offering"]) & priced["usd_per_instance_hour"].notna()]
    od = same[same["pricing_model"] == "on_demand"]
    if winner["kind"] == "reserved" and winner["pricing_model"] != "purchase" and len(od):
        odp = float(od["usd_per_instance_hour"].iloc[0])
        tt = max(winner["term_months"], winner["horizon_eff_months"]) / winner["horizon_eff_months"]
        u_star = winner["usd_per_instance_hour"] * tt / odp
        if u_star <= min(1.0, winner["duty"]):
            return (f"If utilisation fell below {u_star:.0%} (you assume {p.utilization:.0%}), on-demand on the same "
                    f"instance would be cheaper than {cost.MODEL_LABEL[winner['pricing_model']]}.")
    if winner["pricing_model"] == "on_demand":
        for model in ("commit_1y", "commit_3y"):
            c = same[same["pricing_model"] == model]
            if len(c):
                r = c.iloc[0]
                tt = max(r["term_months"], r["horizon_eff_months"]) / r["horizon_eff_months"]
                u_star = r["usd_per_instance_hour"] * tt / winner["usd_per_instance_hour"]
                if u_star <= 1.0 and u_star <= r["duty"]:
                    return (f"If utilisation rose above {u_star:.0%} (you assume {p.utilization:.0%}), "
                            f"{cost.MODEL_LABEL[model]} on the same instance would be cheaper than on-demand.")
    if winner["pricing_model"] == "spot":
        od_price = od["usd_per_instance_hour"]
        if len(od_price):
            k_ckpt = p.checkpoint_interval_min / 60.0 if cost.is_training(s) else 0.0
            if pd.notna(winner.get("spot_availability_target", np.nan)):
                lam = cost.breakeven_interruptions_spot_spares(winner["usd_per_instance_hour"], float(od_price.iloc[0]),
                                                               p.restart_min / 60.0, winner["instances"],
                                                               p.spot_availability_target)
            else:
                lam = float(cost.breakeven_interruptions_spot(winner["usd_per_instance_hour"], float(od_price.iloc[0]),
                                                              k_ckpt, p.restart_min / 60.0, winner["spot_n"]))
            return (f"If spot instances were interrupted more than {lam:.3g} times an hour (you assume "
                    f"{p.spot_interruptions_per_hour:g}), on-demand on the same instance would be cheaper.")
    return None


def _constraint_flips(s: Scenario, priced: pd.DataFrame, ranked: pd.DataFrame, mc) -> list[str]:
    """Options ruled out only by a limit the team could move (budget, deadline, chips) that would
    rank first if it moved."""
    c = s.constraints
    training = cost.is_training(s)
    metric = "cost_usd" if training else "usd_per_million_tokens"
    ex = priced[priced["excluded_reason"].notna() & priced[metric].notna()]
    out = []
    for key, label in (("budget", "budget"), ("deadline", "deadline"), ("chips", "max_chips")):
        only = ex[ex["excluded_reason"].str.fullmatch(rf"{key}: [^;]*")]
        if only.empty:
            continue
        cand = pd.concat([priced.loc[ranked["option"].map(dict(zip(priced["option"], priced.index)))], only])
        cand = cand.drop_duplicates("option")
        crit = _criteria(s, cand, None)
        sc = _score(crit, _weights(s))
        crit = pd.concat([crit.drop(columns=[c for c in sc.columns if c in crit]), sc], axis=1).sort_values("score", ascending=False)
        top = crit.iloc[0]
        if top["option"] not in set(only["option"]):
            continue
        if key == "budget":
            need = top["cost_usd"] if training else top["usd_total"]
            text = f"If the budget were {_usd(need)} instead of {_usd(c.budget_usd)}"
        elif key == "deadline":
            text = f"If the deadline were {top['time_days']:.0f} days instead of {c.deadline_days:g}"
        else:
            text = f"If up to {top['chips']:,.0f} chips were allowed instead of {c.max_chips:,}"
        out.append(f"{text}, {_describe(top)} would rank first.")
    return out


def recommend(s: Scenario, perf_df: pd.DataFrame, priced: pd.DataFrame, mc: pd.DataFrame | None = None,
              n_draws: int = 10000, seed: int = 0) -> Recommendation:
    """The top-ranked option that passes every hard constraint, with reasons in plain sentences
    (numbers included), the runner-up (best option on another accelerator), the conditions that
    would flip the decision, the ranking and the exclusions."""
    training = cost.is_training(s)
    metric = "cost_usd" if training else "usd_per_million_tokens"
    ranked = rank(s, priced, mc)
    excluded = _excluded_table(priced)
    if ranked.empty:
        why = excluded.groupby("constraint").size().sort_values(ascending=False)
        reasons = ["Every option is ruled out. Most common reasons: "
                   + "; ".join(f"{k} ({v} option group{'s' if v != 1 else ''})" for k, v in why.head(3).items())]
        return Recommendation(s.name, None, None, None, None, reasons, None,
                              ["Relax a constraint (budget, deadline, max_chips, frameworks) or add candidates."],
                              ranked, excluded, metric)
    win = ranked.iloc[0]
    others = ranked[ranked["accelerator"] != win["accelerator"]]
    runner_idx = int(others.index[0]) if len(others) else (1 if len(ranked) > 1 else None)
    ru = ranked.iloc[runner_idx] if runner_idx is not None else None
    reasons: list[str] = []
    w = s.workload
    p = s.pricing

    # cost
    cheapest = ranked.loc[ranked[metric].astype(float).idxmin()]  # by the point estimate, as the sentences quote
    unit = "for the run" if training else "per million output tokens"
    load = (f" at your load ({w.requests_per_s:g} requests/s, {w.output_tokens} output tokens each)"
            if not training and w.requests_per_s else "")
    monthly = "" if training else f" ({_usd(win['usd_per_month'])} a month)"
    lo_, hi_ = win[metric + "_low"], win[metric + "_high"]
    band = (f"band {_usd(lo_)}-{_usd(hi_)} from the performance estimate"
            if pd.notna(lo_) and pd.notna(hi_) and hi_ > lo_ * 1.005 else "the performance estimate gives no band")
    if ru is not None:
        # One figure per sentence: the point estimate (as in the key figures and estimate --json), its
        # band, and the Monte Carlo median that the ranking uses, labelled as such.
        diff = 1 - win[metric] / ru[metric]
        rel = f"{abs(diff):.0%} {'less' if diff >= 0 else 'more'}"
        median = (f" (Monte Carlo median {_usd(win['cost_value'])})"
                  if abs(win["cost_value"] - win[metric]) > 0.005 * abs(win[metric]) else "")
        reasons.append(f"{_describe(win)} costs {_usd(win[metric])} {unit}{monthly}{load}{median}; {band}. That is "
                       f"{rel} than the runner-up, {_describe(ru)} ({_usd(ru[metric])}).")
        p_win = _p_cheaper(s, priced, win["option"], ru["option"], n=n_draws, seed=seed)
        extra = ""
        if "p_cheapest" in win and pd.notna(win.get("p_cheapest")):
            extra = f"; it is the cheapest of all {len(ranked)} feasible options in {win['p_cheapest']:.0%} of them"
        reasons.append(f"It is cheaper than the runner-up in {p_win:.0%} of {n_draws:,} Monte Carlo draws "
                       f"(efficiency, spot price, utilisation and interruptions varied){extra}.")
    else:
        reasons.append(f"{_describe(win)} is the only option that passes every hard constraint: "
                       f"{_usd(win['cost_value'])} {unit}{monthly}{load}; {band}.")
    if cheapest["option"] != win["option"]:
        reasons.append(f"It is not the cheapest: {_describe(cheapest)} costs {_usd(cheapest[metric])} "
                       f"({1 - cheapest[metric] / win[metric]:.0%} less) but scores lower on the other criteria.")
    age = _age(win.get("as_of"), _dt.date.today())
    if pd.notna(age) and age > STALE_DAYS:
        reasons.append(f"Check its price before committing: the {_describe(win)} price is dated {win['as_of']} "
                       f"({age / 30.4:.0f} months old, over the {STALE_DAYS}-day freshness limit; see the "
                       f"assumptions ledger).")
    # time
    if training:
        dl = f", inside the {s.constraints.deadline_days:g}-day deadline" if s.constraints.deadline_days else ""
        band = ""
        days = float(win["time_days"])
        unit, scale = ("hours", 24.0) if days < 2 else ("days", 1.0)
        if ("time_days_low" in win and pd.notna(win["time_days_low"]) and pd.notna(win["time_days_high"])
                and win["time_days_high"] > win["time_days_low"] * 1.005):
            band = f" (band {win['time_days_low'] * scale:.1f}-{win['time_days_high'] * scale:.1f})"
        reasons.append(f"It finishes in {days * scale:.1f} {unit}{band} on {win['chips']:,.0f} chips "
                       f"({win['instances']:,.0f} x {win['instance']}){dl}.")
    else:
        bits = []
        if pd.notna(win.get("ttft_ms")):
            bits.append(f"TTFT {win['ttft_ms']:.0f} ms" + (f" (target {w.ttft_slo_ms:g})" if w.ttft_slo_ms else ""))
        if pd.notna(win.get("tpot_ms")):
            bits.append(f"{win['tpot_ms']:.0f} ms per output token" + (f" (target {w.tpot_slo_ms:g})" if w.tpot_slo_ms else ""))
        fleet = f"{win['chips']:,.0f} chip{'s' if win['chips'] != 1 else ''}"
        if pd.notna(win.get("replicas")) and pd.notna(win.get("tp")):
            fleet += f" ({win['replicas']:,.0f} replicas x TP {win['tp']:.0f})"
        has_slo = w.ttft_slo_ms is not None or w.tpot_slo_ms is not None
        reasons.append(f"It {'meets the latency targets' if has_slo else 'serves the load'} with {fleet} on "
                       f"{win['instances']:,.0f} x {win['instance']}: " + ", ".join(bits) + ".")
    # ecosystem
    fw = FRAMEWORK_LABEL[win["framework"]]
    plat = PLATFORM_LABEL.get(win.get("platform"), win.get("platform"))
    if win["needs_porting"]:
        port = (f"a porting cost of {_usd(p.porting_cost_usd)} is included" if p.porting_cost_usd > 0
                else "no porting cost is included (set pricing.porting_cost_usd)")
        sw = catalog.software()
        here = sw[(sw["platform"] == win["platform"]) & sw["capability"].isin(list(FRAMEWORK_LABEL))]
        good = [FRAMEWORK_LABEL[c] for c, sup in zip(here["capability"], here["support"]) if sup in ("native", "supported")]
        route = f"it runs {' or '.join(good)} well on {plat}; " if good else ""
        reasons.append(f"It needs porting ({win['porting_why']}, software.csv): {route}{port}.")
    else:
        reasons.append(f"It runs {fw} with '{win['framework_support']}' support on {plat} (software.csv); "
                       f"ecosystem score {win['ecosystem_score']:.2f}, portability {win['portability_score']:.2f}.")
    # term
    if win["kind"] == "reserved":
        term = win["term_months"]
        reasons.append(f"{cost.MODEL_LABEL[win['pricing_model']].capitalize()} is paid for {term:g} months whether used "
                       f"or not; at {p.utilization:.0%} utilisation over your {p.horizon_months:g}-month horizon it pays "
                       f"{win['paid_per_used_hour']:.2f} hours per hour of work ({win['price_basis']}).")
    elif win["pricing_model"] == "spot" and pd.notna(win.get("spot_availability_target", np.nan)):
        k, n = float(win["spare_instances"]), float(win["instances"])
        short = float(cost.poisson_sf(int(k), (n + k) * p.spot_interruptions_per_hour * p.restart_min / 60.0))
        target = f"{p.spot_availability_target * 100:g}% availability target"
        how = (f"with {k:.0f} spare instance{'' if k == 1 else 's'} ({target}): +{k / n:.0%} instance-hours; "
               if k > 0 else f"with 0 spare instances ({target}): ")
        reasons.append(f"It keeps the latency targets through spot interruptions ({p.spot_interruptions_per_hour:g} per "
                       f"instance-hour, a {p.restart_min:g}-min restart each) {how}the fleet is short of capacity "
                       f"{short:.2%} of the time (instances out at once: Poisson, M/G/inf; "
                       "pricing.spot_availability_target).")
    elif win["pricing_model"] == "spot":
        how = (f"{p.checkpoint_interval_min:g}-min checkpoints, {p.restart_min:g}-min restarts" if training
               else f"a {p.restart_min:g}-min restart each")
        reasons.append(f"Spot interruptions ({p.spot_interruptions_per_hour:g} per instance-hour, {how}) add "
                       f"{_pct(win['paid_per_used_hour'] - 1)} to the hours paid.")
    # score
    wts = _weights(s)
    reasons.append("Weighted score " + f"{win['score']:.2f} of 1 (weights: "
                   + ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in wts.items() if v > 0)
                   + (f"); runner-up {ru['score']:.2f}." if ru is not None else ")."))

    flips: list[str] = []
    if ru is not None:
        pf = _price_flip(s, ranked, runner_idx)
        if pf:
            flips.append(pf)
    uf = _utilization_flip(s, win, priced)
    if uf:
        flips.append(uf)
    if len(ranked) > 1:
        flips += _weight_flips(s, ranked)
    flips += _constraint_flips(s, priced, ranked, mc)
    if not flips:
        flips.append("Nothing within the scenario's ranges changes the choice (weights, prices, utilisation).")

    runner = None
    if ru is not None:
        runner = {"accelerator": ru["accelerator"], "offering": ru["offering"], "provider": ru["provider"],
                  "pricing_model": ru["pricing_model"], "score": float(ru["score"]), metric: float(ru[metric]),
                  "summary": f"{_describe(ru)}: {_fmt_cost(s, ru['cost_value'])}, score {ru['score']:.2f}"}
    figures = {metric: float(win[metric]), f"{metric}_low": float(win[f"{metric}_low"]),
               f"{metric}_high": float(win[f"{metric}_high"]), "score": float(win["score"]),
               "chips": float(win["chips"]), "instances": float(win["instances"])}
    if training:
        figures["time_days"] = float(win["time_days"])
    else:
        figures["usd_per_month"] = float(win["usd_per_month"])
    if "p_cheapest" in win and pd.notna(win.get("p_cheapest")):
        figures["p_cheapest"] = float(win["p_cheapest"])
    figures[f"{metric}_p50"] = float(win["cost_value"])
    return Recommendation(s.name, win["accelerator"], win["offering"], win["provider"], win["pricing_model"],
                          reasons, runner, flips, ranking_table(ranked, s), excluded, metric, figures, _describe(win))


# --- assumptions ledger -------------------------------------------------------------------------------

def _flatten(prefix: str, obj, out: list):
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flatten(f"{prefix}.{k}" if prefix else k, v, out)
    else:
        out.append((prefix, obj))


def _field_description(s: Scenario, dotted: str) -> str | None:
    node = s
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = getattr(node, part, None)
        if node is None or not hasattr(type(node), "model_fields"):
            return None
    f = type(node).model_fields.get(parts[-1])
    return f.description if f is not None else None


def _age(as_of, today: _dt.date) -> float:
    try:
        d = pd.Timestamp(str(as_of)).date()
    except (ValueError, TypeError):
        return np.nan
    return float((today - d).days)


def assumptions(s: Scenario, perf_df: pd.DataFrame, priced: pd.DataFrame, today: _dt.date | None = None) -> pd.DataFrame:
    """Every input the decision used: the scenario's values, the catalog rows (prices with their
    sources and dates, chips, software support), the performance estimates and the model's own
    conventions. ``flag`` marks prices older than 180 days (relative to ``today``) and prices whose
    date is only the collection date."""
    today = today or _dt.date.today()
    rows = []
    flat: list = []
    _flatten("", s.model_dump(exclude_none=True, exclude={"name", "title", "description"}), flat)
    for k, v in flat:
        desc = _field_description(s, k)
        rows.append({"category": "scenario", "item": k, "value": ", ".join(map(str, v)) if isinstance(v, list) else v,
                     "source": f"data/scenarios/{s.name}.yaml or the default" + (f": {desc}" if desc else ""),
                     "as_of": None})
    # performance
    keys = (["chips", "training_days", "mfu", "tokens_per_s"] if cost.is_training(s)
            else ["chips", "replicas", "tp", "ttft_ms", "tpot_ms", "output_tokens_per_s"])
    for _, r in perf_df.iterrows():
        vals = ", ".join(f"{k} {r[k]:,.4g}" for k in keys if k in r and pd.notna(r[k]) and isinstance(r[k], (int, float, np.number)))
        rows.append({"category": "performance", "item": r["accelerator"], "value": vals,
                     "source": "workbook.perf.compare (performance model)", "as_of": None})
    # prices used
    used = priced[priced["offering"].notna()].drop_duplicates(["offering", "pricing_model"])
    for _, r in used.iterrows():
        notes = str(r.get("notes") or "")
        rows.append({"category": "price", "item": f"{r['offering']} {r['pricing_model']}",
                     "value": f"{_usd(r['usd_per_instance_hour'])} per instance-hour ({r['chips_per_instance']:.0f} chips; {r['price_basis']})",
                     "source": r["source"], "as_of": r["as_of"],
                     "_date_unknown": ("NOT the price date" in notes or "snapshot date unknown" in notes
                                       or "date not in file" in notes)})
    # accelerators
    acc = catalog.accelerators().set_index("accelerator")
    for a in pd.unique(perf_df["accelerator"]):
        if a in acc.index:
            r = acc.loc[a]
            rows.append({"category": "accelerator", "item": a,
                         "value": f"{r['memory_bytes'] / 1e9:.0f} GB, {r['memory_bytes_per_s'] / 1e12:.2f} TB/s, platform {r['platform']}",
                         "source": r["source"], "as_of": r["as_of"]})
    # software
    sw = catalog.software()
    plats = set(acc.loc[[a for a in pd.unique(perf_df["accelerator"]) if a in acc.index], "platform"])
    caps = set(list(s.constraints.frameworks or [s.workload.framework]) + needed_capabilities(s) + ["multi_cloud", "on_prem"])
    for _, r in sw[sw["platform"].isin(plats) & sw["capability"].isin(caps)].iterrows():
        rows.append({"category": "software", "item": f"{r['platform']} {r['capability']}", "value": r["support"],
                     "source": r["source"], "as_of": r["as_of"]})
    # model conventions
    conv = [
        ("hours per month", cost.HOURS_PER_MONTH, "8,760 h / 12: the billing month (offerings' committed hourly = monthly / 730)"),
        ("spot work lost per interruption", "checkpoint interval / 2 + restart",
         "Young 1974 (CACM 17(9)); Daly 2006 (FGCS 22(3))"),
        ("job interruption rate", "instances x rate per instance", "a job stops when any of its instances is reclaimed"),
        ("spot spares (latency-bound serving)",
         f"smallest k with P(N > k) <= 1 - {s.pricing.spot_availability_target:g} (pricing.spot_availability_target, "
         "a planning choice), N ~ Poisson((instances + k) x rate x restart); k spares paid",
         "M/G/inf: number in service is Poisson(arrival rate x mean service time) (Gross & Harris, Fundamentals "
         "of Queueing Theory); workbook.cost.spare_instances"),
        ("reserved capacity", "paid hours = max(1, duty/u) / duty x max(term, horizon) / horizon per used hour",
         "workbook.cost.reserved_factor"),
        ("on-demand serving", "pays serving hours only (ideal autoscaling)", "workbook.cost module docstring"),
        ("support scale", "native 1, supported 2/3, partial 1/3, none 0", "equally spaced ordinal scale (workbook.decision)"),
        ("performance band", "perf _low/_high read as P10/P90 of a log-normal", "brief of issue 5"),
        ("Monte Carlo", "10,000 draws, seed 0", "workbook.cost.monte_carlo"),
    ]
    for item, v, src in conv:
        rows.append({"category": "model convention", "item": item, "value": v, "source": src, "as_of": None})
    if (priced["pricing_model"] == "purchase").any():
        hw = cost.hardware()
        for _, r in hw.iterrows():
            rows.append({"category": "hardware", "item": r["system"],
                         "value": f"{_usd(r['purchase_usd'])} for {r['chips_per_system']} x {r['accelerator']}",
                         "source": r["source"], "as_of": r["as_of"]})
    df = pd.DataFrame(rows)
    if "_date_unknown" not in df:
        df["_date_unknown"] = False
    df["age_days"] = [(_age(a, today) if a is not None and not (isinstance(a, float) and np.isnan(a)) else np.nan)
                      for a in df["as_of"]]
    flags = []
    for _, r in df.iterrows():
        f = []
        if r["category"] == "price" and pd.notna(r["age_days"]) and r["age_days"] > STALE_DAYS:
            f.append(f"stale: older than {STALE_DAYS} days")
        if r["category"] == "price" and r.get("_date_unknown") is True:
            f.append("price date unknown (as_of is when it was collected)")
        flags.append("; ".join(f) if f else None)
    df["flag"] = flags
    df["value"] = df["value"].map(lambda v: v if isinstance(v, str) else (f"{v:g}" if isinstance(v, float) else str(v)))
    return df[["category", "item", "value", "source", "as_of", "age_days", "flag"]]


__all__ = ["Recommendation", "recommend", "rank", "ranking_table", "apply_constraints", "framework_fit",
           "pareto_front", "assumptions", "needed_capabilities", "supply_scores", "SUPPORT_SCORE", "CRITERIA"]

