"""Scaling charts: throughput, MFU and time to train against chip count; the step broken into
compute, exposed communication, pipeline bubble and recomputation; serving against tensor-parallel
size. Each function takes the tidy frames of the scaling tables (``scenario_curves``, ``search``,
``breakdown``) and returns an ``alt.Chart``. Serving curves are the rows with ``tpot_ms``."""
from __future__ import annotations

import altair as alt
import pandas as pd

from .base import Chart, FacetChart, empty, hconcat, keep, one_value_axis, quiet

COMPONENT_ORDER = ["compute", "recomputation", "pipeline bubble", "exposed communication", "optimizer update",
                   "synchronisation across domains", "decode (roofline)", "tensor-parallel communication"]


@quiet
def scaling_curves(curves: pd.DataFrame) -> alt.Chart:
    """Training: tokens/s per chip (left) and days to train (right) against chips, one line per
    accelerator, hollow points where exposed communication exceeds the threshold share of the step
    (``network_bound``). Inference frames go to ``tp_curves``."""
    if curves is None or curves.empty:
        return empty("No accelerator could be priced for this scenario.")
    if "tpot_ms" in curves.columns:
        return tp_curves(curves)
    tips = ["accelerator", "chips", "tp", "pp", "dp", "cp", "ep", "zero", "recompute", "micro_batch",
            alt.Tooltip("mfu:Q", format=".0%"), alt.Tooltip("tokens_per_s_per_chip:Q", format=",.0f"),
            alt.Tooltip("comm_share:Q", format=".0%", title="exposed comm share"),
            alt.Tooltip("scaling_efficiency:Q", format=".0%")]
    fits = curves["fits"].astype(bool)
    d = keep(curves[fits], tips, "training_days").assign(
        network=curves.loc[fits, "network_bound"].map({True: "network-bound", False: "compute-bound"}))
    if d.empty:
        return empty("No configuration fits in memory at these chip counts.")
    base = Chart(d).encode(
        x=alt.X("chips:Q", scale=alt.Scale(type="log", base=2), title="Chips"),
        color=alt.Color("accelerator:N", title="Accelerator"),
        tooltip=tips)
    per_chip = (base.mark_line() + base.mark_point(size=60, filled=True).encode(
        shape=alt.Shape("network:N", title="Step", scale=alt.Scale(domain=["compute-bound", "network-bound"],
                                                                   range=["circle", "triangle-up"])))
                ).encode(y=alt.Y("tokens_per_s_per_chip:Q", title="Tokens/s per chip")).properties(
        title="Throughput per chip (flat = perfect scaling)", width=330, height=260)
    if "training_days" in d and d["training_days"].notna().any():
        days = (base.mark_line() + base.mark_point(size=40, filled=True)).encode(
            y=alt.Y("training_days:Q", scale=alt.Scale(type="log"), title="Days to train")).properties(
            title="Time to train", width=330, height=260)
        return hconcat(per_chip, days)
    return per_chip


@quiet
def mfu_curves(curves: pd.DataFrame) -> alt.Chart:
    """MFU and scaling efficiency against chips, one line per accelerator (training frames)."""
    if curves is None or curves.empty or "tpot_ms" in curves.columns:
        return empty("MFU and scaling efficiency apply to training; serving is charted against tensor-parallel size.")
    d = curves[curves["fits"].astype(bool)] if "fits" in curves else curves
    if d.empty:
        return empty("No configuration fits in memory at these chip counts.")
    long = d.melt(id_vars=["accelerator", "chips"], value_vars=["mfu", "scaling_efficiency"],
                  var_name="measure", value_name="value")
    long["measure"] = long["measure"].map({"mfu": "MFU", "scaling_efficiency": "scaling efficiency"})
    return Chart(long).mark_line(point=True).encode(
        x=alt.X("chips:Q", scale=alt.Scale(type="log", base=2), title="Chips"),
        y=alt.Y("value:Q", axis=alt.Axis(format="%"), title=None),
        color=alt.Color("accelerator:N", title="Accelerator"),
        strokeDash=alt.StrokeDash("measure:N", title=None),
        tooltip=["accelerator", "chips", "measure", alt.Tooltip("value:Q", format=".1%")],
    ).properties(title="MFU and scaling efficiency", width=520, height=260)


