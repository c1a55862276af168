"""The inputs digest's file hashes, shared with the calibration table's key."""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

from workbook import paths
from workbook.calibrate import runs
from workbook.report import digest


def test_shared_inputs_hash_the_bytes_and_leave_the_calibration_key_nothing_to_read(monkeypatch):
    """``shared_inputs`` is each file's sha256 (as ``sha256_file`` gave it), and the calibration table's key
    asked for afterwards reads no file again but one modified in the last ``RACY_NS``."""
    paths._DIGESTS.clear()
    notebooks = sorted(paths.NOTEBOOK_DIR.glob("*.ipynb"))
    text = digest.shared_inputs(notebooks)
    files = (sorted(paths.DATA_DIR.glob("*.csv")) + notebooks + digest.package_files())
    assert text == "".join(f"{kind} {p.name} {hashlib.sha256(p.read_bytes()).hexdigest()}\n" for kind, p in zip(
        ["catalog"] * len(list(paths.DATA_DIR.glob("*.csv"))) + ["notebook"] * len(notebooks)
        + ["package"] * len(digest.package_files()), files))
    reads, read_bytes = [], Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or read_bytes(self))
    runs._table_cache_key()
    recent = time.time_ns() - paths.RACY_NS - 10**9
    assert [p for p in reads if p.stat().st_mtime_ns < recent] == []
