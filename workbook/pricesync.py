"""Bring ``data/offerings.csv`` up to date: ``prices import`` (one file) and ``prices refresh`` (whole catalogs).

``refresh`` reads maintained public catalogs (through ``pricefeeds``), online or from a local mirror laid out like
the upstream:

- ``skypilot``: SkyPilot's ``<base>/catalogs/v8/<cloud>/vms.csv`` for every cloud it publishes
  (github.com/skypilot-org/skypilot-catalog; default base: its raw files on GitHub).
- ``gpuhunt``: dstack's gpuhunt catalog, ``<base>/<provider>/version`` and
  ``<base>/<provider>/<version>/catalog.zip`` holding ``<provider>.csv`` (the layout of gpuhunt's
  ``CATALOG_URL``; read with the ``gpuhunt`` library's loader when it is installed).
- ``azure``: the Azure Retail Prices API (``prices.azure.com/api/retail/prices``, GPU VM sizes, pages linked by
  ``NextPageLink``; ``workbook/azurefeed.py``), or recorded pages in ``<base>/azure/retail-prices/*.json``;
  with ``all`` it is read before SkyPilot (whose Azure file is older), and the first row of an id wins.

Every refreshed row has ``price_basis`` = catalog, ``as_of`` = today and ``price_as_of`` = the source's own
date: the file's last commit (a git checkout, the mirror's ``SOURCES.csv`` or GitHub's commit list), the
gpuhunt catalog version, else the day it was fetched from the network; a folder with no date leaves it
blank (stale). Rows the catalogs do not carry are kept. The file is replaced atomically (temporary file in
the same folder, fsync, ``os.replace``): a kill, a failed download or a malformed file leaves the previous
catalog byte-identical, and a failed source is named in one line.
"""
from __future__ import annotations

import datetime as _dt
import io
import math
import os
import sys
import tempfile
from pathlib import Path

import pandas as pd

from . import catalog, paths, prices
from .azurefeed import azure
from .pricefeeds import REFRESH_MARK, Result, _is_url, gpuhunt, skypilot
from .errors import InputError

PRICE_COLUMNS = prices.PRICE_COLUMNS


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
    ref.add_argument("--source", choices=("skypilot", "gpuhunt", "azure", "all"), default="all")
    ref.add_argument("--from", dest="base", help="a folder or http(s) URL laid out like the upstream "
                     "(skypilot: <base>/catalogs/v8/<cloud>/vms.csv; gpuhunt: <base>/<provider>/version; "
                     "azure: recorded API pages <base>/azure/retail-prices/*.json, or the URL of a first page)")
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
    if args.source == "azure":
        azure(args.base, None, today, res)
    elif args.source == "all" and (not args.clouds or "azure" in args.clouds):
        if not args.base:
            azure(None, None, today, res)
        elif not _is_url(args.base) and (Path(args.base) / "azure" / "retail-prices").is_dir():
            azure(args.base, None, today, res)
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
