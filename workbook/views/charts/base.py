"""The charts' theme, the offline renderer and the chart for "nothing to draw"."""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
from pathlib import Path

import altair as alt
import altair.vegalite.v6.api as _api
import pandas as pd
import numpy as np
from altair.utils.schemapi import debug_mode

from ...model.memo import Memo
from .data import default_data_transformer
from ... import paths
from .converter import converter, vendored_font

# vl-convert 2.0 hands Vega-Lite's compile warnings ("Channel opacity should not be used with an unsorted
# discrete field", "Dropping sort property ...") to Python's logging, whose last-resort handler writes them to
# stderr: into a report cell's output, the app's log, a test's output. vl-convert 1.x dropped them
# (``show_warnings`` off by default); errors still come through.
logging.getLogger("vl_convert").setLevel(logging.ERROR)

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf"]


def _theme():
    return alt.theme.ThemeConfig(
        config={
            "view": {"continuousWidth": 520, "continuousHeight": 300, "stroke": None},
            "range": {"category": PALETTE},
            # labelSeparation: two axis labels less than 3 px apart (about a space at 11 px) are not both
            # drawn where Vega-Lite removes overlapping labels (its default 0 px let "0.40" and "0.45" of
            # a tornado chart stand 0.4 px apart, read as one number)
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "grid": True, "gridColor": "#eee", "labelSeparation": 3},
            "legend": {"labelFontSize": 11, "titleFontSize": 12},
            "title": {"fontSize": 14, "anchor": "start"},
            "font": "sans-serif",
        }
    )


def enable(renderer: str = "svg") -> None:
    """Register the theme and pick an offline renderer: ``svg`` (default, static) or ``png``; Altair's
    default data transformer is replaced by ``default_data_transformer`` (the same values, the same row
    limit, column by column)."""
    if "workbook" not in alt.theme.names():
        alt.theme.register("workbook", enable=True)(_theme)
    alt.theme.enable("workbook")
    alt.renderers.enable(renderer)
    if alt.data_transformers.get() is not None and alt.data_transformers.active == "default":
        options = dict(alt.data_transformers.options)
        alt.data_transformers.register("default", default_data_transformer)
        alt.data_transformers.enable("default", **options)


# The channel class Altair would pick for a field given as a string (``x="month:Q"``).
_FIELD_CHANNELS = {"x": alt.X, "y": alt.Y, "x2": alt.X2, "y2": alt.Y2, "color": alt.Color, "shape": alt.Shape,
                   "opacity": alt.Opacity, "size": alt.Size, "text": alt.Text, "tooltip": alt.Tooltip,
                   "detail": alt.Detail, "order": alt.Order, "strokeDash": alt.StrokeDash, "xOffset": alt.XOffset,
                   "yOffset": alt.YOffset, "row": alt.Row, "column": alt.Column, "facet": alt.Facet}


def typed(shorthand: str, data) -> str:
    """``shorthand`` with the type Altair would infer for it from ``data`` written out
    (``"accelerator"`` -> ``"accelerator:N"``, ``"chips"`` -> ``"chips:Q"``): the same spec, without
    Altair's inference at ``to_dict``, which builds the narwhals schema of the whole frame for each
    channel given as a plain column name (most of them tooltips; about a third of the spec stage).

    Only where the answer is certain, as Altair 6 reaches it (``utils.core.parse_shorthand``: the
    narwhals dtype of the column, ``infer_vegalite_type_for_narwhals``): a numpy integer or float
    column is quantitative (a numeric dtype), a numpy bool column nominal (Boolean), a pandas string
    column nominal (String; pandas 3 stores text so by default), an object column
    whose first 100 values pandas infers as ``"string"`` nominal (narwhals reads such a column as
    String: ``_pandas_like.utils.object_native_to_narwhals_dtype``). Anything else is left to Altair: a
    shorthand with a type, an aggregate, a time unit or an escape, a name not in ``data`` or in it
    twice, any other dtype (categorical, datetime, extension types, other object columns)."""
    if (not isinstance(data, pd.DataFrame) or any(c in shorthand for c in ":()\\")
            or shorthand not in data.columns):
        return shorthand
    column = data[shorthand]
    if not isinstance(column, pd.Series):
        return shorthand
    dtype = column.dtype
    if isinstance(dtype, pd.StringDtype):   # pandas 3's default for text: narwhals' String
        return f"{shorthand}:N"
    kind = dtype.kind if isinstance(dtype, np.dtype) else None
    if kind in ("i", "u", "f"):
        return f"{shorthand}:Q"
    if kind == "b":
        return f"{shorthand}:N"
    if kind == "O" and pd.api.types.infer_dtype(column.head(100), skipna=True) == "string":
        return f"{shorthand}:N"
    return shorthand


