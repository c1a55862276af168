"""MLPerf Training v4.0 GPT-3 175B on 512, 10,752 and 11,616 H100 (NVIDIA, NeMo 24.04): a small per-GPU
batch at scale (0.25 sequences per GPU per step at 10k+ GPUs), inside the calibration data rule of issue 26.
Source: mlcommons/training_results_v4.0 @62f111b NVIDIA/results/*/gpt3/result_*.txt (MLLOG blocks) and
NVIDIA/benchmarks/gpt3/implementations/nemo/config_DGXH100_*.sh."""
import pytest

from workbook.calibrate import runs as calruns

RUNS = ("h100-mlperf-v4.0-gpt3-175b-512", "h100-mlperf-v4.0-gpt3-175b-10752", "h100-mlperf-v4.0-gpt3-175b-11616")


def _row(run):
    r = calruns.reference_runs().set_index("run").loc[run].copy()
    r["run"] = run
    return r


@pytest.mark.parametrize("run,tokens_per_s,chips", [(RUNS[0], 429_755, 512), (RUNS[1], 5_979_172, 10_752),
                                                    (RUNS[2], 6_452_867, 11_616)])
def test_the_published_figure_is_the_median_block_rate_per_gpu(run, tokens_per_s, chips):
    # median over the training blocks (block tokens = MLLOG epoch_count / (block_stop - block_start)), per GPU
    r = _row(run)
    assert float(r["published_value"]) == pytest.approx(tokens_per_s / chips, abs=0.1)


def test_the_mfu_of_the_11616_gpu_run_by_hand():
    # 555.5 tokens/s/GPU x (6 x 175e9 + 12 x 96 layers x 12,288 x 2,048) FLOPs per token / 1,979e12 (H100 SXM dense
    # FP8 peak) = 0.303; the profile's parameter count (not 175e9 exactly) gives the stored 0.3021
    hand = 555.5 * (6 * 175e9 + 12 * 96 * 12288 * 2048) / 1979e12
    assert float(_row(RUNS[2])["value"]) == pytest.approx(hand, rel=0.01)
    assert float(_row(RUNS[2])["value"]) == pytest.approx(calruns.convert(_row(RUNS[2])), rel=1e-5)


def test_the_model_keeps_the_drop_of_mfu_from_512_to_10752_gpus():
    # published: MFU 0.457 on 512 GPUs (4.5 sequences per GPU per step) against 0.302 on 10,752 (0.25): x0.66.
    # Pinned with the runs' FP8 weight gather (fp8_param_gather) the model gives x0.65 and -2% at 10,752 (it
    # gave x0.60 and -9% with 16-bit weights gathered; recorded 2026-12-02): no per-step cost is missing here.
    small, large = (calruns.training_prediction(_row(r))["mfu"] for r in RUNS[:2])
    published = float(_row(RUNS[1])["value"]) / float(_row(RUNS[0])["value"])
    assert published == pytest.approx(0.662, abs=0.005)
    assert large / small == pytest.approx(published, rel=0.05)
    assert large / float(_row(RUNS[1])["value"]) == pytest.approx(1.0, abs=0.05)


V31 = ("h100-mlperf-v3.1-gpt3-175b-512", "h100-mlperf-v3.1-gpt3-175b-4096", "h100-mlperf-v3.1-gpt3-175b-8192",
       "h100-mlperf-v3.1-gpt3-175b-10752")


@pytest.mark.parametrize("run,tokens_per_s,chips", [(V31[0], 378_855, 512), (V31[1], 2_575_563, 4096),
                                                    (V31[2], 5_113_965, 8192), (V31[3], 5_782_588, 10_752)])
def test_the_v31_figures_are_the_median_block_rates_per_gpu(run, tokens_per_s, chips):
    # mlcommons/training_results_v3.1 @d06288b NVIDIA/results/*_ngc23.09_nemo/gpt3 (same method as v4.0)
    assert float(_row(run)["published_value"]) == pytest.approx(tokens_per_s / chips, abs=0.1)


def test_the_v31_series_keeps_the_cost_of_fewer_micro_batches_per_step():
    # one code (NeMo 23.09, TP4 PP8 VP12, mb 1, 16-bit weights) from 128 micro-batches per step on 512 GPUs to 8 on
    # 10,752: published MFU 0.402 -> 0.293 (x0.73). The model gives x0.69 (bubble 7/(12·m) of the ideal time and the
    # once-per-step distributed-optimizer collectives over 336 replicas), every run within 10% (recorded 2026-12-02)
    pred = [calruns.training_prediction(_row(r))["mfu"] for r in V31]
    pub = [float(_row(r)["value"]) for r in V31]
    assert pub[3] / pub[0] == pytest.approx(0.727, abs=0.005)
    assert pred[3] / pred[0] == pytest.approx(pub[3] / pub[0], rel=0.10)
    assert all(abs(p / q - 1.0) < 0.10 for p, q in zip(pred, pub))
