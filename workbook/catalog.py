"""Catalogs in ``data/``: load once, validate columns, units and ranges, fail with file, row, column.

Each catalog has a schema (``workbook.schemas``): column name -> ``Col`` (type, required, range). Values are in SI
base units or the unit named in the column (``_bytes``, ``_bytes_per_s``, ``_flops_per_s``,
``_usd_per_hour``). ``data/README.md`` is the human dictionary of the same columns.
"""
from __future__ import annotations

import csv
import difflib
import hashlib
import io
import functools
import math
import pickle
import sys
from pathlib import Path

import pandas as pd

from . import inputs, names, paths
from .errors import InputError
from .schemas import SCHEMAS, Col  # catalog.SCHEMAS and catalog.Col stay the public names


def _parse(value, col: Col, file: str, row: int, name: str):
    """Convert one CSV cell, raising InputError that names file, row (1-based, header = row 1) and column."""
    where = f"{file}: row {row}: {name}"
    if value is None or (isinstance(value, float) and pd.isna(value)) or (isinstance(value, str) and value.strip() == ""):
        if col.required:
            raise InputError(f"{where}: expected a value, got an empty cell")
        return None
    text = str(value).strip()
    try:
        if col.kind == "float":
            out = float(text)
            if not math.isfinite(out):
                raise ValueError
        elif col.kind == "int":
            f = float(text)
            if f != int(f):
                raise ValueError
            out = int(f)
        elif col.kind == "bool":
            low = text.lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return low in ("true", "1", "yes")
        elif col.kind == "date":
            return pd.Timestamp(text).date().isoformat()
        else:
            out = text
    except (ValueError, TypeError):
        raise InputError(f"{where}: expected {'an integer' if col.kind == 'int' else 'a ' + col.kind}, got {text!r}") from None
    if col.choices and out not in col.choices:
        raise InputError(f"{where}: expected one of {', '.join(col.choices)}, got {text!r}")
    if col.kind in ("float", "int"):
        if col.min is not None and out < col.min or col.max is not None and out > col.max:
            raise InputError(f"{where}: expected {_bounds_text(col)}, got {text}")
    return out


def _bounds_text(col: Col) -> str:
    """The allowed range of a numeric column in words; a column may set only ``min`` or only ``max``."""
    if col.min is not None and col.max is not None:
        return f"a value between {col.min:g} and {col.max:g}"
    if col.min is not None:
        return f"a value of at least {col.min:g}"
    return f"a value of at most {col.max:g}"


_UNSEEN = object()


def _parsed_columns(raw: pd.DataFrame, schema: dict[str, Col], file: str) -> dict[str, list]:
    """Every schema column of ``raw`` parsed by ``_parse``, once per distinct cell text (a catalog
    repeats its texts: providers, dates, prices), column by column. Raises InputError on the first
    bad cell of a column (``validate_frame`` then reports the first bad cell of the file)."""
    out = {}
    for c, spec in schema.items():
        if c not in raw:
            out[c] = [_parse(None, spec, file, 0, c)] * len(raw)
            continue
        seen: dict = {}
        col = []
        for x in raw[c].to_numpy(object):
            v = seen.get(x, _UNSEEN) if isinstance(x, str) else _UNSEEN
            if v is _UNSEEN:
                v = _parse(x, spec, file, 0, c)
                if isinstance(x, str):
                    seen[x] = v
            col.append(v)
        out[c] = col
    return out


def validate_frame(raw: pd.DataFrame, schema: dict[str, Col], file: str, key: str | None = None) -> pd.DataFrame:
    """Validate a raw (all-string) frame against a schema; return typed frame. Errors name file/row/column."""
    missing = [c for c, spec in schema.items() if spec.required and c not in raw.columns]
    if missing:
        raise InputError(f"{file}: missing column(s) {', '.join(missing)}")
    unknown = [c for c in raw.columns if c not in schema]
    if unknown:
        raise InputError(f"{file}: unknown column(s) {', '.join(unknown)} (the schema is in workbook/catalog.py and data/README.md)")
    try:
        df = pd.DataFrame(_parsed_columns(raw, schema, file), columns=list(schema))
    except InputError:  # cell by cell, row by row: the first bad cell's message (file, row, column)
        rows = []
        for i, rec in enumerate(raw.to_dict("records")):
            rows.append({c: _parse(rec.get(c), spec, file, i + 2, c) for c, spec in schema.items()})
        df = pd.DataFrame(rows, columns=list(schema))
    for c, spec in schema.items():
        if spec.kind in ("float", "int"):
            df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64" if spec.kind == "float" else "Int64")
    if key is not None:
        dup = df[key][df[key].duplicated()]
        if len(dup):
            raise InputError(f"{file}: row {int(dup.index[0]) + 2}: {key}: duplicate id {dup.iloc[0]!r}")
    return df


