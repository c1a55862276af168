"""The training framework's sharding modes as the layout search's prior (model.search.FRAMEWORK_MODES,
workload.training_framework; issue 26 item 3), each case against the source in the table."""
import numpy as np
import pytest

from workbook import catalog
from workbook.calibrate import runs as calruns
from workbook.errors import InputError
from workbook.model import estimate, search
from workbook.model.profile import model_profile
from workbook.scenario import Workload


@pytest.mark.parametrize("text,fid", [
    ("Megatron-Core r0.8.0", "megatron"),
    ("NeMo 24.04 (Megatron-Core; NVIDIA MLPerf Training v4.0)", "megatron"),
    ("Megatron-Bridge / NeMo 26.02", "megatron"),
    ("Megatron-DeepSpeed", "deepspeed"),                      # DeepSpeed before Megatron in the table order
    ("NeMo-Megatron (neuronx-nemo-megatron) (Neuron 2.15.0)", "neuronx"),  # Neuron before Megatron/NeMo
    ("torchtitan (Jun 2025, Trainy)", "torchtitan"),
    ("MaxText (JAX)", "maxtext"),
    ("MosaicML Composer/llm-foundry (FSDP FULL_SHARD)", "llm-foundry"),
    ("PyTorch FSDP (IBM fms-fsdp)", "fms-fsdp"),
    ("Pathways (JAX; T5X/PaLM)", None), ("Meta (not stated)", None), (None, None),
])
def test_a_runs_framework_text_names_its_framework(text, fid):
    assert search.framework_id(text) == fid


@pytest.mark.parametrize("fid,stages", [
    ("megatron", (0, 1, 3)),    # DDP, --use-distributed-optimizer, Megatron-FSDP optim_grads_params; no recipe runs ZeRO-2
    ("deepspeed", (0, 1, 2, 3)),  # zero_optimization.stage 0-3
    ("torchtitan", (0, 3)),     # replicate (DDP) and FSDP2 fully_shard
    ("maxtext", (0, 3)),        # data and fsdp mesh axes
    ("neuronx", (0, 1)),        # NeuronZero1Optimizer
])
def test_each_framework_offers_only_the_zero_stages_it_runs(fid, stages):
    assert search.framework_limits(fid)["zero_stages"] == stages


def test_no_framework_keeps_every_stage_and_an_unknown_one_is_one_line():
    assert search.framework_limits(None) == {}
    with pytest.raises(InputError, match="workload.training_framework: unknown 'colossal'"):
        search.framework_limits("colossal")


def test_limits_combine_so_that_both_hold():
    # the GPU MoE prior (zero 0 or 1, micro-batches <= 4) with Megatron's stages (0, 1, 3): 0 and 1 stay;
    # llm-foundry's TP <= 1 is tighter than the node's 8
    a = {"max_tp": 8, "zero_stages": (0, 1), "micro_batches": (1, 2, 4)}
    assert search.merge_limits(a, search.framework_limits("megatron")) == {"max_tp": 8, "zero_stages": (0, 1),
                                                                           "micro_batches": (1, 2, 4)}
    assert search.merge_limits(a, search.framework_limits("llm-foundry"))["max_tp"] == 1
    assert search.merge_limits({"zero_stages": (1,)}, {"zero_stages": (3,)}) == {"zero_stages": (3,)}  # none common: the framework's


def test_the_grid_of_a_megatron_search_has_no_zero2_rows():
    w = Workload(task="training", model="llama-3.1-8b", tokens=1e12, seq_len=8192, global_batch_tokens=8192.0 * 512)
    p = model_profile("llama-3.1-8b")
    every = search.configurations(p, 64, w, zero_stages=None)
    megatron = search.configurations(p, 64, w, **search.framework_limits("megatron"))
    assert set(np.unique(every["zero"])) == {0, 1, 2, 3}
    assert set(np.unique(megatron["zero"])) == {0, 1, 3}


@pytest.mark.parametrize("run,fid", [("h100-megatron-16b-192", "megatron"),
                                     ("h200-sxm-141gb-torchtitan-llama-3-1-8b-64", "torchtitan")])
def test_the_free_search_of_a_published_run_no_longer_picks_zero2(run, fid):
    # Megatron-Core r0.8.0 README weak-scaling table (16B on 192 H100, published TP4 DP48 with the distributed
    # optimizer) and torchtitan benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md (FSDP on 64 H200): with
    # every stage offered the free search takes ZeRO-2 (DeepSpeed's schedule), which neither framework runs
    # (recorded 2026-12-02 with the shipped efficiency); with the run's framework it does not.
    r = calruns.reference_runs().set_index("run").loc[run].copy()
    r["run"] = run
    w = calruns.run_workload(r)
    assert w.training_framework == fid
    acc, p, chips = catalog.accelerator_record(r["accelerator"]), calruns.run_profile(r), calruns.run_chips(r)
    cfg = estimate.training_config(p, acc, chips, w, None, calruns.CALIBRATION_HEADROOM)
    free = estimate.training_config(p, acc, chips, w.model_copy(update={"training_framework": None}), None,
                                    calruns.CALIBRATION_HEADROOM)
    assert free["zero"] == 2
    assert cfg["zero"] in search.framework_limits(fid)["zero_stages"] and cfg["zero"] != 2


def test_a_scenario_takes_the_framework_key():
    w = Workload(task="training", model="llama-3.1-8b", tokens=1e12, training_framework="torchtitan")
    assert w.training_framework == "torchtitan"
    with pytest.raises(Exception):
        Workload(task="training", model="llama-3.1-8b", tokens=1e12, training_framework="colossal")
