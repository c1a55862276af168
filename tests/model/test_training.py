"""The multi-chip model (workbook.scaling): memory, step time, the search, scaling curves, serving
against tensor-parallel size; checked against published runs and worked examples.

Most tests pass an explicit efficiency so that they test the scaling model, not the calibrated
efficiency of workbook.perf (its own tests cover that): ``placeholder_constant_efficiency(x)``
makes every matmul run at the fraction x of peak."""
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arch_strategies import small_models as _small_models
from workbook import catalog
from workbook.calibrate.runs import megatron_hw_flops_per_token
from workbook.model import comm, search, serving, tables, training
from workbook.model import profile as prof
from workbook.model.efficiency import Efficiency
from workbook.errors import InputError
from workbook.scenario import Architecture, Parallelism, Workload

# Measured achievable BF16 matmul on A100 SXM: 271.2 TFLOP/s of 312 (ml-engineering MAMF, quoted in
# reference/accelerators.csv): an upper bound on the fraction of peak any training step reaches.
A100_MAMF = 271.2 / 312


def placeholder_constant_efficiency(value):
    """A test stand-in for the calibrated efficiency: every matmul at ``value`` of peak."""
    return Efficiency.fixed(value)


HALF = placeholder_constant_efficiency(0.5)


def _train(model=None, seq_len=4096, batch_tokens=4e6, architecture=None, **kw):
    return Workload(task="training", model=model, architecture=architecture, tokens=1e12, seq_len=seq_len,
                    global_batch_tokens=batch_tokens, **kw)


def _ideal(topo: comm.Topology) -> comm.Topology:
    return comm.with_changes(topo, base_latency_s=0.0, hop_latency_s=0.0, net_latency_s=0.0,
                             ll_bandwidth_fraction=np.nan)


# --- the search -------------------------------------------------------------------------------------

@pytest.mark.parametrize("model,acc,chips,seq", [
    ("llama-3.1-70b", "H100-SXM5-80GB", 256, 8192),
    ("mixtral-8x7b", "H100-SXM5-80GB", 64, 4096),
    ("llama-2-7b", "TPU-v5e", 256, 4096),
    ("llama-3.1-405b", "MI300X", 512, 8192),
])
def test_search_returns_only_and_all_configurations_that_fit(model, acc, chips, seq):
    p, a, w = prof.model_profile(model), catalog.accelerator(acc), _train(model, seq)
    cap = float(a["memory_bytes"]) * (1 - 0.1)
    grid = search.configurations(p, chips, w)
    every = training.evaluate(p, a, chips, w, grid, HALF)
    found = search.search(p, a, chips, w, efficiency=HALF)
    assert len(found) > 0 and (found["memory_per_chip_bytes"] <= cap).all()
    assert len(found) == int((every["memory_per_chip_bytes"] <= cap).sum())  # nothing that fits is lost
    assert found["step_time_s"].is_monotonic_increasing
    assert (found["tp"] * found["pp"] * found["dp"] * found["cp"] == chips).all()
    for c in ["tp", "pp", "dp", "ep", "cp", "zero", "recompute", "micro_batch", "step_time_s", "compute_s",
              "exposed_comm_s", "bubble_s", "recompute_s", "memory_per_chip_bytes", "fits", "mfu", "tokens_per_s"]:
        assert c in found.columns


def test_memory_of_a_hand_computed_configuration():
    # Llama 2 7B, 8 chips data parallel, ZeRO-3, full recomputation, one 4,096-token sequence per
    # micro-batch: 16 bytes/param over 8 shards (ZeRO §3.1), two gathered layers of bf16 weights,
    # the 2·h input of each of 32 layers (Korthikanti et al. 2022 §5), one layer's full activations
    # while it is recomputed, and the fp32 logits (4·s·V).
    p, a = prof.model_profile("llama-2-7b"), catalog.accelerator("H100-SXM5-80GB")
    w = _train("llama-2-7b", 4096, 4096 * 64)
    par = Parallelism(tp=1, pp=1, cp=1, zero=3, recompute="full", micro_batch=1)
    row = search.search(p, a, 8, w, par, HALF).iloc[0]
    s, h, L, V = 4096, p.hidden, p.layers, p.vocab
    layer = (p.params_total - 2 * p.params_embedding) / L
    expected = (16 * p.params_total / 8 + 2 * 2 * layer + 2 * h * s * L
                + prof.activation_bytes_per_token_per_layer(p, s, "none") * s + 4 * s * V)
    assert row["memory_per_chip_bytes"] == pytest.approx(expected, rel=1e-9)