@quiet
def step_breakdown(parts: pd.DataFrame, accelerator: str | None = None) -> alt.Chart:
    """Stacked bars of where a step (training) or an output token (serving) goes, from the tidy
    frame of the scaling tables' ``breakdown(curves)`` (columns accelerator, x, x_name, component,
    seconds): compute, recomputation, pipeline bubble, exposed communication and optimizer update per
    chip count (training), roofline decode time and TP communication per tensor-parallel size (serving)."""
    tidy = parts if accelerator is None or parts is None or parts.empty else parts[parts["accelerator"] == accelerator]
    if tidy is None or tidy.empty:
        return empty("Nothing to break down: no configuration fits.")
    x_name = tidy["x_name"].iloc[0]
    tidy = tidy.copy()
    total = tidy.groupby(["accelerator", "x"])["seconds"].transform("sum")
    tidy["share"] = tidy["seconds"] / total
    order = [c for c in COMPONENT_ORDER if c in set(tidy["component"])]
    # A component taking no time is a bar of zero height, which no one sees: half the rows of a
    # training breakdown (no recomputation, no pipeline bubble, one domain), 209 of 534 paths for
    # llama-70b-pretrain, each laid out and written by Vega. The stack of the others is the same
    # (adding 0 changes no sum) and the legend is the scale's domain (``order``), so the SVG is the
    # one drawn with them less those zero-height bars (checked on every shipped scenario). A column
    # whose every part is zero keeps its rows.
    tidy = tidy[(tidy["seconds"] != 0) | (total == 0) | tidy["seconds"].isna()]
    title = "Where the step goes" if x_name == "chips" else "Where an output token's time goes"
    per_facet = int(tidy.groupby("accelerator")["x"].nunique().max())
    bars = Chart().mark_bar().encode(
        x=alt.X("x:O", title="Chips" if x_name == "chips" else "Tensor-parallel size"),
        y=alt.Y("share:Q", stack="normalize", axis=alt.Axis(format="%"), title="Share of time"),
        color=alt.Color("component:N", sort=order, scale=alt.Scale(domain=order), title=None),
        order=alt.Order("component_rank:Q"),
        tooltip=["accelerator", "x", "component", alt.Tooltip("seconds:Q", format=".4g"),
                 alt.Tooltip("share:Q", format=".0%")],
    ).transform_calculate(component_rank=f"indexof({order!r}, datum.component)").properties(
        width=max(100, 22 * per_facet), height=180)
    return FacetChart(data=tidy, spec=bars, facet=alt.Facet("accelerator:N", title=None), columns=4).resolve_scale(
        x="independent").properties(title=title)


@quiet
def configurations_breakdown(table: pd.DataFrame, top: int = 8) -> alt.Chart:
    """Stacked bars (seconds) of the ``top`` fastest configurations of a ``search`` result."""
    if table is None or table.empty:
        return empty("No configuration fits in memory.")
    d = table.head(top).copy()
    d["configuration"] = (
        "TP" + d["tp"].astype(str) + " PP" + d["pp"].astype(str) + " DP" + d["dp"].astype(str)
        + d["cp"].map(lambda c: f" CP{c}" if c > 1 else "") + d["ep"].map(lambda e: f" EP{e}" if e > 1 else "")
        + " Z" + d["zero"].astype(str) + " mb" + d["micro_batch"].astype(str) + " " + d["recompute"])
    names = {"compute_s": "compute", "recompute_s": "recomputation", "bubble_s": "pipeline bubble",
             "exposed_comm_s": "exposed communication", "optimizer_s": "optimizer update",
             "sync_s": "synchronisation across domains"}
    long = d.rename(columns=names).melt(id_vars=["configuration"], value_vars=list(names.values()),
                                        var_name="component", value_name="seconds")
    order = list(names.values())
    return Chart(long).mark_bar().encode(
        y=alt.Y("configuration:N", sort=list(d["configuration"]), title=None, axis=alt.Axis(labelLimit=400)),
        x=alt.X("seconds:Q", title="Seconds per step"),
        color=alt.Color("component:N", sort=order, scale=alt.Scale(domain=order), title=None),
        order=alt.Order("component_rank:Q"),
        tooltip=["configuration", "component", alt.Tooltip("seconds:Q", format=".3f")],
    ).transform_calculate(component_rank=f"indexof({order!r}, datum.component)").properties(
        title="Fastest configurations that fit", width=420, height=max(120, 24 * len(d)))


