"""Text widths as vl-convert 1.9 measures them, computed in Python, and Vega's label truncation.

vl-convert 1.x replaces Vega's text measurement (vega-scenegraph ``textMetrics.width``) by a call into
Rust (``op_text_width``, vl-convert-rs/src/text.rs at v1.9.0) that writes a one-text SVG and parses it
with usvg: the width is the text's bounding box, which usvg builds from the glyphs' advances after
shaping (rustybuzz, so with the font's pair kerning), after SVG's whitespace handling (leading and
trailing spaces dropped, runs of spaces collapsed); ``min(width, item.limit)`` when the item has a
limit. With ``vendored_fonts_only`` the font of ``sans-serif`` is the Liberation Sans vl-convert
carries. Each measurement is a full usvg layout without a cache, and Vega measures a label with a
limit once per step of its truncation search (``truncate``), so removing that search is the saving.

The model: the width of a text of size ``s`` is ``s / REF_SIZE`` times the sum of the advances of its
characters and of the adjustments of each adjacent pair, all read from vl-convert itself at
``REF_SIZE`` (``derive_table``): the advance of ``c`` is the width of ``"c"``, the adjustment of the
pair ``ab`` is ``width("ab") - width("a") - width("b")`` (non-zero for 88 pairs: the font's kerning),
and a space's advance and its pairs are read from ``"n n"``, ``"a n"`` and ``"n b"`` (only sums of a
space's advance and its two pair terms ever occur, so fixing the pairs with ``n`` at zero loses
nothing). At ``REF_SIZE`` = 2048 px (Liberation Sans' units per em) every width is a whole number,
and at the sizes the charts use (11 px) usvg's f32 arithmetic is exact, so the model gives vl-convert's
width to the last bit: checked on every label of the eight shipped reports and every prefix of them
(``tests/views/test_chart_labels.py`` checks a sample against vl-convert each run). The table is
generated once (``python -m workbook.views.charts.textwidth``, which writes ``_liberation_sans.py``
with its provenance) and is used only with the vl-convert version it was read from and the vendored
font (``table``); anything else falls back to the conservative rule in ``labels``.
"""
from __future__ import annotations

import datetime as _dt
import os
import sys
from pathlib import Path

from . import _liberation_sans
from ...paths import VL_CONVERT_FONTS_CONF

REF_SIZE = 2048
ELLIPSIS = "\u2026"     # vega-scenegraph's default ``item.ellipsis``
# Read by vl-convert's font database: no system font, its own Liberation Sans (``base.vendored_fonts_only``).
FONTS_CONF = VL_CONVERT_FONTS_CONF
# The characters the table holds: printable ASCII and the four non-ASCII characters the labels use.
ALPHABET = "".join(map(chr, range(32, 127))) + "·…–—"
# Decisions closer than this to a limit are left to Vega (the model was exact on every label tested;
# the margin only guards against a size whose scaling usvg would round in f32).
MARGIN_PX = 1e-3


def vendored_font() -> bool:
    """Whether this process points vl-convert at its vendored font only (``base.vendored_fonts_only``)."""
    return os.environ.get("FONTCONFIG_FILE") == str(FONTS_CONF)


def table():
    """The width table when it applies to this process (vl-convert's version is the table's and
    vl-convert measures with its vendored font, ``vendored_font``), else None."""
    import vl_convert

    if vl_convert.__version__ != _liberation_sans.VL_CONVERT_VERSION or not vendored_font():
        return None
    return _liberation_sans


def text_width(text: str, size: float, widths=_liberation_sans) -> float | None:
    """vl-convert 1.9's width of ``text`` in ``sans-serif`` at ``size`` px, normal weight and style
    (the model above); None when a character is not in the table."""
    words = [w for w in text.split(" ") if w]
    units = 0
    previous = None
    for char in " ".join(words):
        advance = widths.ADVANCE.get(char)
        if advance is None:
            return None
        units += advance
        if previous is not None:
            units += widths.PAIR.get(previous + char, 0)
        previous = char
    return units * size / widths.REF_SIZE


def truncate(text: str, limit: float, size: float, widths=_liberation_sans) -> str | None:
    """The label Vega draws for ``text`` with a limit of ``limit`` px, computed as Vega computes it
    (vega-scenegraph 5.1.0 ``src/util/text.js``, ``textValue`` and ``truncate``, the version inside
    vl-convert 1.9: the text trimmed; unchanged when ``width(text) < limit``; else the longest prefix
    found by its binary search with ``width(prefix) < limit - width("…")``, followed by "…"; left to
    right, the default ``dir``), with vl-convert's width (``min(text_width, limit)``, its
    ``textMetrics.width`` override). None when a character is not in the table or any comparison on
    the way is within ``MARGIN_PX`` of its bound (left to Vega)."""
    text = text.strip()
    if not text:
        return text

    def below(t: str, bound: float) -> bool | None:
        # Vega's ``width(t) < bound`` with width = min(text_width, limit): the same as
        # ``text_width < bound`` for any bound up to the limit
        w = text_width(t, size, widths)
        if w is None or abs(w - bound) <= MARGIN_PX:
            return None
        return w < bound

    fits = below(text, limit)
    if fits is None or fits:
        return None if fits is None else text
    bound = limit - min(text_width(ELLIPSIS, size, widths), limit)
    lo, hi = 0, len(text)
    while lo < hi:
        mid = 1 + ((lo + hi) >> 1)
        shorter = below(text[:mid], bound)
        if shorter is None:
            return None
        if shorter:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + ELLIPSIS


