"""Label limits the drawing need not enforce: ``fitted_label_limits``, a stage of ``base.static_bundle``."""
from __future__ import annotations

import functools
import json

from . import textwidth

# Vega's default label limits (vega-parser's config: axis.labelLimit, legend.labelLimit), in pixels.
VEGA_LABEL_LIMIT_PX = {"axis": 180, "legend": 160}
VEGA_LABEL_FONT_SIZE = 10
# Every character of Liberation Sans (vl-convert's sans-serif) that ``fitted_label_limits`` accepts
# is at most this many ems wide (the widest, "@", is 1.015 em; "W" 0.944, "M" 0.833, digits 0.556).
MAX_GLYPH_EM = 1.05
_PLAIN_TEXT = set(map(chr, range(32, 127))) | {"·", "…", "–", "—"}
_GUIDES = {"x": "axis", "y": "axis", "color": "legend", "fill": "legend", "stroke": "legend",
           "shape": "legend", "opacity": "legend", "strokeDash": "legend", "size": "legend"}
# A guide with these is left alone; with these others, it is left to the conservative rule (the width
# table is of the regular face, and a format changes the labels' text).
_LABEL_STYLE = {"labelExpr", "labelFont"}
_EXACT_UNKNOWN = {"labelFontWeight", "labelFontStyle", "labelFontVariant", "format", "formatType"}


def _field_texts(spec: dict, field) -> set[str]:
    """Every value of ``field`` across a spec's inline datasets, as text."""
    return {str(row[field]) for rows in (spec.get("datasets") or {}).values() for row in rows
            if isinstance(row, dict) and field in row}


def _label_texts(spec: dict, chdef: dict, made: set[str] | None = ()) -> set[str] | None:
    """Every text a nominal or ordinal guide of ``chdef`` can label (its field's values in the inline
    datasets, which Vega writes as ``String(value)``, and a scale's explicit domain); None unless every
    one is known to be a string: a nested or escaped field name, a non-string value, a domain that is
    not a list of strings, or a transform that may make the field (anything but filter and calculate,
    or a calculate writing it). ``made``: ``_made_fields(spec)`` when the caller has it."""
    field = chdef.get("field")
    if not isinstance(field, str) or any(c in field for c in ".[]\\"):
        return None
    made = _made_fields(spec) if made == () else made
    if made is None or field in made:
        return None
    values = [row[field] for rows in (spec.get("datasets") or {}).values() for row in rows
              if isinstance(row, dict) and field in row]
    scale = chdef.get("scale")
    if isinstance(scale, dict) and "domain" in scale:
        if not isinstance(scale["domain"], list):
            return None
        values += scale["domain"]
    if not values or not all(isinstance(v, str) for v in values):
        return None
    return set(values)


def _made_fields(node, out: set[str] | None = None) -> set[str] | None:
    """The fields the transforms anywhere in a spec write (``calculate``'s ``as``); None when one of
    them is anything but a filter or a calculate (it may make any field). Walked once per spec (it was
    walked once per guide: a tenth of the label stage)."""
    out = set() if out is None else out
    if isinstance(node, list):
        return out if all(_made_fields(v, out) is not None for v in node) else None
    if not isinstance(node, dict):
        return out
    for t in node.get("transform") or []:
        if not isinstance(t, dict) or not (set(t) == {"filter"} or set(t) == {"calculate", "as"}):
            return None
        if isinstance(t.get("as"), str):
            out.add(t["as"])
    ok = all(_made_fields(v, out) is not None for k, v in node.items() if k not in ("datasets", "transform"))
    return out if ok else None


def _extent_from_the_widest(channel: str, kind: str, guide: dict, config: dict) -> bool:
    """Whether labels narrower than the widest leave the guide's layout as it is: a y axis on the left
    or right with level labels (its extent is the widest label's; an x axis' bounds also take the
    first and last labels' own widths), or a legend of one column (each entry as wide as the widest),
    without label overlap or bound checks (which test each label's own bounds) or such settings in
    the config."""
    settings = {"labelOverlap", "labelBound", "labelAngle", "orient", "columns", "direction"}
    if {"labelOverlap", "labelBound"} & set(guide) or any(
            settings & set(v) for k, v in config.items() if k.startswith(kind) and isinstance(v, dict)):
        return False
    if kind == "axis":
        return channel == "y" and guide.get("orient", "left") in ("left", "right") and not guide.get("labelAngle")
    if "columns" in guide:
        return guide["columns"] == 1
    return guide.get("direction", "vertical") == "vertical" and guide.get("orient", "right") not in ("top", "bottom")


