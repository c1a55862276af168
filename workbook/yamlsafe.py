"""The scenario file's YAML reader: safe, bounded and strict, so that no input can stall or flood
the tools (aliases expanding to gigabytes, duplicate keys, non-finite numbers, ``yes`` read as 1)
and no message echoes more than a short excerpt of what it refuses."""
from __future__ import annotations

import copy
import math
import re
from collections import OrderedDict

import yaml

from . import inputs
from .errors import InputError

MAX_YAML_NODES = 20_000      # a scenario has about 60 values; aliases may not expand past this
MAX_YAML_BYTES = 1_000_000
MAX_YAML_DEPTH = inputs.MAX_DEPTH   # nesting levels (a scenario has 4)
EXCERPT_CHARS = inputs.EXCERPT_CHARS  # messages quote at most this much of any input value


class _Loader(yaml.SafeLoader):
    """SafeLoader for scenarios: reads ``5.0e4`` and ``2e12`` as floats (YAML 1.1 needs a sign and a
    dot); ``true``/``false`` only as booleans (``yes``, ``no``, ``on``, ``off`` stay strings, so no
    number field reads ``yes`` as 1); refuses duplicate keys, non-finite numbers (``.inf``, ``.nan``,
    ``1e999``) and aliases that expand to more than ``MAX_YAML_NODES`` nodes (a "billion laughs"
    file of 1 kB otherwise expands to hundreds of MB)."""

    def __init__(self, stream):
        super().__init__(stream)
        self._expanded = 0
        self._depth = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            anchored = self.anchors.get(event.anchor)
            self._expanded += self._size(anchored) if anchored is not None else 1
        else:
            self._expanded += 1
        if self._expanded > MAX_YAML_NODES:
            raise yaml.composer.ComposerError(
                None, None, f"aliases expand to more than {MAX_YAML_NODES} values (refused)", self.peek_event().start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_YAML_DEPTH} levels (refused)", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _size(self, node) -> int:
        if id(node) not in self._sizes:
            self._sizes[id(node)] = 1          # a recursive alias counts once
            kids = node.value if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) else []
            flat = [n for kv in kids for n in (kv if isinstance(kv, tuple) else (kv,))]
            self._sizes[id(node)] = 1 + sum(self._size(k) for k in flat)
        return self._sizes[id(node)]

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {excerpt(key)} (a second value would silently win)", key_node.start_mark)
            seen.add(key) if isinstance(key, (str, int, float, bool)) else None
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_float(self, node):
        value = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a finite number, got {excerpt(node.value)}", node.start_mark)
        return value


_Loader.yaml_implicit_resolvers = {k: [r for r in v if r[0] != "tag:yaml.org,2002:bool"]
                                   for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


excerpt = inputs.excerpt


_PARSED: OrderedDict = OrderedDict()   # document text -> its parsed value (the last 16 documents read)


def read_yaml(text: str):
    """Parse one scenario document with ``_Loader``; ``yaml.YAMLError`` on any refusal. A document read
    before in this process (the same text: a report reads its scenario file nine times, once per
    notebook and step) is handed out as a deep copy of its first parse instead of parsed again (the
    pure-Python parser takes ~8 ms a scenario); a refusal is not remembered, so it is raised every time."""
    hit = _PARSED.get(text)
    if hit is None:
        loader = _Loader(text)
        try:
            hit = loader.get_single_data()
        finally:
            loader.dispose()
        _PARSED[text] = hit
        if len(_PARSED) > 16:
            _PARSED.popitem(last=False)
    else:
        _PARSED.move_to_end(text)
    return copy.deepcopy(hit)


excerpt_text = inputs.excerpt_text


def yaml_problem(e: Exception) -> str:
    """A YAML refusal in words: the problem and its line and column, never the file's own text
    (PyYAML's ``str(e)`` quotes the offending line: a portfolio naming /etc/shadow would print it)."""
    if isinstance(e, RecursionError):
        return "YAML nested too deeply (refused)"
    mark = getattr(e, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    kind = "YAML syntax error" if isinstance(e, (yaml.scanner.ScannerError, yaml.parser.ParserError)) else "YAML error"
    problem = getattr(e, "problem", None) or getattr(e, "context", None) or "not a YAML document"
    return f"{kind}: {where}{excerpt_text(str(problem))}"


def read_yaml_file(path, what: str, label: str, max_bytes: int = MAX_YAML_BYTES):
    """The YAML document of the regular file at ``path`` through ``inputs.read_text`` (no FIFO,
    device, /proc, loop; at most ``max_bytes``; UTF-8 or UTF-16 with BOM), parsed by ``read_yaml``;
    ``InputError`` in one line naming ``label`` otherwise. An empty file reads as None."""
    text = inputs.read_text(path, what, max_bytes, label)
    if not text.strip():
        return None
    try:
        return read_yaml(text)
    except (yaml.YAMLError, RecursionError) as e:
        raise InputError(f"{label}: {yaml_problem(e)}") from None
