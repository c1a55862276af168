"""The one door for every file the tool reads: scenarios, portfolios, Hugging Face config.json,
measurements CSV, price CSVs, summaries for ``diff``.

Each read is checked before any byte is parsed, so that no path can stall, flood or leak:

* the path: at most ``MAX_PATH_CHARS`` characters; symlinks resolved, a loop refused; nothing under
  ``/proc``, ``/sys`` or ``/dev`` (their "regular" files report size 0 and stream the kernel's data:
  ``/proc/self/environ`` would print the environment);
* the file: ``os.stat`` before ``open``; only a regular file (a FIFO would block the read forever,
  ``/dev/zero`` never ends, a directory is not a file), opened with ``O_NONBLOCK`` and checked again
  with ``fstat`` on the open descriptor (the path could be swapped between the two);
* the size: the caller's cap, read from ``st_size`` before reading, and at most cap + 1 bytes read;
* the text: UTF-8 (a UTF-8 byte-order mark is dropped), UTF-16 with its byte-order mark decoded;
  anything else refused by name with the offset of the first bad byte; NUL bytes (a binary file)
  refused;
* JSON: nesting at most ``MAX_DEPTH`` levels, integers of at most ``MAX_INT_DIGITS`` digits, no
  ``NaN``/``Infinity``;
* CSV: every row as long as the header, at most ``MAX_CSV_FIELD_CHARS`` per cell, a row cap.

Every message is one line naming the file (as ``paths.rel`` shows it) and never quotes more than
``EXCERPT_CHARS`` characters of a value, nor any line of the file's content. Nothing here imports
from the workbook but ``errors`` and ``paths``.
"""
from __future__ import annotations

import codecs
import csv
import io
import json
import math
import os
import re
import stat
from itertools import accumulate
from pathlib import Path

from . import paths
from .errors import InputError

