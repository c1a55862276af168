"""Import maintained public price catalogs into ``data/offerings.csv``; price dates and staleness.

Two formats are read (see data/README.md, section offerings, for how to fetch fresh copies):

- SkyPilot's ``catalogs/v7/<cloud>/vms.csv`` and ``v8`` (github.com/skypilot-org/skypilot-catalog): one row
  per instance type and availability zone, columns ``InstanceType, AcceleratorName, AcceleratorCount,
  vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice, Region, AvailabilityZone`` (the GCP file orders them
  differently; columns are matched by name; clouds without zones, Lambda and Nebius, have no
  ``AvailabilityZone``; AWS Local Zone rows are not a region's zones and are left out). In the GCP file an accelerator row has no
  ``InstanceType``: TPU slice rows are whole prices, A2/A3 GPU rows are added to their fixed host VM row.
- gpuhunt's catalog CSV (github.com/dstackai/gpuhunt, ``RawCatalogItem``): one row per instance,
  location and spot flag, columns ``instance_name, location, price, cpu, memory, gpu_count, gpu_name,
  gpu_memory, spot, disk_size, gpu_vendor`` (newer versions add columns; they are ignored).

Accelerator names map to chip ids through ``NAME_MAP`` and a few instance rules; unknown names are
reported and skipped, never guessed. Rows come out in the offerings schema with ``as_of`` = the day
the file was read and ``price_as_of`` = the day the prices were valid (``--as-of``, or the gpuhunt
catalog version found in the path; blank = unknown, which counts as stale).
"""
from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import catalog, inputs, paths
from .errors import InputError

STALE_AFTER_DAYS = 365
GIB = 2 ** 30

SKYPILOT_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo",
                    "Price", "SpotPrice", "Region", "AvailabilityZone")
# SkyPilot's files for clouds without zones (lambda, nebius) have no AvailabilityZone column.
SKYPILOT_REQUIRED = tuple(c for c in SKYPILOT_COLUMNS if c != "AvailabilityZone")
GPUHUNT_COLUMNS = ("instance_name", "location", "price", "cpu", "memory", "gpu_count", "gpu_name",
                   "gpu_memory", "spot", "disk_size", "gpu_vendor")

# Source accelerator name (upper case) -> chip id of data/accelerators.csv. A tuple value maps by
# per-chip memory in GB (rounded): the A100 name covers the 40 GB and the 80 GB part.
NAME_MAP: dict[str, str | dict[int, str]] = {
    "A100": {40: "A100-SXM4-40GB", 80: "A100-SXM4-80GB"},
    "A100-80GB": "A100-SXM4-80GB",
    "A10G": "A10G",
    "B200": "B200-SXM-180GB",
    "GH200": "GH200-96GB",
    "H100": "H100-SXM5-80GB",
    "H100-MEGA": "H100-SXM5-80GB",
    "H100-SXM": "H100-SXM5-80GB",
    "H200": "H200-SXM-141GB",
    "H200-SXM": "H200-SXM-141GB",
    "L4": "L4",
    "L40S": "L40S",
    "MI300X": "MI300X",
    "MI325X": "MI325X",
    "T4": "T4",
    "V100": "V100-SXM2-16GB",
    "V100-32GB": "V100-SXM2-32GB",
}
# Instance-name rules that override the name map (form factor the GPU name does not carry).
INSTANCE_RULES: list[tuple[re.Pattern, dict[str, str | None]]] = [
    (re.compile(r"pcie", re.I), {"A100-SXM4-80GB": "A100-PCIe-80GB", "H100-SXM5-80GB": "H100-PCIe-80GB",
                                 "A100-SXM4-40GB": None}),
    (re.compile(r"^Standard_NC\d+ads_A100_v4$"), {"A100-SXM4-80GB": "A100-PCIe-80GB"}),
    (re.compile(r"^Standard_NC\d+ads_H100_v5$"), {"H100-SXM5-80GB": None}),  # H100 NVL: not in the catalog
]
# TPU generation -> (chip id, TensorCores per chip in the slice suffix: v4-8 and v5p-8 are 4 chips).
TPU_MAP = {"v4": ("TPU-v4", 2), "v5p": ("TPU-v5p", 2), "v5litepod": ("TPU-v5e", 1), "v5e": ("TPU-v5e", 1),
           "v6e": ("TPU-v6e", 1)}