# catalog -> (column, catalog whose ids and aliases it must name)
FOREIGN_KEYS = {"offerings": ("accelerator", "accelerators"), "hardware": ("accelerator", "accelerators"),
                "topology": ("accelerator", "accelerators")}


def read_table(path: Path, rel: str) -> pd.DataFrame:
    """A catalog file as an all-string frame, refusing what would be misread, each with file, row
    (header = row 1) and column: an empty file, bytes that are not UTF-8, a byte-order mark, CR LF
    line ends (the catalogs use LF), a row with more or fewer cells than the header."""
    data = path.read_bytes()
    if not data.strip():
        raise InputError(f"{rel}: empty file, expected a header row of {path.stem} columns")
    if data.startswith(b"\xef\xbb\xbf"):
        raise InputError(f"{rel}: row 1: column 1: starts with a UTF-8 byte-order mark; save the file as UTF-8 without BOM")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        row = data[:e.start].count(b"\n") + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(f"{rel}: row {row}: byte {col} of the line: not UTF-8 (byte {data[e.start]:#04x}); "
                         "save the file as UTF-8") from None
    if "\r" in text:
        row = text[:text.index("\r")].count("\n") + 1
        raise InputError(f"{rel}: row {row}: line ends with CR LF (or a stray CR); the catalogs use LF line ends")
    rows = list(csv.reader(io.StringIO(text)))
    width = len(rows[0])
    for n, cells in enumerate(rows[1:], start=2):
        if cells and len(cells) != width:
            raise InputError(f"{rel}: row {n}: expected {width} cells (as in the header), got {len(cells)}"
                             + (f"; column {width + 1} is the first extra one" if len(cells) > width else ""))
    return pd.DataFrame([r for r in rows[1:] if r], columns=rows[0], dtype=str)


def _check_aliases(df: pd.DataFrame, key: str, rel: str) -> None:
    """No id or alias may name two rows (compared case-insensitively, as ``resolve`` does): a later
    row's alias must not re-point an id or an earlier alias."""
    owner: dict[str, tuple[str, int]] = {}
    for i, (canon, aliases) in enumerate(zip(df[key], df["aliases"].fillna(""))):
        names = [(canon, key)] + [(a.strip(), "aliases") for a in str(aliases).split(";") if a.strip()]
        for name, column in names:
            prev = owner.get(name.lower())
            if prev is not None and prev[0] != canon:
                raise InputError(f"{rel}: row {i + 2}: {column}: {name!r} already names {prev[0]!r} (row {prev[1]})")
            owner.setdefault(name.lower(), (canon, i + 2))


def load(name: str, data_dir: str | None = None) -> pd.DataFrame:
    """Load and validate ``data/<name>.csv`` once per process (cached; callers must not mutate).
    ``load(name)`` and ``load(name, None)`` share one cache entry (``load.cache_clear()`` empties it)."""
    return _load(name, data_dir)


@functools.lru_cache(maxsize=None)
def _load(name: str, data_dir: str | None) -> pd.DataFrame:
    if name not in SCHEMAS:
        raise InputError(f"unknown catalog {name!r}; expected one of {', '.join(SCHEMAS)}")
    folder = Path(data_dir) if data_dir else paths.DATA_DIR
    path = folder / f"{name}.csv"
    rel = paths.rel(path)
    if not path.exists():
        raise InputError(f"{rel}: file not found")
    deps = [folder / f"{d}.csv" for d in CHECKED_AGAINST.get(name, ())]
    return _validated(name, SCHEMAS[name], path, deps, lambda: _load_fresh(name, data_dir, path, rel))