def _channel(name: str, value, data=None):
    cls = _FIELD_CHANNELS.get(name)
    if cls is None:
        return value
    if isinstance(value, str):
        return cls(typed(value, data))
    if isinstance(value, list):
        return [cls(typed(v, data)) if isinstance(v, str) else v for v in value]
    return value


class Chart(alt.Chart):
    """``alt.Chart`` whose ``encode`` wraps a field given as a string in its channel class itself
    (``x="month:Q"`` -> ``alt.X("month:Q")``), with the type Altair would infer from the chart's data
    written out where it is certain (``typed``): the same spec. Altair wraps such a string through
    ``from_dict``, which builds a table of every schema class each time (about 2 ms; 67 times for one
    report's charts)."""

    def encode(self, *args, **channels):
        data = self._kwds.get("data")
        return super().encode(*args, **{k: _channel(k, v, data) for k, v in channels.items()})

    def properties(self, **kwargs):
        return _properties(self, kwargs, super().properties)

    def __add__(self, other):
        """``self + other``: the ``alt.LayerChart`` Altair's ``+`` makes (``alt.layer``: the data both
        layers share lifted to the layer chart), built without its copies when both are plain
        views of this class (no parameters, size or top-level-only keys): Altair deep-copies each
        layer three times (lifting the data, de-duplicating and lifting parameters, 300-odd schema
        objects each with every channel's keywords) and hashes each layer's frame for a view name
        that only a view with selection parameters uses (here computed when first used:
        ``_ViewHash``): about half of a layered chart's build time. The layers here are shallow
        copies (their encodings are shared with ``self`` and ``other``, which Altair's methods never
        change in place); the spec is the same, also after ``interactive()`` (tested)."""
        if not (_plain_view(self) and _plain_view(other)):
            return super().__add__(other)
        data = self._get("data")
        lifted = data is not alt.Undefined and other._get("data") is data
        layers = []
        for chart in (self, other):
            copy = chart.copy(deep=False)
            if lifted:
                copy["_cached_hash"] = _ViewHash(chart)
                copy.data = alt.Undefined
            layers.append(copy)
        with debug_mode(False):
            return LayerChart(data=data if lifted else alt.Undefined, layer=layers)

    def _compute_hash(self) -> str:
        """The view name Altair derives from a layer's content, with the layer's DataFrame hashed
        by its values (``frame_digest``) rather than by ``str(DataFrame)``: Altair computes this
        for every layer of a layered chart (``a + b``), and the text of a 58-column frame costs
        10-15 ms each time (0.1-0.15 s per report). The name is used only for a view holding
        selection parameters (none of the charts has one); it stays deterministic and differs
        between layers of different data, as Altair intends."""
        digest = None if "_cached_hash" in self._kwds else frame_digest(self._kwds.get("data"))
        if digest is None:
            return super()._compute_hash()
        hash_data = {"class": self.__class__.__name__, "mark": getattr(self, "mark", None),
                     "encoding": getattr(self, "encoding", None), "data": digest,
                     "transform": getattr(self, "transform", None)}
        text = json.dumps(hash_data, sort_keys=True, default=str)
        return f"view_{hashlib.sha256(text.encode()).hexdigest()[:16]}"


