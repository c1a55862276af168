"""Mixture-of-experts terms (``model.moe``): the expert all-to-all over a node and across nodes, the
host time of dropless MoE layers, and published MoE runs within their tolerance."""
import numpy as np
import pytest

from workbook import catalog
from workbook.calibrate import runs as calruns
from workbook.model import comm, moe
from workbook.model import profile as prof
from workbook.model.efficiency import Efficiency
from workbook.scenario import Workload

# one 8-GPU node per fast domain: 450 GB/s per GPU and direction over NVLink (H100 SXM datasheet,
# 900 GB/s bidirectional), 50 GB/s per GPU over the network (one 400 Gb/s NIC per GPU, DGX H100);
# no latency, so the bandwidth term can be checked by hand
NODE = comm.Topology(accelerator="test", domain="node", fabric="switch", domain_chips=8,
                     intra_bytes_per_s=450e9, inter_bytes_per_s=50e9)
MIXTRAL = prof.model_profile("mixtral-8x7b")  # h = 4,096, top-2 of 8 experts (Mixtral paper, arXiv 2401.04088)
WORKLOAD = Workload(task="training", model="mixtral-8x7b", precision="bf16", seq_len=4096, global_batch_tokens=4096 * 64, tokens=1e12)


def _grid(ep, full=False):
    return {"tp": np.array([1.0]), "cp": np.array([1.0]), "ep": np.array([float(ep)]), "full": np.array([full])}


def test_expert_all_to_all_inside_one_node_by_hand():
    # 4,096 tokens per GPU, each sent to k = 2 experts as h = 4,096 bf16 values: 67,108,864 B per
    # dispatch; dispatch + combine, forward and backward = 4 all-to-alls per layer (GShard §2.2).
    # Inside the node each GPU sends 7/8 of its buffer over NVLink (scaling-book ch. 12):
    # 0.875 x 4 x 67,108,864 B / 450e9 B/s = 0.5220 ms per layer
    t = moe.expert_parallel_comm_s(MIXTRAL, WORKLOAD, _grid(8), 1.0, 4096.0, NODE)
    assert float(t[0]) == pytest.approx(0.875 * 4 * 4096 * 2 * 4096 * 2 / 450e9, rel=1e-9)
    assert float(t[0]) == pytest.approx(0.5220e-3, rel=1e-3)


def test_expert_all_to_all_across_two_nodes_is_bound_by_the_network():
    # EP16 over two nodes: half of each GPU's buffer leaves the node over its 50 GB/s NIC share,
    # 0.5 x 268,435,456 B / 50e9 = 2.684 ms per layer, slower than the 7/16 that stays on NVLink
    t = moe.expert_parallel_comm_s(MIXTRAL, WORKLOAD, _grid(16), 1.0, 4096.0, NODE)
    assert float(t[0]) == pytest.approx(0.5 * 4 * 4096 * 2 * 4096 * 2 / 50e9, rel=1e-9)
    assert float(t[0]) == pytest.approx(2.684e-3, rel=1e-3)
    # full recomputation repeats the forward dispatch and combine: 6 instead of 4
    t_full = moe.expert_parallel_comm_s(MIXTRAL, WORKLOAD, _grid(16, full=True), 1.0, 4096.0, NODE)
    assert float(t_full[0]) == pytest.approx(1.5 * float(t[0]), rel=1e-9)


def test_capacity_factor_pads_the_all_to_all():
    padded = WORKLOAD.model_copy(update={"moe_capacity_factor": 1.25})
    t = moe.expert_parallel_comm_s(MIXTRAL, WORKLOAD, _grid(8), 1.0, 4096.0, NODE)
    t_pad = moe.expert_parallel_comm_s(MIXTRAL, padded, _grid(8), 1.0, 4096.0, NODE)
    assert float(t_pad[0]) == pytest.approx(1.25 * float(t[0]), rel=1e-9)


def test_dense_models_have_no_expert_terms():
    dense = prof.model_profile("llama-3.1-8b")
    assert float(moe.expert_parallel_comm_s(dense, WORKLOAD, _grid(8), 32.0, 4096.0, NODE)[0]) == 0.0
    eff = Efficiency.from_csv()
    assert float(moe.host_s(dense, _grid(8), 32.0, eff, catalog.accelerator_record("H100-SXM5-80GB"))[0]) == 0.0


def test_host_time_counts_layer_passes_on_gpus_only():
    eff = Efficiency.from_table({**Efficiency.from_csv().table, ("moe_host_s_per_layer", "cuda"): 0.003})
    h100, v5p = catalog.accelerator_record("H100-SXM5-80GB"), catalog.accelerator_record("TPU-v5p")
    # 24 MoE layers, forward + backward: 48 passes of 3 ms; full recomputation adds a forward
    assert float(moe.host_s(MIXTRAL, _grid(8), 24.0, eff, h100)[0]) == pytest.approx(48 * 0.003)
    assert float(moe.host_s(MIXTRAL, _grid(8, full=True), 24.0, eff, h100)[0]) == pytest.approx(72 * 0.003)
    assert float(moe.host_s(MIXTRAL, _grid(8), 24.0, eff, v5p)[0]) == 0.0  # XLA: static shapes, no host sync


def _table_row(run):
    t = calruns.calibration_table()
    return t[t["run"] == run].iloc[0]


def test_qwen3_235b_on_64_b200_within_its_band():
    # Megatron-Bridge performance-summary.md @00b7660 (25.11), DGX-B200: Qwen3-235B-A22B, 64 GPUs,
    # FP8, PP8 VP2 EP8, 3,269 tokens/s per GPU (MFU 0.1215 in the PaLM definition); held out
    r = _table_row("b200-sxm-180gb-bridge-qwen3-235b-a22b-64")
    assert r["split"] == "holdout"
    assert abs(r["error"]) <= 0.10
    assert r["low"] <= r["value"] <= r["high"]


def test_fine_grained_qwen3_30b_is_less_optimistic_than_before_the_host_term():
    # Megatron-Bridge 25.11, DGX-H100: Qwen3-30B-A3B on 16 GPUs, 5,275 tokens/s per GPU (MFU 0.0744,
    # held out). Predicted +65% before the dropless host time, +47% with it: still optimistic. +56% after
    # the issue-26 refit (the MLPerf GPT-3 rows move the Hopper matmul ceiling 0.741 -> 0.721 and the fitted
    # host time 2.85 -> 2.70 ms per MoE layer pass; recorded 2026-12-02)
    r = _table_row("h100-sxm5-80gb-bridge-qwen3-30b-a3b-16")
    assert r["split"] == "holdout"
    assert 0.0 < r["error"] < 0.60


def test_moe_estimates_take_the_band_of_the_moe_runs_and_dense_ones_their_family_band():
    eff = Efficiency.from_csv()
    assert moe.band_scope(prof.model_profile("qwen3-30b-a3b"), "nvidia-hopper", eff) == "moe"
    assert moe.band_scope(prof.model_profile("llama-3.1-8b"), "nvidia-hopper", eff) == "nvidia-hopper"
    # without a fitted MoE band (a table from before it) the family's band stays
    old = Efficiency.from_table({k: v for k, v in eff.table.items() if k[1] != "moe"})
    assert moe.band_scope(prof.model_profile("qwen3-30b-a3b"), "nvidia-hopper", old) == "nvidia-hopper"
