"""Collective communication times (workbook.comm) against hand-computed cases and the worked
examples of "How to Scale Your Model" (scaling-book) and NCCL's own cost model."""
import math

import numpy as np
import pytest

from workbook import catalog
from workbook.model import comm
from workbook.errors import InputError


def _no_latency(topo):
    return comm.with_changes(topo, base_latency_s=0.0, hop_latency_s=0.0, net_latency_s=0.0,
                             ll_bandwidth_fraction=np.nan)


def test_ring_all_reduce_matches_hand_computed():
    # 1 GB over 8 chips at 450 GB/s: 2·(8-1)/8 · 1e9 / 450e9 = 3.8889 ms, plus 2·(8-1) steps of 1 µs
    assert comm.ring_all_reduce_s(1e9, 8, 450e9) == pytest.approx(2 * 7 / 8 * 1e9 / 450e9)
    assert comm.ring_all_reduce_s(1e9, 8, 450e9, 1e-6) == pytest.approx(3.88889e-3 + 14e-6, rel=1e-4)


def test_all_reduce_is_a_reduce_scatter_plus_an_all_gather():
    rs = comm.ring_reduce_scatter_s(3e8, 16, 1e11, 2e-6)
    ag = comm.ring_all_gather_s(3e8, 16, 1e11, 2e-6)
    assert comm.ring_all_reduce_s(3e8, 16, 1e11, 2e-6) == pytest.approx(rs + ag)
    h100 = _no_latency(comm.topology(catalog.accelerator("H100-SXM5-80GB"), 64))
    for n, stride in ((8, 1), (64, 1), (8, 8)):
        ar = comm.all_reduce_s(1e9, n, h100, stride)
        assert ar == pytest.approx(comm.reduce_scatter_s(1e9, n, h100, stride) + comm.all_gather_s(1e9, n, h100, stride))


def test_all_gather_in_an_h100_node_matches_scaling_book():
    # scaling-book ch. 12 "GPUs", Pop Quiz 1: AllGather(bf16[B_X, F]), B=1024, F=16,384 on 8xH100 at
    # 450 GB/s: "(2·B·F·(8-1)) / (8·450e9) ... more precisely 65us"
    h100 = _no_latency(comm.topology(catalog.accelerator("H100-SXM5-80GB"), 8))
    t = comm.all_gather_s(2 * 1024 * 16384, 8, h100)
    assert t == pytest.approx(65e-6, rel=0.01)


def test_all_to_all_in_a_node_sends_seven_eighths_of_each_buffer():
    # scaling-book ch. 12: AllToAll of B bytes in total within a node costs B·(N-1)/(W·N²)
    h100 = _no_latency(comm.topology(catalog.accelerator("H100-SXM5-80GB"), 8))
    total = 8e9
    assert comm.all_to_all_s(total / 8, 8, h100) == pytest.approx(total * 7 / (450e9 * 64))


def test_cross_node_all_gather_runs_at_node_egress_bandwidth():
    # scaling-book ch. 12: beyond the node, T = bytes / W_node egress = bytes / 400e9 on an H100
    # SuperPod (8 x 400 Gb/s NICs per node = 8 x 50 GB/s), whatever the number of nodes
    h100 = _no_latency(comm.topology(catalog.accelerator("H100-SXM5-80GB"), 1024))
    t = comm.all_gather_s(1e9, 1024, h100)
    assert t == pytest.approx(1e9 / 400e9, rel=0.01)


def test_inner_sharded_axis_spanning_nodes_cuts_the_scale_out_cost():
    # scaling-book ch. 12, Pop Quiz 3: AllGather_X(bf16[D_X, F_Y]) with the inner axis Y > 8 over one
    # 256-GPU SU costs 2·D·F / (Y · 50 GB/s): here each chip's shard is 2·D·F/Y, gathered over X = 256/Y
    h100 = _no_latency(comm.topology(catalog.accelerator("H100-SXM5-80GB"), 256))
    D, F, Y = 8192, 32768, 16
    X = 256 // Y
    t = comm.all_gather_s(2 * D * F / Y, X, h100, stride=Y)
    assert t == pytest.approx(2 * D * F / (Y * 50e9) * (X - 1) / X, rel=1e-6)


