"""The index's headlines remembered from this process's installs (``batch._summary_headline``): the
index of a batch does not parse again the summaries the batch has just written."""
from __future__ import annotations

import json
import os

from workbook.report import assemble, batch


def _summary(cost: float) -> dict:
    return {"scenario": "s", "title": "S",
            "recommendation": {"accelerator": "H100", "metric": "cost_usd", "figures": {"cost_usd": cost}}}


def test_index_uses_the_headline_of_an_install_and_rereads_a_summary_changed_since(tmp_path, monkeypatch):
    files = {"report.html": b"<html></html>", "summary.json": json.dumps(_summary(100.0)).encode()}
    batch.install(batch.Result(scenario="s", ok=True, files=files), tmp_path)
    reads = []
    real = batch._read_json
    monkeypatch.setattr(batch, "_read_json", lambda p: reads.append(p.name) or real(p))
    row = batch.index_rows(tmp_path)[0]
    assert "summary.json" not in reads                        # remembered from the install
    expected = assemble.headline(_summary(100.0))
    assert {k: row[k] for k in expected} == expected
    # another process (or an editor) rewrites the summary: read again
    path = tmp_path / "s" / "summary.json"
    path.write_text(json.dumps(_summary(80.0)))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    row = batch.index_rows(tmp_path)[0]
    assert "summary.json" in reads and row["cost_value"] == 80.0


def test_a_remembered_headline_is_a_copy(tmp_path):
    files = {"report.html": b"", "summary.json": json.dumps(_summary(1.0)).encode()}
    batch.install(batch.Result(scenario="s", ok=True, files=files), tmp_path)
    first = batch.index_rows(tmp_path)[0]
    first["recommendation"] = "changed"
    assert batch.index_rows(tmp_path)[0]["recommendation"] != "changed"


def test_install_remembers_the_headline_the_worker_handed_over(tmp_path, monkeypatch):
    """A Result with its ``headline`` (the worker's ``assemble.headline`` of the summary it wrote): the
    runner does not parse the summary to remember it, and the index shows it."""
    files = {"report.html": b"", "summary.json": json.dumps(_summary(7.0)).encode()}
    head = assemble.headline(_summary(7.0))
    monkeypatch.setattr(batch.json, "loads", lambda *a, **k: (_ for _ in ()).throw(AssertionError("parsed")))
    batch.install(batch.Result(scenario="s", ok=True, files=files, headline=head), tmp_path)
    monkeypatch.undo()
    head["recommendation"] = "changed after the install"
    row = batch.index_rows(tmp_path)[0]
    assert row["cost_value"] == 7.0 and row["recommendation"] == assemble.headline(_summary(7.0))["recommendation"]