class _ViewHash:
    """The view name Altair keeps for a layer whose data it lifted (``_cached_hash``: the layer's
    ``_compute_hash`` with its data), computed when first written out: Altair uses it only to name a
    view holding selection parameters (in an f-string), and hashing each layer's frame up front cost
    10-15 ms a report for charts that have none."""

    def __init__(self, chart):
        self._chart, self._value = chart, None

    def __str__(self) -> str:
        if self._value is None:
            self._value, self._chart = self._chart._compute_hash(), None
        return self._value

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __eq__(self, other) -> bool:
        return str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def _settled(data, parts, kwargs: dict, concat: bool = False) -> bool:
    """Whether Altair's compound-chart constructor would leave ``parts`` as they are: no part holds
    selection parameters (to lift) or, in a layer chart, a size (to move up), no parameters are given
    to the compound chart itself, and no data is to be lifted (``_combine_subchart_data``: with no data
    of its own, the compound chart takes the data every part holds, the same object; with data, it
    removes that data from each part holding it or nothing). A concatenation (``concat``) moves no
    size (``HConcatChart.__init__``: data and parameters only), but renames the named layers of a layer
    chart among its parts (``_combine_subchart_params``), so such a part is not settled."""
    parts = list(parts)
    held_keys = ("params",) if concat else ("params", *_LAYER_SIZE_KEYS)
    if kwargs.get("params", alt.Undefined) is not alt.Undefined or not all(
            isinstance(p, alt.SchemaBase) and all(p._get(k) is alt.Undefined for k in held_keys)
            for p in parts):
        return False
    if concat and any(isinstance(p, alt.LayerChart) and any(
            not isinstance(layer, alt.SchemaBase) or layer._get("name") is not alt.Undefined
            for layer in (p._get("layer") or [])) for p in parts):
        return False
    held = [p._get("data") for p in parts]
    if not parts:
        return True
    if data is alt.Undefined:
        return held[0] is alt.Undefined or not all(h is held[0] for h in held)
    return all(h is alt.Undefined for h in held) or not all(h is alt.Undefined or h is data for h in held)


class LayerChart(alt.LayerChart):
    """``alt.LayerChart`` that skips Altair's layer bookkeeping where it changes nothing, and whose
    ``properties`` does not validate each value on the way in (``_properties``).

    Altair's constructor lifts the layers' shared data, de-duplicates and lifts their selection
    parameters and moves their sizes up, deep-copying every layer twice on the way even when there is
    nothing to move; and every copy of a layer chart (``properties``, ``encode``, ``to_dict`` each make
    one) runs the constructor again. With settled layers (``_settled``) the result is the layers as
    they are: this constructor then only checks them, as Altair's does."""

    def __init__(self, data=alt.Undefined, layer=(), **kwargs):
        if not _settled(data, layer, kwargs):
            super().__init__(data=data, layer=layer, **kwargs)
            return
        for spec in layer:
            _api._check_if_valid_subspec(spec, "LayerChart")
            _api._check_if_can_be_layered(spec)
        alt.TopLevelLayerSpec.__init__(self, data=data, layer=list(layer), **kwargs)

    def properties(self, **kwargs):
        return _properties(self, kwargs, super().properties)


class HConcatChart(alt.HConcatChart):
    """``alt.HConcatChart`` that skips Altair's lifting of data and parameters where there is nothing
    to lift (as ``LayerChart``: each copy otherwise deep-copies every chart concatenated)."""

    def __init__(self, data=alt.Undefined, hconcat=(), **kwargs):
        if not _settled(data, hconcat, kwargs, concat=True):
            super().__init__(data=data, hconcat=hconcat, **kwargs)
            return
        for spec in hconcat:
            _api._check_if_valid_subspec(spec, "HConcatChart")
        alt.TopLevelHConcatSpec.__init__(self, data=data, hconcat=list(hconcat), **kwargs)

    def properties(self, **kwargs):
        return _properties(self, kwargs, super().properties)


