"""Generic (non-transformer) serving: an encoder, an embedding or a vision model answers each request
with one forward pass; latency = host + queueing + batch time, throughput = replicas x batch / batch
time (issue 25 item 2)."""
import pytest

import workbook as wb
from workbook import analysis, catalog
from workbook.model import generic
from workbook.model.efficiency import default
from workbook.model.profile import workload_profile
from workbook.scenario import parse_scenario

ENCODER = {"name": "enc", "workload": {"task": "inference", "precision": "bf16", "requests_per_s": 500,
                                       "ttft_slo_ms": 200,
                                       "generic": {"params": 3.35e8, "infer_flops_per_sample": 3.22e11,
                                                   "activation_bytes_per_sample": 1.26e7}},
           "candidates": {"accelerators": ["H100-SXM5-80GB", "L4"]}}


def _serve(acc="H100-SXM5-80GB", **workload):
    s = parse_scenario({**ENCODER, "workload": {**ENCODER["workload"], **workload}})
    a = catalog.accelerator_record(acc)
    return s, a, generic.serve(default(None), workload_profile(s.workload), a, s.workload, 0.1)


def test_the_embedding_service_scenario_gets_a_recommendation():
    a = analysis.analyse(wb.load_scenario("embedding-service"), n_draws=500)
    assert a.recommendation.accelerator is not None
    assert a.recommendation.unit == "per million requests"
    fit = a.perf[a.perf["fits"].astype(bool)]
    assert fit["meets_slo"].notna().all()


def test_latency_is_host_plus_batch_time_unloaded_and_grows_under_load():
    s, acc, r = _serve()
    t = float(generic.batch_time_s(default(None), workload_profile(s.workload), acc, s.workload, r["batch"]))
    assert r["ttft_ms"] == pytest.approx(1.0 + t * 1e3)  # 1 ms host (workload.host_ms_per_request)
    assert r["ttft_ms_p99"] >= r["ttft_ms_p50"] >= r["ttft_ms"] - 1e-9
    assert r["output_tokens_per_s"] == pytest.approx(r["replicas"] * r["batch"] / t)
    assert r["output_tokens_per_s"] > 500 and r["meets_slo"]


def test_batch_time_is_the_roofline_of_compute_and_weights():
    """At batch 1 a 3.22e11-FLOP request on one chip cannot beat F / peak; its weights (670 MB in
    BF16) cannot be read faster than the HBM bandwidth."""
    s, acc, _ = _serve()
    t1 = float(generic.batch_time_s(default(None), workload_profile(s.workload), acc, s.workload, 1))
    assert t1 >= 3.22e11 / float(acc["peak_bf16_flops_per_s"])
    assert t1 >= 3.35e8 * 2 / float(acc["memory_bytes_per_s"])


def test_a_latency_target_below_the_host_time_is_missed_with_the_reason():
    _, _, r = _serve(ttft_slo_ms=0.5)
    assert r["meets_slo"] is False and "ttft_slo_ms" in r["reason"]


def test_more_load_needs_more_replicas():
    _, _, low = _serve(acc="L4", requests_per_s=100)
    _, _, high = _serve(acc="L4", requests_per_s=2000)
    assert high["replicas"] > low["replicas"]
    assert high["output_tokens_per_s"] > 2000


def test_the_bill_is_per_million_requests_at_the_load():
    """$ per month / (500 requests/s x 3,600 x 730 h) x 1e6."""
    s = parse_scenario(ENCODER)
    a = analysis.analyse(s, n_draws=200)
    p = a.priced[a.priced["usd_per_month"].notna()].iloc[0]
    assert p["usd_per_million_tokens"] == pytest.approx(p["usd_per_month"] / (500 * 3600 * 730) * 1e6)


def test_weights_that_do_not_fit_one_chip_are_said_so():
    _, _, r = _serve(acc="L4", generic={"params": 2e10, "infer_flops_per_sample": 1e12})
    assert r["fits"] is False and "do not fit one chip" in r["reason"]