@quiet
def tp_curves(df: pd.DataFrame) -> alt.Chart:
    """Serving: output tokens/s per chip (left) and time per output token (right) against
    tensor-parallel size, at the batch the TP curve chose, one line per accelerator."""
    tips = ["accelerator", "tp", "batch", alt.Tooltip("output_tokens_per_s_per_chip:Q", format=",.0f"),
            alt.Tooltip("tpot_ms:Q", format=".1f")]
    d = keep(df[df["chosen"]] if "chosen" in df else df, tips).assign(batch_kind="chosen batch")
    if d.empty:
        return empty("The model does not fit at any tensor-parallel size.")
    one = keep(df[(df["batch"] == 1) & df["fits"]], tips).assign(batch_kind="batch 1")
    x = alt.X("tp:O", title="Tensor-parallel size")
    color = alt.Color("accelerator:N", title="Accelerator")
    base = Chart(d).encode(x=x, color=color, tooltip=tips)
    thr = (base.mark_line() + base.mark_point(filled=True)).encode(
        y=alt.Y("output_tokens_per_s_per_chip:Q", title="Output tokens/s per chip")).properties(
        title="Throughput per chip at the chosen batch", width=300, height=240)
    lat_base = Chart(pd.concat([d, one], ignore_index=True)).encode(
        x=x, color=color, tooltip=tips,
        strokeDash=alt.StrokeDash("batch_kind:N", title="Batch", sort=["chosen batch", "batch 1"]))
    lat = (lat_base.mark_line() + lat_base.mark_point(filled=True)).encode(
        y=alt.Y("tpot_ms:Q", title="ms per output token")).properties(
        title="Latency: at the chosen batch and at batch 1", width=300, height=240)
    return hconcat(thr, lat)


@quiet
def interactivity(df: pd.DataFrame) -> alt.Chart:
    """Throughput per chip against tokens/s per user (``tables.interactivity_curve``), one line per offer along
    its Pareto frontier, each point labelled with its cost per million output tokens at full load (a static
    report shows no tooltips). The scenario's time-per-token target, when met, is the right-hand region."""
    tips = ["offer", "tp", "batch", alt.Tooltip("tokens_per_s_per_user:Q", format=",.0f"),
            alt.Tooltip("output_tokens_per_s_per_chip:Q", format=",.0f"),
            alt.Tooltip("usd_per_million_tokens_full_load:Q", format="$,.3f", title="$ per M tokens (full load)")]
    d = keep(df[df["frontier"]] if "frontier" in df else df, tips)
    d = pd.concat([_thin(d[d["offer"] == o]) for o in d["offer"].unique()]) if len(d) else d.copy()
    if d.empty:
        return empty("Serving scenarios only: throughput per chip against tokens per second per user.")
    d["cost_label"] = d["usd_per_million_tokens_full_load"].map(lambda v: f"${v:,.2f}" if v < 10 else f"${v:,.0f}")
    base = Chart(d).encode(
        x=alt.X("tokens_per_s_per_user:Q", title="Interactivity: output tokens/s per user (1000 / ms per token)",
                scale=alt.Scale(zero=False), axis=one_value_axis(d["tokens_per_s_per_user"])),
        y=alt.Y("output_tokens_per_s_per_chip:Q", title="Output tokens/s per chip", scale=alt.Scale(type="log")),
        color=alt.Color("offer:N", title="Offer (best of each accelerator)", legend=alt.Legend(orient="bottom", columns=2, labelLimit=320)),
        tooltip=tips)
    lines = base.mark_line(point=True).encode(order="tokens_per_s_per_user:Q")
    labels = base.mark_text(dy=-9, fontSize=9).encode(text="cost_label:N")
    return (lines + labels).properties(
        width=560, height=320,
        title={"text": "Throughput per chip against interactivity, $ per million output tokens at each point",
               "subtitle": "Each offer's best layouts and batches. The cost assumes the chips busy all the time (no idle hours, "
                           "spares or queueing): not the recommendation's cost at your load"})


def _thin(g: pd.DataFrame, step: float = 0.05) -> pd.DataFrame:
    """Frontier points from the highest throughput towards the highest interactivity, keeping a point only
    when it gains at least ``step`` (5%) of tokens/s per user over the last kept one: the memory-bound tail
    where smaller batches buy almost no speed per user is left out, and the cost labels stay readable."""
    g = g.sort_values("output_tokens_per_s_per_chip", ascending=False)
    keep, last = [], None
    for i, x in zip(g.index, g["tokens_per_s_per_user"]):
        if last is None or x >= last * (1 + step):
            keep.append(i)
            last = x
    return g.loc[keep]
