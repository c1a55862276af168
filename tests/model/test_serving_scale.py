"""Serving at scale: the deployment's concurrency, pinned layouts, multi-node replicas and TTFT under
load (``model.serving``, ``model.queueing``)."""
import math

import numpy as np
import pytest

from workbook.model import estimate, queueing
from workbook.scenario import Scenario

# kipply's 13B test model (40 layers, h 5120, MHA, 4h MLP), FasterTransformer on A100 40GB, 512-token
# prompt, batch 1, 10 tokens: TP1 prefill 63.17 ms / decode 22.0 ms, TP2 45.45 / 13.5 ms
# (kipp.ly "Transformer Inference Arithmetic", tabulated in cli99/llm-analysis
# examples/fastertransformer/README.md @b60b392, model llm_analysis/model_configs/test-13b.json)
FT_13B = {"layers": 40, "hidden": 5120, "ffn_hidden": 20480, "heads": 40, "kv_heads": 40, "vocab": 50272,
          "gated_mlp": False}


def _scenario(workload: dict, **kw) -> Scenario:
    return Scenario.model_validate({"name": "t", "title": "t", "workload": {"task": "inference", **workload}, **kw})


def _ft(parallelism=None, chips=2):
    cluster = {"accelerator": "A100-SXM4-40GB", "chips": chips}
    if parallelism:
        cluster["parallelism"] = parallelism
    s = _scenario({"architecture": FT_13B, "precision": "fp16", "input_tokens": 512, "output_tokens": 10,
                   "concurrency": 1}, cluster=cluster)
    return estimate.estimate_inference(s, "A100-SXM4-40GB")


def test_a_pinned_tp2_13b_on_two_a100_is_one_tp2_replica_near_fastertransformer():
    r = _ft({"tp": 2})
    assert (r["tp"], r["replicas"], r["batch"]) == (2, 1, 1)
    # the TP1-copies answer was +159% prefill and +94% decode against these published figures
    assert r["ttft_ms"] == pytest.approx(45.45, rel=0.6)
    assert r["tpot_ms"] == pytest.approx(13.5, rel=0.6)


def test_tensor_parallelism_lowers_the_13b_latencies_as_published():
    """FasterTransformer: TP2 cuts decode by 39% and prefill by 28% against TP1."""
    one, two = _ft({"tp": 1}, chips=1), _ft({"tp": 2})
    assert two["tpot_ms"] < 0.8 * one["tpot_ms"]
    assert two["ttft_ms"] < 0.9 * one["ttft_ms"]


def test_concurrency_is_the_whole_deployments_in_flight_sequences():
    """12 Inferentia2 chips, one stream: one replica over all 12 chips, not 12 copies of one sequence
    each at one chip's speed."""
    s = _scenario({"model": "llama-3-8b", "input_tokens": 128, "output_tokens": 8064, "concurrency": 1},
                  cluster={"accelerator": "Inferentia2", "chips": 12})
    r = estimate.estimate_inference(s, "Inferentia2")
    assert (r["tp"], r["replicas"], r["batch"]) == (12, 1, 1)
    one_chip = estimate.estimate_inference(s.model_copy(update={"cluster": s.cluster.model_copy(update={"chips": 1})}),
                                           "Inferentia2")
    assert r["output_tokens_per_s"] == pytest.approx(1e3 / r["tpot_ms"])
    assert r["tpot_ms"] < 0.6 * one_chip["tpot_ms"]


def test_a_concurrency_that_does_not_fit_the_pinned_chips_is_excluded_with_the_reason():
    s = _scenario({"model": "llama-3-8b", "input_tokens": 1024, "output_tokens": 1024, "concurrency": 100000},
                  cluster={"accelerator": "Inferentia2", "chips": 12})
    r = estimate.estimate_inference(s, "Inferentia2")
    assert r["fits"] is False
    assert "concurrency 100000" in r["reason"] and "fit" in r["reason"]


def test_without_pinned_chips_a_large_concurrency_takes_more_replicas_not_a_silent_cap():
    s = _scenario({"model": "llama-3-8b", "input_tokens": 1024, "output_tokens": 1024, "concurrency": 5000})
    r = estimate.estimate_inference(s, "H100-SXM5-80GB")
    assert r["fits"] and r["replicas"] * r["batch"] >= 5000
    assert r["batch"] <= r["max_batch"]