def test_zero_stages_shard_memory_in_order():
    p, a, w = prof.model_profile("llama-3.1-8b"), catalog.accelerator("H100-SXM5-80GB"), _train("llama-3.1-8b")
    grid = search.configurations(p, 64, w, Parallelism(tp=1, pp=1, cp=1, micro_batch=1, recompute="full"))
    every = training.evaluate(p, a, 64, w, grid, HALF)  # feasible or not
    mem = every.set_index("zero")["memory_per_chip_bytes"]
    assert mem[0] > mem[1] > mem[2] > mem[3]
    assert not every.set_index("zero").loc[0, "fits"]  # 16 bytes x 8B parameters do not fit in 80 GB


def test_nothing_fits_gives_no_best_configuration():
    p, a = prof.model_profile("llama-3.1-405b"), catalog.accelerator("A100-SXM4-40GB")
    assert search.best_config(p, a, 8, _train("llama-3.1-405b", 8192), efficiency=HALF) is None


def test_pinned_parallelism_is_respected():
    p, a = prof.model_profile("llama-3.1-405b"), catalog.accelerator("H100-SXM5-80GB")
    df = search.search(p, a, 16384, _train("llama-3.1-405b", 8192, 16e6), Parallelism(tp=8, pp=16), HALF)
    assert len(df) and (df["tp"] == 8).all() and (df["pp"] == 16).all()
    cfg = search.best_config(p, a, 16384, _train("llama-3.1-405b", 8192, 16e6), Parallelism(tp=8, pp=16), HALF)
    assert {"tp", "pp", "dp", "ep", "zero", "recompute", "micro_batch", "mfu"} <= set(cfg)


def test_impossible_pin_is_an_input_error_naming_the_field():
    p, a = prof.model_profile("llama-3.1-70b"), catalog.accelerator("H100-SXM5-80GB")
    with pytest.raises(InputError, match="cluster.parallelism.tp"):
        search.search(p, a, 64, _train("llama-3.1-70b"), Parallelism(tp=3), HALF)


def test_training_search_needs_a_global_batch():
    p, a = prof.model_profile("llama-3.1-8b"), catalog.accelerator("H100-SXM5-80GB")
    w = Workload(task="training", model="llama-3.1-8b", tokens=1e12)
    with pytest.raises(InputError, match="global_batch_tokens"):
        search.search(p, a, 8, w, efficiency=HALF)


def test_the_405b_search_on_16384_chips_takes_under_two_seconds():
    p, a = prof.model_profile("llama-3.1-405b"), catalog.accelerator("H100-SXM5-80GB")
    w = _train("llama-3.1-405b", 8192, 16e6)
    search.search(p, a, 16384, w, efficiency=HALF)  # warm caches
    t0 = time.perf_counter()
    df = search.search(p, a, 16384, w, efficiency=HALF)
    elapsed = time.perf_counter() - t0
    n = len(search.configurations(p, 16384, w)["tp"])
    assert n > 10000 and len(df) > 0
    assert elapsed < 2.0, f"{n} configurations took {elapsed:.2f} s"


# --- the step model ---------------------------------------------------------------------------------

def test_pipeline_bubble_follows_the_1f1b_and_interleaved_formulas():
    # Narayanan et al. 2021 §2.2: bubble / ideal time = (p-1)/m for 1F1B, (p-1)/(v·m) interleaved
    p, a = prof.model_profile("llama-3.1-70b"), catalog.accelerator("H100-SXM5-80GB")
    topo = comm.ideal_topology(64)
    for v in (1, 2):
        par = Parallelism(tp=8, pp=4, cp=1, micro_batch=1, recompute="full", zero=1)
        df = search.search(p, a, 64, _train("llama-3.1-70b", 8192, 8192 * 64), par, HALF, topology=topo)
        row = df[df["vpp"] == v].iloc[0]
        m = row["microbatches"]
        assert m == 32
        ideal = row["compute_s"] + row["recompute_s"]
        assert row["bubble_s"] / ideal == pytest.approx(training.pipeline_bubble_fraction(4, m, v))


