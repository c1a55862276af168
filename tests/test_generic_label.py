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


def _run(tmp_path, *extra):
    f = tmp_path / "resnet-label.yaml"
    f.write_text(yaml.safe_dump(RESNET))
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
