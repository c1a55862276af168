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

import csv
import datetime as _dt
import io
import math
import re
import stat as _stat
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import catalog, paths
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
    # Hyperstack's names carry the form factor (n3-* shapes in SkyPilot's hyperstack file)
    "A100-80G-PCIE": "A100-PCIe-80GB", "A100-80G-PCIE-NVLINK": "A100-PCIe-80GB",
    "H100-80G-PCIE": "H100-PCIe-80GB", "H100-80G-PCIE-NVLINK": "H100-PCIe-80GB", "H100-80G-SXM5": "H100-SXM5-80GB",
}
# Instance-name rules that override the name map (form factor the GPU name does not carry).
INSTANCE_RULES: list[tuple[re.Pattern, dict[str, str | None]]] = [
    (re.compile(r"pcie", re.I), {"A100-SXM4-80GB": "A100-PCIe-80GB", "H100-SXM5-80GB": "H100-PCIe-80GB",
                                 "A100-SXM4-40GB": None}),
    (re.compile(r"^Standard_NC\d+ads_A100_v4$"), {"A100-SXM4-80GB": "A100-PCIe-80GB"}),
    (re.compile(r"^Standard_NC\d+ads_H100_v5$"), {"H100-SXM5-80GB": "H100-NVL-94GB"}),  # imported once that chip exists
    # Lambda's 1/2/4-GPU 'gpu_Nx_a100' (no _sxm4) do not say their form factor; the 8-GPU and _sxm4 ones are SXM4
    (re.compile(r"^gpu_[124]x_a100$"), {"A100-SXM4-40GB": None}),
]
# TPU generation -> (chip id, TensorCores per chip in the slice suffix: v4-8 and v5p-8 are 4 chips).
TPU_MAP = {"v4": ("TPU-v4", 2), "v5p": ("TPU-v5p", 2), "v5litepod": ("TPU-v5e", 1), "v5e": ("TPU-v5e", 1),
           "v6e": ("TPU-v6e", 1)}
_TPU = re.compile(r"^(?:tpu-)?(v\d+[a-z]*)-(\d+)$")
# GCP GPU rows in SkyPilot carry only the GPU price; these families have one host VM per GPU count.
GCP_HOSTS = {"A100": "a2-highgpu-{n}g", "A100-80GB": "a2-ultragpu-{n}g", "H100": "a3-highgpu-{n}g",
             "H100-MEGA": "a3-megagpu-{n}g", "H200": "a3-ultragpu-{n}g"}
# Source cloud key (a SkyPilot catalog folder, a gpuhunt provider, a Shadeform instance prefix) ->
# (provider name in data/offerings.csv, provider_kind). A key not listed is named from the key, gpu-cloud.
PROVIDERS = {"aws": ("AWS", "hyperscaler"), "gcp": ("GCP", "hyperscaler"), "azure": ("Azure", "hyperscaler"),
             "lambda": ("Lambda", "gpu-cloud"), "lambdalabs": ("Lambda", "gpu-cloud"),
             "runpod": ("RunPod", "gpu-cloud"), "nebius": ("Nebius", "gpu-cloud"),
             "oci": ("OCI", "hyperscaler"), "vast": ("Vast.ai", "marketplace"), "vastai": ("Vast.ai", "marketplace"),
             "verda": ("Verda", "gpu-cloud"), "datacrunch": ("Verda", "gpu-cloud"),
             "fluidstack": ("Fluidstack", "gpu-cloud"), "hyperstack": ("Hyperstack", "gpu-cloud"),
             "cudo": ("Cudo Compute", "gpu-cloud"), "paperspace": ("Paperspace", "gpu-cloud"),
             "do": ("DigitalOcean", "gpu-cloud"), "digitalocean": ("DigitalOcean", "gpu-cloud"),
             "shadeform": ("Shadeform", "marketplace"), "mithril": ("Mithril", "gpu-cloud"),
             "lium": ("Lium", "marketplace"), "jarvislabs": ("JarvisLabs", "gpu-cloud"),
             "hyperbolic": ("Hyperbolic", "marketplace"), "seeweb": ("Seeweb", "gpu-cloud"),
             "spheron": ("Spheron", "marketplace"), "yotta": ("Yotta", "gpu-cloud"),
             "primeintellect": ("Prime Intellect", "marketplace"), "daytona": ("Daytona", "gpu-cloud"),
             "cloudrift": ("CloudRift", "gpu-cloud"), "crusoe": ("Crusoe", "gpu-cloud"),
             "hotaisle": ("Hot Aisle", "gpu-cloud"), "vultr": ("Vultr", "gpu-cloud"),
             "scaleway": ("Scaleway", "gpu-cloud"), "massedcompute": ("Massed Compute", "gpu-cloud"),
             "denvr": ("Denvr Dataworks", "gpu-cloud"), "excesssupply": ("Excess Supply", "marketplace"),
             "latitude": ("Latitude.sh", "gpu-cloud"), "voltagepark": ("Voltage Park", "gpu-cloud"),
             "horizon": ("Horizon", "gpu-cloud"), "nscale": ("Nscale", "gpu-cloud"),
             "ibm": ("IBM Cloud", "hyperscaler"), "coreweave": ("CoreWeave", "gpu-cloud"),
             "tensorwave": ("TensorWave", "gpu-cloud"), "together": ("Together AI", "gpu-cloud"),
             "boostrun": ("Boost Run", "gpu-cloud"), "amaya": ("Amaya", "gpu-cloud")}
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