class FacetChart(alt.FacetChart):
    """``alt.FacetChart`` that skips Altair's parameter lifting where there is nothing to lift: its
    constructor deep-copies the faceted chart (``_combine_subchart_params``) on every copy of the
    facet chart (``resolve_scale`` and ``properties`` each make one), though with no selection
    parameters in it or given that changes nothing."""

    def __init__(self, data=alt.Undefined, spec=alt.Undefined, facet=alt.Undefined, params=alt.Undefined, **kwargs):
        if params is not alt.Undefined or not isinstance(spec, alt.SchemaBase) or spec._get("params") is not alt.Undefined:
            super().__init__(data=data, spec=spec, facet=facet, params=params, **kwargs)
            return
        _api._check_if_valid_subspec(spec, "FacetChart")
        alt.TopLevelFacetSpec.__init__(self, data=data, spec=spec, facet=facet, params=params, **kwargs)

    def properties(self, **kwargs):
        return _properties(self, kwargs, super().properties)


def _properties(chart, kwargs: dict, altairs):
    """``chart.properties(**kwargs)`` as Altair's ``TopLevelMixin.properties`` sets them (a shallow
    copy with each attribute set), without validating each value against the Vega-Lite schema on
    the way in (a jsonschema validation per property, 10% of a chart's build); the whole spec is
    validated by ``to_dict()`` (the default, as the tests call it). Altair's own for the
    ``selection`` keyword it translates."""
    if "selection" in kwargs:
        return altairs(**kwargs)
    copy = chart.copy(deep=False)
    for key, value in kwargs.items():
        setattr(copy, key, value)
    return copy


_LAYER_SIZE_KEYS = ("width", "height", "view")


def _plain_view(chart) -> bool:
    """Whether ``chart`` is one of this module's ``Chart`` views that Altair would layer as it is (no
    selection parameters to lift, no size to move up to the layer chart, no top-level-only key, no
    facet channel), so that ``Chart.__add__`` may layer it without Altair's copies."""
    if type(chart) is not Chart or chart._get("params") is not alt.Undefined:
        return False
    if any(chart._get(k) is not alt.Undefined for k in (*_LAYER_SIZE_KEYS, *_api.TOPLEVEL_ONLY_KEYS)):
        return False
    encoding = chart._get("encoding")
    return encoding is alt.Undefined or all(encoding._get(c) is alt.Undefined for c in ("row", "column", "facet"))


def hconcat(*charts) -> alt.HConcatChart:
    """``alt.hconcat(*charts)`` (the data every chart shares lifted to the concatenation), built
    without Altair's deep copies of each chart when none has selection parameters (the same spec)."""
    if any(not isinstance(c, (Chart, alt.LayerChart)) or c._get("params") is not alt.Undefined
           or any(c._get(k) is not alt.Undefined for k in _api.TOPLEVEL_ONLY_KEYS) for c in charts):
        return alt.hconcat(*charts)
    data = charts[0]._get("data") if charts else alt.Undefined
    lifted = data is not alt.Undefined and all(c._get("data") is data for c in charts)
    parts = []
    for chart in charts:
        chart = chart.copy(deep=False)
        if lifted:
            chart.data = alt.Undefined
        parts.append(chart)
    with debug_mode(False):
        return HConcatChart(data=data if lifted else alt.Undefined, hconcat=parts)


def one_value_axis(values: pd.Series):
    """The axis of a scale not from zero (``alt.Scale(zero=False)``) over ``values``: where they hold a
    single value the axis has one tick, the value itself, which Vega 6.4 writes in full ("4.423640" days
    where every option takes as long): three significant digits then. Vega's own format otherwise (a fixed
    format could merge the ticks of a narrow range)."""
    return alt.Axis(format=",.3~r") if values.nunique() == 1 else alt.Undefined


