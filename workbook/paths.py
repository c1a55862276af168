"""Where things are: the checkout's folders, resolved once, and ``rel()`` for messages.

Nothing here imports from the workbook; every module that needs a folder imports it from here.
"""
from __future__ import annotations

import os
from pathlib import Path

VERSION = "0.1.0"   # the package version (pyproject.toml), stamped into every report and summary

PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = PACKAGE_DIR.parent
# the catalogs and scenarios; WORKBOOK_DATA_DIR points a process (and an app's kernels) at another copy
DATA_DIR = Path(os.environ["WORKBOOK_DATA_DIR"]) if os.environ.get("WORKBOOK_DATA_DIR") else ROOT / "data"
SCENARIO_DIR = DATA_DIR / "scenarios"
NOTEBOOK_DIR = ROOT / "notebooks"
TEMPLATE_DIR = PACKAGE_DIR / "templates"
# the font configuration that leaves vl-convert its own Liberation Sans only (views.charts.base.vendored_fonts_only)
VL_CONVERT_FONTS_CONF = TEMPLATE_DIR / "vl-convert-fonts.conf"
APP_SHARE_DIR = PACKAGE_DIR / "app_share"   # holds voila/templates/workbook (found through JUPYTER_PATH)
APP_NOTEBOOK = NOTEBOOK_DIR / "app.ipynb"


MAX_SHOWN_CHARS = 200   # a message shows at most this much of a path (a 100 kB name is not echoed)


def cache_dir() -> Path:
    """The workbook's per-machine cache folder: ``$WORKBOOK_CACHE_DIR``, default ``~/.cache/workbook``
    (the calibration tables, ``calibrate.runs``; the validated catalogs, ``catalog._validated``; the drawn
    charts, ``views.charts.base``). Read on each
    call, so that a test or a benchmark can point it elsewhere."""
    return Path(os.environ.get("WORKBOOK_CACHE_DIR") or Path.home() / ".cache" / "workbook")


def rel(path: str | Path) -> str:
    """``path`` relative to the working directory when it lies below it (for error messages that
    name a file the user can open), else as given; never raises (a symlink loop, a name longer than
    the system allows) and cut to ``MAX_SHOWN_CHARS`` characters."""
    text = str(path)
    if len(text) <= 4096:
        try:
            text = str(Path(text).resolve().relative_to(Path.cwd()))
        except (ValueError, OSError, RuntimeError):
            pass
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 3] + "..."


SCENARIO_FILE_KEYS = (("workload", "hf_config"), ("measurements",))  # files a scenario names


def beside(data, folder: str | Path, keys=SCENARIO_FILE_KEYS):
    """A scenario mapping with each relative file it names (``workload.hf_config``,
    ``measurements``) made absolute against ``folder``, the scenario file's own folder."""
    if not isinstance(data, dict):
        return data
    for key in keys:
        node = data
        for k in key[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
        value = node.get(key[-1]) if isinstance(node, dict) else None
        if isinstance(value, str) and value and not Path(value).is_absolute():
            node[key[-1]] = str((Path(folder) / value).resolve())
    return data


def data_state(extra=()) -> tuple:
    """What the catalogs would read now: each ``DATA_DIR/*.csv`` (and each path of ``extra``) by path,
    size and modification time, so that a result cached on it is recomputed after a file changes or
    the data folder moves (the analysis and comparison caches key on it)."""
    out = []
    for f in [*sorted(DATA_DIR.glob("*.csv")), *(Path(str(p)) for p in extra)]:
        try:
            st = f.stat()
            out.append((str(f), st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((str(f), None, None))
    return tuple(out)


_DIGESTS: dict = {}   # path -> ((size, mtime_ns, inode), sha256 hex) of the files ``file_sha256`` read
RACY_NS = 2_000_000_000   # a digest is reused only for a file last modified this long before it was read


def file_sha256(f: Path) -> str:
    """The sha256 of a file's bytes, read again only when its size, modification time or inode changed
    (``data_state``'s rule for the analysis caches): a report hashes the same ~200 files for its inputs digest
    (``report.digest``) and for the calibration table's key, which it asks for twice (notebook 02's error
    summary and chart), about 6 ms each time. A file modified less
    than ``RACY_NS`` before it was read is read every time (git's "racy clean" rule: file times come from
    a coarse clock, so an edit right after the read could keep its size and time)."""
    try:
        st = f.stat()
        sig = (st.st_size, st.st_mtime_ns, st.st_ino)
    except OSError:
        sig = None
    hit = _DIGESTS.get(f)
    if sig is not None and hit is not None and hit[0] == sig:
        return hit[1]
    import hashlib
    import time

    read_at = time.time_ns()
    digest = hashlib.sha256(f.read_bytes()).hexdigest()
    if sig is not None and sig[1] < read_at - RACY_NS:
        _DIGESTS[f] = (sig, digest)
    return digest


def keep_newest(folder: Path, pattern: str, keep: int) -> list[Path]:
    """Delete all but the ``keep`` most recently modified files of ``folder`` matching ``pattern`` (a
    cache's files: every edit of what they are made from writes a new one). Returns the files removed;
    a file that vanished meanwhile (another process pruning) is skipped, one that cannot be removed
    is left."""
    found = []
    for f in Path(folder).glob(pattern):
        try:
            found.append((f.stat().st_mtime_ns, f))
        except OSError:
            pass
    removed = []
    for _, f in sorted(found, reverse=True)[keep:]:
        try:
            f.unlink()
            removed.append(f)
        except OSError:
            pass
    return removed


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file in the same folder and a
    rename, so that a reader sees the whole old file or the whole new one, never half of it (the
    caches: catalogs, calibration tables, drawn charts, report durations; the index of reports). The
    folder is made if missing; the temporary file is removed on any error, which is raised."""
    import threading

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
