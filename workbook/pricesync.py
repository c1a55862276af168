"""Bring ``data/offerings.csv`` up to date: ``prices import`` (one file) and ``prices refresh`` (whole catalogs).

``refresh`` reads maintained public catalogs, online or from a local mirror laid out like the upstream:

- ``skypilot``: SkyPilot's ``<base>/catalogs/v8/<cloud>/vms.csv`` for every cloud it publishes
  (github.com/skypilot-org/skypilot-catalog; default base: its raw files on GitHub).
- ``gpuhunt``: dstack's gpuhunt catalog, ``<base>/<provider>/version`` and
  ``<base>/<provider>/<version>/catalog.zip`` holding ``<provider>.csv`` (the layout of gpuhunt's
  ``CATALOG_URL``; read with the ``gpuhunt`` library's loader when it is installed).

Every refreshed row has ``price_basis`` = catalog, ``as_of`` = today and ``price_as_of`` = the source's own
date: the file's last commit (a git checkout, the mirror's ``SOURCES.csv`` or GitHub's commit list), the
gpuhunt catalog version, else the day it was fetched from the network; a folder with no date leaves it
blank (stale). Rows the catalogs do not carry are kept. The file is replaced atomically (temporary file in
the same folder, fsync, ``os.replace``): a kill, a failed download or a malformed file leaves the previous
catalog byte-identical, and a failed source is named in one line.
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import catalog, paths, prices
from .errors import InputError

SKYPILOT_BASE = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master"
SKYPILOT_VERSION = "v8"
# Clouds whose v8 ``vms.csv`` SkyPilot publishes (or has published); a folder is listed instead.
SKYPILOT_CLOUDS = ("aws", "gcp", "azure", "lambda", "runpod", "nebius", "oci", "vast", "verda", "fluidstack",
                   "hyperstack", "cudo", "paperspace", "do", "shadeform", "mithril", "lium", "jarvislabs",
                   "hyperbolic", "seeweb", "spheron", "yotta", "primeintellect", "daytona", "ibm", "scp")
GPUHUNT_BASE = "https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v3"
GPUHUNT_PROVIDERS = ("aws", "azure", "verda", "gcp", "lambdalabs", "nebius", "oci", "runpod", "cloudrift")
TIMEOUT_S = 60
MAX_DOWNLOAD_BYTES = prices.MAX_FILE_BYTES
REFRESH_MARK = "(prices refresh)"
PRICE_COLUMNS = prices.PRICE_COLUMNS


# ---------------------------------------------------------------- reading a base (folder or URL)


class NotPublished(Exception):
    """The base has no such file (HTTP 404, or no file in the folder): not a failure."""


def _is_url(base: str) -> bool:
    return str(base).startswith(("http://", "https://"))


def get_bytes(base: str, rel: str) -> bytes:
    """``<base>/<rel>`` from a folder or an http(s) URL, at most ``MAX_DOWNLOAD_BYTES``."""
    if _is_url(base):
        url = f"{base.rstrip('/')}/{rel}"
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
                data = r.read(MAX_DOWNLOAD_BYTES + 1)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise NotPublished(url) from None
            raise InputError(f"{url}: HTTP {e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise InputError(f"{url}: download failed ({getattr(e, 'reason', e)})") from None
        if len(data) > MAX_DOWNLOAD_BYTES:
            raise InputError(f"{url}: more than {MAX_DOWNLOAD_BYTES:,} bytes")
        return data
    path = Path(base) / rel
    if not path.exists():
        raise NotPublished(str(path))
    if rel.endswith(".zip"):
        return _read_binary(path)
    return prices.read_text(path)[1].encode("utf-8")


def _read_binary(path: Path) -> bytes:
    if not path.is_file():
        raise InputError(f"{paths.rel(path)}: expected a file")
    if path.stat().st_size > MAX_DOWNLOAD_BYTES:
        raise InputError(f"{paths.rel(path)}: more than {MAX_DOWNLOAD_BYTES:,} bytes")
    return path.read_bytes()


def _git_date(base: str, rel: str) -> tuple[str, str] | None:
    """(commit, ISO date) of the last commit touching ``rel`` when ``base`` is the top of a git checkout
    (a clone of the upstream; not a folder that merely sits inside another repository)."""
    if _is_url(base) or not (Path(base) / rel).exists():
        return None
    try:
        top = subprocess.run(["git", "-C", str(base), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=30)
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != Path(base).resolve():
            return None
        out = subprocess.run(["git", "-C", str(base), "log", "-1", "--format=%H %cI", "--", rel],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    parts = out.stdout.split()
    return (parts[0], parts[1][:10]) if out.returncode == 0 and len(parts) == 2 else None


def _manifest(base: str) -> dict[str, dict]:
    """``<base>/SOURCES.csv`` (path, commit, price_as_of, how): what a mirror's builder recorded for each
    file it copied (the upstream commit and how its date was bounded); empty when absent."""
    if _is_url(base) or not (Path(base) / "SOURCES.csv").is_file():
        return {}
    _, text = prices.read_text(Path(base) / "SOURCES.csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    need = {"path", "commit", "price_as_of", "how"}
    if rows and not need <= set(rows[0]):
        raise InputError(f"{paths.rel(Path(base) / 'SOURCES.csv')}: row 1: expected columns {', '.join(sorted(need))}")
    for i, r in enumerate(rows, start=2):
        if r["price_as_of"] and prices.price_date(r["price_as_of"]) is None:
            raise InputError(f"{paths.rel(Path(base) / 'SOURCES.csv')}: row {i}: price_as_of: expected YYYY-MM-DD, "
                             f"got {r['price_as_of'][:40]!r}")
    return {r["path"]: r for r in rows}


def _github_date(rel: str) -> tuple[str, str] | None:
    """(commit, date) of the last upstream commit touching ``rel`` (GitHub's commit list), when online."""
    url = f"https://api.github.com/repos/skypilot-org/skypilot-catalog/commits?path={rel}&per_page=1"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
            item = json.loads(r.read(1_000_000))[0]
        return item["sha"], item["commit"]["committer"]["date"][:10]
    except Exception:  # noqa: BLE001 - any failure: fall back to the fetch day
        return None


@dataclass
class Dated:
    price_as_of: str  # "" = unknown
    source: str
    how: str


def date_of(base: str, rel: str, manifest: dict, today: _dt.date, default_base: bool) -> Dated:
    """The price date and source text of one upstream file, and how the date was obtained."""
    where = base.rstrip("/") if _is_url(base) else paths.rel(Path(base))
    if rel in manifest:
        m = manifest[rel]
        return Dated(m["price_as_of"], f"skypilot-catalog {rel} @{m['commit'][:7]} {REFRESH_MARK}",
                     m["how"] or "SOURCES.csv")
    git = _git_date(base, rel)
    if git:
        return Dated(git[1], f"skypilot-catalog {rel} @{git[0][:7]} {REFRESH_MARK}", "git commit date of the file")
    if _is_url(base):
        gh = _github_date(rel) if default_base else None
        if gh:
            return Dated(gh[1], f"skypilot-catalog {rel} @{gh[0][:7]} {REFRESH_MARK}", "GitHub commit date of the file")
        return Dated(today.isoformat(), f"skypilot-catalog {rel} from {where}, fetched {today} {REFRESH_MARK}",
                     "fetch day")
    return Dated("", f"skypilot-catalog {rel} from {where} {REFRESH_MARK}", "no date in the folder: blank")


# ---------------------------------------------------------------- the two sources


@dataclass
class Result:
    rows: list[pd.DataFrame] = field(default_factory=list)
    read: list[str] = field(default_factory=list)        # "source rel: n rows, date (how)"
    stems: list[str] = field(default_factory=list)       # source prefixes whose old refreshed rows may be removed
    failed: list[str] = field(default_factory=list)      # one line per failed file
    skipped: dict[str, int] = field(default_factory=dict)
    providers: set[str] = field(default_factory=set)


def _import_bytes(data: bytes, key: str, name: str, fmt: str, dated: Dated, today, res: Result) -> None:
    with tempfile.TemporaryDirectory(prefix="wb-refresh-") as tmp:
        f = Path(tmp) / key / name
        f.parent.mkdir()
        f.write_bytes(data)
        imp = prices.import_file(f, fmt, key, dated.price_as_of or None, dated.source, today)
    res.rows.append(imp.rows)
    res.providers |= set(imp.rows["provider"]) if len(imp.rows) else set()
    for what, n in imp.skipped.items():
        res.skipped[f"{key}: {what}"] = res.skipped.get(f"{key}: {what}", 0) + n


def _clouds(base: str, only: list[str] | None) -> list[str]:
    if only:
        return only
    if _is_url(base):
        return list(SKYPILOT_CLOUDS)
    folder = Path(base) / "catalogs" / SKYPILOT_VERSION
    if not folder.is_dir():
        raise InputError(f"{paths.rel(folder)}: no such folder (expected <base>/catalogs/{SKYPILOT_VERSION}/<cloud>/vms.csv)")
    return sorted(p.parent.name for p in folder.glob("*/vms.csv"))


def skypilot(base: str | None, only: list[str] | None, today: _dt.date, res: Result) -> None:
    default = base is None
    base = base or SKYPILOT_BASE
    manifest = _manifest(base)
    for cloud in _clouds(base, only):
        rel = f"catalogs/{SKYPILOT_VERSION}/{cloud}/vms.csv"
        try:
            data = get_bytes(base, rel)
            dated = date_of(base, rel, manifest, today, default)
            before = len(res.rows)
            _import_bytes(data, cloud, "vms.csv", "skypilot", dated, today, res)
        except NotPublished:
            continue
        except InputError as e:
            res.failed.append(f"skypilot {cloud}: {e.problems[0] if e.problems else e}")
            continue
        n = len(res.rows[before]) if len(res.rows) > before else 0
        res.read.append(f"skypilot {rel}: {n} rows, price_as_of {dated.price_as_of or 'blank'} ({dated.how})")
        res.stems.append(f"skypilot-catalog {rel}")


def _gpuhunt_csv(data: bytes, provider: str) -> bytes:
    """The provider CSV out of a gpuhunt ``catalog.zip``, parsed by gpuhunt's own loader when installed
    (re-written in its column order), as-is otherwise."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = [n for n in z.namelist() if n.rsplit("/", 1)[-1] == f"{provider}.csv"]
            if not names:
                raise InputError(f"catalog.zip: no {provider}.csv inside")
            info = z.getinfo(names[0])
            if info.file_size > MAX_DOWNLOAD_BYTES:
                raise InputError(f"catalog.zip: {provider}.csv is more than {MAX_DOWNLOAD_BYTES:,} bytes")
            raw = z.read(names[0])
    except zipfile.BadZipFile:
        raise InputError("catalog.zip: not a zip file") from None
    try:
        from gpuhunt._internal import storage  # optional dependency: pip install 'workbook[prices]'
    except ImportError:
        return raw
    try:
        items = list(storage.load(io.StringIO(raw.decode("utf-8")), provider=provider))
    except Exception as e:  # noqa: BLE001 - the library's own parse error, reported in one line
        raise InputError(f"{provider}.csv: gpuhunt could not read it ({type(e).__name__}: {str(e)[:80]})") from None
    out = io.StringIO()
    rows = [storage.item_to_row(i) for i in items]
    w = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else list(prices.GPUHUNT_COLUMNS), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue().encode("utf-8")


def _gpuhunt_version(base: str, provider: str) -> tuple[str, str]:
    """(version, path prefix) of a provider: v3 per-provider layout, else the v1/v2 single catalog."""
    try:
        return get_bytes(base, f"{provider}/version").decode("utf-8").strip(), f"{provider}/"
    except NotPublished:
        return get_bytes(base, "version").decode("utf-8").strip(), ""


def gpuhunt(base: str | None, only: list[str] | None, today: _dt.date, res: Result, skip: set[str]) -> None:
    """gpuhunt's offline providers; a provider already read from SkyPilot in this run is left out."""
    base = base or GPUHUNT_BASE
    try:
        import gpuhunt._internal.catalog as gh
        providers = list(gh.OFFLINE_PROVIDERS)
    except ImportError:
        providers = list(GPUHUNT_PROVIDERS)
    for provider in only or providers:
        name = prices.PROVIDERS.get(provider, (provider.title(), ""))[0]
        if name in skip:
            continue
        try:
            version, prefix = _gpuhunt_version(base, provider)
            if not version.replace("-", "").replace(".", "").isalnum() or len(version) > 40:
                raise InputError(f"gpuhunt {provider}/version: expected a version name, got {version[:40]!r}")
            data = _gpuhunt_csv(get_bytes(base, f"{prefix}{version}/catalog.zip"), provider)
            d = prices._catalog_version(Path(version[:8]))
            where = base.rstrip("/") if _is_url(base) else paths.rel(Path(base))
            dated = Dated(d or (today.isoformat() if _is_url(base) else ""),
                          f"gpuhunt catalog {provider}.csv version {version} from {where} {REFRESH_MARK}",
                          "catalog version date" if d else ("fetch day" if _is_url(base) else "blank"))
            before = len(res.rows)
            _import_bytes(data, provider, f"{provider}.csv", "gpuhunt", dated, today, res)
        except NotPublished:
            continue
        except InputError as e:
            res.failed.append(f"gpuhunt {provider}: {e.problems[0] if e.problems else e}")
            continue
        n = len(res.rows[before]) if len(res.rows) > before else 0
        res.read.append(f"gpuhunt {provider} {version}: {n} rows, price_as_of {dated.price_as_of or 'blank'} ({dated.how})")
        res.stems.append(f"gpuhunt catalog {provider}.csv ")


# ---------------------------------------------------------------- merge


def _cell(v) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def _same_prices(old: dict, new: dict) -> bool:
    for c in PRICE_COLUMNS:
        a, b = old.get(c, ""), new.get(c, "")
        if (a == "") != (b == ""):
            return False
        if a and not math.isclose(float(a), float(b), rel_tol=1e-9):
            return False
    return True


def _moves(old: dict, new: dict) -> str:
    """'on_demand_usd_per_hour 3.29 -> 3.99 (+21.3%)' for each price that changed."""
    out = []
    for c in PRICE_COLUMNS:
        a, b = old.get(c, ""), new.get(c, "")
        if a == b:
            continue
        pct = f" ({(float(b) / float(a) - 1) * 100:+.1f}%)" if a and b and float(a) else ""
        out.append(f"{c} {a or 'blank'} -> {b or 'blank'}{pct}")
    return "; ".join(out)


# columns an update keeps from the row it replaces when the catalog leaves them blank
CARRIED = ("inter_node_bytes_per_s", "fabric", "local_nvme_bytes", "provider_kind", "vcpus", "host_memory_bytes")


def _free_id(oid: str, taken) -> str:
    new, n = f"{oid}-superseded", 2
    while new in taken:
        new, n = f"{oid}-superseded-{n}", n + 1
    return new


def merge(existing: pd.DataFrame, new: pd.DataFrame, refresh_stems: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Merge imported rows into the offerings CSV (all-string frame). Returns (merged, summary).

    A new id is added; an existing id with the same prices is unchanged; otherwise it is updated
    unless the existing price is newer than the imported one (an undated import never replaces a
    dated price: ``kept``). An update keeps the row's network columns it does not bring and names the
    previous source, the prices that changed and their date in ``notes``.

    ``refresh_stems`` (``prices refresh``): a row another source wrote (a transcription, an import) that a
    newer catalog price replaces is kept as evidence under ``<id>-superseded`` (``superseded``), and a row an
    earlier refresh wrote from one of these files that the file no longer lists is ``removed``. One pass over
    the rows, the frame built once (20,000 rows in about a second)."""
    cols = list(existing.columns)
    rows = existing.to_dict("records")
    index = {r["offering"]: i for i, r in enumerate(rows)}
    taken = set(index)
    actions, extra = [], []
    seen = set()
    for rec in new.to_dict("records"):
        row = {c: _cell(rec.get(c)) for c in cols}
        oid = row["offering"]
        seen.add(oid)
        if oid not in index:
            extra.append(row)
            taken.add(oid)
            actions.append((row["provider"], "added", oid, ""))
            continue
        old = rows[index[oid]]
        if _same_prices(old, row):
            if refresh_stems is not None and REFRESH_MARK in old.get("source", "") and old != row:
                rows[index[oid]] = {**row, **{c: old.get(c, "") for c in CARRIED if c in cols and not row[c]},
                                    "notes": old.get("notes", row["notes"])}
            actions.append((row["provider"], "unchanged", oid, ""))
            continue
        old_d, new_d = prices.price_date(old.get("price_as_of")), prices.price_date(row.get("price_as_of"))
        if old_d is not None and (new_d is None or new_d < old_d):
            actions.append((row["provider"], "kept (existing price is newer)", oid, _moves(old, row)))
            continue
        for c in CARRIED:
            if c in cols and not row[c]:
                row[c] = old.get(c, "")
        moves = _moves(old, row)
        if refresh_stems is not None and REFRESH_MARK not in old.get("source", ""):
            evidence = {**old, "offering": _free_id(oid, taken),
                        "notes": f"SUPERSEDED by {row['source']} (price_as_of {row['price_as_of'] or 'blank'}): "
                                 f"{old.get('notes', '')}".strip()}
            taken.add(evidence["offering"])
            extra.append(evidence)
            action = "superseded (kept as evidence)"
        else:
            was = ", ".join(f"{c} {old[c] or 'blank'}" for c in PRICE_COLUMNS if old.get(c, "") != row.get(c, ""))
            row["notes"] = f"{row['notes']} Previous row: {old.get('source', '')} ({was}, price_as_of " \
                           f"{old.get('price_as_of') or 'blank'}).".strip()
            action = "updated"
        rows[index[oid]] = row
        actions.append((row["provider"], action, oid, moves))
    keep = [True] * len(rows)
    for stem in refresh_stems or []:
        for i, r in enumerate(rows):
            src = r.get("source", "")
            if keep[i] and REFRESH_MARK in src and src.startswith(stem) and r["offering"] not in seen:
                keep[i] = False
                actions.append((r["provider"], "removed", r["offering"], ""))
    out = pd.DataFrame([r for r, k in zip(rows, keep) if k] + extra, columns=cols)
    summary = pd.DataFrame(actions, columns=["provider", "action", "offering", "change"])
    return out, summary


SHAPE_COLUMNS = ("vcpus", "host_memory_bytes", "local_nvme_bytes", "inter_node_bytes_per_s", "fabric")


def fill_shapes(df: pd.DataFrame) -> pd.DataFrame:
    """Blank host and network columns of refreshed rows, filled from another row of the same provider,
    instance type, accelerator and chip count (an instance type is the same machine in every region; SkyPilot's
    TPU and some GPU-cloud rows carry no host), with a note naming the row copied."""
    out = df.copy()
    key = out["provider"] + "|" + out["instance"] + "|" + out["accelerator"] + "|" + out["chips_per_instance"]
    refreshed = out["source"].str.contains(REFRESH_MARK, regex=False)
    for col in SHAPE_COLUMNS:
        have = out[col] != ""
        donor = pd.Series(out["offering"].where(have), index=out.index).groupby(key).transform("first")
        value = out[col].where(have).groupby(key).transform("first")
        fill = refreshed & ~have & value.notna()
        if fill.any():
            out.loc[fill, col] = value[fill]
            note = " " + col + " copied from " + donor[fill] + " (same instance type)."
            out.loc[fill, "notes"] = (out.loc[fill, "notes"] + note).str.strip()
    return out


def summary_table(summary: pd.DataFrame, skipped: dict[str, int]) -> str:
    lines = []
    if len(summary):
        counts = summary.groupby(["provider", "action"]).size().unstack(fill_value=0)
        with pd.option_context("display.width", 200, "display.max_columns", None, "display.max_rows", None):
            lines.append(counts.to_string())
    else:
        lines.append("no offerings rows in the file")
    for what, n in sorted(skipped.items()):
        lines.append(f"skipped {n} source row(s): {what}")
    return "\n".join(lines)


def changes(summary: pd.DataFrame) -> str:
    """One line per row added, removed, repriced or superseded (the dry run's detail)."""
    shown = summary[~summary["action"].isin(["unchanged"])]
    return "\n".join(f"{a}: {o}" + (f": {c}" if c else "") for a, o, c in
                     zip(shown["action"], shown["offering"], shown["change"]))


# ---------------------------------------------------------------- atomic write


def write_atomic(df: pd.DataFrame, target: Path) -> None:
    """Write ``df`` to ``target`` so that a kill at any moment leaves the old file whole or the new one:
    a temporary file in the same folder, flushed and fsynced, then ``os.replace`` (atomic on POSIX) and
    an fsync of the folder. The temporary file is removed on any error."""
    target = Path(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
            df.to_csv(f, index=False, lineterminator="\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        dfd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _existing(target: Path) -> pd.DataFrame:
    rel, text = prices.read_text(target)
    return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)


def _checked(merged: pd.DataFrame, label: str) -> None:
    """Ids stay unique and every row keeps a price. (Imported rows were validated against the schema by
    ``prices.typed``; the others are the catalog's own rows, which ``catalog.load`` checks.)"""
    dup = merged["offering"][merged["offering"].duplicated()]
    if len(dup):
        raise InputError(f"{label}: row {int(dup.index[0]) + 2}: offering: duplicate id {dup.iloc[0]!r}")
    unpriced = (merged[PRICE_COLUMNS] == "").all(axis=1)
    if unpriced.any():
        raise InputError(f"{label}: row {int(unpriced.to_numpy().nonzero()[0][0]) + 2}: on_demand_usd_per_hour: "
                         "expected at least one price in the row")


def _install(merged: pd.DataFrame, target: Path) -> None:
    _checked(merged, f"{paths.rel(target)} (merged)")
    write_atomic(merged, target)
    catalog.load.cache_clear()
    catalog.resolve_map.cache_clear()


# ---------------------------------------------------------------- commands


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="prices_command", required=True)
    imp = sub.add_parser("import", help="read a SkyPilot vms.csv or a gpuhunt catalog CSV into offerings rows")
    imp.add_argument("file")
    imp.add_argument("--format", required=True, choices=sorted(prices.READERS))
    imp.add_argument("--as-of", dest="as_of", help="date the prices were valid (YYYY-MM-DD): the snapshot's "
                     "commit or catalog-version date; default: a gpuhunt version date in the path, else blank")
    imp.add_argument("--provider", help="provider key when the path does not name it (aws, gcp, lambda, ...)")
    imp.add_argument("--source", help="source text stored in each row (repository file @ commit, or URL)")
    imp.add_argument("--region", action="append", dest="regions", help="keep only these regions (repeatable)")
    imp.add_argument("--out", help="write the imported rows to this CSV instead of merging into data/offerings.csv")
    ref = sub.add_parser("refresh", help="update data/offerings.csv from SkyPilot's and gpuhunt's catalogs "
                         "(online, or from a mirror with --from)")
    ref.add_argument("--source", choices=("skypilot", "gpuhunt", "all"), default="all")
    ref.add_argument("--from", dest="base", help="a folder or http(s) URL laid out like the upstream "
                     "(skypilot: <base>/catalogs/v8/<cloud>/vms.csv; gpuhunt: <base>/<provider>/version)")
    ref.add_argument("--out", help="catalog to update (default data/offerings.csv)")
    ref.add_argument("--provider", "--cloud", action="append", dest="clouds",
                     help="only this cloud key (aws, gcp, lambda, runpod, ...; repeatable)")
    ref.add_argument("--dry-run", action="store_true", help="print rows added, removed and repriced; write nothing")
    ref.add_argument("--partial", action="store_true", help="write what the sources that succeeded give when "
                     "another failed (default: write nothing)")


def run(args) -> int:
    return refresh(args) if args.prices_command == "refresh" else import_command(args)


def import_command(args) -> int:
    imp = prices.import_file(args.file, args.format, args.provider, args.as_of, args.source, regions=args.regions)
    target = paths.DATA_DIR / "offerings.csv"
    existing = _existing(target)
    merged, summary = merge(existing, imp.rows)
    if args.out:  # the imported rows alone, in the offerings schema; data/offerings.csv is left as it is
        out = Path(args.out)
        write_atomic(merge(existing.iloc[0:0], imp.rows)[0], out)
        print(f"{paths.rel(Path(args.file))}: {len(imp.rows)} offering row(s) written to {out} "
              f"(against {paths.rel(target)} they would be:)")
    else:
        _install(merged, target)
        print(f"{paths.rel(Path(args.file))}: {len(imp.rows)} offering row(s) merged into {paths.rel(target)}")
    print(summary_table(summary, imp.skipped))
    return 0


def refresh(args, today: _dt.date | None = None) -> int:
    """``prices refresh``. Exit 0: written (or dry run); 1: written with ``--partial`` while a source
    failed; 2: nothing written (a source failed, or nothing was read)."""
    today = today or _dt.date.today()
    target = Path(args.out) if args.out else paths.DATA_DIR / "offerings.csv"
    existing = _existing(target)
    res = Result()
    if args.source in ("skypilot", "all"):
        skypilot(args.base, args.clouds, today, res)
    if args.source == "gpuhunt":
        gpuhunt(args.base, args.clouds, today, res, skip=set())
    elif args.source == "all":
        if not args.base:
            gpuhunt(None, args.clouds, today, res, skip=set(res.providers))
        elif _is_url(args.base) or (Path(args.base) / "gpuhunt").is_dir():
            gpuhunt(f"{args.base.rstrip('/')}/gpuhunt", args.clouds, today, res, skip=set(res.providers))
    for line in res.read:
        print(line)
    for line in res.failed:
        print(f"failed: {line}", file=sys.stderr)
    if res.failed and not args.partial:
        print(f"{paths.rel(target)}: left as it was ({len(res.failed)} source(s) failed; --partial writes the others)",
              file=sys.stderr)
        return 2
    if not res.rows:
        print(f"{paths.rel(target)}: left as it was (no catalog file was read)", file=sys.stderr)
        return 2
    new = pd.concat(res.rows, ignore_index=True)
    dup = new["offering"].duplicated(keep="first")
    if dup.any():  # the same id from two files (e.g. gpuhunt after SkyPilot): the first read wins
        res.skipped["same offering id from an earlier file"] = int(dup.sum())
        new = new[~dup]
    merged, summary = merge(existing, new, res.stems)
    merged = fill_shapes(merged)
    print(summary_table(summary, res.skipped))
    if args.dry_run:
        print(changes(summary))
        _checked(merged, f"{paths.rel(target)} (merged)")
        print(f"dry run: {paths.rel(target)} not written")
        return 0
    _install(merged, target)
    print(f"{paths.rel(target)}: {len(merged)} rows written ({len(new)} from the catalogs)")
    return 1 if res.failed else 0