def test_tensor_parallel_traffic_is_four_activation_all_reduces_per_layer():
    # Megatron-LM (Shoeybi et al. 2019): 2 all-reduces of b·s·h forward + 2 backward per layer. Llama 2
    # 7B, TP=8 in one H100 node, one 4,096-token sequence: 4 x 32 all-reduces of 4096·4096·2 bytes,
    # each 2·(7/8)·33.5 MB / 450 GB/s = 130.5 µs -> 16.7 ms per micro-batch (bandwidth only).
    p, a = prof.model_profile("llama-2-7b"), catalog.accelerator("H100-SXM5-80GB")
    topo = _ideal(comm.topology(a, 8))
    par = Parallelism(tp=8, pp=1, cp=1, micro_batch=1, recompute="none", zero=0)
    row = search.search(p, a, 8, _train("llama-2-7b", 4096, 4096), par, HALF, topology=topo).iloc[0]
    per_ar = 2 * 7 / 8 * 4096 * 4096 * 2 / 450e9
    assert row["tp_comm_s"] == pytest.approx(4 * 32 * per_ar, rel=1e-6)
    assert row["exposed_comm_s"] == pytest.approx(row["tp_comm_s"])  # Megatron TP is on the critical path


def test_expert_parallelism_adds_all_to_alls_and_shards_the_experts():
    p, a = prof.model_profile("mixtral-8x7b"), catalog.accelerator("H100-SXM5-80GB")
    w = _train("mixtral-8x7b", 4096, 4096 * 64)
    base = dict(tp=1, pp=1, cp=1, zero=0, recompute="full", micro_batch=1)
    one, eight = (training.evaluate(p, a, 16, w, search.configurations(p, 16, w, Parallelism(ep=e, **base)), HALF).iloc[0]
                  for e in (1, 8))
    assert one["ep_comm_s"] == 0 and eight["ep_comm_s"] > 0
    # expert weights are 45 of Mixtral's 47B: 16 bytes each, 8x fewer per chip with EP=8
    saved = 16 * p.params_expert * (1 - 1 / 8)
    assert one["memory_per_chip_bytes"] - eight["memory_per_chip_bytes"] == pytest.approx(saved, rel=1e-6)


def test_step_parts_add_up_to_the_step_time():
    p, a = prof.model_profile("llama-3.1-70b"), catalog.accelerator("TPU-v5p")
    df = search.search(p, a, 1024, _train("llama-3.1-70b", 8192, 16e6), efficiency=HALF)
    parts = df[["compute_s", "exposed_comm_s", "bubble_s", "recompute_s", "optimizer_s", "sync_s"]].sum(axis=1)
    assert np.allclose(parts, df["step_time_s"])
    tidy = tables.breakdown(df.head(1).assign(accelerator="TPU-v5p", chips=1024))
    assert tidy["seconds"].sum() == pytest.approx(df["step_time_s"].iloc[0])


def test_synchronisation_term_grows_with_the_number_of_fast_domains():
    """sync_s = γ·log2(chips / domain chips) of the rest of the step (Dean & Barroso 2013: the
    slowest of m domains); none inside one domain, and none with an explicit efficiency unless asked."""
    p, a = prof.model_profile("llama-2-7b"), catalog.accelerator("TPU-v5e")  # 256-chip slices
    w = _train("llama-2-7b", 4096, 4096 * 1024)
    one = search.best_config(p, a, 256, w, efficiency=HALF, sync_loss=0.04)
    four = search.best_config(p, a, 1024, w, efficiency=HALF, sync_loss=0.04)
    assert one["sync_s"] == 0.0
    assert four["sync_s"] == pytest.approx(0.04 * 2 * (four["step_time_s"] - four["sync_s"]))
    assert search.best_config(p, a, 1024, w, efficiency=HALF)["sync_s"] == 0.0


def test_the_practical_grid_keeps_tensor_parallelism_inside_a_gpu_node():
    """Megatron-LM keeps TP within an NVLink server (Narayanan et al. 2021 §3.3): on H100 the practical
    grid never spans nodes with TP; on a TPU torus it may go to 16 (MaxText's largest published TP)."""
    p = prof.model_profile("llama-3.1-70b")
    w = _train("llama-3.1-70b", 8192, 16e6)
    h100, v5p = catalog.accelerator("H100-SXM5-80GB"), catalog.accelerator("TPU-v5p")
    g = search.configurations(p, 1024, w, **search.practical_limits(h100))
    assert g["tp"].max() == 8 and set(g["recompute"]) == {"none", "full"}
    assert search.configurations(p, 1024, w, **search.practical_limits(v5p))["tp"].max() == 16
    assert len(g["tp"]) < len(search.configurations(p, 1024, w)["tp"]) / 3


