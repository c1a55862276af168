"""Hand-made scenarios, offerings and performance frames for the cost and decision tests, and the
composed pricing step (software fit -> price_options -> apply_constraints) the pipeline runs."""
import numpy as np
import pandas as pd

from workbook import analysis, cost, decision
from workbook.scenario import parse_scenario

TRAIN = {
    "name": "t-train", "title": "test training",
    "workload": {"task": "training", "model": "llama-2-7b", "tokens": 1e11, "framework": "pytorch"},
    "pricing": {"models": ["on_demand", "spot", "commit_1y", "commit_3y"], "utilization": 0.9,
                "horizon_months": 12, "spot_interruptions_per_hour": 0.05, "checkpoint_interval_min": 30,
                "restart_min": 10, "failures_per_host_hour": 0.0},  # hand-computed bills: no hardware failures
    "weights": {"cost": 1.0, "time": 0.0, "ecosystem": 0.0, "portability": 0.0},
}
SERVE = {
    "name": "t-serve", "title": "test serving",
    "workload": {"task": "inference", "model": "llama-3.1-8b", "input_tokens": 1000, "output_tokens": 100,
                 "requests_per_s": 10, "hours_per_day": 24},
    "pricing": {"models": ["on_demand", "spot", "commit_1y", "commit_3y"], "utilization": 0.5, "horizon_months": 36,
                "spot_interruptions_per_hour": 0.05, "restart_min": 12},
}




def offering(name, acc="H100-SXM5-80GB", cpi=8, od=80.0, spot=20.0, c1=50.0, c3=30.0, kind="hyperscaler",
             provider="TestCloud", as_of="2026-11-01", price_as_of="same"):
    return {"offering": name, "provider": provider, "provider_kind": kind, "region": "r1", "instance": name,
            "accelerator": acc, "chips_per_instance": cpi, "on_demand_usd_per_hour": od, "spot_usd_per_hour": spot,
            "commit_1y_usd_per_hour": c1, "commit_3y_usd_per_hour": c3, "monthly_usd": np.nan,
            "other_usd_per_hour": np.nan, "other_price_model": None, "as_of": as_of, "source": "test row",
            "notes": "", "price_as_of": as_of if price_as_of == "same" else price_as_of}


def offers(*rows):
    return pd.DataFrame(list(rows))


def train_perf(acc="H100-SXM5-80GB", chips=64, days=10.0, low=None, high=None, fits=True):
    d = {"accelerator": [acc], "chips": [chips], "fits": [fits], "reason": [None if fits else "too big"],
         "training_days": [days]}
    if low is not None:
        d["training_days_low"], d["training_days_high"] = [low], [high]
    return pd.DataFrame(d)


def serve_perf(acc="H100-SXM5-80GB", replicas=2, tp=2, tpot=20.0):
    return pd.DataFrame({"accelerator": [acc], "chips": [replicas * tp], "fits": [True], "reason": [None],
                         "ttft_ms": [100.0], "tpot_ms": [tpot], "output_tokens_per_s": [1000.0], "max_batch": [32],
                         "meets_slo": [True], "replicas": [replicas], "tp": [tp]})


def row(priced, model, off="o1"):
    return priced[(priced["pricing_model"] == model) & (priced["offering"] == off)].iloc[0]


LIVE = {**SERVE, "name": "t-live", "workload": {**SERVE["workload"], "ttft_slo_ms": 500, "tpot_slo_ms": 50},
        "pricing": {**SERVE["pricing"], "models": ["on_demand", "spot"], "spot_interruptions_per_hour": 0.1,
                    "restart_min": 30, "spot_availability_target": 0.99}}


def price(s, perf, offerings=None, systems=None):
    """Every option priced with its exclusions, as ``analysis.analyse`` does (catalogs replaceable)."""
    return analysis.price(s, perf, offerings=offerings, systems=systems)


def two_chip_perf(fast_days=5.0, slow_days=10.0):
    """H100 (fast, dear) and A100 (slow, cheap): both CUDA, so only cost and time differ."""
    return pd.DataFrame({"accelerator": ["H100-SXM5-80GB", "A100-SXM4-80GB"], "chips": [64, 64],
                         "fits": [True, True], "reason": [None, None], "training_days": [fast_days, slow_days]})


def two_chip_offers():
    return offers(offering("h", od=100.0, spot=np.nan, c1=np.nan, c3=np.nan),
                  offering("a", acc="A100-SXM4-80GB", od=30.0, spot=np.nan, c1=np.nan, c3=np.nan))


def scenario(weights=None, constraints=None, pricing=None, workload=None, base=TRAIN):
    d = {**base, "pricing": {**base["pricing"], "models": ["on_demand"], **(pricing or {})}}
    if weights is not None:
        d["weights"] = weights
    if constraints is not None:
        d["constraints"] = constraints
    if workload is not None:
        d["workload"] = {**base["workload"], **workload}
    return parse_scenario(d)


def decide(s, perf=None, offs=None):
    perf = two_chip_perf() if perf is None else perf
    priced = price(s, perf, offerings=two_chip_offers() if offs is None else offs)
    mc = cost.monte_carlo(s, priced, n=2000)
    return decision.recommend(s, perf, priced, mc, n_draws=2000), priced
