"""The output folder of a batch: one run at a time (a lock file holding the writer's PID), which
names a report folder may take, and write errors in one line naming the folder.

- ``output_lock(out)``: ``<out>/.report.lock`` is created exclusively (``O_CREAT | O_EXCL``) with the
  PID and host of the run; a second run into the same folder is refused with a line naming the PID.
  A lock whose process no longer runs on this host (a killed run) is stale: it is removed and taken,
  as ``recover`` does for staging folders. Re-entrant within a process.
- ``name_problem(name)``: the names a report folder may not take (the index files, ``_failed``,
  hidden names, anything that is not a plain file name).
- ``write_error(e, folder)``: an ``OSError`` while writing as one sentence (disk full, read-only).
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import socket
import time
from pathlib import Path

from .. import paths
from ..errors import InputError

LOCK_FILE = ".report.lock"
FAILED_DIR = "_failed"
# Names the batch itself writes into the output folder (compared without case: a case-insensitive
# file system would merge them), and files the docs put there (reports/README.md, cron.log).
RESERVED_NAMES = ("index", "index.html", "index.csv", FAILED_DIR, "readme", "readme.md", "cron.log", LOCK_FILE)
_SAFE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
MAX_NAME_CHARS = 120  # a folder name, with room for ".staging-<name>-<pid>-<random>" under 255 bytes

_HELD: dict[Path, int] = {}  # folders this process holds the lock of -> nesting depth


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a report folder, or ``None``."""
    if not isinstance(name, str) or not _SAFE_NAME.match(name) or name.endswith(".") or ".." in name:
        return f"{name!r} is not a safe folder name (expected lower-case letters, digits, '.', '_', '-')"
    if len(name) > MAX_NAME_CHARS:
        return f"{len(name)} characters, longer than a report folder name may be ({MAX_NAME_CHARS})"
    if name.lower() in RESERVED_NAMES or name.lower().startswith(("index.", FAILED_DIR)):
        return (f"{name!r} is reserved in the output folder (the batch writes {', '.join(RESERVED_NAMES[:4])} "
                "there); give the scenario another name")
    return None


_WHY = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
        errno.EROFS: "read-only file system", errno.EACCES: "permission denied", errno.EPERM: "not permitted"}


def write_error(e: OSError, folder: str | Path) -> str:
    """``cannot write in <folder>: no space left on the device (ENOSPC)`` and the like."""
    code = errno.errorcode.get(e.errno or 0)
    why = _WHY.get(e.errno) or e.strerror or str(e) or type(e).__name__
    return f"cannot write in {paths.rel(Path(folder))}/: {why}" + (f" ({code})" if code else "")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holder(lock: Path) -> tuple[int | None, str]:
    """(pid, host) written in ``lock``; pid None when unreadable (being written, or garbage)."""
    try:
        fields = lock.read_text().split()
        return int(fields[0]), (fields[1] if len(fields) > 1 else "")
    except (OSError, ValueError, IndexError):
        return None, ""


def _is_stale(lock: Path) -> bool:
    pid, host = _holder(lock)
    if pid is None:  # empty: a run killed between create and write, or one writing it right now
        return _old(lock)
    return host == socket.gethostname() and not alive(pid)


def _old(lock: Path, seconds: float = 10.0) -> bool:
    try:
        return time.time() - lock.stat().st_mtime > seconds
    except OSError:
        return False


def _create(lock: Path) -> bool:
    """Create ``lock`` with this PID and host; False when it exists."""
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
    except OSError:
        os.close(fd)
        lock.unlink(missing_ok=True)
        raise
    os.close(fd)
    return True


def acquire(out: str | Path) -> list[str]:
    """Take ``<out>/.report.lock`` (creating ``out``), or InputError naming the run that holds it or
    why the folder cannot be written. Returns notes (a stale lock removed)."""
    out = Path(out)
    key = out.resolve()
    if key in _HELD:
        _HELD[key] += 1
        return []
    lock, notes = out / LOCK_FILE, []
    try:
        out.mkdir(parents=True, exist_ok=True)
        taken = _create(lock)
        if not taken and _is_stale(lock):
            pid, _host = _holder(lock)
            lock.unlink(missing_ok=True)
            notes.append(f"removed {LOCK_FILE} of a run that no longer runs (pid {pid})")
            taken = _create(lock)
    except OSError as e:
        raise InputError(f"{paths.rel(out)}: {write_error(e, out)}") from None
    if not taken:
        pid, host = _holder(lock)
        who = f"pid {pid}" + (f" on {host}" if host and host != socket.gethostname() else "") if pid else "another run"
        raise InputError(f"{paths.rel(out)}: another report run ({who}) is writing this folder ({LOCK_FILE}); "
                         "wait for it to finish or use another --out")
    _HELD[key] = 1
    return notes


def release(out: str | Path) -> None:
    key = Path(out).resolve()
    _HELD[key] -= 1
    if _HELD[key] == 0:
        del _HELD[key]
        lock = Path(out) / LOCK_FILE
        if _holder(lock)[0] == os.getpid():
            lock.unlink(missing_ok=True)


@contextlib.contextmanager
def output_lock(out: str | Path, notes: list[str] | None = None):
    """Hold ``<out>/.report.lock`` for the block (see ``acquire``); stale-lock notes go to ``notes``."""
    found = acquire(out)
    if notes is not None:
        notes.extend(found)
    try:
        yield
    finally:
        release(out)
