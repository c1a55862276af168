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
