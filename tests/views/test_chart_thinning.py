"""``views.charts.data.straight_runs_thinned``: the rows of a line that lie on a straight run are
dropped and the line drawn through the others is the same (the roofline and break-even charts)."""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from workbook.views.charts import base, cost, perf
from workbook.views.charts.data import straight_runs_thinned

NUM = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def _roofline_rows() -> pd.DataFrame:
    ai = np.geomspace(1, 1e4, 60)
    rows = []
    for name, peak, bw in (("A", 2e15, 3.35e12), ("B", 4.5e15, 8e12)):
        rows.append(pd.DataFrame({"accelerator": name, "intensity_flops_per_byte": ai,
                                  "attainable_flops_per_s": np.minimum(peak, ai * bw),
                                  "peak_flops_per_s": peak, "ridge_flops_per_byte": peak / bw}))
    return pd.concat(rows, ignore_index=True)


def test_a_roofline_keeps_its_ends_and_the_two_points_around_each_ridge():
    d = _roofline_rows().assign(tflops=lambda f: f["attainable_flops_per_s"] / 1e12)
    t = straight_runs_thinned(d, "accelerator", "intensity_flops_per_byte", "tflops", log_x=True, log_y=True)
    assert list(t.groupby("accelerator").size()) == [4, 4]
    for _, g in t.groupby("accelerator"):
        ridge = g["ridge_flops_per_byte"].iloc[0]
        x = g["intensity_flops_per_byte"].to_numpy()
        assert x[0] == 1 and x[-1] == 1e4 and x[1] < ridge < x[2]      # the ends, the samples either side of the ridge
    assert t.index.is_monotonic_increasing                               # rows dropped, none moved


def test_curves_gaps_ties_and_bad_values_are_left_whole():
    x = np.arange(1.0, 8.0)
    curve = pd.DataFrame({"g": "a", "x": x, "y": x ** 2})
    assert len(straight_runs_thinned(curve, "g", "x", "y")) == 7          # nothing straight
    line = pd.DataFrame({"g": "a", "x": x, "y": 2 * x + 1})
    assert len(straight_runs_thinned(line, "g", "x", "y")) == 2
    tie = pd.concat([line, pd.DataFrame({"g": ["a"], "x": [3.0], "y": [7.0]})], ignore_index=True)
    assert len(straight_runs_thinned(tie, "g", "x", "y")) == 8           # two rows at one x: Vega's order
    nan = line.assign(y=[1.0, 3.0, np.nan, 7.0, 9.0, 11.0, 13.0])
    assert len(straight_runs_thinned(nan, "g", "x", "y")) == 7
    zero = line.assign(y=[0.0, 3, 5, 7, 9, 11, 13])
    assert len(straight_runs_thinned(zero, "g", "x", "y", log_y=True)) == 7   # not positive on a log axis
    shuffled = line.sample(frac=1, random_state=1)
    assert sorted(straight_runs_thinned(shuffled, "g", "x", "y")["x"]) == [1.0, 7.0]   # in x order, as drawn


def _vertices(svg: str) -> list[list[tuple[float, float]]]:
    out = []
    for d in re.findall(r'<path[^>]*? d="([^"]*)"', svg):
        if re.fullmatch(rf"M{NUM},{NUM}(L{NUM},{NUM})+", d):
            out.append([tuple(map(float, p)) for p in re.findall(rf"({NUM}),({NUM})", d)])
    return out


def _distance(p, a, b) -> float:
    (x, y), (x1, y1), (x2, y2) = p, a, b
    dx, dy = x2 - x1, y2 - y1
    t = max(0.0, min(1.0, ((x - x1) * dx + (y - y1) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x - (x1 + t * dx), y - (y1 + t * dy))


def _same_drawing(full, thinned) -> None:
    """The two SVGs equal but for the lines' ``d``; each line's vertices a subset of the full one's, with
    the same ends, and every vertex dropped within 0.001 px of the line drawn."""
    a, b = (base.static_bundle(c)["image/svg+xml"] for c in (full, thinned))
    assert a != b
    assert re.sub(r' d="[^"]*"', "", a) == re.sub(r' d="[^"]*"', "", b)
    pairs = [(va, vb) for va, vb in zip(_vertices(a), _vertices(b)) if va != vb]
    assert pairs and len(_vertices(a)) == len(_vertices(b))
    for va, vb in pairs:
        assert (va[0], va[-1]) == (vb[0], vb[-1]) and set(vb) <= set(va) and len(vb) < len(va)
        assert max(min(_distance(p, vb[i], vb[i + 1]) for i in range(len(vb) - 1)) for p in va) < 1e-3


@pytest.fixture
def drawing(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path))
    base._SVG_MEMO.clear()
    yield
    base._SVG_MEMO.clear()


def test_the_roofline_chart_draws_the_same_lines(drawing, monkeypatch):
    lines = _roofline_rows()
    points = pd.DataFrame({"accelerator": ["A", "B"], "point": "decode", "intensity_flops_per_byte": [2.0, 2.0],
                           "attained_flops_per_s": [6.7e12, 1.6e13]})
    thinned = perf.roofline(lines, points)
    monkeypatch.setattr(perf, "straight_runs_thinned", lambda d, *a, **k: d)
    _same_drawing(perf.roofline(lines, points), thinned)


def test_the_breakeven_chart_draws_the_same_lines(drawing, monkeypatch):
    months = np.arange(0, 37, dtype=float)
    curves = pd.concat([
        pd.DataFrame({"accelerator": "X", "offering": "od", "pricing_model": "on_demand", "month": months,
                      "cumulative_usd_per_chip": 2000.0 * months}),
        pd.DataFrame({"accelerator": "X", "offering": "r1", "pricing_model": "commit_1y", "month": months,
                      "cumulative_usd_per_chip": np.where(months <= 12, 1400.0 * months, 16800 + 2000.0 * (months - 12))}),
    ], ignore_index=True)
    thinned = cost.breakeven_chart(curves)
    monkeypatch.setattr(cost, "straight_runs_thinned", lambda d, *a, **k: d)
    _same_drawing(cost.breakeven_chart(curves), thinned)
