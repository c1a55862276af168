"""Disaggregated prefill/decode (``model.disagg``; DistServe, Zhong et al. OSDI 2024; Splitwise, Patel
et al. ISCA 2024): separate pools sized to the request rate, the KV cache moved between them, chosen
only where it meets the targets on fewer chips than the colocated layout."""
import pytest

import workbook as wb
from workbook import analysis, catalog
from workbook.model import disagg, estimate, serving
from workbook.model.efficiency import Efficiency
from workbook.model.replica import Layout, decode_step_s, prefill_s
from workbook.scenario import Scenario
from workbook.views import text

H100 = "H100-SXM5-80GB"
A100 = "A100-SXM4-80GB"


def _s(I, O, rps, tpot, ttft) -> Scenario:
    return Scenario.model_validate({"name": "t", "title": "t", "workload": {
        "task": "inference", "model": "llama-3-8b", "input_tokens": I, "output_tokens": O, "requests_per_s": rps,
        "tpot_slo_ms": tpot, "ttft_slo_ms": ttft}})


def _both(s: Scenario, accelerator: str = H100):
    w, acc = s.workload, catalog.accelerator_record(accelerator)
    p = estimate.workload_profile(w)
    split = serving.estimate_serving(p, acc, w, 0.1)
    colocated = serving.estimate_serving(p, acc, w, 0.1, disaggregated=False)
    return p, acc, split, colocated


def test_the_kv_transfer_of_a_16k_prompt_inside_an_h100_node_is_bytes_over_nvlink():
    """Llama 3 8B: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 bytes per token; 16,384
    tokens = 2.147 GB over one H100's 450 GB/s NVLink direction (900 GB/s bidirectional) = 4.77 ms."""
    acc = catalog.accelerator_record(H100)
    p = estimate.workload_profile(_s(16384, 128, 10, 12, 250).workload)
    t = disagg.kv_transfer_s(p, acc, Layout(4), Layout(1), 16384, "bf16")
    assert t == pytest.approx(16384 * 131072 / 450e9, rel=1e-6)
    assert t * 1e3 == pytest.approx(4.77, abs=0.01)
    # pools that do not share a node send over the network: 8 + 8 chips > one 8-GPU node
    far = disagg.kv_transfer_s(p, acc, Layout(8, 1, 1, 50e9, 1e-5), Layout(8, 1, 1, 50e9, 1e-5), 16384, "bf16")
    assert far == pytest.approx(1e-5 + 16384 * 131072 / (8 * 50e9), rel=1e-6)


def test_long_prompts_with_a_tight_tpot_are_served_disaggregated_on_fewer_chips():
    """A100 80GB, Llama 3 8B, 8k-token prompts, 128-token answers, 10 requests/s, TPOT 12 ms, TTFT
    400 ms at P99: the colocated replica carries 64 prompt tokens per answer token, a whole 8k prompt
    in one step of every few dozen (chunked prefill in whole prompts), and those compute-bound steps
    count in the mean TPOT, so the target holds its batch to a few sequences; split pools run
    decode-only steps at a large batch and prompts alone on the prefill pool."""
    p, acc, split, colocated = _both(_s(8192, 128, 10, 12, 400), A100)
    assert split["layout"] == "disaggregated" and split["meets_slo"] and colocated["meets_slo"]
    assert split["chips"] < colocated["chips"]
    assert split["prefill_chips"] + split["decode_chips"] == split["chips"]
    assert split["batch"] > 4 * colocated["batch"]
    eff = Efficiency.from_csv()
    tpd, tpp = split["decode_tp"], split["prefill_tp"]
    # TPOT is a decode-only step at the decode batch (no prefill interference), at the mean context
    tpot = decode_step_s(eff, p, acc, split["batch"], 8192 + 64, tpd, "bf16", "bf16", "bf16", layout=Layout(tpd))
    assert split["tpot_ms"] == pytest.approx(float(tpot) * 1e3, rel=1e-9)
    assert split["tpot_ms"] <= 12
    # the KV cache crosses NVLink inside the node: 8,192 x 131,072 bytes over the smaller replica's chips
    # at A100's 300 GB/s per direction (600 GB/s bidirectional)
    if tpp + tpd <= 8:
        assert split["kv_transfer_ms"] == pytest.approx(8192 * 131072 / (min(tpp, tpd) * 300e9) * 1e3, rel=1e-6)
    # unloaded TTFT = one prompt's prefill on the prefill replica + the KV transfer
    pre = float(prefill_s(eff, p, acc, 8192, 8192, tpp, "bf16", "bf16", layout=Layout(tpp)))
    assert split["ttft_ms"] == pytest.approx(pre * 1e3 + split["kv_transfer_ms"], rel=1e-9)
    assert split["ttft_ms_at_slo_percentile"] <= 400
    # the prefill pool is stable: 10 prompts/s x prefill time < its replicas
    assert 10 * pre < split["prefill_chips"] / tpp


def test_short_prompts_stay_colocated():
    """128-token prompts, 512-token answers, 20 requests/s, TPOT 30 ms: the prompts ride along in the
    decode steps almost for free, and one H100 holds the whole load; split pools need at least two."""
    _, _, split, colocated = _both(_s(128, 512, 20, 30, 1000))
    assert split["layout"] == "colocated"
    assert split["chips"] == colocated["chips"] == 1
    d = disagg.plan(Efficiency.from_csv(), estimate.workload_profile(_s(128, 512, 20, 30, 1000).workload),
                    catalog.accelerator_record(H100), _s(128, 512, 20, 30, 1000).workload, [Layout(1), Layout(2)], 0.1,
                    serving.BATCH_GRID, "bf16")
    assert d["chips"] >= 2


def test_without_a_request_rate_the_layout_is_colocated():
    s = Scenario.model_validate({"name": "t", "title": "t", "workload": {
        "task": "inference", "model": "llama-3-8b", "input_tokens": 16384, "output_tokens": 128, "tpot_slo_ms": 12}})
    r = estimate.estimate_inference(s, H100)
    assert r["layout"] == "colocated" and r["prefill_chips"] is None


def test_the_options_json_and_the_decision_name_both_pools():
    """`estimate --json` options carry the layout keys; the decision's latency reason names the pools."""
    s = _s(8192, 128, 10, 15, 400).model_copy(update={"candidates": Scenario.model_validate({
        "name": "t", "title": "t", "workload": {"task": "inference", "model": "llama-3-8b", "input_tokens": 1,
                                                "output_tokens": 1},
        "candidates": {"accelerators": [A100]}}).candidates})
    j = analysis.summary_json(wb.analyse(s))
    opt = j["options"][0]
    assert opt["layout"] == "disaggregated"
    assert opt["prefill_chips"] + opt["decode_chips"] == opt["chips"]
    assert {"prefill_tp", "decode_tp", "kv_transfer_ms"} <= set(opt)
    words = text.recommendation_text(j["recommendation"])
    assert f"{opt['prefill_chips']} prefill chips at TP {opt['prefill_tp']}" in words
    assert f"{opt['decode_chips']} decode chips at TP {opt['decode_tp']}" in words