MAX_PATH_CHARS = 4096          # PATH_MAX on Linux
EXCERPT_CHARS = 60             # messages quote at most this much of any input value
MAX_DEPTH = 64                 # JSON/YAML nesting: a scenario has 4 levels, a summary about 8
MAX_INT_DIGITS = 30            # a config.json's largest integer (vocab, rope theta) has under 10 digits
MAX_CSV_FIELD_CHARS = 10_000   # a cell of the catalog CSVs is under 1,000 characters (notes)
SPECIAL_ROOTS = ("/proc", "/sys", "/dev")
KINDS = {stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
         stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link"}


def excerpt(value, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters: a message never echoes a large input."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def shown(path) -> str:
    """A path as a message shows it (``paths.rel``: relative to the working directory when below
    it, cut short; never raises, a symlink loop or a 100 kB name included)."""
    return paths.rel(path)


def size_words(n: float) -> str:
    """A byte count in words: ``46.1 MB``, ``900 bytes``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


def check_path(path, what: str, label: str | None = None) -> Path:
    """The resolved ``path`` of a regular file that may be read, or ``InputError`` in one line:
    missing, too long a name, a symlink loop, a special folder (/proc, /sys, /dev), a FIFO, a
    device, a socket or a directory. ``what`` says what the file should be ("a scenario YAML file")."""
    label = label or shown(path)
    text = str(path)
    if not text or "\x00" in text:
        raise InputError(f"{label}: not a file name (expected {what})")
    if len(text) > MAX_PATH_CHARS:
        raise InputError(f"{label}: a path of {len(text):,} characters, longer than any file name "
                         f"({MAX_PATH_CHARS}) (expected {what})")
    try:
        real = Path(text).resolve(strict=True)
    except FileNotFoundError:
        raise InputError(f"{label}: file not found (expected {what})") from None
    except RuntimeError:
        raise InputError(f"{label}: a symbolic link that loops (expected {what})") from None
    except OSError as e:
        raise InputError(f"{label}: cannot be opened ({_os_reason(e)}; expected {what})") from None
    root = next((r for r in SPECIAL_ROOTS if str(real) == r or str(real).startswith(r + "/")), None)
    if root:
        raise InputError(f"{label}: a system file (under {root}), not a data file (expected {what})")
    try:
        st = os.stat(real)
    except OSError as e:
        raise InputError(f"{label}: cannot be opened ({_os_reason(e)}; expected {what})") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{label}: {KINDS.get(stat.S_IFMT(st.st_mode), 'not a regular file')}, "
                         f"not a regular file (expected {what})")
    return real


def _os_reason(e: OSError) -> str:
    return (e.strerror or e.__class__.__name__).lower()


def read_bytes(path, what: str, max_bytes: int, label: str | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (``check_path``), at most ``max_bytes`` of them:
    a larger file is refused with its size in words before it is read."""
    label = label or shown(path)
    real = check_path(path, what, label)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise InputError(f"{label}: cannot be opened ({_os_reason(e)}; expected {what})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):   # swapped for something else since check_path
            raise InputError(f"{label}: not a regular file (expected {what})")
        if st.st_size > max_bytes:
            raise InputError(f"{label}: {size_words(st.st_size)}, larger than {what} can be "
                             f"(limit {size_words(max_bytes)})")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise InputError(f"{label}: cannot be read ({_os_reason(e)}; expected {what})") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise InputError(f"{label}: more than {size_words(max_bytes)}, larger than {what} can be")
    return data


def decode(data: bytes, label: str, what: str) -> str:
    """UTF-8 text (a byte-order mark dropped), or UTF-16 with its byte-order mark; anything else
    refused naming the encoding expected and the offset of the first byte that is not UTF-8."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise InputError(f"{label}: starts with a UTF-16 byte-order mark but is not UTF-16 text "
                             f"(expected {what} in UTF-8)") from None
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise InputError(f"{label}: not UTF-8 text (byte 0x{data[e.start]:02X} at offset {e.start}; "
                             f"Latin-1 or Windows-1252? save it as UTF-8) (expected {what})") from None
    if "\x00" in text:
        raise InputError(f"{label}: holds NUL bytes, a binary file (expected {what} as text)")
    return text


def read_text(path, what: str, max_bytes: int, label: str | None = None) -> str:
    """``read_bytes`` then ``decode``: the file's text, newlines as written."""
    label = label or shown(path)
    return decode(read_bytes(path, what, max_bytes, label), label, what)


# --- JSON -------------------------------------------------------------------------------------------

def _bounded_int(label: str):
    def parse(s: str) -> int:
        digits = len(s.lstrip("-"))
        if digits > MAX_INT_DIGITS:
            raise InputError(f"{label}: an integer of {digits:,} digits (at most {MAX_INT_DIGITS} are read)")
        return int(s)
    return parse


def _bounded_float(label: str):
    def parse(s: str) -> float:
        if len(s) > 64:
            raise InputError(f"{label}: a number written with {len(s):,} characters (at most 64 are read)")
        x = float(s)
        if not math.isfinite(x):
            raise InputError(f"{label}: the number {excerpt(s)} is beyond the range of a float")
        return x
    return parse


def _no_constant(label: str):
    def parse(s: str):
        raise InputError(f"{label}: {s} is not a number JSON allows (expected a finite number)")
    return parse


# What ``json_depth_problem`` skips between two brackets: characters that are neither a quote nor a bracket, and
# strings (a quote, then anything but a quote, a backslash escaping the next character whatever it is, up to
# the closing quote or the end of the text, as the loop in ``_depth_problem_at`` reads it). The pattern
# cannot fail, so its greedy parts never backtrack.
_NOT_BRACKETS = re.compile(r'[^"\[\]{}]*(?:"[^"\\]*(?:\\.[^"\\]*)*"?[^"\[\]{}]*)*', re.S)
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth_problem(text: str, max_depth: int = MAX_DEPTH) -> int | None:
    """The offset where brackets outside strings first nest deeper than ``max_depth``, else None
    (checked before parsing: the parser itself recurses).

    The brackets outside strings, in order, are what is left of ``text`` once ``_NOT_BRACKETS`` removed the
    rest (in C); the deepest nesting is the largest running sum of their steps. Only a text nested too
    deep is walked character by character (``_depth_problem_at``) for the offset. The same answer as that
    walk alone, which took 0.2 s of CPU for a report's 3.2 MB summary.json (read twice when a report
    replaces another: ``batch._keep_previous``); this takes about 0.04 s."""
    brackets = _NOT_BRACKETS.sub("", text)
    if not brackets or max(accumulate(map(_BRACKET_STEP.__getitem__, brackets))) <= max_depth:
        return None
    return _depth_problem_at(text, max_depth)


def _depth_problem_at(text: str, max_depth: int) -> int | None:
    """``json_depth_problem``, one character at a time."""
    depth, in_str, esc = 0, False, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                return i
        elif ch in "]}":
            depth -= 1
    return None


def parse_json(text: str, label: str, what: str, max_depth: int = MAX_DEPTH):
    """``json.loads`` with nesting, integer digits and constants bounded (module docstring)."""
    at = json_depth_problem(text, max_depth)
    if at is not None:
        raise InputError(f"{label}: JSON nested deeper than {max_depth} levels (at offset {at}; expected {what})")
    try:
        return json.loads(text, parse_int=_bounded_int(label), parse_float=_bounded_float(label),
                          parse_constant=_no_constant(label))
    except json.JSONDecodeError as e:
        raise InputError(f"{label}: not JSON (line {e.lineno}, column {e.colno}: {e.msg}; expected {what})") from None
    except RecursionError:
        raise InputError(f"{label}: JSON nested too deeply (expected {what})") from None


def read_json(path, what: str, max_bytes: int, label: str | None = None, max_depth: int = MAX_DEPTH):
    """The parsed JSON file at ``path`` (``read_text`` then ``parse_json``)."""
    label = label or shown(path)
    return parse_json(read_text(path, what, max_bytes, label), label, what, max_depth)


def depth(obj, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of lists and dicts in ``obj``, counted without recursion, stopping past ``limit``."""
    stack, deepest = [(obj, 1)], 0
    while stack:
        node, d = stack.pop()
        if isinstance(node, (dict, list, tuple)):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            stack.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


# --- CSV --------------------------------------------------------------------------------------------

def parse_csv(text: str, label: str, what: str, max_rows: int, comment: str | None = None,
              max_field_chars: int = MAX_CSV_FIELD_CHARS) -> tuple[list[str], list[tuple[int, dict]]]:
    """The header and ``(line number, {column: cell})`` of each row of a CSV text: empty file,
    a ragged row (more or fewer cells than the header), a cell beyond ``max_field_chars`` or more
    than ``max_rows`` rows refused in one line naming the row. Blank lines, and lines starting with
    ``comment`` when given, are skipped."""
    lines = [ln for ln in io.StringIO(text, newline="") if not (comment and ln.lstrip().startswith(comment))]
    previous = csv.field_size_limit(max_field_chars)    # a process-wide setting: restored below
    reader = csv.reader(lines)
    try:
        header = next(reader, None)
        while header is not None and not any(c.strip() for c in header):
            header = next(reader, None)
        if header is None:
            raise InputError(f"{label}: empty file, no header row (expected {what})")
        header = [h.strip() for h in header]
        rows = []
        for rec in reader:
            if not any(c.strip() for c in rec):
                continue
            line = reader.line_num
            if len(rec) != len(header):
                raise InputError(f"{label}: row {line}: {len(rec)} cells, the header has {len(header)} "
                                 f"(a ragged row; expected {what})")
            if len(rows) >= max_rows:
                raise InputError(f"{label}: more than {max_rows:,} rows (expected {what})")
            rows.append((line, dict(zip(header, rec))))
    except csv.Error as e:
        where = f"row {reader.line_num}: " if reader.line_num else ""
        reason = "a cell longer than " + f"{max_field_chars:,} characters" if "field larger" in str(e) else str(e)
        raise InputError(f"{label}: {where}not a readable CSV ({excerpt_text(reason)}; expected {what})") from None
    finally:
        csv.field_size_limit(previous)
    return header, rows


def read_csv(path, what: str, max_bytes: int, max_rows: int, comment: str | None = None,
             label: str | None = None) -> tuple[list[str], list[tuple[int, dict]]]:
    """``read_text`` then ``parse_csv``."""
    label = label or shown(path)
    return parse_csv(read_text(path, what, max_bytes, label), label, what, max_rows, comment)


# --- values -----------------------------------------------------------------------------------------

def excerpt_text(text: str, limit: int = 4 * EXCERPT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def number(value, where: str, lo: float, hi: float, integer: bool = False, lo_open: bool = True):
    """``value`` (a cell or a JSON value) as a number within ``(lo, hi]`` (``[lo, hi]`` when not
    ``lo_open``); None for a blank cell; ``InputError`` naming ``where`` and the range otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    kind = "an integer" if integer else "a number"
    span = f"above {lo:g} and at most {hi:,.6g}" if lo_open else f"from {lo:g} to {hi:,.6g}"
    if isinstance(value, bool):
        raise InputError(f"{where}: expected {kind} {span}, got {excerpt(value)}")
    if isinstance(value, str):
        if len(value) > 64:
            raise InputError(f"{where}: expected {kind} {span}, got {excerpt(value)}")
        try:
            x = float(value)
        except ValueError:
            raise InputError(f"{where}: expected {kind} {span}, got {excerpt(value)}") from None
    elif isinstance(value, (int, float)):
        try:
            x = float(value)
        except OverflowError:
            raise InputError(f"{where}: expected {kind} {span}, got a number beyond any float") from None
    else:
        raise InputError(f"{where}: expected {kind} {span}, got {type(value).__name__}")
    below = x <= lo if lo_open else x < lo
    if not math.isfinite(x) or below or x > hi or (integer and x != math.floor(x)):
        raise InputError(f"{where}: expected {kind} {span}, got {excerpt(value)}")
    return int(x) if integer else x
