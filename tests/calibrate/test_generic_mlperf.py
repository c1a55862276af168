"""Generic (non-transformer) models calibrated on MLPerf ResNet-50 (issue 15 item 5): a recorded MLPerf
Training log converts to the throughput its reference row states, a held-out run is predicted inside
its band, and the fixed step time explains the small-batch, large-scale runs."""
import math
from pathlib import Path

import pytest

from workbook.calibrate import generic
from workbook.calibrate import runs as calruns
from workbook.errors import InputError
from workbook.model import generic as model_generic
from workbook.model.efficiency import Efficiency, band

FIXTURES = Path(__file__).parent.parent / "fixtures" / "mlperf"
EFF = Efficiency.from_csv()


def _run(name):
    runs = calruns.reference_runs()
    return runs[runs["run"] == name].iloc[0]


def test_a_tpu_log_numbered_from_epoch_0_converts_to_its_images_per_s():
    """mlcommons/training_results_v1.0 @8200377 Google/results/tpu-v4-128-TF/resnet/result_0.txt (excerpt):
    run_start 1620425288935 ms, run_stop 1620425547034 ms, last evaluation at epoch_num 42 of blocks
    numbered from 0 = 43 epochs; 43 x 1,281,167 / 258.099 s = 213,446 images/s."""
    out = generic.mlperf_training_throughput((FIXTURES / "tpu-v4-128-resnet-result_0.txt").read_text())
    assert out["epochs"] == 43 and out["global_batch_size"] == 8192
    assert out["run_s"] == pytest.approx(258.099)
    assert out["samples_per_s"] == pytest.approx(213_446, abs=1)
    assert float(_run("tpu-v4-mlperf-resnet-64")["published_value"]) == pytest.approx(out["samples_per_s"], abs=1)


def test_an_nvidia_log_numbered_from_epoch_1_converts_to_its_images_per_s():
    """mlcommons/training_results_v4.0 @62f111b NVIDIA/results/eos_n316_ngc24.04_mxnet/resnet/result_0.txt
    (excerpt): 70 epochs (first block at epoch 1) in 13.944 s on 2,528 H100 = 6,431,561 images/s, below
    the logged steady-state 6.8 million (evaluation and the first epoch's warm-up are included)."""
    out = generic.mlperf_training_throughput((FIXTURES / "eos-n316-resnet-result_0.txt").read_text())
    assert out["epochs"] == 70 and out["global_batch_size"] == 40448
    assert out["samples_per_s"] == pytest.approx(6_431_561, abs=1)
    assert out["samples_per_s"] < 6_815_142  # the log's own tracked_stats throughput of epoch 2
    assert float(_run("h100-mlperf-resnet-2528")["published_value"]) == pytest.approx(out["samples_per_s"], abs=1)


def test_a_log_without_run_stop_is_one_line_naming_it():
    text = (FIXTURES / "tpu-v4-128-resnet-result_0.txt").read_text()
    broken = "\n".join(line for line in text.splitlines() if '"run_stop"' not in line)
    with pytest.raises(InputError) as e:
        generic.mlperf_training_throughput(broken, "result_0.txt")
    assert "result_0.txt" in str(e.value) and "run_stop" in str(e.value) and "\n" not in str(e.value)


def test_a_held_out_mlperf_run_is_predicted_inside_its_band():
    """h100-mlperf-resnet-64 (held out): MLPerf Training v4.0, Eos 8x DGX H100, 50 images per GPU per
    step, 298,291 images/s = 35 x 1,281,167 / 150.326 s (mlcommons/training_results_v4.0 @62f111b
    NVIDIA/results/eos_n8_ngc24.04_mxnet/resnet/result_0.txt); every held-out MLPerf training run lies
    inside the P10-P90 band."""
    lo, hi = band(EFF, "generic_mfu", "pooled")
    r = _run("h100-mlperf-resnet-64")
    assert r["split"] == "holdout" and float(r["published_value"]) == pytest.approx(298_291, abs=1)
    assert generic.predict(r, EFF) / float(r["value"]) == pytest.approx(1.0, abs=0.15)
    runs = calruns.reference_runs()
    held = runs[runs["run"].str.contains("mlperf-resnet-") & (runs["split"] == "holdout")]
    assert len(held) >= 2
    for _, h in held.iterrows():
        assert lo < float(h["value"]) / generic.predict(h, EFF) < hi, h["run"]


def test_the_fixed_step_time_explains_the_small_batch_runs_at_scale():
    """16 images per GPU per step on 2,528 H100 (6.3 ms a step): without a fixed time per step the
    generic model predicts it about 3x too fast; with the fitted one within 15%."""
    r = _run("h100-mlperf-resnet-2528")
    t0 = model_generic.step_overhead_s(EFF)
    assert 1e-3 < t0 < 10e-3
    without = EFF.replace({(model_generic.STEP_OVERHEAD, "pooled"): 0.0})
    assert generic.predict(r, without) / float(r["value"]) > 2.5
    assert generic.predict(r, EFF) / float(r["value"]) == pytest.approx(1.0, abs=0.15)


def test_no_fitted_step_time_adds_nothing():
    assert model_generic.train_step_time_s(0.05, Efficiency.fixed(0.5)) == 0.05
    assert math.isclose(model_generic.train_step_time_s(0.05, EFF), 0.05 + model_generic.step_overhead_s(EFF))


def test_mlperf_runs_cover_several_accelerators_in_training_and_inference():
    runs = calruns.reference_runs()
    mlperf = runs[runs["source"].str.startswith("mlcommons/") & runs["metric"].isin(list(generic.METRICS))]
    train = set(mlperf.loc[mlperf["metric"] == "generic_mfu", "accelerator"])
    infer = set(mlperf.loc[mlperf["metric"] == "generic_samples_per_s_per_chip", "accelerator"])
    assert {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "TPU-v4"} <= train
    assert {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "L4"} <= infer
    assert (mlperf["split"] == "holdout").any()