def _label_expr(truncated: dict[str, str]) -> str:
    """A Vega expression giving each label in ``truncated`` its truncated text, any other label as
    it is (string literals written as JSON, which Vega's expression parser reads as JavaScript)."""
    expr = "datum.label"
    for label, text in sorted(truncated.items(), reverse=True):
        expr = (f"datum.label === {json.dumps(label, ensure_ascii=False)} ? "
                f"{json.dumps(text, ensure_ascii=False)} : {expr}")
    return expr


def exact_limit(labels: set[str], limit: float, size: float, widths) -> tuple[bool, dict[str, str]] | None:
    """``_exact_limit`` of the labels in order, memoised (the layers of a chart share their guides)."""
    found = _exact_limit(tuple(sorted(labels)), limit, size, widths)
    return None if found is None else (found[0], dict(found[1]))


@functools.lru_cache(maxsize=256)
def _exact_limit(labels: tuple[str, ...], limit: float, size: float, widths) -> tuple | None:
    """What a guide of ``labels`` under ``limit`` at ``size`` px needs for Vega to draw it as before:
    (whether it keeps its limit, the labels to truncate here, each with the text Vega would draw:
    ``textwidth.truncate``). No limit when Vega would truncate none of them. Otherwise the limit stays,
    and Vega itself truncates the labels this cannot decide with ``textwidth.MARGIN_PX`` to spare, those
    whose truncated text is not narrower than the limit, and, if none of these is certain to be
    truncated, one more (the shortest): Vega gives a label it truncates the bounds of the limit
    (``min(width, limit)`` of the whole label, vl-convert's width of the untruncated text), where a
    label truncated here gets the bounds of its own text, so the guide keeps its extent only while one
    label at least is truncated by Vega. The others, truncated here, each cost Vega one measurement
    (``width(text) < limit``) instead of a binary search of them. None when there is nothing to gain."""
    truncated, by_vega, unsure = {}, False, False
    for label in labels:
        text = textwidth.truncate(label, limit, size, widths)
        if text is None:
            unsure = True
        elif text != label.strip():
            width = textwidth.text_width(text, size, widths)
            if width is None or width >= limit - textwidth.MARGIN_PX:
                by_vega = True
            else:
                truncated[label] = text
    if not truncated:
        return None if unsure or by_vega else (False, ())
    if not by_vega:
        del truncated[min(truncated, key=lambda label: (len(label), label))]
    return (True, tuple(truncated.items())) if truncated else None


