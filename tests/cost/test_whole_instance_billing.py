"""Every chip a serving deployment uses is paid for in whole instances (issue 25): a replica that
spans instances through pipeline or expert parallelism is billed for all its chips, and a
latency-bound spot fleet holds spares as whole replicas. Dollar figures are worked by hand in each
docstring (730 hours a month, ``terms.HOURS_PER_MONTH``)."""
import pandas as pd
import pytest

from workbook.model import estimate
from workbook.scenario import parse_scenario

from pricing_helpers import LIVE, SERVE, offering, offers, price, row


def perf(acc="H100-SXM5-80GB", replicas=1, tp=8, pp=1, ep=1, chips=None):
    """One serving row: ``replicas`` replicas of tp x pp x ep chips (``chips`` overrides the count when
    expert parallelism shares the tensor-parallel ranks, as the serving model reports it)."""
    n = replicas * tp * pp * ep if chips is None else chips
    return pd.DataFrame({"accelerator": [acc], "chips": [n], "fits": [True], "reason": [None], "ttft_ms": [100.0],
                         "tpot_ms": [20.0], "output_tokens_per_s": [1000.0], "max_batch": [32], "meets_slo": [True],
                         "replicas": [replicas], "tp": [tp], "pp": [pp], "ep": [ep]})


def test_a_pipeline_parallel_replica_pays_for_both_instances():
    """Llama 3.1 405B class: 1 replica of TP 8 x PP 2 = 16 H100 on 8-GPU instances at $31.92/h
    (8 x $3.99, Lambda's 8x H100 SXM list price): 2 instances x $31.92 x 730 h = $46,603.20 a month;
    at 10 req/s x 100 tokens x 3,600 x 730 h = 2,628 M tokens: $17.733 per million. The old rule
    (replicas x ceil(tp / 8)) billed one instance, half of that."""
    s = parse_scenario(SERVE)
    p = price(s, perf(tp=8, pp=2), offerings=offers(offering("o1", od=31.92)))
    r = row(p, "on_demand")
    assert r["instances"] == 2 and r["chips_billed"] == 16
    assert r["usd_per_month"] == pytest.approx(46_603.20)
    assert r["usd_per_million_tokens"] == pytest.approx(46_603.20 / 2_628.0)


def test_an_expert_parallel_replica_on_tpu_slices_pays_for_every_slice():
    """DeepSeek-V3 FP8 class: one replica on 32 TPU v6e (TP 8, experts over all 32 chips: the serving
    model reports ep 32 on 32 chips) on tpu-v6e-8 slices at $21.60/h (8 x $2.70 per chip-hour, GCP):
    4 slices x $21.60 x 730 h = $63,072 a month = $24.00 per million at 2,628 M tokens. On a
    tpu-v6e-256 slice ($691.20/h) the whole pod is billed: 256 chips, $504,576 a month. (A JAX team:
    no port to price.)"""
    s = parse_scenario({**SERVE, "workload": {**SERVE["workload"], "framework": "jax"}})
    offs = offers(offering("v6e-8", acc="TPU-v6e", cpi=8, od=21.60, spot=float("nan")),
                  offering("v6e-256", acc="TPU-v6e", cpi=256, od=691.20, spot=float("nan")))
    p = price(s, perf(acc="TPU-v6e", tp=8, ep=32, chips=32), offerings=offs)
    small, pod = row(p, "on_demand", "v6e-8"), row(p, "on_demand", "v6e-256")
    assert small["instances"] == 4 and small["chips_billed"] == 32
    assert small["usd_per_month"] == pytest.approx(63_072.0)
    assert small["usd_per_million_tokens"] == pytest.approx(24.0)
    assert pod["instances"] == 1 and pod["chips_billed"] == 256
    assert pod["usd_per_month"] == pytest.approx(504_576.0)


def test_replicas_larger_than_an_instance_round_up_each_replica():
    """2 replicas of TP 4 x PP 3 = 12 chips each on 8-chip instances: each replica takes 2 whole
    instances (its two pipeline halves cannot share a third), 4 instances = 32 chips billed for 24
    used: 4 x $80 x 730 = $233,600 a month."""
    s = parse_scenario(SERVE)
    p = price(s, perf(replicas=2, tp=4, pp=3), offerings=offers(offering("o1")))
    r = row(p, "on_demand")
    assert r["chips"] == 24 and r["instances"] == 4 and r["chips_billed"] == 32
    assert r["usd_per_month"] == pytest.approx(4 * 80.0 * 730)


def test_replicas_smaller_than_an_instance_still_pack():
    """4 replicas of TP 2 on 8-chip instances: one instance, 8 chips billed for 8 used."""
    s = parse_scenario(SERVE)
    r = row(price(s, perf(replicas=4, tp=2), offerings=offers(offering("o1"))), "on_demand")
    assert r["instances"] == 1 and r["chips_billed"] == 8


def test_latency_bound_spot_spares_are_whole_replicas():
    """One replica of TP 8 x PP 2 (2 instances) on spot, 0.1 reclaims per instance-hour, 30-min
    restart, 99% availability: the replica is out when either instance is, rate 2 x 0.1 = 0.2/h,
    rR = 0.1. Spare replicas k: P(Poisson((1 + k) x 0.1) > k) = 0.095 (k=0), 0.0175 (k=1), 0.0036
    (k=2 <= 0.01): 2 spare replicas = 4 spare instances. Billed (2 + 4) x 8 = 48 chips; the month
    costs 6 x $20 x 730 = $87,600."""
    s = parse_scenario(LIVE)
    r = row(price(s, perf(tp=8, pp=2), offerings=offers(offering("o1"))), "spot")
    assert r["instances"] == 2 and r["spare_instances"] == 4 and r["chips_billed"] == 48
    assert r["usd_per_month"] == pytest.approx(6 * 20.0 * 730)


def test_chips_billed_is_a_number_on_every_priced_serving_offer():
    s = parse_scenario(SERVE)
    p = price(s, perf(tp=8, pp=2), offerings=offers(offering("o1"), offering("o2", cpi=4)))
    priced = p[p["offering"].notna()]
    assert priced["chips_billed"].notna().all()
    assert (priced["chips_billed"] >= priced["chips"]).all()


def test_deepseek_v3_on_32_v6e_bills_four_slices_through_the_serving_model():
    """The serving model's own row for DeepSeek-V3 FP8 pinned to 32 TPU v6e, priced on tpu-v6e-8 at
    $21.60/h: all 32 chips billed (4 slices, $63,072 a month), not one slice."""
    s = parse_scenario({**SERVE, "workload": {**SERVE["workload"], "model": "deepseek-v3", "precision": "fp8",
                                              "framework": "jax"},
                        "cluster": {"accelerator": "TPU-v6e", "chips": 32}})
    pf = estimate.compare(s)
    assert int(pf["chips"].iloc[0]) == 32
    p = price(s, pf, offerings=offers(offering("v6e-8", acc="TPU-v6e", cpi=8, od=21.60, spot=float("nan"))))
    r = row(p, "on_demand", "v6e-8")
    assert r["chips_billed"] == 32 and r["instances"] == 4
    assert r["usd_per_month"] == pytest.approx(63_072.0)
