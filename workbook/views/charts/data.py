"""The charts' data as Altair writes it into a spec, faster: a DataFrame's records column by column
(``frame_values``), behind Altair's default data transformer (``default_data_transformer``, which
``views.charts.base.enable`` registers under Altair's name "default")."""
from __future__ import annotations

import numpy as np
import pandas as pd
from altair.utils.data import limit_rows, to_values


def default_data_transformer(data=None, max_rows: int | None = 5000):
    """Altair's default data transformer (``altair.vegalite.data.default_data_transformer``: the row
    limit, then ``to_values``) with a pandas DataFrame turned into its records by ``frame_values``
    (column by column) rather than by ``sanitize_pandas_dataframe`` and ``DataFrame.to_dict``: the same
    values of the same Python types, so the same spec and the same dataset names. Anything
    ``frame_values`` does not take (None) goes through Altair's own ``to_values``.

    Why: Altair's sanitising costs a copy of the frame and a pandas ``astype``/``where`` per column
    (0.5-1 ms a column), then ``to_dict`` boxes every cell: about a quarter of the charts' build and
    spec time (0.67 s for the 146 frames of the 8 shipped reports, 0.09 s with ``frame_values``)."""
    def pipe(data):
        if isinstance(data, pd.DataFrame) and (max_rows is None or len(data) <= max_rows):
            values = frame_values(data)
            if values is not None:
                return {"values": values}
        return to_values(limit_rows(data, max_rows=max_rows))

    return pipe if data is None else pipe(data)


def _column_values(column: pd.Series) -> list | None:
    """One column's cells as ``sanitize_pandas_dataframe`` and ``to_dict(orient="records")`` give them
    (numpy numbers and bools as Python's, a missing or infinite float, a missing pandas text or nullable
    value as None), or None for a dtype this does not follow."""
    dtype = column.dtype
    if isinstance(dtype, np.dtype):
        kind = dtype.kind
        if kind in ("i", "u", "b"):
            return column.to_numpy().tolist()
        if kind == "f":
            arr = column.to_numpy()
            values = arr.tolist()
            bad = ~np.isfinite(arr)
            if bad.any():
                for i in np.flatnonzero(bad).tolist():
                    values[i] = None
            return values
        if kind == "O":
            # text only: a missing value comes out of pandas 3's ``where(notnull, None)`` as NaN (as None
            # from pandas 2), so anything but text is left to Altair
            values = column.tolist()
            return values if all(type(v) is str for v in values) else None
        return None
    if isinstance(dtype, pd.StringDtype) or str(dtype) in ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16",
                                                           "UInt32", "UInt64", "boolean"):
        values = column.to_numpy(dtype=object, na_value=None).tolist()
        if isinstance(dtype, pd.StringDtype):
            return values if all(v is None or type(v) is str for v in values) else None
        cast = bool if str(dtype) == "boolean" else int
        return [None if v is None else cast(v) for v in values]
    return None


def frame_values(frame: pd.DataFrame) -> list[dict] | None:
    """``frame``'s records as Altair's default data transformer writes them into a spec
    (``sanitize_pandas_dataframe`` then ``to_dict(orient="records")``), built column by column; None
    when the frame has anything this does not follow (a column name that is not a unique string, a
    hierarchical index, a dtype other than numpy numbers and bools, pandas text, nullable integers and
    booleans, or object columns of text only), which Altair then handles itself."""
    columns = frame.columns
    if (isinstance(columns, (pd.RangeIndex, pd.MultiIndex)) or isinstance(frame.index, pd.MultiIndex)
            or not all(type(c) is str for c in columns) or not columns.is_unique):
        return None
    names = list(columns)
    cols = []
    for _, column in frame.items():
        values = _column_values(column)
        if values is None:
            return None
        cols.append(values)
    return [dict(zip(names, row)) for row in zip(*cols)] if names else [{} for _ in range(len(frame))]


def straight_runs_thinned(frame: pd.DataFrame, line: str, x: str, y: str, log_x: bool = False,
                          log_y: bool = False, max_turn_rad: float = 1e-9) -> pd.DataFrame:
    """``frame`` without the rows of each line (rows of one ``line`` value, in ``x`` order, as Vega-Lite
    draws a line mark) that lie on the straight segment between their two neighbours: the line drawn
    through the rows kept is the same. On a log axis straightness is judged on the logarithms (a log
    scale maps ``log x`` linearly to pixels, so a line straight there is straight on the chart).

    A row is dropped when the turn of the line at it is at most ``max_turn_rad`` (the cross product of
    the two segments at most that fraction of the product of their lengths: floating-point rounding of an
    exactly straight run), so the line through the rows kept passes within about ``n x max_turn_rad x`` the
    chart's size of every row dropped (n, the rows of a line: 60 x 1e-9 x 520 px = 3e-5 px). The first and
    last rows of each line are kept (the scales' domains, and the path's description and tooltip, which
    Vega takes from a line's first row, are unchanged). A line is left whole when it has fewer than three
    rows, two rows at one ``x`` (their order in the drawing would be Vega's), or a value that is missing,
    not finite, or not positive on a log axis (Vega-Lite filters those).

    Why: Vega carries every row of a line through its dataflow, and the roofline chart's lines are
    straight runs of 60 points each (``model.tables.roofline_table``: the memory-bound slope and the flat
    roof on log-log axes), 360-560 rows a chart that draw the same as 4-6 rows a line."""
    if frame.empty or len(frame) < 3:
        return frame
    xs = frame[x].to_numpy(dtype=float, na_value=np.nan)
    ys = frame[y].to_numpy(dtype=float, na_value=np.nan)
    keep = np.ones(len(frame), dtype=bool)
    for idx in frame.groupby(line, sort=False).indices.values():
        if len(idx) < 3:
            continue
        idx = idx[np.argsort(xs[idx], kind="stable")]
        px, py = xs[idx], ys[idx]
        if (log_x and not (px > 0).all()) or (log_y and not (py > 0).all()):
            continue
        px, py = (np.log(px) if log_x else px), (np.log(py) if log_y else py)
        if not (np.isfinite(px).all() and np.isfinite(py).all()) or not (np.diff(px) > 0).all():
            continue
        ax, ay = px[1:-1] - px[:-2], py[1:-1] - py[:-2]
        bx, by = px[2:] - px[1:-1], py[2:] - py[1:-1]
        straight = np.abs(ax * by - ay * bx) <= max_turn_rad * np.hypot(ax, ay) * np.hypot(bx, by)
        keep[idx[1:-1][straight]] = False
    return frame if keep.all() else frame[keep]
