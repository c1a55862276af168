"""Performance charts: the roofline with the workload's operating points, the accelerator comparison
with P10/P90 bands, the memory breakdown, and the calibration (predicted against published).

Each function takes the tidy frames of ``model.tables`` / ``calibrate.runs`` and returns an
``alt.Chart``; nothing is displayed or saved here."""
from __future__ import annotations

import altair as alt
import pandas as pd

from .base import Chart, empty, keep, quiet, shared_by_frame
from .data import straight_runs_thinned

COMPONENT_ORDER = ["weights", "gradients", "optimizer states", "activations", "KV cache"]


@quiet
def roofline(lines: pd.DataFrame, points: pd.DataFrame | None = None) -> alt.Chart:
    """Attainable FLOP/s against arithmetic intensity, one line per accelerator (``perf.roofline_table``),
    with the workload's operating points on each chip (``perf.operating_points``): a point left of a
    chip's ridge is memory-bound there. Each line is drawn through the ends of its straight runs only
    (``data.straight_runs_thinned``: the same lines, a tenth of the rows)."""
    if lines is None or lines.empty:
        return empty("No accelerator has a peak for this precision.")
    d = lines.assign(tflops=lines["attainable_flops_per_s"] / 1e12)
    # each line is two straight runs on these log-log axes: drawn through their ends (the same lines)
    d = straight_runs_thinned(d, "accelerator", "intensity_flops_per_byte", "tflops", log_x=True, log_y=True)
    x = alt.X("intensity_flops_per_byte:Q", scale=alt.Scale(type="log"), title="Arithmetic intensity (FLOPs per byte)")
    chart = Chart(d).mark_line().encode(
        x=x, y=alt.Y("tflops:Q", scale=alt.Scale(type="log"), title="Attainable TFLOP/s per chip"),
        color=alt.Color("accelerator:N", title="Accelerator"),
        tooltip=["accelerator", alt.Tooltip("ridge_flops_per_byte:Q", format=".0f", title="ridge (FLOPs/byte)"),
                 alt.Tooltip("peak_flops_per_s:Q", format=".3s", title="peak FLOP/s")])
    if points is not None and not points.empty:
        pts = points.assign(tflops=points["attained_flops_per_s"] / 1e12)
        chart = chart + Chart(pts).mark_point(size=70, filled=True).encode(
            x=x, y="tflops:Q", color="accelerator:N", shape=alt.Shape("point:N", title="Workload"),
            tooltip=["accelerator", "point", alt.Tooltip("intensity_flops_per_byte:Q", format=".3g"),
                     alt.Tooltip("tflops:Q", format=".3g", title="attainable TFLOP/s")])
    return chart.properties(title="Roofline: where the workload sits on each chip", width=520, height=320)