_TPU = re.compile(r"^(?:tpu-)?(v\d+[a-z]*)-(\d+)$")
# GCP GPU rows in SkyPilot carry only the GPU price; these families have one host VM per GPU count.
GCP_HOSTS = {"A100": "a2-highgpu-{n}g", "A100-80GB": "a2-ultragpu-{n}g", "H100": "a3-highgpu-{n}g",
             "H100-MEGA": "a3-megagpu-{n}g", "H200": "a3-ultragpu-{n}g"}
PROVIDERS = {"aws": ("AWS", "hyperscaler"), "gcp": ("GCP", "hyperscaler"), "azure": ("Azure", "hyperscaler"),
             "lambda": ("Lambda", "gpu-cloud"), "lambdalabs": ("Lambda", "gpu-cloud"),
             "runpod": ("RunPod", "gpu-cloud"), "nebius": ("Nebius", "gpu-cloud"),
             "oci": ("OCI", "hyperscaler"), "vast": ("Vast.ai", "marketplace"), "vastai": ("Vast.ai", "marketplace")}
PRICE_COLUMNS = ["on_demand_usd_per_hour", "spot_usd_per_hour", "commit_1y_usd_per_hour",
                 "commit_3y_usd_per_hour", "monthly_usd", "other_usd_per_hour"]
SPEC_COLUMNS = ["vcpus", "host_memory_bytes", "local_nvme_bytes", "inter_node_bytes_per_s", "fabric"]


# ---------------------------------------------------------------- price dates


def price_date(row_or_date) -> _dt.date | None:
    """The date a price was valid: a date/ISO string, or a row's ``price_as_of``; None when unknown."""
    value = row_or_date
    if isinstance(row_or_date, (dict, pd.Series)):
        value = row_or_date.get("price_as_of")
    if value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() in ("", "nan", "NaT"):
        return None
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    try:
        return _dt.date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        return None


def price_age_days(row_or_date, today: _dt.date | None = None) -> float:
    """Days between the price date and ``today``; NaN when the price is undated."""
    d = price_date(row_or_date)
    if d is None:
        return float("nan")
    return float(((today or _dt.date.today()) - d).days)


def is_stale(row_or_date, today: _dt.date | None = None, max_days: int = STALE_AFTER_DAYS) -> bool:
    """True when the price is older than ``max_days`` (365) or undated."""
    age = price_age_days(row_or_date, today)
    return math.isnan(age) or age > max_days


# ---------------------------------------------------------------- reading


@dataclass
class Imported:
    rows: pd.DataFrame
    skipped: dict[str, int] = field(default_factory=dict)  # "name: reason" -> source rows

    def skip(self, what: str, n: int = 1):
        self.skipped[what] = self.skipped.get(what, 0) + n


def _number(text, file: str, row: int, col: str, required: bool = False) -> float | None:
    s = "" if text is None else str(text).strip()
    if s == "":
        if required:
            raise InputError(f"{file}: row {row}: {col}: expected a number, got an empty cell")
        return None
    try:
        v = float(s)
    except ValueError:
        raise InputError(f"{file}: row {row}: {col}: expected a number, got {inputs.excerpt(s)}") from None
    if not math.isfinite(v) or v < 0:
        raise InputError(f"{file}: row {row}: {col}: expected a finite non-negative number, got {inputs.excerpt(s)}")
    return v


MAX_PRICE_FILE_BYTES = 200_000_000   # SkyPilot's largest vms.csv (AWS, all regions) is about 20 MB
MAX_PRICE_ROWS = 1_000_000


def _read_rows(path: Path, columns: tuple[str, ...]) -> tuple[str, list[tuple[int, dict]]]:
    """The rows of a price CSV through ``inputs`` (a regular UTF-8 file, size-capped, no ragged row,
    no cell over ``inputs.MAX_CSV_FIELD_CHARS``), with the required ``columns``."""
    rel = paths.rel(path)
    header, rows = inputs.read_csv(path, "a price catalog CSV", MAX_PRICE_FILE_BYTES, MAX_PRICE_ROWS, label=rel)
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"{rel}: row 1: {missing[0]}: missing column (expected {', '.join(columns)})")
    return rel, rows


