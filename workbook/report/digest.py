"""What a report depends on, as one digest (``inputs_sha256``, recorded in its summary.json): the scenario
file, every catalog CSV, the section notebooks and the package's source; ``report --skip-unchanged``
skips a scenario whose digest is the one its report recorded."""
from __future__ import annotations

import hashlib
from pathlib import Path

from .. import paths
from ..paths import PACKAGE_DIR
from .assemble import sha256_file


def package_files() -> list[Path]:
    """The package's source files a report depends on (code, templates, schemas, the stylesheet)."""
    return sorted(p for p in PACKAGE_DIR.rglob("*")
                  if p.is_file() and p.suffix in (".py", ".j2", ".json", ".css") and "__pycache__" not in p.parts)


def inputs_sha256(scenario_file: str | Path, notebooks: list[Path], data_dir: str | Path | None = None,
                  shared: str | None = None) -> str:
    """One hash over what a report depends on: the scenario file, every catalog CSV, the section
    notebooks, and the package (version and source). Equal hash: the report would be the same.
    ``shared``: ``shared_inputs(notebooks, data_dir)`` computed once for the scenarios of a batch
    (the same digest: hashing is sequential; 140 files, about 15 ms, per scenario otherwise)."""
    h = hashlib.sha256(f"workbook {paths.VERSION}\n".encode())
    h.update(f"scenario {Path(scenario_file).name} {sha256_file(Path(scenario_file))}\n".encode())
    h.update((shared if shared is not None else shared_inputs(notebooks, data_dir)).encode())
    return h.hexdigest()


def shared_inputs(notebooks: list[Path], data_dir: str | Path | None = None) -> str:
    """The lines ``inputs_sha256`` hashes after the scenario's: every catalog CSV, the section notebooks
    and the package's source files, each ``kind name sha256``.

    Each file's sha256 comes from ``paths.file_sha256``, which keeps it for the process while the
    file's size, modification time and inode stay the same (a file modified less than 2 s before its read is
    read again each time): the calibration table's key (``_table_cache_key``), asked for later in the same
    report, hashes the same data CSVs and package modules, and then reads none of them again (about 6 ms).
    The digests are those of the bytes either way."""
    data = Path(data_dir) if data_dir else paths.DATA_DIR
    parts = ([("catalog", p) for p in sorted(data.glob("*.csv"))] + [("notebook", Path(p)) for p in notebooks]
             + [("package", p) for p in package_files()])
    return "".join(f"{kind} {p.name} {paths.file_sha256(p)}\n" for kind, p in parts)