def _load_fresh(name: str, data_dir: str | None, path: Path, rel: str) -> pd.DataFrame:
    """``data/<name>.csv`` read and validated (``_load`` without the disk cache)."""
    raw = read_table(path, rel)
    key = {"accelerators": "accelerator", "offerings": "offering", "models": "model"}.get(name)
    df = validate_frame(raw, SCHEMAS[name], rel, key)
    if name in ("accelerators", "models"):
        _check_aliases(df, key, rel)
    if name in FOREIGN_KEYS:
        column, target = FOREIGN_KEYS[name]
        known = set(resolve_map(target, data_dir))
        for i, acc in enumerate(df[column]):
            if acc not in known:
                raise InputError(f"{rel}: row {i + 2}: {column}: unknown id {acc!r}{_suggest(acc, known)}")
    if name == "offerings":
        priced = df[["on_demand_usd_per_hour", "spot_usd_per_hour", "commit_1y_usd_per_hour",
                     "commit_3y_usd_per_hour", "monthly_usd", "other_usd_per_hour"]].notna().any(axis=1)
        if not priced.all():
            i = int((~priced).to_numpy().nonzero()[0][0])
            raise InputError(f"{rel}: row {i + 2}: on_demand_usd_per_hour: expected at least one price in the row")
        block = df["other_price_model"].fillna("").astype(str).str.startswith("capacity_block")
        bad = block & df["other_usd_per_hour"].isna()
        if bad.any():  # the capacity_block way to pay reads other_usd_per_hour (workbook.cost.pricebook)
            i = int(bad.to_numpy().nonzero()[0][0])
            raise InputError(f"{rel}: row {i + 2}: other_usd_per_hour: expected the capacity block's hourly rate")
    if name == "lead_times":
        _check_lead_times(df, rel, data_dir)
    return df


load.cache_clear = _load.cache_clear


# catalog -> the other catalogs its validation reads (the foreign keys; lead_times names accelerator
# ids or families): part of the disk cache's key, so that a changed accelerators.csv re-validates them
CHECKED_AGAINST = {**{name: (target,) for name, (_, target) in FOREIGN_KEYS.items()},
                   "lead_times": ("accelerators",)}


# --- the disk cache of validated catalogs -------------------------------------------------------------

CACHE_FORMAT = 1   # bump when what a cache file holds changes
KEEP_PER_CATALOG = 4   # cache files kept per catalog name (one per state of its files)
_SOURCE_FILES = ("catalog.py", "schemas.py")   # the code that parses and validates a catalog
_SOURCE_DIGEST: list = []


def _source_digest() -> str:
    """sha256 of this module's and ``schemas``' source, of the package version and of the library
    versions a frame's parse and pickle depend on (pandas, numpy, Python), read once per process."""
    if not _SOURCE_DIGEST:
        import numpy as np

        h = hashlib.sha256(f"format {CACHE_FORMAT} workbook {paths.VERSION} pandas {pd.__version__} "
                           f"numpy {np.__version__} python {sys.version}\n".encode())
        for f in _SOURCE_FILES:
            h.update(f.encode() + b" " + hashlib.sha256((paths.PACKAGE_DIR / f).read_bytes()).digest())
        _SOURCE_DIGEST.append(h.hexdigest())
    return _SOURCE_DIGEST[0]