@pytest.mark.parametrize("model,precision", [("llama-3.1-405b", "bf16"), ("deepseek-v3", "fp8"),
                                             ("deepseek-v3", "bf16")])
def test_models_larger_than_one_h100_node_are_served_across_nodes(model, precision):
    s = _scenario({"model": model, "precision": precision, "input_tokens": 1024, "output_tokens": 256,
                   "requests_per_s": 2})
    r = estimate.estimate_inference(s, "H100-SXM5-80GB")
    assert r["fits"], r["reason"]
    assert r["chips"] // r["replicas"] > 8 and r["tp"] == 8
    assert r["memory_per_chip_bytes"] <= 80e9
    assert math.isfinite(r["tpot_ms"]) and math.isfinite(r["ttft_ms_p99"])


def test_deepseek_v3_on_tpu_v5e_is_served_across_hosts():
    s = _scenario({"model": "deepseek-v3", "input_tokens": 1024, "output_tokens": 256})
    r = estimate.estimate_inference(s, "TPU-v5e")
    assert r["fits"], r["reason"]
    assert r["chips"] > 8 and (r["ep"] > 8 or r["pp"] > 1)


def test_a_slower_network_slows_a_pipeline_across_nodes():
    from workbook import catalog
    from workbook.model import serving
    from workbook.model.profile import model_profile
    p, acc = model_profile("llama-3.1-405b"), catalog.accelerator_record("H100-SXM5-80GB")
    fast, slow = serving.Layout(8, 2, 1, 5e10, 1e-5), serving.Layout(8, 2, 1, 5e8, 1e-5)
    t = [float(serving.decode_step_s(serving.default(None), p, acc, 64, 2048, 8, "bf16", "bf16", "bf16", layout=lay))
         for lay in (fast, slow)]
    assert t[1] > t[0]


def test_erlang_c_matches_the_textbook_value():
    """M/M/2 with offered load 1 (ρ = 0.5): C = a^c/c! · c/(c−a) / (Σ_{k<c} a^k/k! + ...) = 1/3."""
    assert queueing.erlang_c(2, 1.0) == pytest.approx(1.0 / 3.0)
    assert queueing.erlang_c(1, 0.7) == pytest.approx(0.7)  # M/M/1: P(wait) = ρ


def test_erlang_c_matches_the_erlang_b_recursion_at_thousands_of_servers():
    """Large deployments (thousands of batch slots): the log-space Poisson form equals the textbook
    recursion B(k) = a·B(k−1) / (k + a·B(k−1)), C = B / (1 − ρ(1 − B)) (Tijms 2003 §5.1)."""
    def recursion(c, a):
        b = 1.0
        for k in range(1, c + 1):
            b = a * b / (k + a * b)
        return b / (1.0 - a / c * (1.0 - b))
    for c, a in [(10, 7.0), (100, 95.0), (2000, 1900.0), (5000, 4990.0)]:
        assert queueing.erlang_c(c, a) == pytest.approx(recursion(c, a), rel=1e-9)
    assert queueing.erlang_c(np.array([100, 2000]), 95.0).tolist() == pytest.approx([recursion(100, 95.0), recursion(2000, 95.0)], rel=1e-9)


def test_ttft_tail_grows_with_load_and_is_infinite_past_saturation():
    waits = [queueing.wait_quantile_s(0.99, lam, 10.0, 100) for lam in (5.0, 9.0, 9.9, 10.0)]
    assert waits[0] <= waits[1] <= waits[2] and waits[2] > 0
    assert waits[3] == np.inf


def test_ttft_p99_is_reported_and_the_slo_holds_at_the_percentile():
    s = _scenario({"model": "llama-3.1-70b", "precision": "fp8", "input_tokens": 1024, "output_tokens": 256,
                   "requests_per_s": 20, "ttft_slo_ms": 500, "tpot_slo_ms": 50})
    r = estimate.estimate_inference(s, "H100-SXM5-80GB")
    assert r["ttft_ms"] <= r["ttft_ms_p50"] <= r["ttft_ms_p99"] <= 500
    loose = estimate.estimate_inference(s.model_copy(update={"workload": s.workload.model_copy(
        update={"ttft_slo_percentile": 50.0})}), "H100-SXM5-80GB")
    assert loose["chips"] <= r["chips"]