MAX_FILE_BYTES = 64 * 2 ** 20   # SkyPilot's AWS file, the largest, is 3.6 MB
MAX_CELL_CHARS = 4096           # the longest real cell (AWS GpuInfo) is about 200 characters
MAX_COUNT = 10000               # chips per instance, as the offerings schema allows
FORMULA_START = ("=", "+", "-", "@")  # a spreadsheet would run such a text cell as a formula


def _short(s: str, n: int = 60) -> str:
    return repr(s if len(s) <= n else s[:n] + "...")


def _number(text, file: str, row: int, col: str, required: bool = False, limit: float = 1e7) -> float | None:
    s = "" if text is None else str(text).strip()
    if s == "":
        if required:
            raise InputError(f"{file}: row {row}: {col}: expected a number, got an empty cell")
        return None
    try:
        v = float(s)
    except ValueError:
        raise InputError(f"{file}: row {row}: {col}: expected a number, got {_short(s)}") from None
    if not math.isfinite(v) or v < 0 or v > limit:
        raise InputError(f"{file}: row {row}: {col}: expected a number between 0 and {limit:g}, got {_short(s)}")
    return v


def read_text(path: Path) -> tuple[str, str]:
    """(display name, text) of a price file: a regular file (not a directory, FIFO or device) of at most
    ``MAX_FILE_BYTES``, UTF-8 (a byte-order mark is dropped); anything else is one InputError line."""
    path = Path(path)
    rel = paths.rel(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputError(f"{rel}: file not found") from None
    except OSError as e:
        raise InputError(f"{rel}: cannot read ({e.strerror or type(e).__name__})") from None
    if not _stat.S_ISREG(st.st_mode):
        kind = "a directory" if _stat.S_ISDIR(st.st_mode) else "not a regular file (FIFO, device or socket)"
        raise InputError(f"{rel}: expected a CSV file, got {kind}")
    if st.st_size > MAX_FILE_BYTES:
        raise InputError(f"{rel}: {st.st_size:,} bytes, more than the {MAX_FILE_BYTES:,} a price file may have")
    data = path.read_bytes()[:MAX_FILE_BYTES + 1]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        row = data[:e.start].count(b"\n") + 1
        raise InputError(f"{rel}: row {row}: byte {data[e.start]:#04x} is not UTF-8; save the file as UTF-8") from None
    return rel, text


def _read_rows(path: Path, columns: tuple[str, ...], text_columns: tuple[str, ...] = ()) -> tuple[str, list[tuple[int, dict]]]:
    """Rows of a price CSV as (line number, record). Refused with one line naming file, row and column: a
    missing column, a ragged row, a cell over ``MAX_CELL_CHARS``, a text cell that starts like a spreadsheet
    formula (``=``, ``+``, ``-``, ``@``: refused, never written into data/offerings.csv)."""
    rel, text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, [])
        missing = [c for c in columns if c not in header]
        if missing:
            raise InputError(f"{rel}: row 1: {missing[0]}: missing column (expected {', '.join(columns)})")
        watch = [(header.index(c), c) for c in text_columns if c in header]
        rows = []
        for i, cells in enumerate(reader, start=2):
            if not cells:
                continue
            if len(cells) > len(header):
                raise InputError(f"{rel}: row {i}: {header[-1]}: more cells than header columns")
            long = next((j for j, c in enumerate(cells) if len(c) > MAX_CELL_CHARS), None)
            if long is not None:
                raise InputError(f"{rel}: row {i}: {header[long]}: a cell of {len(cells[long]):,} characters "
                                 f"(at most {MAX_CELL_CHARS})")
            for j, name in watch:
                if j < len(cells) and cells[j].lstrip().startswith(FORMULA_START):
                    raise InputError(f"{rel}: row {i}: {name}: text starting with {cells[j].lstrip()[0]!r} is "
                                     f"refused (a spreadsheet would run it as a formula): {_short(cells[j])}")
            rows.append((i, dict(zip(header, cells))))
    except csv.Error as e:
        raise InputError(f"{rel}: row {reader.line_num}: not a readable CSV row ({e})") from None
    return rel, rows


