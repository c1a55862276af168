"""The calibration table that notebook 02 and the reports show is cached by content, never stale."""
from __future__ import annotations

import hashlib

import pytest

from workbook import catalog, paths
from workbook.calibrate import runs as calibrate
from workbook.model import efficiency


def _clear_data_caches():
    for f in (catalog.load, catalog.resolve_map, catalog._acc_records, calibrate._runs_cached, efficiency._from_csv):
        f.cache_clear()


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A private copy of data/*.csv as the catalog folder, a private cache folder, empty caches."""
    data = tmp_path / "data"
    data.mkdir()
    for p in paths.DATA_DIR.glob("*.csv"):
        (data / p.name).write_bytes(p.read_bytes())
    monkeypatch.setattr(paths, "DATA_DIR", data)
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(calibrate, "_TABLES", {})
    _clear_data_caches()
    yield data
    _clear_data_caches()


def test_calibration_table_cache_follows_the_reference_runs_file(data_copy, monkeypatch):
    runs_csv = data_copy / "reference_runs.csv"
    first = calibrate.reference_runs().iloc[0]
    before = calibrate.calibration_table()
    assert len(list((data_copy.parent / "cache").glob("calibration-*.pkl"))) == 1
    # halve the first used run's published figure: its error must follow, not come from the cache
    original = runs_csv.read_text()
    old = f",{first['metric']},{first['value']},{first['split']},"
    assert original.count(old) == 1
    runs_csv.write_text(original.replace(old, f",{first['metric']},{first['value'] / 2},{first['split']},"))
    _clear_data_caches()
    after = calibrate.calibration_table()
    row = lambda t: t.set_index("run").loc[first["run"]]  # noqa: E731
    assert row(after)["value"] == pytest.approx(row(before)["value"] / 2)
    assert row(after)["error"] == pytest.approx(2 * (row(before)["error"] + 1) - 1)
    assert len(list((data_copy.parent / "cache").glob("calibration-*.pkl"))) == 2
    # a new process (empty memory) reads the table of the current files from disk, for either content
    monkeypatch.setattr(calibrate, "_TABLES", {})
    monkeypatch.setattr(calibrate, "_calibration_table", lambda runs: pytest.fail("recomputed"))
    assert calibrate.calibration_table().equals(after)
    runs_csv.write_text(original)
    _clear_data_caches()
    assert calibrate.calibration_table().equals(before)


def test_calibration_table_cache_key_follows_the_package_source(monkeypatch, tmp_path):
    pkg = tmp_path / "workbook"
    (pkg / "model").mkdir(parents=True)
    (pkg / "model" / "efficiency.py").write_text("A = 1\n")
    monkeypatch.setattr(paths, "PACKAGE_DIR", pkg)
    k1 = calibrate._table_cache_key()
    (pkg / "model" / "efficiency.py").write_text("A = 2\n")
    assert calibrate._table_cache_key() != k1


def test_prune_keeps_the_most_recently_used_tables(tmp_path):
    """Each source state writes a new ``calibration-*.pkl``; pruning keeps the ``keep`` most recently
    used (by modification time, which a read refreshes) and leaves other files alone."""
    import os

    files = []
    for i in range(11):
        f = tmp_path / f"calibration-{i:032d}.pkl"
        f.write_bytes(b"x")
        os.utime(f, (1_000_000 + i, 1_000_000 + i))
        files.append(f)
    other = tmp_path / "svg"
    other.mkdir()
    removed = calibrate.prune_table_cache(tmp_path, keep=8)
    assert sorted(removed) == files[:3]
    assert [f.exists() for f in files] == [False] * 3 + [True] * 8
    assert other.exists()
    assert calibrate.prune_table_cache(tmp_path, keep=8) == []


def test_cache_key_digests_follow_an_edit_that_keeps_size_and_time(tmp_path, monkeypatch):
    """``paths.file_sha256`` reuses a file's digest while its size, time and inode are unchanged, but not for
    a file modified within ``RACY_NS`` of the read: a rewrite of equal size inside one tick of a coarse
    file clock keeps both, and must still give a new key."""
    import os

    monkeypatch.setattr(paths, "_DIGESTS", {})
    f = tmp_path / "a.py"
    f.write_text("A = 1\n")
    st = f.stat()
    first = paths.file_sha256(f)
    f.write_text("A = 2\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))   # same size, same time: a fresh file is read again
    assert paths.file_sha256(f) != first
    old = st.st_mtime_ns - 10 * paths.RACY_NS
    os.utime(f, ns=(old, old))
    second = paths.file_sha256(f)
    assert paths._DIGESTS[f][1] == second                  # an old file's digest is kept ...
    monkeypatch.setattr(hashlib, "sha256", lambda *a: pytest.fail("read again"))
    assert paths.file_sha256(f) == second                 # ... and reused while it is unchanged


def test_run_rows_hold_what_iterrows_gives():
    """The calibration table reads each run as a dict (``run_rows``): the same values, of the same types,
    as the pandas row ``iterrows`` gives, missing values (``pd.NA``, NaN) included."""
    import pandas as pd

    runs = calibrate.reference_runs(include_excluded=True)
    rows = calibrate.run_rows(runs)
    assert len(rows) == len(runs)
    for d, (_, r) in zip(rows, runs.iterrows()):
        assert list(d) == list(r.index)
        for k, v in d.items():
            w = r[k]
            assert type(v) is type(w), k
            assert (v is w) or (pd.isna(v) and pd.isna(w)) or v == w, k