def fitted_label_limits(spec: dict) -> dict:
    """``spec`` with ``labelLimit: 0`` (no limit) on each axis and legend whose labels Vega would not
    truncate, and the labels it would truncate truncated here exactly as Vega would (a ``labelExpr``
    mapping each to its text) but one, where that leaves the drawing as it was: the same SVG, with
    fewer text measurements.

    Why: vl-convert 1.x measures a text by laying it out with usvg (no cache). Vega measures a label
    with a limit once more when it writes it (``textValue``: ``width(text) < limit``), and a label over
    the limit once per step of a binary search (``truncate``), about 8 layouts of a 40-60 character
    text; text measurement is most of what a chart costs to draw (the offers chart, 21 of 25 labels
    truncated: 0.12 s, 0.05 s without limits). (vl-convert 2.0 measures with a canvas and Vega keeps
    each width it measured, so the saving is smaller there.) A label narrower than the limit is never
    truncated, so without the limit it is drawn the same. A truncated label is drawn with the same text
    either way, but Vega gives the label it truncates the bounds of the limit (its bounds take
    vl-convert's ``min(width, limit)`` of the whole label) and a label truncated beforehand the width of
    its text, so a guide whose labels were all truncated here would be up to ``limit - width`` narrower
    (0.2-1.5 px on the offers and memory axes, the chart moved by as much): the guide keeps its limit
    and one truncated label is left to Vega (``_exact_limit``), where the layout takes only the widest
    label (``_extent_from_the_widest``: a y axis, a one-column legend); elsewhere truncating labels are
    left to Vega.

    Exact, where ``textwidth.table()`` applies (vl-convert 1.9 with its vendored font): a nominal or
    ordinal guide whose every label (``_label_texts``) is text the width table holds, at a known size
    in the regular face, each of Vega's decisions at least ``textwidth.MARGIN_PX`` from its bound.
    Conservative, otherwise: a quantitative axis (no ``labelExpr``) labels numbers, which d3-format
    writes in fewer than 25 characters of digits, separators, signs and SI or currency symbols (under
    180 px at any label size up to 13 px); a nominal or ordinal axis or legend whose every value is
    plain text of n characters with n x ``MAX_GLYPH_EM`` x the label font size under the limit.
    Anything else (a label expression or format, a field made by a transform, a limit or label font
    set in the config, a font other than sans-serif, characters outside the table) keeps its limit.
    An explicit ``labelLimit`` is treated as Vega's default is. Text marks with a ``limit`` are left
    alone (none of the charts has one)."""
    config = spec.get("config") or {}
    if (config.get("font", "sans-serif") != "sans-serif" or "guide-label" in (config.get("style") or {})
            or any(isinstance(v, dict) and ({"labelLimit", "labelFont", "labelFontWeight", "labelFontStyle",
                                             "labelFontVariant"} & set(v)
                                            or (k not in _GUIDES.values() and "labelFontSize" in v))
                   for k, v in config.items() if k.startswith(("axis", "legend")))):
        return spec
    widths = textwidth.table()
    made = _made_fields(spec)

    def fitted(channel: str, kind: str, chdef: dict, guide: dict) -> dict | None:
        explicit = guide.get("labelLimit")
        if explicit is not None and (isinstance(explicit, bool) or not isinstance(explicit, (int, float))
                                     or explicit <= 0):
            return None
        limit = VEGA_LABEL_LIMIT_PX[kind] if explicit is None else explicit
        if chdef.get("type") == "quantitative":
            ok = kind == "axis" and explicit is None and not {"timeUnit", "bin"} & set(chdef)
            return {**guide, "labelLimit": 0} if ok else None
        if chdef.get("type") not in ("nominal", "ordinal") or {"timeUnit", "bin", "aggregate"} & set(chdef):
            return None
        size = guide.get("labelFontSize", config.get(kind, {}).get("labelFontSize", VEGA_LABEL_FONT_SIZE))
        if "format" in guide or isinstance(size, bool) or not isinstance(size, (int, float)) or size <= 0:
            return None
        labels = _label_texts(spec, chdef, made)
        if widths is not None and labels and not _EXACT_UNKNOWN & set(guide):
            found = exact_limit(labels, limit, size, widths)
            if found is not None and not found[0]:
                return {**guide, "labelLimit": 0}
            if found is not None and _extent_from_the_widest(channel, kind, guide, config):
                return {**guide, "labelExpr": _label_expr(found[1])}
        values = _field_texts(spec, chdef.get("field"))
        if values and all(set(v) <= _PLAIN_TEXT for v in values) and max(map(len, values)) * MAX_GLYPH_EM * size < limit:
            return {**guide, "labelLimit": 0}
        return None

    def visit(node):
        if isinstance(node, list):
            return [visit(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: visit(v) for k, v in node.items() if k != "datasets"}
        if "datasets" in node:
            out["datasets"] = node["datasets"]
        encoding = node.get("encoding")
        if isinstance(encoding, dict):
            enc = dict(out["encoding"])
            for channel, kind in _GUIDES.items():
                chdef = enc.get(channel)
                if not isinstance(chdef, dict) or not isinstance(chdef.get("field"), str):
                    continue
                guide = chdef.get(kind, {})
                if guide is None or not isinstance(guide, dict) or _LABEL_STYLE & set(guide):
                    continue
                new = fitted(channel, kind, chdef, guide)
                if new is not None:
                    enc[channel] = {**chdef, kind: new}
            out["encoding"] = enc
        return out

    return visit(spec)