def _cache_key(name: str, schema: dict[str, Col], files) -> str:
    """What a validated catalog depends on: the code (``_source_digest``), the schema it was checked
    against, and the bytes of its file and of the catalogs its checks read (``CHECKED_AGAINST``), by
    content (sha256), so that any edit, a copy or a moved data folder is judged by what it holds."""
    h = hashlib.sha256(f"{_source_digest()} {name} {schema!r}\n".encode())
    for f in files:
        h.update(f"{f.name} ".encode() + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _validated(name: str, schema: dict[str, Col], path: Path, deps, fresh) -> pd.DataFrame:
    """``fresh()`` (read and validate ``path``), or the frame a previous process validated from the
    same bytes: a pickle in ``paths.cache_dir()`` named by ``_cache_key``. Only a frame that passed
    validation is written (a bad file raises in ``fresh`` before), so a bad file is refused with the
    same message every time. The file is written to a temporary name and renamed, so that a reader
    sees a whole file or none; a missing, unreadable, corrupt or foreign cache file only costs the
    fresh load, and so does a cache folder that cannot be written. A missing dependency (a test's
    data folder without accelerators.csv) bypasses the cache."""
    try:
        key = _cache_key(name, schema, [path, *deps])
    except OSError:
        return fresh()
    cache = paths.cache_dir() / f"catalog-{name}-{key[:32]}.pkl"
    try:
        with open(cache, "rb") as fh:
            df = pickle.load(fh)
        if isinstance(df, pd.DataFrame) and list(df.columns) == list(schema):
            return df
    except Exception:  # missing, truncated, from another pandas: validate again
        pass
    df = fresh()
    try:
        paths.write_atomic(cache, pickle.dumps(df, protocol=pickle.HIGHEST_PROTOCOL))
        prune_cache(cache.parent, name)
    except Exception:  # a read-only or full cache folder, an unpicklable value: the frame still holds
        pass
    return df


def prune_cache(folder: Path, name: str, keep: int = KEEP_PER_CATALOG) -> list[Path]:
    """Delete all but the ``keep`` newest ``catalog-<name>-*.pkl`` of ``folder`` (every edit of a
    catalog writes a new one). Returns the files removed; one that vanished meanwhile is skipped."""
    return paths.keep_newest(folder, f"catalog-{name}-*.pkl", keep)


def _check_lead_times(df: pd.DataFrame, rel: str, data_dir: str | None) -> None:
    """lead_times.csv: ``accelerator`` is an accelerator id or family, and days_low <= days_high."""
    accs = load("accelerators", data_dir)
    known = set(resolve_map("accelerators", data_dir)) | set(accs["family"])
    for i, r in enumerate(df.to_dict("records")):
        if r["accelerator"] not in known:
            raise InputError(f"{rel}: row {i + 2}: accelerator: expected an accelerator id or family, got "
                             f"{r['accelerator']!r}{_suggest(r['accelerator'], known)}")
        if r["days_low"] > r["days_high"]:
            raise InputError(f"{rel}: row {i + 2}: days_low: expected at most days_high ({r['days_high']:g}), "
                             f"got {r['days_low']:g}")


def _suggest(word: str, choices) -> str:
    word = str(word)[:inputs.EXCERPT_CHARS]     # difflib on a 100 kB id would take minutes
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.4)
    if not close:
        close = [c for c in choices if word.lower() in c.lower() or c.lower() in word.lower()][:1]
    return f" (did you mean {close[0]!r}?)" if close else ""


@functools.lru_cache(maxsize=None)
def resolve_map(name: str, data_dir: str | None = None) -> dict[str, str]:
    """Map every id and alias (case-sensitive and lower-case) of a catalog to its canonical id."""
    key = {"accelerators": "accelerator", "models": "model"}[name]
    df = load(name, data_dir)
    out: dict[str, str] = {}
    for canon, aliases in zip(df[key], df["aliases"].fillna("")):
        for a in [canon, *[x.strip() for x in str(aliases).split(";") if x.strip()]]:
            out[a] = canon
            out.setdefault(a.lower(), canon)
    return out


def resolve(name: str, ident: str, data_dir: str | None = None) -> str:
    """Canonical id for ``ident`` (an id or alias), or InputError suggesting the nearest id."""
    m = resolve_map(name, data_dir)
    if ident in m:
        return m[ident]
    if str(ident).lower() in m:
        return m[str(ident).lower()]
    canon = sorted(set(m.values()))
    if name == "models" and isinstance(ident, str) and ident:
        df = load("models", data_dir)
        raise InputError(f"unknown model id {inputs.excerpt(ident)}"
                         f"{names.suggest_model(str(ident), zip(df['model'], df['params_published']))}")
    raise InputError(f"unknown {name[:-1]} id {inputs.excerpt(ident)}{_suggest(str(ident), canon)}")


def accelerators(data_dir: str | None = None) -> pd.DataFrame:
    return load("accelerators", data_dir)


def offerings(data_dir: str | None = None) -> pd.DataFrame:
    return load("offerings", data_dir)