def quiet(build):
    """A chart function run with Altair's debug mode off: Altair otherwise validates every schema
    object it is given against the Vega-Lite schema as it is made (``alt.X(...)``, ``alt.Tooltip(...)``,
    ``alt.Scale(...)``: 450 validations for one report's charts, about 13% of their build and spec
    time); the whole spec is still validated by ``to_dict()`` (the default, as the tests call it), and
    the objects and the spec are the same. (The mode is a global of Altair's: another thread
    building a chart meanwhile skips the same validations.)"""
    @functools.wraps(build)
    def wrapper(*args, **kwargs):
        with debug_mode(False):
            return build(*args, **kwargs)

    return wrapper


# Charts handed out again for the same input (``shared_by_frame``), by ``id``: (the chart, its drawing spec
# and memo key once ``static_bundle`` has made them). The chart is held, so its ``id`` stays its own.
_SHARED_CHARTS = Memo(8)


def shared_by_frame(build):
    """A chart function of one DataFrame (and no other argument) whose chart is built once per distinct
    frame in a process (keyed by ``frame_digest`` and the dtypes) and handed out again, the same object,
    for an equal frame; ``static_bundle`` then also skips its spec stage for it (``to_dict``, the column
    cut, the label stage and the memo key: about 8 ms for the calibration chart).

    Why: every report draws the calibration chart from the same table (the shipped runs, identical for
    every scenario), and its drawing was already memoised (``_SVG_MEMO``), but its build and spec stages
    (about 20 ms: a facet chart of two layers, Altair's facet constructor and ``to_dict``) were paid by
    every report of a process. The chart holds its own copy of the frame's columns (``keep``), so a
    caller changing its frame afterwards changes nothing drawn; like every chart here it is not changed
    in place (Altair's methods return copies)."""
    charts = Memo(4)

    @functools.wraps(build)
    def wrapper(frame, *args, **kwargs):
        digest = None if args or kwargs else frame_digest(frame)
        if digest is None:
            return build(frame, *args, **kwargs)

        def built():
            chart = build(frame)
            _SHARED_CHARTS.put(id(chart), (chart, None, None))
            return chart

        return charts.get((digest, tuple(map(str, frame.dtypes))), built)

    wrapper.charts = charts
    return wrapper


def frame_digest(data) -> str | None:
    """A digest of a DataFrame's columns, index and values (None for anything else, or a frame
    whose cells pandas cannot hash, such as lists)."""
    if not isinstance(data, pd.DataFrame):
        return None
    try:
        values = pd.util.hash_pandas_object(data, index=True).to_numpy().tobytes()
    except TypeError:
        return None
    h = hashlib.sha256(values)
    h.update(json.dumps([str(c) for c in data.columns]).encode())
    return f"frame-{h.hexdigest()}"


_TYPE_SUFFIX = re.compile(r":[QNOTG]$")


def column_names(*items) -> list[str]:
    """The data columns named by ``items``: strings (``"cost_usd:Q"`` -> ``cost_usd``), channel
    objects (``alt.Tooltip("x:Q", ...)``, ``alt.X(field=...)``) and lists of either, in order, once each."""
    names: list[str] = []
    for item in items:
        if isinstance(item, (list, tuple)):
            names.extend(column_names(*item))
            continue
        if not isinstance(item, str):
            kwds = getattr(item, "_kwds", {})
            item = kwds.get("shorthand") if isinstance(kwds.get("shorthand"), str) else kwds.get("field")
        if isinstance(item, str):
            names.append(_TYPE_SUFFIX.sub("", item))
    return list(dict.fromkeys(names))


def keep(frame: pd.DataFrame, *items) -> pd.DataFrame:
    """``frame`` cut to the columns ``items`` name (``column_names``; those it has, in that order).

    Why: the frames handed to the charts carry every column of an analysis table (116 for the
    priced options, 58 for the offers), and Altair pays for each column at every step, whatever the
    chart reads: it infers the type of every column for each channel given as a plain name (a
    tooltip), sanitises and serialises each column of the data, hashes the frame for a layer's
    name. ``slim_spec`` cut the columns only after all that. A chart calls this with the columns its
    encodings and tooltips read, so the drawing is the same (the test suite checks that every field
    a chart's spec reads is in its data)."""
    return frame.loc[:, [c for c in column_names(*items) if c in frame.columns]]


