"""Training on what an offering sells (workbook.model.offers): whole instances or TPU slices, never
above the chip's largest published cluster, on the offering's own network."""
import pandas as pd

from workbook.model import estimate
from workbook.model.offers import hosts_of, plan_offers
from workbook.scenario import load_scenario, parse_scenario



def _shape(offering, acc, cpi, net, provider="GCP"):
    return {"offering": offering, "provider": provider, "accelerator": acc, "chips_per_instance": cpi,
            "inter_node_bytes_per_s": net}


def test_llama_70b_on_tpu_v6e_256_plans_whole_slices_within_the_pod():
    """Issue 11: 2 x tpu-v6e-256 were rented but the run was planned on 328 chips (not a slice, above
    the catalogued 256-chip pod, max_cluster_chips). Now: a multiple of 256, at most 256 (32 hosts)."""
    s = load_scenario("llama-70b-pretrain")
    assert s.constraints.max_chips == 4096  # the scenario's own limit must not lift the pod's
    shapes = pd.DataFrame([_shape("v6e-256", "TPU-v6e", 256, 3.2e12), _shape("v6e-8", "TPU-v6e", 8, 1e11)])
    plan = plan_offers(s, shapes, lambda shape, n: 0.0).set_index("offering")
    big = plan.loc["v6e-256"]
    assert big["chips"] % 256 == 0 and 0 < big["chips"] <= 256
    assert big["hosts"] == 32
    assert plan.loc["v6e-8", "chips"] % 8 == 0 and plan.loc["v6e-8", "chips"] <= 256
    assert estimate.estimate_training(s, "TPU-v6e")["chips"] <= 256


def test_hosts_of_slices_and_small_instances():
    """A 256-chip slice on 8-chip hosts is 32 hosts; three 1-GPU instances are three hosts."""
    assert hosts_of(512, 256, 8) == 64
    assert hosts_of(3, 1, 8) == 3


def test_each_offering_trains_on_its_own_network():
    """The same 512 H100 (pinned) on 8-GPU instances with 3.2 Tb/s (AWS p5, EFA: 4e11 B/s) and with
    200 Gb/s (2.5e10 B/s) per instance: the slower network takes longer, and each offer says whose
    figure it used; an offering with no published figure falls back to the accelerator catalog."""
    s = parse_scenario({"name": "t-net", "title": "network",
                        "workload": {"task": "training", "model": "llama-3.1-70b", "tokens": 2e12, "seq_len": 8192,
                                     "global_batch_tokens": 1.6e7, "framework": "pytorch"},
                        "cluster": {"accelerator": "H100-SXM5-80GB", "chips": 512}})
    shapes = pd.DataFrame([_shape("fast", "H100-SXM5-80GB", 8, 4e11, "AWS"),
                           _shape("slow", "H100-SXM5-80GB", 8, 2.5e10, "AWS"),
                           _shape("unpublished", "H100-SXM5-80GB", 8, float("nan"), "AWS")])
    plan = plan_offers(s, shapes, lambda shape, n: 0.0).set_index("offering")
    assert (plan["chips"] == 512).all()
    assert plan.loc["slow", "training_days"] > plan.loc["fast", "training_days"]
    assert plan.loc["fast", "network_bytes_per_s_per_chip"] == 4e11 / 8
    assert plan.loc["slow", "network_bytes_per_s_per_chip"] == 2.5e10 / 8
    assert plan.loc["fast", "network_basis"].startswith("offering")
    assert plan.loc["unpublished", "network_basis"].startswith("accelerator catalog")