def models(data_dir: str | None = None) -> pd.DataFrame:
    return load("models", data_dir)


def software(data_dir: str | None = None) -> pd.DataFrame:
    return load("software", data_dir)


class PerLoad:
    """A value derived from one loaded catalog object (a frame or map this module hands out), built on
    first use and again only when the catalog hands out another object (a reload, another data folder):
    ``PerLoad(build).get(source)`` is ``build(source)``, remembered for that very ``source``. For the
    indexes and row lists that per-call pandas filtering would otherwise rebuild (callers only read
    them): the id indexes below, the host index of the balance checks, the lead-time rows, the claims'
    instance index, the effort answers, the model rows, the MAMF rows, the accelerator aliases."""

    __slots__ = ("_build", "_source", "_value", "_built")

    def __init__(self, build):
        self._build, self._source, self._value, self._built = build, None, None, False

    def get(self, source):
        if not self._built or self._source is not source:
            self._value, self._source, self._built = self._build(source), source, True
        return self._value


# each catalog indexed by its id once per load (``accelerator`` and ``model`` were indexing the whole
# catalog on every call: 25 calls in one report's notebooks)
_BY_ID = {"accelerators": PerLoad(lambda df: df.set_index("accelerator")),
          "models": PerLoad(lambda df: df.set_index("model"))}


def accelerators_by_id() -> pd.DataFrame:
    """The accelerators catalog indexed by id, once per load (callers read it, never change it): a
    column of it maps ids, ``frame["accelerator"].map(accelerators_by_id()["tdp_w"])``."""
    return _BY_ID["accelerators"].get(accelerators())


def _row_series(df: pd.DataFrame) -> dict:
    """Each row of an id-indexed catalog as the Series ``df.loc[id]`` gives, made on first use."""
    return {}


_ROWS = {"accelerators": PerLoad(_row_series)}


def accelerator(ident: str) -> pd.Series:
    """The accelerator's catalog row (id or alias) as a Series named by its id: ``accelerators_by_id().loc[id]``,
    built once per id and catalog load (a row of the mixed-type catalog costs ~0.1 ms; a report asks for
    ~30) and handed out as a copy."""
    by_id = accelerators_by_id()
    key = resolve("accelerators", ident)
    rows = _ROWS["accelerators"].get(by_id)
    if key not in rows:
        rows[key] = by_id.loc[key]
    return rows[key].copy()


def model(ident: str) -> pd.Series:
    return _BY_ID["models"].get(models()).loc[resolve("models", ident)]


def peak_flops_per_s(acc, precision: str, required: bool = False):
    """Dense peak FLOP/s for a compute precision (datasheet, dense not sparse).

    ``acc`` is one accelerator (a catalog row as Series or dict: returns a float, NaN when
    unpublished) or the whole catalog DataFrame (returns a Series). int4 weights compute in the bf16
    path (weight-only quantisation), as do nf4 weights (QLoRA). The two 16-bit formats stand in for each other where a chip
    publishes only one: every chip with both has the same tensor-core rate for them, and Volta
    (V100) and Turing (T4), which have no bf16, run a bf16 model in fp16 (mixed precision with loss
    scaling for training: Micikevicius et al. 2018, "Mixed Precision Training"). ``required``: a
    blank peak of one accelerator is an InputError naming the column, not NaN."""
    col = {"fp32": "peak_fp32_flops_per_s", "bf16": "peak_bf16_flops_per_s", "fp16": "peak_fp16_flops_per_s",
           "fp8": "peak_fp8_flops_per_s", "int8": "peak_int8_flops_per_s", "int4": "peak_bf16_flops_per_s",
           "nf4": "peak_bf16_flops_per_s", "fp4": "peak_fp4_flops_per_s"}[precision]
    other = {"peak_bf16_flops_per_s": "peak_fp16_flops_per_s", "peak_fp16_flops_per_s": "peak_bf16_flops_per_s"}.get(col)
    if isinstance(acc, pd.DataFrame):
        val = acc[col].astype(float)
        return val.fillna(acc[other].astype(float)) if other else val
    val = acc[col]
    if other and (val is None or pd.isna(val)):
        val = acc[other]
    if val is not None and not pd.isna(val):
        return float(val)
    if required:
        name = acc.name if isinstance(getattr(acc, "name", None), str) else acc.get("accelerator")
        raise InputError(f"data/accelerators.csv: {name}: {col.replace('peak_' + precision, 'peak_' + precision)} is blank: "
                         f"no dense {precision} peak published for this accelerator (workload.precision)")
    return float("nan")


