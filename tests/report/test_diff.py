"""``python -m workbook diff OLD NEW`` and the batch index's "since last run": what changed in the
recommendation, its costs, the prices and the assumptions."""
import copy
import json

import pytest
from cli_helpers import run_workbook

from workbook import diff
from workbook.errors import InputError
from workbook.report import batch

OLD = {"scenario": "s", "generated_utc": "2026-11-30T00:00:00+00:00", "workbook_version": "0.1",
       "catalog_versions": {"offerings": "aaa"}, "inputs": {"pricing": {"utilization": 0.9}},
       "recommendation": {"accelerator": "H100", "pricing_model": "spot", "provider": "AWS", "offering": "p5",
                          "summary": "H100 on spot", "metric": "cost_usd", "warnings": ["Stale price: p5"],
                          "figures": {"cost_usd": 100.0, "training_days": 10.0, "chips": 64.0}},
       "options": [{"accelerator": "H100", "costs": {"spot": {"offering": "p5", "cost_usd": 100.0,
                                                              "usd_per_chip_hour_effective": 2.0, "as_of": "2025-05-31"}}}]}


def _new(**edits):
    new = copy.deepcopy(OLD)
    for path, v in edits.items():
        node = new
        *head, last = path.split(".")
        for k in head:
            node = node[k]
        node[last] = v
    return new


def test_identical_summaries_have_no_change():
    d = diff.diff_summaries(OLD, copy.deepcopy(OLD))
    assert not d["changed"] and d["headline"] == "no change"


def test_a_new_choice_is_the_headline():
    d = diff.diff_summaries(OLD, _new(**{"recommendation.accelerator": "B200", "recommendation.summary": "B200 on spot"}))
    assert d["headline"] == "recommendation changed: H100 on spot -> B200 on spot"
    assert d["recommendation"][0]["what"] == "recommendation.accelerator"


def test_cost_price_and_assumption_changes_are_listed_with_their_size():
    new = _new(**{"recommendation.figures.cost_usd": 110.0, "inputs.pricing.utilization": 0.8,
                  "catalog_versions.offerings": "bbb", "recommendation.warnings": []})
    new["options"][0]["costs"]["spot"].update(usd_per_chip_hour_effective=2.2, as_of="2026-11-01", cost_usd=110.0)
    d = diff.diff_summaries(OLD, new)
    assert d["headline"] == "same choice, cost +10.0% ($100 -> $110)"
    assert any(c["what"] == "H100 spot cost_usd" and c["relative"] == pytest.approx(0.1) for c in d["costs"])
    assert {c["what"] for c in d["prices"]} == {"H100 spot usd_per_chip_hour_effective", "H100 spot as_of"}
    assert {c["what"] for c in d["assumptions"]} == {"scenario pricing.utilization", "catalog offerings"}
    assert d["warnings"]["removed"] == ["Stale price: p5"]
    text = "\n".join(diff.change_lines(d))
    assert "scenario pricing.utilization: 0.9 -> 0.8" in text


def test_rounding_is_not_a_change():
    assert not diff.diff_summaries(OLD, _new(**{"recommendation.figures.cost_usd": 100.2}))["changed"]


def test_cli_reads_files_and_folders_and_rejects_a_missing_one(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "summary.json").write_text(json.dumps(OLD))
    (tmp_path / "b.json").write_text(json.dumps(_new(**{"recommendation.figures.cost_usd": 90.0})))
    r = run_workbook("diff", tmp_path / "a", tmp_path / "b.json")  # in this process (tests/cli_helpers.py)
    assert r.returncode == 0 and "cost -10.0%" in r.stdout
    r = run_workbook("diff", tmp_path / "x", tmp_path / "b.json")
    assert r.returncode == 2 and "file not found" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(InputError):
        diff.load_summary(tmp_path / "missing.json")


def test_install_keeps_the_previous_summary_and_the_index_links_the_change(tmp_path):
    files = {"report.html": b"<html></html>", "summary.json": json.dumps(OLD).encode()}
    batch.install(batch.Result(scenario="s", ok=True, files=files), tmp_path)
    assert not (tmp_path / "s" / "changes.json").exists()
    nofit = _new(**{"recommendation.accelerator": None, "recommendation.summary": None})
    batch.install(batch.Result(scenario="s", ok=True, files={**files, "summary.json": json.dumps(nofit).encode()}),
                  tmp_path)
    assert json.loads((tmp_path / "s" / "previous_summary.json").read_text()) == OLD
    row = batch.index_rows(tmp_path)[0]
    assert row["status"] == "no feasible option"
    assert row["since_last_run"].startswith("recommendation changed") and row["changes"] == "s/changes.txt"
    batch.write_index(tmp_path)
    page = (tmp_path / "index.html").read_text()
    assert '<a href="s/changes.txt">recommendation changed' in page and "status-infeasible" in page