def _comparison_frame(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    d = keep(df[df["fits"].fillna(False).astype(bool)], "accelerator", "family", "chips", "calibrated",
             [metric + sfx for sfx in ("", "_low", "_high")],
             ["output_tokens_per_s" + sfx for sfx in ("", "_low", "_high")]).copy()
    if metric == "output_tokens_per_s_per_chip":
        for sfx in ("", "_low", "_high"):
            d[metric + sfx] = d["output_tokens_per_s" + sfx] / d["chips"].astype(float)
    return d.dropna(subset=[metric])


@quiet
def comparison(df: pd.DataFrame, metric: str | None = None) -> alt.Chart:
    """One bar per accelerator for ``metric`` (default: ``training_days`` for training,
    ``output_tokens_per_s_per_chip`` for inference) with its P10/P90 band as an error bar; options
    that do not fit are left out (their reason is in the table)."""
    training = "training_days" in df and df["training_days"].notna().any()
    metric = metric or ("training_days" if training else "output_tokens_per_s_per_chip")
    d = _comparison_frame(df, metric)
    if d.empty:
        return empty("No accelerator fits this workload.")
    titles = {"training_days": "Days to train", "output_tokens_per_s_per_chip": "Output tokens/s per chip",
              "tpot_ms": "Time per output token (ms)", "ttft_ms": "Time to first token (ms)", "mfu": "MFU",
              "chip_hours": "Chip-hours", "tokens_per_s": "Tokens/s", "step_time_s": "Step time (s)",
              "output_tokens_per_s": "Output tokens/s (deployment)"}
    title = titles.get(metric, metric)
    y = alt.Y("accelerator:N", sort=alt.EncodingSortField(field=metric, order="ascending"), title=None)
    bars = Chart(d).mark_bar(opacity=0.8).encode(
        y=y, x=alt.X(f"{metric}:Q", title=title), color=alt.Color("family:N", title="Family", scale=alt.Scale(scheme=FAMILY_SCHEME)),
        tooltip=["accelerator", "chips", alt.Tooltip(f"{metric}:Q", format=",.3g"),
                 alt.Tooltip(f"{metric}_low:Q", format=",.3g", title="P10"),
                 alt.Tooltip(f"{metric}_high:Q", format=",.3g", title="P90"), "calibrated"])
    if f"{metric}_low" in d:
        bars = bars + Chart(d).mark_errorbar(ticks=True).encode(
            y=y, x=alt.X(f"{metric}_low:Q", title=title), x2=f"{metric}_high:Q")
    return bars.properties(title=f"{title} with P10-P90 band from the calibration runs", width=480,
                           height=max(120, 26 * len(d)))


@quiet
def memory_breakdown(df: pd.DataFrame, memory_bytes: float | None = None) -> alt.Chart:
    """Stacked memory of one model copy per setting (``perf.memory_breakdown``), in GB, with a rule
    at one chip's memory when given."""
    if df is None or df.empty:
        return empty("No memory model for this workload.")
    d = df.assign(gb=df["bytes"] / 1e9)
    order = [c for c in COMPONENT_ORDER if c in set(d["component"])]
    chart = Chart(d).mark_bar().encode(
        y=alt.Y("setting:N", title=None, sort=list(dict.fromkeys(d["setting"]))),
        x=alt.X("sum(gb):Q", title="GB (one model copy, before sharding)"),
        color=alt.Color("component:N", sort=order, title="Component"),
        order=alt.Order("component_order:Q"),
        tooltip=["setting", "component", alt.Tooltip("gb:Q", format=",.1f", title="GB")],
    ).transform_calculate(component_order=f"indexof({order!r}, datum.component)")
    if memory_bytes:
        rule = Chart(pd.DataFrame({"gb": [memory_bytes / 1e9]})).mark_rule(color="black", strokeDash=[4, 3]).encode(x="gb:Q")
        chart = chart + rule
    return chart.properties(title="Memory by component", width=480, height=max(90, 34 * d["setting"].nunique()))


# Colours of accelerator families: Vega's default "category10" repeats after ten, and the calibration
# runs span 13 families (tpu-v4 drew in amd-cdna3's blue, tpu-v5e in aws-inferentia2's orange); Tableau's
# 20 colours (Vega's "tableau20" scheme) keep up to 20 apart.
FAMILY_SCHEME = "tableau20"

# The least gap between two x-axis labels of the calibration chart that Vega leaves both shown (its
# ``labelSeparation``, default 0; the labels are hidden greedily, left to right, as Vega-Lite sets for a log
# scale): a log axis labels 1, 2, 3, 4, 5 x each power of ten (d3's log tick format), and with no gap
# required "10,000" and "20,000" were drawn 1 px apart, reading "10,00020,000". A space at 11 px is 3.1 px.
CALIBRATION_LABEL_GAP_PX = 4


@shared_by_frame
def calibration(table: pd.DataFrame) -> alt.Chart:
    """Predicted against published for every calibration run (``calibrate.calibration_table``), one
    panel per kind, log scales, the diagonal for reference; held-out runs as a second shape. Two x-axis
    labels closer than ``CALIBRATION_LABEL_GAP_PX`` are not both drawn. Built once per distinct table
    in a process (``shared_by_frame``: every report draws it from the same table)."""
    if table is None or table.empty:
        return empty("No calibration runs.")
    d = keep(table, "run", "family", "metric", "value", "predicted", "error", "split", "kind").assign(
        run_kind=table["split"].eq("holdout").map({True: "held out", False: "fitted"}))
    base = Chart(d).encode(
        x=alt.X("value:Q", scale=alt.Scale(type="log"), title="published (one definition)",
                axis=alt.Axis(labelSeparation=CALIBRATION_LABEL_GAP_PX)),
        y=alt.Y("predicted:Q", scale=alt.Scale(type="log"), title="model"),
        color=alt.Color("family:N", title="Family", scale=alt.Scale(scheme=FAMILY_SCHEME)),
        tooltip=["run", "family", "metric", alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("predicted:Q", format=".4g"),
                 alt.Tooltip("error:Q", format="+.0%"), "split"])
    pts = base.mark_point(size=45, filled=True).encode(shape=alt.Shape("run_kind:N", title="Run", sort=["fitted", "held out"]))
    diag = base.mark_line(color="#999", strokeDash=[3, 3]).encode(x="value:Q", y="value:Q", color=alt.value("#999"))
    return (diag + pts).properties(width=230, height=230).facet(facet=alt.Facet("kind:N", title=None), columns=2).resolve_scale(
        x="independent", y="independent")