def test_torus_all_gather_does_not_depend_on_the_axis_length():
    # scaling-book ch. 3: a bidirectional-ring AllGather over an axis with wraparound costs V / W_ICI,
    # "this doesn't depend on |X|"; over two axes the bandwidth doubles
    acc = catalog.accelerator("TPU-v5p")
    for chips, n in ((64, 4), (512, 8), (4096, 16)):  # 4x4x4, 8x8x8, 16x16x16 slices, every axis wrapped
        v5p = _no_latency(comm.topology(acc, chips))
        assert v5p.shape == (n, n, n) and all(v5p.wraparound)
        w_axis = v5p.axis_bytes_per_s[0]
        assert comm.all_gather_s(1e9, n, v5p) == pytest.approx(1e9 / w_axis * (n - 1) / n)
    assert comm.all_gather_s(1e9, 256, v5p) == pytest.approx(1e9 / (2 * w_axis) * 255 / 256)
    # a group covering part of an axis has no wraparound ring: it sends one way, at half the bandwidth
    assert comm.all_gather_s(1e9, 4, v5p) == pytest.approx(1e9 / (w_axis / 2) * 3 / 4)


def test_v5e_all_gather_without_wraparound_matches_scaling_book_quiz():
    # scaling-book ch. 3, Pop Quiz 2: AllGather_Y([E_Y, F]) on a TPU v5e {'X': 8, 'Y': 4} mesh, E=2048,
    # F=8192 bf16 (34 MB). No wraparound on an axis of 4, so one-way: 3 hops of 8.4 MB at 4.5e10 B/s
    # ≈ 560 µs. The book's v5e link figure: 4.5e10 one way, 9e10 both ways per axis.
    acc = catalog.accelerator("TPU-v5e")
    topo = comm.topology(acc, 32, intra_node_bytes_per_s=2 * 9e10)
    assert topo.shape == (4, 8) and not any(topo.wraparound)
    t = comm.all_gather_s(2048 * 8192 * 2, 4, topo)
    assert t == pytest.approx(3 * 8.4e6 / 4.5e10, rel=0.02)


def test_data_parallel_on_one_v5p_axis_is_comm_bound_below_about_2550_tokens_per_chip():
    # scaling-book ch. 5: pure data parallelism is compute-bound when the batch per chip exceeds
    # C / W = 4.6e14 / (2 · 9e10) ≈ 2,550 tokens for 1D data parallelism over ICI. Backward FLOPs
    # are 4 per parameter per token; the bf16 gradient all-reduce moves 2 bytes per parameter.
    C, W = 4.59e14, 2 * 9e10
    topo = comm.Topology(accelerator="v5p", domain="axis", fabric="torus", domain_chips=16, intra_bytes_per_s=W,
                         inter_bytes_per_s=np.inf, shape=(16,), axis_bytes_per_s=(W,), wraparound=(True,))
    params = 1e9
    t_comm = float(comm.all_reduce_s(2 * params, 16, topo))
    tokens_at_balance = t_comm * C / (4 * params)
    assert tokens_at_balance == pytest.approx(2550, rel=0.1)


def test_tiny_all_reduce_over_1024_h100_costs_ncclss_tree_ll_latency():
    # NCCL tuning.cc (Ring/Tree with LL: base 6.6 µs, 0.6 µs per NVLink step, 2.7 µs per network
    # step): a tree over 128 nodes of 8 costs 6.6 + 2·(7·0.6 + log2(128)·2.7) = 52.8 µs, far below
    # the ring's 6.6 + 2·(896·0.6 + 127·2.7) µs.
    h100 = comm.topology(catalog.accelerator("H100-SXM5-80GB"), 1024)
    t = comm.all_reduce_s(8, 1024, h100)
    assert t == pytest.approx(52.8e-6, rel=0.01)


def test_xgmi_pair_uses_a_single_64_gb_per_s_link():
    # MI300X: 7 peer links of 64 GB/s (448 GB/s in total); two GPUs share one link
    mi = _no_latency(comm.topology(catalog.accelerator("MI300X"), 8))
    assert mi.fabric == "mesh"
    assert comm.all_gather_s(1e9, 2, mi) == pytest.approx(0.5e9 / 64e9)
    assert comm.all_gather_s(1e9, 8, mi) == pytest.approx(7 / 8 * 1e9 / 448e9)


