"""``python -m workbook estimate SCENARIO [--json]``: the whole answer for one scenario.

``estimate(s)`` joins the performance model (``perf.compare``), prices (``cost.price_options``,
``cost.monte_carlo``) and the decision (``decision.recommend``) into one JSON-ready dict, the same
object that the batch reports write as ``summary.json``.
"""
from __future__ import annotations

import json
import math
import sys
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from . import __version__, catalog
from .scenario import Scenario, load_scenario

PERF_KEYS_TRAINING = ["step_time_s", "tokens_per_s", "mfu", "training_days", "chip_hours"]
PERF_KEYS_INFERENCE = ["ttft_ms", "tpot_ms", "output_tokens_per_s", "max_batch"]
COST_KEYS = ["cost_usd", "usd_per_million_tokens", "usd_per_month"]


def _clean(v):
    """JSON-safe scalar: numpy to Python, NaN/inf to None."""
    if isinstance(v, (np.generic,)):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if v is pd.NA or v is pd.NaT:
        return None
    return v


def _records(df: pd.DataFrame) -> list[dict]:
    return [{k: _clean(v) for k, v in row.items()} for row in df.to_dict("records")]


def analyse(s: Scenario, n_draws: int = 10000, seed: int = 0) -> dict:
    """Every intermediate table of the analysis, for notebooks and the app: ``perf``, ``priced``,
    ``mc`` (Monte Carlo summary), ``recommendation``. Cost and decision parts are skipped (None)
    when the cost modules are not importable."""
    from . import perf

    perf_df = perf.compare(s)
    out = {"scenario": s, "perf": perf_df, "priced": None, "mc": None, "recommendation": None}
    try:
        from . import cost, decision
    except ImportError:
        return out
    priced = cost.price_options(s, perf_df)
    mc = cost.monte_carlo(s, priced, n=n_draws, seed=seed)
    out.update(priced=priced, mc=mc, recommendation=decision.recommend(s, perf_df, priced, mc))
    return out


def _option_costs(priced: pd.DataFrame | None, accelerator: str) -> dict:
    """Cheapest offering per pricing model for one accelerator, with cost figures and bands."""
    if priced is None or priced.empty:
        return {}
    rows = priced[priced["accelerator"] == accelerator]
    if "excluded_reason" in rows:
        rows = rows[rows["excluded_reason"].isna()]
    if rows.empty:
        return {}
    key = "cost_usd" if "cost_usd" in rows and rows["cost_usd"].notna().any() else "usd_per_million_tokens"
    out = {}
    for pm, grp in rows.groupby("pricing_model", sort=False):
        grp = grp.dropna(subset=[key])
        if grp.empty:
            continue
        best = grp.loc[grp[key].idxmin()]
        entry = {"offering": best.get("offering"), "provider": best.get("provider")}
        for k in ("usd_per_chip_hour_effective", "spare_instances", "as_of"):
            if k in best.index:
                entry[k] = _clean(best[k])
        for k in COST_KEYS:
            for suffix in ("", "_low", "_high"):
                if k + suffix in best.index:
                    entry[k + suffix] = _clean(best[k + suffix])
        out[pm] = entry
    return out


def summarize(analysis: dict) -> dict:
    """The JSON object of ``estimate --json`` from an ``analyse`` result."""
    s: Scenario = analysis["scenario"]
    perf_df: pd.DataFrame = analysis["perf"]
    options = _records(perf_df)
    for opt in options:
        opt["costs"] = _option_costs(analysis["priced"], opt["accelerator"])
    rec = analysis["recommendation"]
    result = {
        "scenario": s.name,
        "title": s.title,
        "task": s.workload.task,
        "options": options,
        "recommendation": rec.as_dict() if rec is not None else None,
        "generated_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "workbook_version": __version__,
        "catalog_versions": catalog.catalog_versions(),
    }
    if analysis["mc"] is not None:
        result["monte_carlo"] = _records(analysis["mc"])
    return result


def estimate(s: Scenario) -> dict:
    """One JSON-ready dict: ``options`` (one per accelerator considered) and ``recommendation``."""
    return summarize(analyse(s))


def add_arguments(p) -> None:
    p.add_argument("scenario", help="a scenario name (data/scenarios/NAME.yaml) or a YAML path")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _table(result: dict) -> str:
    training = result["task"] != "inference"
    keys = ["accelerator", "chips", "fits"] + (PERF_KEYS_TRAINING + ["tp", "pp", "dp", "ep", "cp", "zero", "recompute", "micro_batch"]
                                              if training else PERF_KEYS_INFERENCE + ["replicas", "tp", "meets_slo"]) + ["reason"]
    df = pd.DataFrame(result["options"])
    df = df[[k for k in keys if k in df.columns]]
    lines = [f"{result['scenario']}: {result['title']}", ""]
    with pd.option_context("display.width", 200, "display.max_columns", None, "display.float_format", "{:,.3g}".format):
        lines.append(df.to_string(index=False, na_rep="-"))
    rec = result.get("recommendation")
    if rec:
        lines += ["", f"Recommendation: {rec.get('accelerator')} via {rec.get('provider')} "
                      f"{rec.get('offering')} ({rec.get('pricing_model')})"]
        lines += [f"  - {r}" for r in rec.get("reasons", [])]
    return "\n".join(lines)


def run(args) -> int:
    result = estimate(load_scenario(args.scenario))
    if args.json:
        json.dump(result, sys.stdout, indent=2, default=str)
        print()
    else:
        print(_table(result))
    return 0
