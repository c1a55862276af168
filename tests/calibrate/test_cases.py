"""The per-case calibration table (calibrate.cases): each run tagged by the kinds of issue 15 from
its columns, and the table printed by `calibrate` and kept in docs/explanation/calibration.md."""
import io
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest

from workbook import paths
from workbook.calibrate import cases
from workbook.cli import main
from workbook.model.efficiency import Efficiency

# A small recorded frame: rows shaped like data/reference_runs.csv (the columns the rules read), one
# per rule and a few that must match none. Values from the reference runs they imitate.
RECORDED = pd.DataFrame([
    # Narayanan et al. 2021 Table 2: GPT-3 175B, TP8 PP12 on 384 A100 (a published layout, no ZeRO-3)
    {"run": "a", "kind": "training", "metric": "mfu", "model": "gpt-3-175b", "architecture": None,
     "accelerator": "A100-SXM4-80GB", "chips": 384, "parallelism": "tp=8;pp=12;micro_batch=1;recompute=full",
     "framework": "Megatron-LM (PTD-P)", "batch": np.nan},
    # the same paper's ZeRO-3 scheme
    {"run": "b", "kind": "training", "metric": "mfu", "model": "gpt-3-175b", "architecture": None,
     "accelerator": "A100-SXM4-80GB", "chips": 768, "parallelism": "tp=1;pp=1;zero=3;micro_batch=2;recompute=full",
     "framework": "ZeRO-3 without Model Parallelism", "batch": np.nan},
    # llm-foundry: FSDP named in the framework, no layout keys printed beyond recompute
    {"run": "c", "kind": "training", "metric": "mfu", "model": "llama-2-7b", "architecture": None,
     "accelerator": "H100-SXM5-80GB", "chips": 8, "parallelism": "recompute=none",
     "framework": "MosaicML Composer/llm-foundry (FSDP FULL_SHARD)", "batch": np.nan},
    # Megatron-Bridge: Qwen3-30B-A3B on 16 H100 (MoE, EP8)
    {"run": "d", "kind": "training", "metric": "mfu", "model": "qwen3-30b-a3b", "architecture": None,
     "accelerator": "H100-SXM5-80GB", "chips": 16, "parallelism": "ep=8;micro_batch=1", "framework": "Megatron-Bridge",
     "batch": np.nan},
    # a B200 serving run: Blackwell whatever the kind
    {"run": "e", "kind": "inference", "metric": "output_tokens_per_s_per_chip", "model": "llama-3.1-8b",
     "architecture": None, "accelerator": "B200-SXM-180GB", "chips": 1, "parallelism": None, "framework": "vLLM",
     "batch": 64},
    # ResNet-50 (DeepLearningExamples): generic
    {"run": "f", "kind": "training", "metric": "generic_mfu", "model": None,
     "architecture": "generic:params=2.56e7;train_flops_per_sample=2.28e10", "accelerator": "A100-SXM4-80GB",
     "chips": 8, "parallelism": None, "framework": "PyTorch", "batch": 256},
    # PaLM 540B on 6,144 TPU v4 (more than one 4,096-chip pod) and a one-pod TPU v4 run
    {"run": "g", "kind": "training", "metric": "mfu", "model": "llama-2-7b", "architecture": None,
     "accelerator": "TPU-v4", "chips": 6144, "parallelism": "recompute=full", "framework": "JAX", "batch": np.nan},
    {"run": "h", "kind": "training", "metric": "mfu", "model": "llama-2-7b", "architecture": None,
     "accelerator": "TPU-v4", "chips": 512, "parallelism": None, "framework": "MaxText", "batch": np.nan},
    # FasterTransformer batch-1 TTFT, and a TPOT at concurrency 50 that is not low-batch
    {"run": "i", "kind": "inference", "metric": "ttft_ms", "model": "llama-2-13b", "architecture": None,
     "accelerator": "A100-SXM4-40GB", "chips": 1, "parallelism": None, "framework": "FasterTransformer", "batch": 1},
    {"run": "j", "kind": "inference", "metric": "tpot_ms", "model": "llama-3.1-70b", "architecture": None,
     "accelerator": "H100-SXM5-80GB", "chips": 2, "parallelism": None, "framework": "NIM", "batch": 50},
])

