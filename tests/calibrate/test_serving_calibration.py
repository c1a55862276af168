"""Serving latency against published runs: the tensor-parallel ranks the Neuron runs were measured
with, the KV heads each rank must hold, the collective latency per step, and the prefill ceiling."""
import re

import pytest

from workbook import catalog
from workbook.calibrate import own
from workbook.calibrate import runs as calruns
from workbook.model import estimate
from workbook.model.efficiency import Efficiency
from workbook.model.profile import model_profile
from workbook.model.replica import collective_steps, kv_replicas, tp_ranks_per_chip
from workbook.scenario import Workload


@pytest.fixture(scope="module")
def table():
    return calruns.calibration_table().set_index("run")


def test_every_neuron_run_is_modelled_at_the_tp_degree_it_was_measured_with():
    """A NeuronCore is Neuron's TP unit: inf2.48xlarge TP=24 over 12 chips, trn1.32xlarge TP=32 over 16,
    trn2.48xlarge TP=64 logical cores (LNC=2) over 16 (the runs' notes, aws-neuron/aws-neuron-sdk
    @81ce03a benchmark tables)."""
    runs = calruns.reference_runs()
    neuron = runs[(runs["kind"] == "inference") & runs["accelerator"].isin(["Inferentia2", "Trainium1", "Trainium2"])]
    assert len(neuron) >= 20
    for _, r in neuron.iterrows():
        degree = int(re.search(r"TP=(\d+) (?:NeuronCores|logical)", f"{r['notes']} {r['conversion']}").group(1))
        acc = catalog.accelerator_record(r["accelerator"])
        assert int(r["tp"]) * tp_ranks_per_chip(acc) == degree, r["run"]


def test_gqa_heads_are_replicated_across_neuroncores_beyond_the_kv_head_count():
    """Mistral 7B (8 KV heads) at TP=24 NeuronCores holds each KV head 3 times; Llama 2 13B (40 heads,
    MHA) at TP=32 none; an 8-GPU H100 replica of Llama 3 70B (8 KV heads) none."""
    inf2, trn1, h100 = (catalog.accelerator_record(a) for a in ("Inferentia2", "Trainium1", "H100-SXM5-80GB"))
    prof = {m: estimate.workload_profile(Workload(task="inference", model=m, input_tokens=1, output_tokens=1)) for m in
            ("mistral-7b", "llama-2-13b", "llama-3-70b")}
    assert float(kv_replicas(prof["mistral-7b"], inf2, 12)) == 3.0
    assert float(kv_replicas(prof["llama-2-13b"], trn1, 16)) == 1.0
    assert float(kv_replicas(prof["llama-3-70b"], h100, 8)) == 1.0


def test_an_all_reduce_takes_two_log2_ranks_latency_steps():
    """Rabenseifner's reduce-scatter + all-gather (Thakur, Rabenseifner & Gropp 2005): 2 steps at TP2,
    6 at TP8 GPUs, 2·log2(24) = 9.17 over an inf2.48xlarge's 24 NeuronCores."""
    h100, inf2 = catalog.accelerator_record("H100-SXM5-80GB"), catalog.accelerator_record("Inferentia2")
    assert float(collective_steps(h100, 2)) == 2.0
    assert float(collective_steps(h100, 8)) == 6.0
    assert float(collective_steps(inf2, 12)) == pytest.approx(9.17, abs=0.01)
    assert float(collective_steps(h100, 1)) == 0.0