# --- properties --------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arch=_small_models(), chips=st.sampled_from([2, 4, 8, 16, 32]), seqs=st.sampled_from([64, 256, 1024]),
       seq=st.sampled_from([1024, 4096]), acc=st.sampled_from(["A100-SXM4-40GB", "H100-SXM5-80GB", "TPU-v5e"]))
def test_more_chips_never_lower_throughput_without_communication(arch, chips, seqs, seq, acc):
    # With free communication and a fixed per-chip efficiency, doubling the chips can always reuse
    # the smaller layout with twice the data (or tensor) parallelism, so the best throughput cannot fall.
    p, a = prof.profile_from_architecture(arch), catalog.accelerator(acc)
    w = _train(architecture=arch, seq_len=seq, batch_tokens=seqs * seq)
    small = search.best_config(p, a, chips, w, efficiency=HALF, topology=comm.ideal_topology(chips))
    big = search.best_config(p, a, 2 * chips, w, efficiency=HALF, topology=comm.ideal_topology(2 * chips))
    if small is not None:
        assert big is not None
        assert big["tokens_per_s"] >= small["tokens_per_s"] * (1 - 1e-9)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arch=_small_models(), chips=st.sampled_from([8, 32, 128, 512]), seq=st.sampled_from([2048, 8192]),
       acc=st.sampled_from(["A100-SXM4-40GB", "H100-SXM5-80GB", "MI300X", "TPU-v5p", "TPU-v5e", "Trainium2"]))
def test_search_never_returns_a_configuration_that_does_not_fit(arch, chips, seq, acc):
    p, a = prof.profile_from_architecture(arch), catalog.accelerator(acc)
    w = _train(architecture=arch, seq_len=seq, batch_tokens=max(chips, 64) * seq)
    df = search.search(p, a, chips, w, efficiency=HALF)
    assert (df["memory_per_chip_bytes"] <= float(a["memory_bytes"]) * 0.9).all()


# --- published runs and worked examples ------------------------------------------------------------

MEGATRON_A100 = [  # Narayanan et al. 2021 (arXiv 2104.04473): model, GPUs, batch (sequences), TP, PP, TFLOP/s per GPU
    ("gpt-3-175b", 384, 1536, 8, 12, 153),   # §5.2 comparison with ZeRO-3
    ("gpt-3-175b", 1536, 1536, 8, 12, 141),
    ("gpt-3-175b", 1024, 1536, 8, 8, 140),   # §5.1: 175B on 1024 GPUs, batch 1536, ~140 TFLOP/s
    ("megatron-gpt-1t", 3072, 3072, 8, 64, 163),  # Table 1: 1T on 3072 GPUs, 163 TFLOP/s (52% of peak)
]


def _megatron_predicted_tflops(model, gpus, batch, tp, pp, efficiency):
    """Hardware TFLOP/s per GPU in Megatron's own count (with full recomputation), on Selene: A100
    80GB, 8 x 200 Gb/s HDR InfiniBand per node = 25 GB/s per GPU (Narayanan et al. 2021 §5)."""
    p, a = prof.model_profile(model), catalog.accelerator("A100-SXM4-80GB")
    w = _train(model, 2048, batch * 2048)
    topo = comm.topology(a, gpus, inter_node_bytes_per_s=25e9)
    cfg = search.best_config(p, a, gpus, w, Parallelism(tp=tp, pp=pp, recompute="full"), efficiency, topology=topo)
    return megatron_hw_flops_per_token(p, 2048) * batch * 2048 / cfg["step_time_s"] / gpus / 1e12


@pytest.mark.parametrize("model,gpus,batch,tp,pp,published", MEGATRON_A100)
def test_megatron_a100_runs_stay_below_the_matmul_ceiling_bound(model, gpus, batch, tp, pp, published):
    # With every matmul at the measured A100 ceiling the model must predict at least the published
    # throughput: predicting less would mean its communication and bubbles exceed the real total gap.
    predicted = _megatron_predicted_tflops(model, gpus, batch, tp, pp, placeholder_constant_efficiency(A100_MAMF))
    assert predicted >= published
    assert predicted <= A100_MAMF * 312  # and never above the ceiling itself


