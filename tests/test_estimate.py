"""`python -m workbook estimate SCENARIO --json`: the contract scripts and scheduled jobs rely on."""
import copy
import functools
import json
import subprocess
import sys

import pytest

TRAINING_KEYS = ["accelerator", "chips", "fits", "step_time_s", "tokens_per_s", "mfu", "training_days", "chip_hours",
                 "tp", "pp", "dp", "ep", "zero", "recompute", "micro_batch"]
INFERENCE_KEYS = ["accelerator", "chips", "fits", "ttft_ms", "tpot_ms", "output_tokens_per_s", "max_batch"]


def estimate_json(name: str) -> dict:
    """The command's output for a shipped scenario, run once per scenario and test process (a fresh
    interpreter each: the contract is the process's stdout); each caller gets its own copy."""
    return copy.deepcopy(_estimate_json(name))


@functools.cache
def _estimate_json(name: str) -> dict:
    r = subprocess.run([sys.executable, "-m", "workbook", "estimate", name, "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # strict JSON: no NaN


@pytest.mark.parametrize("name,keys,cost", [("llama2-7b-pretrain", TRAINING_KEYS, "cost_usd"),
                                            ("small-model-cheap", INFERENCE_KEYS, "usd_per_million_tokens")])
def test_estimate_json_has_every_contract_key_with_bands(name, keys, cost):
    d = estimate_json(name)
    assert d["scenario"] == name and d["options"]
    fitting = [o for o in d["options"] if o["fits"]]
    assert fitting
    for o in fitting:
        assert set(keys) <= set(o)
        uncertain = "mfu" if "mfu" in keys else "output_tokens_per_s"
        assert o[f"{uncertain}_low"] <= o[uncertain] <= o[f"{uncertain}_high"]
    priced = [o for o in fitting if o["costs"]]
    assert priced
    for entry in priced[0]["costs"].values():
        assert entry[f"{cost}_low"] <= entry[cost] <= entry[f"{cost}_high"]
        assert entry["offering"] and entry["as_of"]
    rec = d["recommendation"]
    assert rec["accelerator"] in {o["accelerator"] for o in fitting}
    assert rec["pricing_model"] and rec["reasons"]
    # how firm every offer's price is (issue 29): basis, age (None undated) and the P10/P90 doubt
    assert d["offers"]
    for o in d["offers"]:
        assert o["price_basis"] in ("catalog", "provider_page", "transcription", "secondary")
        assert "price_age_days" in o and o["price_doubt_low"] < 1 < o["price_doubt_high"]
    win = next(o for o in d["offers"] if o["offering"] == rec["offering"] and o["pricing_model"] == rec["pricing_model"])
    said = next(r for r in rec["reasons"] if r.startswith("Its price: "))
    assert ("days old" in said) == (win["price_age_days"] is not None) and ("undated" in said) != ("days old" in said)


def test_pinned_cluster_is_estimated_for_exactly_that_setup():
    # data/scenarios/llama2-7b-pretrain.yaml pins 2,048 A100-80GB, as Meta's run (Llama 2 model card).
    d = estimate_json("llama2-7b-pretrain")
    assert [(o["accelerator"], o["chips"]) for o in d["options"]] == [("A100-SXM4-80GB", 2048)]


def test_latency_bound_spot_reports_its_spare_instances():
    d = estimate_json("chat-70b-realtime")
    spots = [o["costs"]["spot"] for o in d["options"] if o["fits"] and "spot" in o["costs"]]
    assert spots and all("spare_instances" in e and e["spare_instances"] >= 0 for e in spots)
