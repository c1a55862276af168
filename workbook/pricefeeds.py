"""Read maintained price catalogs for ``prices refresh`` (workbook/pricesync.py): SkyPilot's v8 ``vms.csv`` per
cloud and dstack's gpuhunt catalog, from a folder or an http(s) base laid out like the upstream, each file dated
by the best source at hand (a mirror's ``SOURCES.csv``, the file's git commit, GitHub's commit list, the fetch day).
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import subprocess
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import paths, prices
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

# ---------------------------------------------------------------- reading a base (folder or URL)


class NotPublished(Exception):
    """The base has no such file (HTTP 404, or no file in the folder): not a failure."""


def _is_url(base: str) -> bool:
    return str(base).startswith(("http://", "https://"))


def get_bytes(base: str, rel: str) -> bytes:
    """``<base>/<rel>`` from a folder or an http(s) URL (``base`` itself when ``rel`` is empty), at most
    ``MAX_DOWNLOAD_BYTES``."""
    if _is_url(base):
        url = f"{base.rstrip('/')}/{rel}" if rel else base
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


def _import_source(res: Result, fmt: str, key: str, today: _dt.date, load) -> None:
    """One catalog file: ``load()`` gives (bytes, file name, Dated, label for the log, source stem). A file
    the source does not publish is passed over, a bad one is recorded in ``res.failed`` in one line, a
    good one is imported into ``res`` and logged with its row count and date."""
    try:
        data, name, dated, label, stem = load()
        before = len(res.rows)
        _import_bytes(data, key, name, fmt, dated, today, res)
    except NotPublished:
        return
    except InputError as e:
        res.failed.append(f"{fmt} {key}: {e.problems[0] if e.problems else e}")
        return
    n = len(res.rows[before]) if len(res.rows) > before else 0
    res.read.append(f"{label}: {n} rows, price_as_of {dated.price_as_of or 'blank'} ({dated.how})")
    res.stems.append(stem)


def skypilot(base: str | None, only: list[str] | None, today: _dt.date, res: Result) -> None:
    default = base is None
    base = base or SKYPILOT_BASE
    manifest = _manifest(base)
    for cloud in _clouds(base, only):
        rel = f"catalogs/{SKYPILOT_VERSION}/{cloud}/vms.csv"
        _import_source(res, "skypilot", cloud, today, lambda: (
            get_bytes(base, rel), "vms.csv", date_of(base, rel, manifest, today, default),
            f"skypilot {rel}", f"skypilot-catalog {rel}"))


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


def _gpuhunt_load(base: str, provider: str, today: _dt.date) -> tuple:
    """A provider's gpuhunt catalog as ``_import_source`` takes it, dated by its version (or the fetch day)."""
    version, prefix = _gpuhunt_version(base, provider)
    if not version.replace("-", "").replace(".", "").isalnum() or len(version) > 40:
        raise InputError(f"gpuhunt {provider}/version: expected a version name, got {version[:40]!r}")
    data = _gpuhunt_csv(get_bytes(base, f"{prefix}{version}/catalog.zip"), provider)
    d = prices._catalog_version(Path(version[:8]))
    where = base.rstrip("/") if _is_url(base) else paths.rel(Path(base))
    dated = Dated(d or (today.isoformat() if _is_url(base) else ""),
                  f"gpuhunt catalog {provider}.csv version {version} from {where} {REFRESH_MARK}",
                  "catalog version date" if d else ("fetch day" if _is_url(base) else "blank"))
    return data, f"{provider}.csv", dated, f"gpuhunt {provider} {version}", f"gpuhunt catalog {provider}.csv "


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
        _import_source(res, "gpuhunt", provider, today, lambda: _gpuhunt_load(base, provider, today))