def test_megatron_a100_throughput_falls_from_384_to_1536_gpus_like_the_paper():
    # GPT-3 175B, TP8 PP12, batch 1536: 153 -> 141 TFLOP/s per GPU (ratio 0.92) as data parallelism
    # grows 4 -> 16 and micro-batches per pipeline shrink. At a fixed efficiency the ratio tests only
    # the communication and bubble model. A model without them would predict 1.0.
    eff = placeholder_constant_efficiency(0.5)
    ratio = (_megatron_predicted_tflops("gpt-3-175b", 1536, 1536, 8, 12, eff)
             / _megatron_predicted_tflops("gpt-3-175b", 384, 1536, 8, 12, eff))
    assert ratio == pytest.approx(141 / 153, abs=0.07)


def test_megatron_h100_strong_scaling_loss_like_the_readme():
    # Megatron-LM README, "Training Speed and Scalability": GPT-3 175B (vocab 131072), batch 1152
    # sequences of 4096 at every size, MFU 47% on 96 H100s and 42% on 4608 (ratio 0.89).
    arch = Architecture(layers=96, hidden=12288, ffn_hidden=49152, heads=96, kv_heads=96, vocab=131072,
                        gated_mlp=False, tied_embeddings=True)
    p, a = prof.profile_from_architecture(arch), catalog.accelerator("H100-SXM5-80GB")
    w = _train(architecture=arch, seq_len=4096, batch_tokens=1152 * 4096)
    mfu = {n: search.best_config(p, a, n, w, Parallelism(tp=8), HALF)["mfu"] for n in (96, 4608)}
    assert mfu[4608] / mfu[96] == pytest.approx(0.42 / 0.47, abs=0.07)


def test_llama2_70b_gpu_hours_are_a_lower_bound_at_the_matmul_ceiling():
    # Llama 2 model card: 1,720,320 A100-80GB GPU-hours for 2T tokens (4k context, 4M-token batches).
    # The GPU count is not published; Meta's clusters have 200 Gb/s per GPU (Llama 2 paper §2.2.1).
    # At the A100 matmul ceiling the model cannot need more GPU-hours than Meta did.
    p, a = prof.model_profile("llama-2-70b"), catalog.accelerator("A100-SXM4-80GB")
    w = Workload(task="training", model="llama-2-70b", tokens=2e12, seq_len=4096, global_batch_tokens=4 * 2**20)
    for gpus in (1024, 2048):
        topo = comm.topology(a, gpus, inter_node_bytes_per_s=25e9)
        cfg = search.best_config(p, a, gpus, w, efficiency=placeholder_constant_efficiency(A100_MAMF), topology=topo)
        gpu_hours = 2e12 / cfg["tokens_per_s"] * gpus / 3600
        assert gpu_hours <= 1_720_320


def test_llama3_70b_on_a_v5p_pod_needs_tensor_parallelism_like_scaling_book():
    # scaling-book ch. 6 "Training LLaMA 3 on TPUs": LLaMA 3-70B, 4M-token batch (1024 x 4096) on a
    # 16x20x28 v5p pod: pure FSDP (even with sequence sharding) is communication-bound; mixed FSDP with
    # ~4-way tensor parallelism is not. Book's figures: 4.59e14 FLOP/s, W_ICI = 2 x 9e10 B/s per axis,
    # roofline FLOPs (efficiency 1) and communication overlapped with compute.
    a = catalog.accelerator("TPU-v5p").copy()
    a["peak_bf16_flops_per_s"] = 4.59e14
    pod = comm.Topology(accelerator="TPU-v5p", domain="v5p pod", fabric="torus", domain_chips=8960,
                        intra_bytes_per_s=3 * 1.8e11, inter_bytes_per_s=6.25e9, shape=(16, 20, 28),
                        axis_bytes_per_s=(1.8e11,) * 3, wraparound=(True, True, True), hop_latency_s=1e-6)
    p = prof.model_profile("llama-3-70b")
    w = _train("llama-3-70b", 4096, 4 * 1024 * 1024)
    kw = dict(efficiency=placeholder_constant_efficiency(1.0), topology=pod, overlap=training.Overlap(tp=1.0))
    fsdp = search.search(p, a, 8960, w, Parallelism(tp=1, pp=1), **kw).iloc[0]
    mixed = search.search(p, a, 8960, w, Parallelism(tp=4, pp=1), **kw).iloc[0]
    assert fsdp["dp_comm_s"] > fsdp["compute_s"]  # communication-bound
    assert mixed["exposed_comm_s"] < 0.05 * mixed["step_time_s"]  # compute-bound
    assert mixed["step_time_s"] < fsdp["step_time_s"]