EXPECTED = {
    "free layout search": {"a", "b", "d"},
    "ZeRO-3/FSDP": {"b", "c"},
    "MoE training": {"d"},
    "Blackwell": {"e"},
    "generic models": {"f"},
    "multi-pod TPU (DCN)": {"g"},
    "low-batch latency": {"i"},
}


def test_each_case_rule_picks_the_runs_its_columns_name():
    tags = cases.tag_cases(RECORDED).set_index("run")
    assert list(tags.columns) == list(cases.CASES)
    for case, runs in EXPECTED.items():
        assert set(tags.index[tags[case]]) == runs, case


def _table():
    """A calibration-table-shaped frame for the recorded runs: errors chosen by hand."""
    err = {"a": 0.10, "b": 0.50, "c": -0.20, "d": 0.90, "e": 0.0, "f": -0.10, "g": -0.04, "h": 0.0, "i": 0.30, "j": 0.0}
    split = {"a": "fit", "b": "holdout", "c": "fit", "d": "holdout"}
    t = pd.DataFrame({"run": list(err), "error": list(err.values()), "value": 1.0})
    t["predicted"] = 1.0 + t["error"]
    t["split"] = t["run"].map(split).fillna("fit")
    t["low"], t["high"] = t["predicted"] / 1.3, t["predicted"] * 1.3
    t["in_band"] = (t["value"] >= t["low"]) & (t["value"] <= t["high"])
    return t


def test_the_case_summary_counts_errors_and_band_coverage_per_case():
    free = pd.DataFrame({"run": ["a", "b", "d"], "split": ["fit", "holdout", "holdout"], "published_mfu": 1.0,
                         "free_mfu": [1.5, 1.6, 1.0], "free_error": [0.5, 0.6, 0.0]})
    # the free search's own band, off-centre like the fitted one (band_p10/p90_mfu_free): 0.65x-1.05x
    eff = Efficiency.from_table({("band_p10_mfu_free", "pooled"): 0.65, ("band_p90_mfu_free", "pooled"): 1.05})
    s = cases.case_summary(_table(), RECORDED, free, eff).set_index("case")
    z = s.loc["ZeRO-3/FSDP"]
    assert (z["n"], z["n_holdout"]) == (2, 1)
    assert z["median_abs_error"] == pytest.approx(0.35) and z["median_abs_error_holdout"] == pytest.approx(0.5)
    assert z["median_signed_error"] == pytest.approx(0.15)
    assert z["band_coverage"] == pytest.approx(0.5) and z["band_coverage_holdout"] == 0.0  # +50% is outside 1.3x
    f = s.loc[cases.FREE_ROW]  # the same runs searched freely: the free errors, not the pinned ones
    assert f["n"] == 3 and f["median_abs_error"] == pytest.approx(0.5) and f["median_signed_error"] == pytest.approx(0.5)
    # the free band, not the pinned 1.3x band moved: a (1.5 -> 0.975-1.575) and d (1.0 -> 0.65-1.05) hold
    # the published 1.0, b (1.6 -> 1.04-1.68) does not; the pinned band moved would hold d alone
    assert f["band_coverage"] == pytest.approx(2 / 3) and f["band_coverage_holdout"] == pytest.approx(1 / 2)
    assert f["median_band_width_holdout"] == pytest.approx(1.05 / 0.65)
    assert z["median_band_width_holdout"] == pytest.approx(1.3 ** 2)
    assert np.isnan(s.loc["Blackwell", "median_abs_error_holdout"])


def test_calibrate_markdown_prints_the_cases_table_and_the_docs_hold_it():
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["calibrate", "--markdown"]) == 0
    table = cases.cases_markdown()
    assert table in out.getvalue()
    readme = (paths.ROOT / "docs" / "explanation" / "calibration.md").read_text()
    block = readme.split("<!-- cases-table -->")[1].split("<!-- /cases-table -->")[0]
    assert table in block
