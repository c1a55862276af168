"""The disk cache of validated catalogs (``catalog._validated``): a hit is the frame a fresh load gives,
an edit re-validates, a bad file is refused with the same message, a corrupt cache file or a cache
folder that cannot be written costs only the fresh load."""
from __future__ import annotations

import csv
import io
import shutil

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from workbook import catalog, paths
from workbook.errors import InputError


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """A copy of the shipped catalogs and an empty cache folder; the in-process caches emptied."""
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    for f in paths.DATA_DIR.glob("*.csv"):
        shutil.copy(f, data / f.name)
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(cache))
    _clear()
    yield data, cache
    _clear()


def _clear():
    catalog.load.cache_clear()
    catalog.resolve_map.cache_clear()


def _fingerprint(df: pd.DataFrame):
    """Everything a caller could tell apart: columns, dtypes, index, attrs, flags, each value's type and
    repr, and the frame's block layout."""
    return (list(df.columns), [str(t) for t in df.dtypes], type(df.index).__name__, df.index.tolist(),
            df.attrs, df.flags.allows_duplicate_labels,
            [[(type(v).__name__, repr(v)) for v in df[c].tolist()] for c in df.columns],
            [(type(b).__name__, b.mgr_locs.as_array.tolist()) for b in df._mgr.blocks])


def _fresh(name: str, data) -> pd.DataFrame:
    path = data / f"{name}.csv"
    return catalog._load_fresh(name, str(data), path, paths.rel(path))


def _no_validation(*a, **k):
    raise AssertionError("validated again although the cache holds this file")


@pytest.mark.parametrize("name", sorted(catalog.SCHEMAS))
def test_a_cache_hit_is_the_frame_a_fresh_load_gives(dirs, monkeypatch, name):
    data, cache = dirs
    if not (data / f"{name}.csv").exists():
        pytest.skip(f"no {name}.csv shipped")
    first = catalog.load(name, str(data))
    assert list(cache.glob(f"catalog-{name}-*.pkl"))
    _clear()
    with monkeypatch.context() as m:
        m.setattr(catalog, "validate_frame", _no_validation)
        hit = catalog.load(name, str(data))
    _clear()
    fresh = _fresh(name, data)
    assert hit is not first
    assert_frame_equal(hit, fresh, check_exact=True)
    assert _fingerprint(hit) == _fingerprint(fresh) == _fingerprint(first)


def test_module_tables_are_cached_and_keyed_on_their_schema(dirs, monkeypatch):
    from workbook.cost import energy

    data, cache = dirs
    monkeypatch.setattr(paths, "DATA_DIR", data)
    schema = energy.SCHEMAS["pue"]
    first = catalog.read_module_table("pue", schema)
    assert len(list(cache.glob("catalog-pue-*.pkl"))) == 1
    with monkeypatch.context() as m:
        m.setattr(catalog, "validate_frame", _no_validation)
        assert _fingerprint(catalog.read_module_table("pue", schema)) == _fingerprint(first)
    other = dict(schema)
    other.pop(next(c for c, spec in schema.items() if not spec.required))
    with pytest.raises(InputError, match="unknown column"):   # another schema: validated, not the cached frame
        catalog.read_module_table("pue", other)


def test_an_edited_file_is_validated_again(dirs):
    data, cache = dirs
    before = catalog.load("accelerators", str(data))
    assert before["memory_bytes"].iloc[0] != 12345000000.0
    _first_row_cell(data, "accelerators", "memory_bytes", "12345000000")
    _clear()
    after = catalog.load("accelerators", str(data))
    assert after["memory_bytes"].iloc[0] == 12345000000.0
    assert len(list(cache.glob("catalog-accelerators-*.pkl"))) == 2
    _clear()
    assert_frame_equal(catalog.load("accelerators", str(data)), _fresh("accelerators", data), check_exact=True)


def _first_row_cell(data, name, column, value):
    """``data/<name>.csv`` with the first data row's ``column`` set to ``value`` (the other lines kept)."""
    rows = (data / f"{name}.csv").read_text().split("\n")
    cells = next(csv.reader([rows[1]]))
    cells[rows[0].split(",").index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(cells)
    rows[1] = out.getvalue()
    (data / f"{name}.csv").write_text("\n".join(rows))


def _error(name, data) -> str:
    _clear()
    with pytest.raises(InputError) as e:
        catalog.load(name, str(data))
    return str(e.value)


def test_a_bad_file_is_refused_with_the_same_message_every_time(dirs, tmp_path, monkeypatch):
    data, cache = dirs
    catalog.load("accelerators", str(data))   # the good file is cached
    _first_row_cell(data, "accelerators", "memory_bytes", "eighty")
    first, second = _error("accelerators", data), _error("accelerators", data)
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "empty"))
    uncached = _error("accelerators", data)
    assert first == second == uncached
    assert "accelerators.csv: row 2: memory_bytes: expected a float, got 'eighty'" in first
    assert len(list(cache.glob("catalog-accelerators-*.pkl"))) == 1   # only the good file's frame


def test_a_cached_catalog_is_checked_again_when_the_catalog_it_names_changes(dirs):
    data, cache = dirs
    off = catalog.load("offerings", str(data))
    acc = off["accelerator"].iloc[0]
    _first_row_cell(data, "offerings", "accelerator", acc)   # unchanged bytes: still a hit
    text = (data / "accelerators.csv").read_text()
    (data / "accelerators.csv").write_text(text.replace(f"\n{acc},", f"\n{acc}-renamed,", 1))
    msg = _error("offerings", data)
    assert f"offerings.csv: row " in msg and f"accelerator: unknown id {acc!r}" in msg


@pytest.mark.parametrize("garbage", [b"", b"not a pickle", b"\x80\x05K\x01.", None])
def test_a_corrupt_cache_file_is_ignored_and_replaced(dirs, garbage):
    data, cache = dirs
    good = catalog.load("models", str(data))
    (path,) = cache.glob("catalog-models-*.pkl")
    if garbage is None:   # a truncated pickle
        garbage = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(garbage)
    _clear()
    again = catalog.load("models", str(data))
    assert _fingerprint(again) == _fingerprint(good)
    _clear()
    assert _fingerprint(pd.read_pickle(path)) == _fingerprint(good)   # rewritten whole


def test_an_unwritable_cache_folder_is_harmless(dirs, tmp_path, monkeypatch):
    data, _ = dirs
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(blocker / "cache"))
    df = catalog.load("offerings", str(data))
    _clear()
    assert _fingerprint(df) == _fingerprint(_fresh("offerings", data))
    assert not list(tmp_path.glob(".catalog-*"))


def test_old_cache_files_are_pruned(dirs):
    data, cache = dirs
    for i in range(catalog.KEEP_PER_CATALOG + 2):
        _first_row_cell(data, "software", "notes", f"edit {i}")
        _clear()
        catalog.load("software", str(data))
    assert len(list(cache.glob("catalog-software-*.pkl"))) == catalog.KEEP_PER_CATALOG
    assert not list(cache.glob(".catalog-*"))   # no temporary file left behind