def _normal(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _build_alias_map(known: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, chip in known.items():
        out.setdefault(name.lower(), chip)
        out.setdefault(_normal(name), chip)
    return out


_ALIASES = catalog.PerLoad(_build_alias_map)   # built from the catalog's resolve map


def _alias_map() -> dict[str, str]:
    """Every id and alias of data/accelerators.csv, lower-case and with punctuation removed, -> chip id:
    a chip added there with its source names as aliases is imported without a code change."""
    return _ALIASES.get(catalog.resolve_map("accelerators"))


def map_accelerator(name: str | None, memory_gb: float | None, instance: str) -> tuple[str | None, int | None, str]:
    """(chip id, chips per instance or None, reason when unknown) for a source accelerator name.

    ``NAME_MAP`` first (names that cover two parts, told apart by memory), then every id and alias of
    data/accelerators.csv (case and punctuation ignored), then ``INSTANCE_RULES`` for a form factor the
    name does not carry; an unknown name is reported, never guessed."""
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
    aliases = _alias_map()
    if target is None:
        target = aliases.get(raw.lower()) or aliases.get(_normal(raw))
    if target is None:
        return None, None, "no chip id or alias in data/accelerators.csv"
    for pattern, override in INSTANCE_RULES:
        if pattern.search(instance) and target in override:
            target = override[target]
            if target is None or target not in aliases.values():
                return None, None, f"in {instance}: form factor {target or ''} not in data/accelerators.csv".replace("  ", " ")
    return target, None, ""


def _by_memory(choices: dict[int, str], memory_gb: float | None) -> str | None:
    """The chip whose nominal memory (GB) is nearest ``memory_gb``, within 10%: SkyPilot's AWS rows give
    ``SizeInMiB`` (40960 MiB = 42.9 GB for the 40 GB A100, 81920 MiB = 85.9 GB for the 80 GB part)."""
    if not memory_gb:
        return None
    nominal = min(choices, key=lambda gb: abs(gb - memory_gb))
    return choices[nominal] if abs(nominal - memory_gb) <= 0.1 * nominal else None


def _gpu_memory_gb(gpu_info: str) -> float | None:
    """Per-GPU memory from SkyPilot's ``GpuInfo``: ``SizeInMiB`` is MiB (AWS 81920), but some fetchers
    (Shadeform's) write GB there (80); no GPU has under 1 GiB, so a value below 1024 is read as GB."""
    m = re.search(r"SizeInMiB'?\"?:\s*(\d+(?:\.\d+)?)", gpu_info or "")
    if not m:
        return None
    v = float(m.group(1))
    return v if v < 1024 else v * 2 ** 20 / 1e9


def _provider(path: Path, given: str | None) -> tuple[str, str, str]:
    key = (given or "").lower()
    if not key:
        for part in [path.stem, *reversed(path.parent.parts)]:
            if part.lower() in PROVIDERS:
                key = part.lower()
                break
    if not key:
        raise InputError(f"{paths.rel(path)}: cannot tell the provider from the path; pass --provider "
                         f"({', '.join(sorted(PROVIDERS))})")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,40}", key):
        raise InputError(f"--provider: expected a short cloud key (letters, digits, -), got {_short(key)}")
    name, kind = PROVIDERS.get(key, (key.title(), "gpu-cloud"))
    return key, name, kind


def seller(key: str, instance: str) -> tuple[str, str, str]:
    """(provider, provider_kind, id prefix) of a row: an aggregator's row (SkyPilot's ``shadeform`` file,
    instances named ``<cloud>_<shape>``) is sold by the cloud its instance names, booked through it."""
    if key == "shadeform" and "_" in instance:
        sub = instance.split("_", 1)[0].lower()
        name, kind = PROVIDERS.get(sub, (sub.title(), "gpu-cloud"))
        return name, kind, "shadeform"
    name, kind = PROVIDERS.get(key, (key.title(), "gpu-cloud"))
    return name, kind, re.sub(r"[^a-z0-9]+", "", name.lower())


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
# SkyPilot's GCP fetcher writes 700.0 where a TPU has no price in a region (data/README.md, offerings).
PLACEHOLDER_USD = 700.0
LOCAL_ZONE = re.compile(r"^[a-z]+\d+-[a-z]+\d+-az\d+$")


def _sky_groups(rel: str, rows, imp: Imported, key: str = "") -> dict[tuple[str, str, str], dict]:
    """Group AZ rows by (instance, accelerator, region): on-demand price, lowest spot price, host specs.
    AWS Local Zone rows (``LOCAL_ZONE``) are left out and counted in ``imp.skipped``."""
    groups: dict[tuple[str, str, str], dict] = {}
    for i, r in rows:
        inst, acc, region = (r.get("InstanceType") or "").strip(), (r.get("AcceleratorName") or "").strip(), \
            (r.get("Region") or "").strip()
        if not region:
            imp.skip("row without a Region (the catalog gives no location)")
            continue
        if LOCAL_ZONE.match((r.get("AvailabilityZone") or "").strip()):
            imp.skip("AWS Local Zone row (another city than the region's own zones)")
            continue
        price = _number(r.get("Price"), rel, i, "Price")
        spot = _number(r.get("SpotPrice"), rel, i, "SpotPrice")
        if key == "gcp" and PLACEHOLDER_USD in (price, spot):  # SkyPilot's GCP 'no price here' value
            imp.skip("price 700.0: SkyPilot's placeholder for a region without a price", 1)
            price = None if price == PLACEHOLDER_USD else price
            spot = None if spot == PLACEHOLDER_USD else spot
        count = _number(r.get("AcceleratorCount"), rel, i, "AcceleratorCount", limit=MAX_COUNT)
        vcpus = _number(r.get("vCPUs"), rel, i, "vCPUs", limit=1e5)
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
    rel, rows = _read_rows(path, SKYPILOT_REQUIRED, ("InstanceType", "AcceleratorName", "Region", "AvailabilityZone"))
    key, prov, kind = _provider(path, provider)
    imp = Imported(pd.DataFrame())
    groups = _sky_groups(rel, rows, imp, key)
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
        if chips is None and _fraction(g["count"]):
            imp.skip(f"{acc}: a fraction ({g['count']:g}) of one GPU per instance", g["rows"])
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
        prov, kind, prefix = seller(key, name)
        if prefix == "shadeform":
            note = f"{note} Sold by {prov}, booked through Shadeform (SkyPilot's shadeform catalog).".strip()
        row = _row(prefix, prov, kind, name, region, chip, count, od, spot, vcpus, mem * GIB if mem else None, note)
        if chips is not None:  # a TPU slice: hosts talk over the data-centre network, per chip as in accelerators.csv
            per_chip = catalog.accelerator_record(chip).get("inter_node_bytes_per_s")
            row["fabric"] = "dcn"
            if per_chip and per_chip == per_chip:
                row["inter_node_bytes_per_s"] = per_chip * count
                row["notes"] = (f"{row['notes']} Network: DCN {per_chip * 8 / 1e9:g} Gbps per chip (accelerators.csv "
                                f"{chip}) x {count} chips.").strip()
        out.append(row)
    imp.rows = pd.DataFrame(out)
    return imp


# ---------------------------------------------------------------- gpuhunt catalog CSV


def read_gpuhunt(path: Path, provider: str | None = None) -> Imported:
    """Offerings rows from one gpuhunt provider CSV (on-demand and spot rows of an instance joined)."""
    path = Path(path)
    rel, rows = _read_rows(path, GPUHUNT_COLUMNS, ("instance_name", "location", "gpu_name"))
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
                                               "count": _number(r.get("gpu_count"), rel, i, "gpu_count", limit=MAX_COUNT),
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
        if chips is None and _fraction(g["count"]):
            imp.skip(f"{g['gpu']}: a fraction ({g['count']:g}) of one GPU per instance", g["rows"])
            continue
        od, spot = (min(g["od"]) if g["od"] else None), (min(g["spot"]) if g["spot"] else None)
        note = "gpuhunt memory is GB (decimal) per its CatalogItem docs." if g["mem"] else ""
        out.append(_row(seller(key, inst)[2], prov, kind, inst, region or "unspecified", chip, chips or int(g["count"]), od, spot,
                        g["cpu"], g["mem"] * 1e9 if g["mem"] else None, note))
    imp.rows = pd.DataFrame(out)
    return imp


def _fraction(count) -> bool:
    """A GPU count below one or not whole (Azure's NV6ads_A10_v5 holds 1/6 of an A10: SkyPilot writes 0.167):
    never read as a chip count."""
    return count is not None and count > 0 and (count < 1 or not float(count).is_integer())


def _row(prefix, provider, kind, instance, region, chip, count, od, spot, vcpus, mem_bytes, note) -> dict:
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