def test_pipeline_send_across_nodes_uses_the_nic_share():
    h100 = _no_latency(comm.topology(catalog.accelerator("H100-SXM5-80GB"), 64))
    assert comm.p2p_s(1e9, 8, h100) == pytest.approx(1e9 / 50e9)
    assert comm.p2p_s(1e9, 1, h100) == pytest.approx(1e9 / 450e9)


def test_group_of_one_costs_nothing():
    h100 = comm.topology(catalog.accelerator("H100-SXM5-80GB"), 8)
    for kind in comm.KINDS:
        assert comm.collective_s(kind, 1e9, 1, 1, h100) == 0.0


def test_topology_rows_are_consistent_with_the_accelerator_catalog():
    t = catalog.load("topology")
    known = set(catalog.accelerators()["accelerator"])
    assert set(t["accelerator"]) <= known
    for acc, rows in t.groupby("accelerator"):
        assert rows["default"].sum() == 1, acc
    for _, r in t[t["fabric"] == "torus"].iterrows():
        if isinstance(r["slice_shapes"], str):
            sizes = [math.prod(int(x) for x in s.split("x")) for s in r["slice_shapes"].split(";")]
            assert max(sizes) == r["domain_chips"], r["accelerator"]


def test_tpu_jobs_land_on_listed_slices_and_multislice_beyond():
    v5p = catalog.accelerator("TPU-v5p")
    t = comm.topology(v5p, 16384)  # beyond the 6,144-chip largest slice: 4 slices of 16x16x16 over DCN
    assert t.shape == (16, 16, 16) and t.n_domains == 4
    v5e = catalog.accelerator("TPU-v5e")
    assert comm.topology(v5e, 256).wraparound == (True, True)
    assert comm.topology(v5e, 64).wraparound == (False, False)


def test_nvl72_is_an_interconnect_option_for_b200():
    b200 = catalog.accelerator("B200-SXM-180GB")
    assert comm.topology(b200, 144).domain_chips == 8
    nvl = comm.topology(b200, 144, "GB200 NVL72 (72-GPU NVLink domain)")
    assert nvl.domain_chips == 72 and nvl.n_domains == 2


def test_missing_network_figure_is_an_input_error_naming_the_column():
    l40s = catalog.accelerator("L40S")
    comm.topology(l40s, 8)  # one server: fine
    with pytest.raises(InputError, match="inter_node_bytes_per_s"):
        comm.topology(l40s, 16)


def test_unknown_domain_is_an_input_error_with_a_suggestion():
    with pytest.raises(InputError, match="did you mean"):
        comm.topology(catalog.accelerator("B200-SXM-180GB"), 72, "GB200 NVL 72")


@pytest.mark.parametrize("acc,chips", [("H100-SXM5-80GB", 1024), ("TPU-v5p", 4096), ("MI300X", 64), ("Trainium2", 512)])
def test_a_shared_group_prices_every_collective_as_a_fresh_one(acc, chips):
    # the data-parallel schedules price five collectives over one group (comm.group): the shared placement and
    # latencies per algorithm must give each kind exactly what it gets alone, in any order of kinds
    topo = comm.topology(catalog.accelerator(acc), chips)
    n = np.array([1.0, 2.0, 8.0, 16.0, 64.0, 128.0])
    stride = np.array([1.0, 8.0, 2.0, 4.0, 1.0, 8.0])
    M, calls = np.array([1e6, 3e8, 1e9, 2e7, 5e9, 4e8]), np.array([1.0, 3.0, 12.0, 80.0, 2.0, 7.0])
    for order in (comm.KINDS, tuple(reversed(comm.KINDS))):
        shared = comm.group(n, stride, topo)
        for kind in order:
            alone = comm.collective_s(kind, M, n, stride, topo, calls)
            assert np.array_equal(comm.collective_s(kind, M, n, stride, topo, calls, group_terms=shared), alone), kind