# --- curves and serving ------------------------------------------------------------------------------

def test_scaling_curve_reports_efficiency_against_the_smallest_count_and_marks_network_bound_points():
    p, a = prof.model_profile("llama-3.1-70b"), catalog.accelerator("H100-SXM5-80GB")
    w = Workload(task="training", model="llama-3.1-70b", tokens=2e12, seq_len=8192, global_batch_tokens=16e6)
    c = tables.scaling_curve(p, a, [64, 512, 4096], w, HALF, comm_share_threshold=0.0)
    assert list(c["chips"]) == [64, 512, 4096] and c["fits"].all()
    assert c["scaling_efficiency"].iloc[0] == pytest.approx(1.0)
    assert (c["training_days"] == 2e12 / c["tokens_per_s"] / 86400).all()
    assert (c["network_bound"] == (c["exposed_comm_s"] > 0)).all()  # any exposed communication passes 0
    assert not tables.scaling_curve(p, a, [64], w, HALF, comm_share_threshold=1.0)["network_bound"].any()


def test_scaling_curve_keeps_unpriceable_counts_as_rows_with_a_reason():
    p, a = prof.model_profile("llama-3.1-8b"), catalog.accelerator("L40S")
    w = _train("llama-3.1-8b", 4096, 1e6)
    c = tables.scaling_curve(p, a, [8, 16], w, HALF)
    assert list(c["fits"]) == [True, False] and "inter_node_bytes_per_s" in c["reason"].iloc[1]


def test_tensor_parallelism_cuts_latency_at_batch_one_for_a_70b_model():
    p, a = prof.model_profile("llama-3.1-70b"), catalog.accelerator("H100-SXM5-80GB")
    w = Workload(task="inference", model="llama-3.1-70b", input_tokens=1024, output_tokens=256, precision="bf16")
    df = serving.tp_curve(p, a, w, [1, 2, 4, 8])  # the one (calibrated) serving model
    one = df[df["batch"] == 1].set_index("tp")
    assert not one.loc[1, "fits"]  # 141 GB of bf16 weights do not fit one 80 GB chip
    assert one.loc[8, "tpot_ms"] < one.loc[4, "tpot_ms"] < one.loc[2, "tpot_ms"]
    assert (df.groupby("tp")["chosen"].sum() <= 1).all()



def test_fp8_training_stores_gemm_inputs_in_one_byte():
    # Transformer Engine keeps the FP8 cast of each GEMM input for the weight gradient (QKV, output
    # projection, both MLP GEMMs: 3h + f of Korthikanti et al. 2022's 16-bit bytes per token and
    # layer), so with selective recomputation an FP8 step stores (3h + f)·s·L bytes less than a BF16
    # one on the same layout; weights and optimizer states are the same 16-bit mixed-precision ones.
    p, a = prof.model_profile("llama-2-7b"), catalog.accelerator("H100-SXM5-80GB")
    par = Parallelism(tp=1, pp=1, cp=1, zero=1, recompute="selective", micro_batch=1)
    s = 4096
    mem = {prec: search.search(p, a, 8, _train("llama-2-7b", s, s * 64, precision=prec), par, HALF)
           .iloc[0]["memory_per_chip_bytes"] for prec in ("bf16", "fp8")}
    saved = (3 * p.hidden + p.ffn_hidden) * s * p.layers
    assert mem["bf16"] - mem["fp8"] == pytest.approx(saved, rel=1e-9)
    assert prof.fp8_saved_input_savings_per_token_per_layer(p, "fp8", "full") == 0.0  # only the 16-bit layer input is kept
    assert prof.fp8_saved_input_savings_per_token_per_layer(p, "bf16", "selective") == 0.0