def catalog_versions(data_dir: str | None = None) -> dict[str, str]:
    """Content hash and newest as_of of each catalog, for report metadata."""
    import hashlib

    path = Path(data_dir) if data_dir else paths.DATA_DIR
    out = {}
    for name in SCHEMAS:
        p = path / f"{name}.csv"
        if p.exists():
            out[name] = hashlib.sha256(p.read_bytes()).hexdigest()[:12]
    return out


@functools.lru_cache(maxsize=None)
def _acc_records() -> dict[str, dict]:
    return {r["accelerator"]: r for r in accelerators().to_dict("records")}


def accelerator_record(ident: str) -> dict:
    """Catalog row of an accelerator (id or alias) as a dict, cached."""
    return _acc_records()[resolve("accelerators", ident)]


def accelerator_records() -> dict[str, dict]:
    """Every accelerator's catalog row as a dict, by id (cached)."""
    return _acc_records()


def usable_accelerators(precision: str) -> list[str]:
    """Catalog accelerators with a published dense peak for ``precision``."""
    return [a for a, r in _acc_records().items() if not math.isnan(peak_flops_per_s(r, precision))]


def is_superseded(off: pd.DataFrame) -> pd.Series:
    """Offerings whose on-demand price an older vintage carries (marked in id and notes)."""
    return off["offering"].str.endswith("-superseded") | off["notes"].fillna("").str.startswith("SUPERSEDED")


def lead_times() -> pd.DataFrame:
    """``data/lead_times.csv``: sourced waits before capacity runs, per provider and accelerator or
    family (an empty frame when the file is absent)."""
    if not (paths.DATA_DIR / "lead_times.csv").exists():
        return pd.DataFrame(columns=list(SCHEMAS["lead_times"]))
    return load("lead_times")


def read_module_table(name: str, schema: dict[str, Col]) -> pd.DataFrame:
    """``data/<name>.csv`` read and validated against ``schema`` by this module's reader, for tables whose
    schema lives with the module that uses them (cost.energy, model.mamf); a missing file is one line."""
    path = paths.DATA_DIR / f"{name}.csv"
    rel = paths.rel(path)
    if not path.exists():
        raise InputError(f"{rel}: file not found")
    return _validated(name, schema, path, (), lambda: validate_frame(read_table(path, rel), schema, rel))


def _optional(name: str) -> pd.DataFrame:
    """``data/<name>.csv``, or an empty frame of its columns when the file is absent."""
    if not (paths.DATA_DIR / f"{name}.csv").exists():
        return pd.DataFrame(columns=list(SCHEMAS[name]))
    return load(name)


def effort() -> pd.DataFrame:
    """``data/effort.csv``: engineer-weeks to port a framework to a platform (empty when absent)."""
    return _optional("effort")


def regions() -> pd.DataFrame:
    """``data/regions.csv``: country and latency metro of each provider region (empty when absent)."""
    return _optional("regions")


def latency() -> pd.DataFrame:
    """``data/latency.csv``: measured round trips between metros (empty when absent)."""
    return _optional("latency")


def hardware() -> pd.DataFrame:
    """``data/hardware.csv`` (systems to buy) with canonical accelerator ids (foreign key to
    accelerators.csv), or an empty frame when the file is absent."""
    if not (paths.DATA_DIR / "hardware.csv").exists():
        return pd.DataFrame(columns=["system", "accelerator", "chips_per_system", "purchase_usd", "system_power_w",
                                     "hosting_usd_per_month", "as_of", "source", "notes"])
    hw = load("hardware").copy()
    known = resolve_map("accelerators")
    for i, a in enumerate(hw["accelerator"]):
        if a not in known:
            raise InputError(f"data/hardware.csv: row {i + 2}: accelerator: unknown id {a!r}"
                             f"{_suggest(a, set(known.values()))}")
    hw["accelerator"] = hw["accelerator"].map(known)
    return hw