def empty(message: str) -> alt.Chart:
    """A chart that says, in words, why there is nothing to draw."""
    return Chart(pd.DataFrame({"text": [message]})).mark_text(size=13).encode(text="text:N").properties(
        width=520, height=60)


def live(chart: alt.TopLevelMixin):
    """An offline, updatable chart widget for JupyterLab and Voila (assign ``.chart`` to update)."""
    alt.JupyterChart.enable_offline()
    return alt.JupyterChart(chart)


# Static SVG of charts already drawn in this process, keyed by their Vega-Lite spec: a report batch
# draws some charts identically for every scenario (the calibration chart: about 0.3 s of vl-convert
# each time). Bounded: a kernel renders a few dozen charts per scenario.
_SVG_MEMO = Memo(64)


_DATUM = re.compile(r"datum(?:\.([A-Za-z_$][\w$]*)|\[\s*(['\"])(.*?)\2\s*\])")
_SIMPLE_TRANSFORMS = {"calculate", "filter", "as"}


def used_fields(node, out: set[str]) -> bool:
    """Add to ``out`` every data column a Vega-Lite spec reads (``field``, ``fields``, ``datum.x`` in
    expressions); False when the spec holds something this does not follow (a transform other than
    calculate/filter, a repeat, selection parameters, a nested or escaped field name, an argmin/argmax
    aggregate, a tooltip of every field), in which case every column must be kept. The inline ``datasets`` themselves are not searched."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "datasets":
                continue
            if k == "field":
                if not isinstance(v, str) or any(c in v for c in ".[]\\"):
                    return False
                out.add(v)
            elif k == "fields" and isinstance(v, list) and all(isinstance(x, str) for x in v):
                out.update(v)
            elif (k == "params" or (k == "transform" and any(set(t) - _SIMPLE_TRANSFORMS for t in v))
                  or (k == "aggregate" and isinstance(v, dict)) or (k == "content" and v == "data")):
                return False   # a field named elsewhere (argmin/argmax), or every field (tooltip content)
            elif not used_fields(v, out):
                return False
    elif isinstance(node, list):
        return all(used_fields(v, out) for v in node)
    elif isinstance(node, str) and "datum" in node:
        refs = [m.group(1) or m.group(3) for m in _DATUM.finditer(node)]
        if node.count("datum") != len(refs):
            return False
        out.update(refs)
    return True


def slim_spec(spec: dict) -> dict:
    """``spec`` with its inline datasets cut to the columns the chart reads (``used_fields``): the
    frames handed to a chart often carry every column of an analysis table (58 for the offers, 116
    for the priced options), which vl-convert parses and carries through Vega's dataflow for nothing.
    The drawing is the same (checked on every chart of the shipped reports: identical SVG); vl-convert's
    time falls by about 15%. Unchanged when a spec holds something ``used_fields`` does not follow."""
    used: set[str] = set()
    if not spec.get("datasets") or not used_fields(spec, used):
        return spec
    datasets = {name: [{c: v for c, v in row.items() if c in used} if isinstance(row, dict) else row for row in rows]
                for name, rows in spec["datasets"].items()}
    return {**spec, "datasets": datasets}


def static_bundle(chart: alt.TopLevelMixin) -> dict:
    """The chart as the active renderer (``svg``) draws it for a notebook output, as
    ``chart._repr_mimebundle_()`` does, but without validating the spec against the Vega-Lite schema
    again (about a third of ``to_dict``'s time; the charts' specs are validated by the test suite),
    its data cut to the columns it reads (``slim_spec``), and memoised by spec (``_SVG_MEMO``, and between processes in
    ``svg_cache_folder``); a chart handed out again by a ``shared_by_frame`` function keeps its spec and
    key from its first drawing. Used by batch report kernels (``report.kernelside``)."""
    shared = _SHARED_CHARTS.data.get(id(chart))
    if shared is not None and shared[0] is chart and shared[1] is not None:
        spec, key = shared[1], shared[2]
    else:
        with debug_mode(False):
            spec = chart.to_dict(validate=False, context={"pre_transform": False})
        spec = slim_spec(spec)
        key = json.dumps(spec, sort_keys=True, default=str)
        if shared is not None and shared[0] is chart:
            _SHARED_CHARTS.data[id(chart)] = (chart, spec, key)
    return dict(_SVG_MEMO.get(key, lambda: _drawn(spec, key)))


SVG_CACHE_MAX_FILES = 2000


def svg_cache_folder() -> Path | None:
    """Where ``static_bundle`` keeps drawn charts between processes: ``$WORKBOOK_CACHE_DIR/svg``
    (default ``~/.cache/workbook/svg``, next to the calibration table's cache), and only while the
    renderer is ``svg`` and vl-convert measures text with its vendored font (``vendored_fonts_only``):
    the drawing then depends on nothing but the spec, the converter and the options, which key it."""
    if alt.renderers.active != "svg" or not vendored_font():
        return None
    return paths.cache_dir() / "svg"


def _drawn(spec: dict, key: str) -> dict:
    """The renderer's bundle for ``spec``, read from the cache folder when this very drawing was made
    before, by any process: every report draws the calibration chart identically (0.25-0.3 s of
    vl-convert), and a report run again on the same scenario and catalog draws every chart as before.
    Written atomically (a temporary file, then a rename); at most ``SVG_CACHE_MAX_FILES`` files, the
    oldest removed first; an unreadable or unwritable cache only costs the drawing."""
    folder = svg_cache_folder()
    if folder is None:
        return _rendered(spec)
    ident = "|".join([key, converter().__version__, alt.SCHEMA_VERSION,
                      json.dumps(alt.renderers.options, sort_keys=True, default=str)])
    path = folder / f"{hashlib.sha256(ident.encode()).hexdigest()}.json"
    try:
        bundle = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(bundle, dict) and isinstance(bundle.get("image/svg+xml"), str):
            return bundle
    except (OSError, ValueError):
        pass
    bundle = _rendered(spec)
    try:
        paths.write_atomic(path, json.dumps(bundle))
        # the names alone (``os.scandir``), not ``folder.glob``'s Path objects: 40% of the time for a full
        # folder (2,000 files: 6.7 -> 2.6 ms of CPU a chart drawn); Path objects only when pruning
        names = [e.name for e in os.scandir(folder) if e.name.endswith(".json")]
        if len(names) > SVG_CACHE_MAX_FILES:
            files = [folder / name for name in names]
            for old in sorted(files, key=lambda f: f.stat().st_mtime)[:len(files) - SVG_CACHE_MAX_FILES]:
                old.unlink(missing_ok=True)
    except OSError:   # read-only home, a file pruned by another process: the drawing stands
        pass
    return bundle


def _rendered(spec: dict) -> dict:
    """``alt.renderers.get()(spec)``; for Altair's own ``svg`` renderer with no options, its call to
    vl-convert made directly (the same arguments: the Vega-Lite version of Altair's schema, no locales).
    Altair's renderer looks up vl-convert's installed version twice a drawing
    (``importlib.metadata``, reading and parsing the package's METADATA: about 0.7 ms a chart)."""
    from altair.vegalite.v6 import display
    renderer = alt.renderers.get()
    if renderer is not display.svg_renderer or alt.data_transformers.active == "vegafusion":
        return renderer(spec)
    return {"image/svg+xml": converter().vegalite_to_svg(spec, vl_version="_".join(alt.SCHEMA_VERSION.split(".")[:2]),
                                                        format_locale=None, time_format_locale=None)}