def map_accelerator(name: str | None, memory_gb: float | None, instance: str) -> tuple[str | None, int | None, str]:
    """(chip id, chips per instance or None, reason when unknown) for a source accelerator name."""
    raw = (name or "").strip()
    tpu = _TPU.match(raw.lower()) or _TPU.match(instance.strip().lower())
    if tpu and (raw.lower().startswith(("tpu-", "v")) or not raw):
        gen, cores = tpu.group(1), int(tpu.group(2))
        if gen not in TPU_MAP:
            return None, None, f"TPU generation {gen!r} not in data/accelerators.csv"
        chip, per_chip = TPU_MAP[gen]
        return chip, max(cores // per_chip, 1), ""
    if not raw:
        return None, None, "no accelerator name"
    target = NAME_MAP.get(raw.upper())
    if isinstance(target, dict):
        target = _by_memory(target, memory_gb)
        if target is None:
            return None, None, f"no mapping for {memory_gb or '?'} GB per chip"
    if target is None:
        return None, None, "no mapping to a chip id (add it to workbook/prices.py NAME_MAP)"
    for pattern, override in INSTANCE_RULES:
        if pattern.search(instance) and target in override:
            target = override[target]
            if target is None:
                return None, None, f"in {instance}: form factor not in data/accelerators.csv"
    return target, None, ""


def _by_memory(choices: dict[int, str], memory_gb: float | None) -> str | None:
    """The chip whose nominal memory (GB) is nearest ``memory_gb``, within 10%: SkyPilot's AWS rows give
    ``SizeInMiB`` (40960 MiB = 42.9 GB for the 40 GB A100, 81920 MiB = 85.9 GB for the 80 GB part)."""
    if not memory_gb:
        return None
    nominal = min(choices, key=lambda gb: abs(gb - memory_gb))
    return choices[nominal] if abs(nominal - memory_gb) <= 0.1 * nominal else None


def _gpu_memory_gb(gpu_info: str) -> float | None:
    m = re.search(r"SizeInMiB'?\"?:\s*(\d+)", gpu_info or "")
    return int(m.group(1)) * 2 ** 20 / 1e9 if m else None


def _provider(path: Path, given: str | None) -> tuple[str, str, str]:
    key = (given or "").lower()
    if not key:
        for part in [path.stem, *reversed(path.parent.parts)]:
            if part.lower() in PROVIDERS:
                key = part.lower()
                break
    if key not in PROVIDERS:
        raise InputError(f"{paths.rel(path)}: cannot tell the provider from the path; pass --provider "
                         f"({', '.join(sorted(PROVIDERS))})")
    name, kind = PROVIDERS[key]
    return key, name, kind


def _catalog_version(path: Path) -> str | None:
    """gpuhunt publishes catalogs under a version that is a date (``.../20240508/catalog.zip``)."""
    for part in reversed(path.parts):
        m = re.fullmatch(r"(20\d{2})(\d{2})(\d{2})", part)
        if m:
            return f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
    return None


# ---------------------------------------------------------------- SkyPilot vms.csv


# An AWS Local Zone id names a metro inside the zone id (use1-atl2-az1: Atlanta, listed under us-east-1);
# Local Zones are other cities with their own prices, so they are not the region's zones.
LOCAL_ZONE = re.compile(r"^[a-z]+\d+-[a-z]+\d+-az\d+$")


def _sky_groups(rel: str, rows, imp: Imported) -> dict[tuple[str, str, str], dict]:
    """Group AZ rows by (instance, accelerator, region): on-demand price, lowest spot price, host specs.
    AWS Local Zone rows (``LOCAL_ZONE``) are left out and counted in ``imp.skipped``."""
    groups: dict[tuple[str, str, str], dict] = {}
    for i, r in rows:
        inst, acc, region = (r.get("InstanceType") or "").strip(), (r.get("AcceleratorName") or "").strip(), \
            (r.get("Region") or "").strip()
        if not region:
            raise InputError(f"{rel}: row {i}: Region: expected a value, got an empty cell")
        if LOCAL_ZONE.match((r.get("AvailabilityZone") or "").strip()):
            imp.skip("AWS Local Zone row (another city than the region's own zones)")
            continue
        price = _number(r.get("Price"), rel, i, "Price")
        spot = _number(r.get("SpotPrice"), rel, i, "SpotPrice")
        count = _number(r.get("AcceleratorCount"), rel, i, "AcceleratorCount")
        vcpus = _number(r.get("vCPUs"), rel, i, "vCPUs")
        mem = _number(r.get("MemoryGiB"), rel, i, "MemoryGiB")
        g = groups.setdefault((inst, acc, region), {"price": None, "spot": [], "count": count, "vcpus": vcpus,
                                                   "mem_gib": mem, "gpu_gb": _gpu_memory_gb(r.get("GpuInfo")),
                                                   "rows": 0})
        g["rows"] += 1
        if price is not None:
            g["price"] = price if g["price"] is None else min(g["price"], price)
        if spot is not None:
            g["spot"].append(spot)
    return groups


def read_skypilot(path: Path, provider: str | None = None) -> Imported:
    """Offerings rows from a SkyPilot ``vms.csv`` (AZ rows collapsed: spot = lowest AZ spot price)."""
    path = Path(path)
    rel, rows = _read_rows(path, SKYPILOT_REQUIRED)
    key, prov, kind = _provider(path, provider)
    imp = Imported(pd.DataFrame())
    groups = _sky_groups(rel, rows, imp)
    hosts = {(inst, region): g for (inst, acc, region), g in groups.items() if inst and not acc}
    out = []
    for (inst, acc, region), g in groups.items():
        if not acc:
            continue  # a CPU-only VM (or a GCP host row, added to its GPU row below)
        name = inst or acc
        chip, chips, why = map_accelerator(acc, g["gpu_gb"], name)
        if chip is None:
            imp.skip(f"{acc}: {why}", g["rows"])
            continue
        count = chips or int(g["count"] or 0) or 1
        od, spot = g["price"], min(g["spot"]) if g["spot"] else None
        note = "Spot = lowest availability-zone spot price in the file." if g["spot"] else ""
        vcpus, mem = g["vcpus"], g["mem_gib"]
        if not inst and chips is None:  # GCP GPU-only row: add the fixed host VM
            pattern = GCP_HOSTS.get(acc.upper())
            host_name = pattern.format(n=count) if pattern else None
            host = hosts.get((host_name, region)) if host_name else None
            if host is None:
                imp.skip(f"{acc}: GPU-only row without a fixed host VM in the file (attachable GPU)", g["rows"])
                continue
            name, vcpus, mem = host_name, host["vcpus"], host["mem_gib"]
            od = od + host["price"] if od is not None and host["price"] is not None else None
            hs = min(host["spot"]) if host["spot"] else None
            spot = spot + hs if spot is not None and hs is not None else None
            note = (f"DERIVED: SkyPilot {acc} x{count} GPU row + {host_name} host row (on-demand and lowest-zone "
                    "spot summed).")
        if od is None and spot is None:
            imp.skip(f"{acc}: no price in the file", g["rows"])
            continue
        out.append(_row(key, prov, kind, name, region, chip, count, od, spot, vcpus,
                        mem * GIB if mem else None, note))
    imp.rows = pd.DataFrame(out)
    return imp


# ---------------------------------------------------------------- gpuhunt catalog CSV


def read_gpuhunt(path: Path, provider: str | None = None) -> Imported:
    """Offerings rows from one gpuhunt provider CSV (on-demand and spot rows of an instance joined)."""
    path = Path(path)
    rel, rows = _read_rows(path, GPUHUNT_COLUMNS)
    key, prov, kind = _provider(path, provider)
    imp = Imported(pd.DataFrame())
    groups: dict[tuple[str, str], dict] = {}
    for i, r in rows:
        inst, loc = (r.get("instance_name") or "").strip(), (r.get("location") or "").strip()
        if not inst:
            raise InputError(f"{rel}: row {i}: instance_name: expected a value, got an empty cell")
        spot_text = (r.get("spot") or "").strip().lower()
        if spot_text not in ("true", "false"):
            raise InputError(f"{rel}: row {i}: spot: expected True or False, got {r.get('spot')!r}")
        price = _number(r.get("price"), rel, i, "price", required=True)
        region = re.sub(r"-[a-z]$", "", loc) if key == "gcp" else loc  # GCP locations are zones
        g = groups.setdefault((inst, region), {"od": [], "spot": [], "rows": 0, "gpu": r.get("gpu_name"),
                                               "count": _number(r.get("gpu_count"), rel, i, "gpu_count"),
                                               "gpu_gb": _number(r.get("gpu_memory"), rel, i, "gpu_memory"),
                                               "cpu": _number(r.get("cpu"), rel, i, "cpu"),
                                               "mem": _number(r.get("memory"), rel, i, "memory")})
        g["rows"] += 1
        g["spot" if spot_text == "true" else "od"].append(price)
    out = []
    for (inst, region), g in groups.items():
        if not g["count"]:
            continue  # CPU-only instance
        chip, chips, why = map_accelerator(g["gpu"], g["gpu_gb"], inst)
        if chip is None:
            imp.skip(f"{g['gpu']}: {why}", g["rows"])
            continue
        od, spot = (min(g["od"]) if g["od"] else None), (min(g["spot"]) if g["spot"] else None)
        note = "gpuhunt memory is GB (decimal) per its CatalogItem docs." if g["mem"] else ""
        out.append(_row(key, prov, kind, inst, region or "unspecified", chip, chips or int(g["count"]), od, spot,
                        g["cpu"], g["mem"] * 1e9 if g["mem"] else None, note))
    imp.rows = pd.DataFrame(out)
    return imp


def _row(key, provider, kind, instance, region, chip, count, od, spot, vcpus, mem_bytes, note) -> dict:
    prefix = re.sub(r"[^a-z0-9]+", "", provider.lower())
    slug = re.sub(r"[^a-z0-9.]+", "-", f"{prefix}-{instance}-{region}".lower()).strip("-")
    return {"offering": slug, "provider": provider, "provider_kind": kind, "region": region, "instance": instance,
            "accelerator": chip, "chips_per_instance": int(count), "on_demand_usd_per_hour": od,
            "spot_usd_per_hour": spot, "vcpus": int(vcpus) if vcpus else None, "host_memory_bytes": mem_bytes,
            "notes": note}


READERS = {"skypilot": read_skypilot, "gpuhunt": read_gpuhunt}


def import_file(path, fmt: str, provider: str | None = None, price_as_of: str | None = None,
                source: str | None = None, today: _dt.date | None = None,
                regions: list[str] | None = None) -> Imported:
    """Read one catalog file into offerings-schema rows (typed and validated like data/offerings.csv)."""
    if fmt not in READERS:
        raise InputError(f"--format: expected one of {', '.join(READERS)}, got {fmt!r}")
    path = Path(path)
    imp = READERS[fmt](path, provider)
    df = imp.rows
    if regions and len(df):
        df = df[df["region"].isin(regions)]
    read_on = (today or _dt.date.today()).isoformat()
    dated = price_as_of or _catalog_version(path)
    if dated is not None and price_date(dated) is None:
        raise InputError(f"--as-of: expected an ISO date (YYYY-MM-DD), got {dated!r}")
    src = source or f"{fmt} catalog file {path.name}"
    df = df.assign(source=src, as_of=read_on, price_as_of=dated or "", price_basis="catalog")
    if not dated and len(df):
        df["notes"] = (df["notes"] + " price_as_of blank: the file carries no price date (pass --as-of).").str.strip()
    imp.rows = typed(df, f"{paths.rel(path)} (imported)")
    return imp


def typed(df: pd.DataFrame, label: str) -> pd.DataFrame:
    """Frame in the offerings schema's column order and types (validated like the CSV)."""
    schema = catalog.SCHEMAS["offerings"]
    raw = pd.DataFrame({c: df[c] if c in df.columns else None for c in schema}, index=df.index)
    raw = raw.astype(object).where(raw.notna(), "").astype(str).replace({"None": "", "nan": ""})
    return catalog.validate_frame(raw.reset_index(drop=True), schema, label, key="offering")


# ---------------------------------------------------------------- merge and command


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
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


def merge(existing: pd.DataFrame, new: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Merge imported rows into the offerings CSV (all-string frame). Returns (merged, summary).

    A new id is added; an existing id with the same prices is unchanged; otherwise it is updated
    unless the existing price is newer than the imported one (an undated import never replaces a
    dated price: ``kept``). An update keeps the row's network columns it does not bring and names the
    previous source, the prices that changed and their date in ``notes``."""
    cols = list(existing.columns)
    index = {o: i for i, o in enumerate(existing["offering"])}
    out = existing.copy()
    actions = []
    for rec in new.to_dict("records"):
        row = {c: _cell(rec.get(c)) for c in cols}
        oid = row["offering"]
        if oid not in index:
            out = pd.concat([out, pd.DataFrame([row], columns=cols)], ignore_index=True)
            actions.append((row["provider"], "added", oid))
            continue
        old = out.iloc[index[oid]].to_dict()
        if _same_prices(old, row):
            actions.append((row["provider"], "unchanged", oid))
            continue
        old_d, new_d = price_date(old.get("price_as_of")), price_date(row.get("price_as_of"))
        if old_d is not None and (new_d is None or new_d < old_d):
            actions.append((row["provider"], "kept (existing price is newer)", oid))
            continue
        for c in ("inter_node_bytes_per_s", "fabric", "local_nvme_bytes", "provider_kind"):
            if c in cols and not row[c]:
                row[c] = old.get(c, "")
        was = ", ".join(f"{c} {old[c] or 'blank'}" for c in PRICE_COLUMNS if old.get(c, "") != row.get(c, ""))
        row["notes"] = f"{row['notes']} Previous row: {old.get('source', '')} ({was}, price_as_of " \
                       f"{old.get('price_as_of') or 'blank'}).".strip()
        out.iloc[index[oid]] = [row[c] for c in cols]
        actions.append((row["provider"], "updated", oid))
    summary = pd.DataFrame(actions, columns=["provider", "action", "offering"])
    return out, summary


def summary_table(summary: pd.DataFrame, imp: Imported) -> str:
    lines = []
    if len(summary):
        counts = summary.groupby(["provider", "action"]).size().unstack(fill_value=0)
        lines.append(counts.to_string())
    else:
        lines.append("no offerings rows in the file")
    for what, n in sorted(imp.skipped.items()):
        lines.append(f"skipped {n} source row(s): {what}")
    return "\n".join(lines)


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="prices_command", required=True)
    imp = sub.add_parser("import", help="read a SkyPilot vms.csv or a gpuhunt catalog CSV into offerings rows")
    imp.add_argument("file")
    imp.add_argument("--format", required=True, choices=sorted(READERS))
    imp.add_argument("--as-of", dest="as_of", help="date the prices were valid (YYYY-MM-DD): the snapshot's "
                     "commit or catalog-version date; default: a gpuhunt version date in the path, else blank")
    imp.add_argument("--provider", help="provider key when the path does not name it (aws, gcp, lambda, ...)")
    imp.add_argument("--source", help="source text stored in each row (repository file @ commit, or URL)")
    imp.add_argument("--region", action="append", dest="regions", help="keep only these regions (repeatable)")
    imp.add_argument("--out", help="write the imported rows to this CSV instead of merging into data/offerings.csv")


def run(args) -> int:
    imp = import_file(args.file, args.format, args.provider, args.as_of, args.source, regions=args.regions)
    target = paths.DATA_DIR / "offerings.csv"
    existing = pd.read_csv(target, dtype=str, keep_default_na=False)
    merged, summary = merge(existing, imp.rows)
    if args.out:  # the imported rows alone, in the offerings schema; data/offerings.csv is left as it is
        out = Path(args.out)
        merge(existing.iloc[0:0], imp.rows)[0].to_csv(out, index=False)
        print(f"{paths.rel(Path(args.file))}: {len(imp.rows)} offering row(s) written to {out} "
              f"(against {paths.rel(target)} they would be:)")
    else:
        merged.to_csv(target, index=False)
        catalog.load.cache_clear()
        catalog.resolve_map.cache_clear()
        print(f"{paths.rel(Path(args.file))}: {len(imp.rows)} offering row(s) merged into {paths.rel(target)}")
    print(summary_table(summary, imp))
    return 0