# Published figures with the tolerance the model now meets; the model before this change missed each
# (its error in the comment). FasterTransformer 13B on A100 40GB: kipp.ly "Transformer Inference
# Arithmetic" via cli99/llm-analysis examples/fastertransformer/README.md @b60b392; Neuron: aws-neuron/
# aws-neuron-sdk @81ce03a about-neuron/benchmarks/{inf2,trn1}/throughput_data_decoder.csv; NIM: NVIDIA
# NIM for LLMs benchmarks (data/reference_runs.csv source column).
PUBLISHED = [
    ("a100-40gb-fastertransformer-13b-tp1-ttft", 63.17, 0.15),              # was +86%
    ("a100-40gb-fastertransformer-13b-tp2-ttft", 45.45, 0.30),              # was +47% (held out)
    ("a100-40gb-fastertransformer-13b-tp2-tpot", 13.5, 0.15),               # was +29% (held out)
    ("inferentia2-neuronx-mistral-7b-8192-8192-b8-tpot", 18.01157, 0.30),   # was -39% (held out)
    ("trainium1-neuronx-llama-2-13b-4096-4096-b8-tpot", 19.85741, 0.35),    # was +55% (held out)
    ("h100-nim-llama-3.3-70b-c5-tpot", 21.83, 0.15),                        # was +54% (held out)
]


@pytest.mark.parametrize("run,published,tolerance", PUBLISHED, ids=[r for r, _, _ in PUBLISHED])
def test_published_serving_latencies_are_predicted_within_tolerance(table, run, published, tolerance):
    row = table.loc[run]
    assert float(row["value"]) == pytest.approx(published, rel=1e-4)
    assert abs(float(row["predicted"]) / published - 1.0) <= tolerance


def test_held_out_serving_latency_errors_improve_on_the_issue(table):
    """Issue 14 measured held-out medians of 46% (TPOT) and 52% (TTFT) before this change."""
    s = calruns.error_summary(table.reset_index())
    pooled = s[s["family"] == "(all)"].set_index("kind")
    assert pooled.loc["inference TPOT", "median_abs_error_holdout"] <= 0.25
    assert pooled.loc["inference TTFT", "median_abs_error_holdout"] <= 0.50


def test_a_teams_ttft_run_moves_its_chips_prefill_ceiling(tmp_path):
    """The team's TTFT measurement (``calibrate.own``) scales the chip's ``prefill_matmul_ceiling``,
    the parameter prefill runs at, and pulls the prediction onto it."""
    head = "run,kind,accelerator,chips,model,precision,input_tokens,output_tokens,concurrency,ttft_ms\n"
    path = tmp_path / "runs.csv"
    path.write_text(head + "a100-ttft,inference,A100-SXM4-80GB,1,llama-3.1-8b,bf16,2048,128,1,100\n")
    base = own.calibration_table(own.to_runs(own.read_measurements(path)), Efficiency.from_csv())
    measured = 1.3 * float(base["predicted"].iloc[0])  # 30% slower than predicted
    path.write_text(head + f"a100-ttft,inference,A100-SXM4-80GB,1,llama-3.1-8b,bf16,2048,128,1,{measured}\n")
    runs = own.to_runs(own.read_measurements(path))
    use = own.near(runs, "inference", "bf16", model_profile("llama-3.1-8b").params_active)
    eff, adj = own.adjust(Efficiency.from_csv(), runs, use)
    assert list(adj["parameter"]) == ["prefill_matmul_ceiling"]
    assert abs(float(own.calibration_table(runs, eff)["error"].iloc[0])) < 0.05


def test_a_chunked_prefill_ceiling_is_fitted_only_at_or_above_the_decode_ceiling():
    """calibrate.fit._fit_chunked_prefill: Blackwell's runs (128- to 20,000-token prompts) tell a prompt
    chunk's ceiling from a decode step's and give it a higher one (a larger GEMM runs nearer its peak);
    MI300X's 128-token prompts do not, and it keeps one ceiling for both."""
    eff = Efficiency.from_csv()
    assert eff.has("prefill_matmul_ceiling", "nvidia-blackwell")
    assert eff.get("prefill_matmul_ceiling", "nvidia-blackwell") > eff.get("inference_matmul_ceiling", "nvidia-blackwell")
    assert not eff.has("prefill_matmul_ceiling", "amd-cdna3")