def measure(texts: list[str], size: float) -> list[float]:
    """vl-convert's own widths of ``texts`` (``sans-serif``, ``size`` px, no limit): one Vega scene of
    text marks, each one's width read from its bounds (``x2 - x1``, which vega-scenegraph sets from
    ``textMetrics.width``) through a second mark drawn from the first (reactive geometry)."""
    import vl_convert

    enter = {"x": {"value": 0}, "y": {"field": "i"}, "text": {"field": "t"}, "fontSize": {"value": size},
             "font": {"value": "sans-serif"}, "align": {"value": "left"}}
    spec = {"width": 10, "height": 10,
            "data": [{"name": "t", "values": [{"t": t, "i": i} for i, t in enumerate(texts)]}],
            "marks": [{"type": "text", "name": "texts", "from": {"data": "t"}, "encode": {"enter": enter}},
                      {"type": "rect", "from": {"data": "texts"},
                       "encode": {"enter": {"x": {"field": "bounds.x1"}, "x2": {"field": "bounds.x2"},
                                            "y": {"value": 0}, "height": {"value": 1}}}}]}
    scene = vl_convert.vega_to_scenegraph(spec)["scenegraph"]
    return [item["width"] for item in scene["items"][0]["items"][1]["items"]]


def derive_table(anchor: str = "n") -> dict:
    """The advances and pair adjustments of ``ALPHABET`` at ``REF_SIZE``, read from vl-convert (see
    the module's docstring); about 10,000 measurements, 2 s."""
    chars = [c for c in ALPHABET if c != " "]
    singles = dict(zip(chars, measure(chars, REF_SIZE)))
    pairs = [a + b for a in chars for b in chars]
    spaced = [a + " " + anchor for a in chars] + [anchor + " " + b for b in chars]
    pair_w, spaced_w = measure(pairs, REF_SIZE), measure(spaced, REF_SIZE)
    advance = dict(singles)
    advance[" "] = spaced_w[chars.index(anchor)] - 2 * singles[anchor]
    pair = {p: w - singles[p[0]] - singles[p[1]] for p, w in zip(pairs, pair_w)}
    for (text, w) in zip(spaced, spaced_w):
        a, b = text[0], text[2]
        key = a + " " if b == anchor else " " + b
        if a == anchor and b == anchor:
            continue
        pair[key] = w - singles[a] - singles[b] - advance[" "]
    return {"advance": advance, "pair": {k: v for k, v in pair.items() if v}}


def _number(v: float):
    return int(v) if float(v).is_integer() else v


def write_table(path: Path = Path(__file__).with_name("_liberation_sans.py")) -> Path:
    """Derive the table from the installed vl-convert (with its vendored font) and write it as a
    Python module with its provenance."""
    if os.environ.setdefault("FONTCONFIG_FILE", str(FONTS_CONF)) != str(FONTS_CONF):
        raise RuntimeError("FONTCONFIG_FILE is set to another configuration: the table is of the vendored font")
    import vl_convert

    t = derive_table()
    lines = [
        '"""Advances and pair adjustments of vl-convert\'s vendored Liberation Sans (regular), in px at',
        f"REF_SIZE = {REF_SIZE} px, as vl-convert measures text (generated by",
        "``python -m workbook.views.charts.textwidth``; do not edit: see ``textwidth``).",
        "",
        f"Provenance: vl-convert-python {vl_convert.__version__} (Vega {vl_convert.get_vega_version()}),",
        "FONTCONFIG_FILE at an empty font folder (``vendored_fonts_only``), written "
        f"{_dt.date.today().isoformat()}.\"\"\"",
        f"VL_CONVERT_VERSION = {vl_convert.__version__!r}",
        f"VEGA_VERSION = {vl_convert.get_vega_version()!r}",
        f"REF_SIZE = {REF_SIZE}",
        "ADVANCE = {",
        *[f"    {c!r}: {_number(v)!r}," for c, v in t["advance"].items()],
        "}",
        "PAIR = {",
        *[f"    {p!r}: {_number(v)!r}," for p, v in sorted(t["pair"].items())],
        "}",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_table(*map(Path, sys.argv[1:2])))
