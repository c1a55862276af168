"""A generic (non-transformer) estimate carries the 'uncalibrated/optimistic' label in the CLI text and
the JSON, and its band never exceeds the chip's dense peak (issue 15 item 5)."""
import io
import json
from contextlib import redirect_stdout

import yaml

from workbook import terms
from workbook.cli import main

RESNET = {"name": "resnet-label", "workload": {"task": "training", "precision": "bf16", "samples": 1.15e8,
                                               "global_batch_tokens": 2048,
                                               "generic": {"params": 2.56e7, "train_flops_per_sample": 2.46e10}},
          "cluster": {"accelerator": "TPU-v5e", "chips": 8}}


def _run(tmp_path, *extra, scenario=RESNET):
    f = tmp_path / f"{scenario['name']}.yaml"
    f.write_text(yaml.safe_dump(scenario))
    out = io.StringIO()
    with redirect_stdout(out):
        main(["estimate", str(f), *extra])
    return out.getvalue()


def test_cli_text_labels_a_generic_estimate(tmp_path):
    text = _run(tmp_path)
    assert terms.GENERIC_ESTIMATE_LABEL == "uncalibrated/optimistic"
    assert "uncalibrated/optimistic" in text.split("Recommendation")[0]


def test_json_labels_it_and_caps_the_band_at_peak(tmp_path):
    res = json.loads(_run(tmp_path, "--json"))
    assert res["estimate_label"] == "uncalibrated/optimistic"
    for opt in res["options"]:
        if opt.get("mfu_high") is not None:
            assert opt["mfu_high"] <= 1.0 + 1e-9
            assert opt["mfu_low"] <= opt["mfu"] <= opt["mfu_high"]
    assert any("uncalibrated/optimistic" in w for w in res["recommendation"]["warnings"])


def test_report_headline_carries_the_label(tmp_path):
    """The report's headline (and the index row, built from it) lists the recommendation warnings."""
    from workbook.report.assemble import headline
    head = headline(json.loads(_run(tmp_path, "--json")))
    assert "uncalibrated/optimistic" in (head["warnings"] or "")


# ResNet-50 at 224x224: 2.28e10 training FLOPs per image (He et al. 2016 Table 1, 3.8e9 multiply-adds
# x 2 x 3), the per-sample cost of the MLPerf ResNet-50 runs the generic fit uses
RESNET50 = {**RESNET, "name": "resnet50-label",
            "workload": {**RESNET["workload"], "generic": {"params": 2.56e7, "train_flops_per_sample": 2.28e10}},
            "cluster": {"accelerator": "H100-SXM5-80GB", "chips": 8}}


def _run_resnet50(tmp_path, *extra):
    return _run(tmp_path, *extra, scenario=RESNET50)


def test_mlperf_resnet50_is_labelled_calibrated_on_it(tmp_path):
    res = json.loads(_run_resnet50(tmp_path, "--json"))
    assert res["estimate_label"] == "calibrated on MLPerf ResNet-50"
    warnings = res["recommendation"]["warnings"]
    assert not any("uncalibrated/optimistic" in w for w in warnings)
    assert any("calibrated on MLPerf ResNet-50" in w for w in warnings)
    assert "calibrated on MLPerf ResNet-50" in _run_resnet50(tmp_path).split("Recommendation")[0]


def test_the_label_follows_the_per_sample_cost():
    from workbook.model.generic import estimate_label
    from workbook.scenario import Workload
    def label(flops, task="training"):
        key = "train_flops_per_sample" if task == "training" else "infer_flops_per_sample"
        extra = {"samples": 1e8} if task == "training" else {}
        return estimate_label(Workload(task=task, generic={"params": 2.56e7, key: flops}, **extra))
    assert label(2.28e10) == label(2.30e10) == "calibrated on MLPerf ResNet-50"
    assert label(7.6e9, "inference") == "calibrated on MLPerf ResNet-50"
    assert label(2.46e10) == label(7.6e9) == label(4.1e9, "inference") == "uncalibrated/optimistic"
    assert estimate_label(Workload(task="training", model="llama-2-7b", tokens=1e9)) is None
