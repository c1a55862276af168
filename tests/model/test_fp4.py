"""precision: fp4 (NVFP4, MXFP4): block-scaled 4-bit weights, multiplied at the FP4 peak where a chip
has FP4 tensor cores, refused or dequantised (``fp4_fallback``) elsewhere."""
import math

import pytest
from pydantic import ValidationError

from workbook import catalog
from workbook.model import estimate
from workbook.model.efficiency import matmul_precision
from workbook.model.profile import bytes_per_value, weight_bytes, workload_profile
from workbook.scenario import Scenario


def _serving(precision="fp8", **workload) -> Scenario:
    """Llama 3.1 70B, 2,048 prompt and 128 answer tokens, on the pinned chips of the test (no SLO:
    the throughput at the largest batch that fits)."""
    return Scenario.model_validate({
        "name": "fp4-test",
        "workload": {"task": "inference", "model": "llama-3.1-70b", "precision": precision,
                     "input_tokens": 2048, "output_tokens": 128, **workload},
        "candidates": {"accelerators": ["B200-SXM-180GB", "H100-SXM5-80GB"]}})


def test_block_scales_cost_one_byte_per_16_values_in_nvfp4_and_per_32_in_mxfp4():
    # NVFP4: E2M1 + one E4M3 scale per 16 (NVIDIA's NVFP4 blog); MXFP4: E2M1 + one E8M0 per 32 (OCP MX v1.0)
    assert bytes_per_value("nvfp4") == pytest.approx(0.5 + 1 / 16)
    assert bytes_per_value("mxfp4") == pytest.approx(0.5 + 1 / 32)
    s = _serving("fp4", fp4_format="mxfp4")
    p = workload_profile(s.workload)
    assert weight_bytes(p, s.workload.weight_precision) == pytest.approx(p.params_total * 0.53125)


def test_fp4_weights_keep_an_fp8_kv_cache_unless_told():
    assert _serving("fp4").workload.kv_precision == "fp8"
    assert _serving("fp4", kv_cache_precision="fp4").workload.kv_precision == "nvfp4"
    assert _serving("fp4", kv_cache_precision="bf16").workload.kv_precision == "bf16"


def test_fp4_on_b200_serves_llama_70b_over_1_15x_the_fp8_throughput():
    """Issue 24's criterion, from the model: half the weight bytes and twice the dense peak (9 against
    4.5 PFLOPS, data/accelerators.csv) on 8 pinned B200s."""
    fp8 = estimate.estimate_inference(_serving("fp8"), "B200-SXM-180GB", chips=8)
    fp4 = estimate.estimate_inference(_serving("fp4"), "B200-SXM-180GB", chips=8)
    assert fp8["fits"] and fp4["fits"]
    assert fp4["peak_flops_per_s"] == pytest.approx(2 * fp8["peak_flops_per_s"])
    assert fp4["output_tokens_per_s"] > 1.15 * fp8["output_tokens_per_s"]
    assert fp4["max_batch"] > fp8["max_batch"]  # the weights' saved bytes hold more KV cache


def test_fp4_on_a_chip_without_fp4_tensor_cores_is_refused_in_one_line():
    r = estimate.estimate_inference(_serving("fp4"), "H100-SXM5-80GB", chips=8)
    assert not r["fits"]
    assert "no FP4 tensor cores" in r["reason"] and "fp4_fallback" in r["reason"] and "\n" not in r["reason"]


def test_weight_only_fp4_on_hopper_multiplies_at_fp8_and_reads_fp4_weights():
    h100 = catalog.accelerator_record("H100-SXM5-80GB")
    assert matmul_precision(h100, "fp4", "weight_only") == "fp8"
    assert matmul_precision(catalog.accelerator_record("A100-SXM4-80GB"), "fp4", "weight_only") == "bf16"
    assert matmul_precision(catalog.accelerator_record("B200-SXM-180GB"), "fp4", "weight_only") == "fp4"
    wo = estimate.estimate_inference(_serving("fp4", fp4_fallback="weight_only"), "H100-SXM5-80GB", chips=8)
    fp8 = estimate.estimate_inference(_serving("fp8"), "H100-SXM5-80GB", chips=8)
    assert wo["fits"] and wo["peak_flops_per_s"] == fp8["peak_flops_per_s"]
    assert wo["memory_per_chip_bytes"] < fp8["memory_per_chip_bytes"] or wo["tp"] < fp8["tp"]


def test_an_fp4_kv_cache_needs_fp4_tensor_cores():
    r = estimate.estimate_inference(_serving("fp8", kv_cache_precision="fp4"), "H100-SXM5-80GB", chips=8)
    assert not r["fits"] and "kv_cache_precision fp4" in r["reason"]


@pytest.mark.parametrize("task", ["training", "fine-tuning"])
def test_fp4_training_is_a_one_line_input_error(task):
    with pytest.raises(ValidationError, match="fp4 is for inference"):
        Scenario.model_validate({"name": "x", "workload": {"task": task, "model": "llama-3.1-70b",
                                                          "precision": "fp4", "tokens": 1e9}})


def test_only_chips_with_an_fp4_peak_are_candidates_by_default():
    s = _serving("fp4").model_copy(update={"candidates": _serving().candidates.model_copy(update={"accelerators": None})})
    names = estimate.candidate_accelerators(s)
    assert "B200-SXM-180GB" in names and "H100-SXM5-80GB" not in names
    assert all(not math.isnan(catalog.peak_flops_per_s(catalog.accelerator_record(a), "fp4")) for a in names)


def test_a_family_without_runs_borrows_its_predecessors_values_but_keeps_the_uncalibrated_label():
    """issue 24: chips without any run get the nearest family's parameters and the wider uncalibrated
    band, labelled. A TPU7x (family tpu-v7, no runs) takes tpu-v6e's training ceiling."""
    from workbook.model.efficiency import Efficiency, NEAREST_FAMILY, band_scope, scope_of
    eff = Efficiency.from_csv()
    tpu7 = catalog.accelerator_record("TPU-7x")
    assert NEAREST_FAMILY["tpu-v7"] == "tpu-v6e" and "tpu-v7" not in eff.scopes
    assert scope_of(eff, tpu7) == "tpu-v6e"
    assert band_scope(eff, tpu7) == "tpu-v7" and not eff.is_calibrated("matmul_ceiling", band_scope(eff, tpu7))
    assert scope_of(eff, catalog.accelerator_record("TPU-v6e")) == "tpu-v6e"  # a calibrated family keeps its own
