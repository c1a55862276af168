"""Words and numbers for people: one number format, one money format and one HTML table for the
notebooks, the app and the reports; the scenario's heading; a parallel layout, a scaling curve and a
recommendation in words.

Nothing here draws a chart or builds a widget; IPython is imported only where an IPython object is
returned (``header``) or registered (``register_table_formatter``).
"""
from __future__ import annotations

import html
import math
import re

import numpy as np
import pandas as pd

from ..scenario import Scenario
from ..terms import SECONDS_PER_DAY, chips_billed_label, usd

__all__ = ["BLANK", "Explanation", "esc", "explain_layout", "header", "header_markdown", "model_label",
           "key_figures", "energy_text", "co2_text", "markdown_html", "money", "number", "recommendation_html",
           "recommendation_markdown", "recommendation_table", "recommendation_text", "register_table_formatter", "scaling_verdict", "table_html", "usd"]

BLANK = "–"   # what a missing figure looks like in a table or a card


# --- numbers and money -----------------------------------------------------------------------------

_WORDS = ((1e12, "trillion"), (1e9, "billion"), (1e6, "million"))


def number(v) -> str:
    """A figure for people: 3 significant digits, thousands separators from 100, "million",
    "billion", "trillion" from a million (thousands of trillions up to 1e18, so that a column of peak
    FLOP/s reads "989 trillion", "2,250 trillion" rather than switching to "2.25e+15"), scientific only
    beyond 1e18 or below 1e-3; integers in full, booleans as yes/no, blanks (None, NaN, infinities) as a dash."""
    if v is None or v is pd.NA or v is pd.NaT:
        return BLANK
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(x):
        return BLANK
    a = abs(x)
    if a == 0:
        return "0"
    if a >= 1e18 * (1 - 5e-4) or a < 1e-3:
        return f"{x:.3g}"
    if a >= 1e15 * (1 - 5e-4):
        return f"{float(f'{x / 1e12:.3g}'):,.0f} trillion"
    for size, word in _WORDS:
        if a >= size * (1 - 5e-4):       # 999.96 million reads "1 billion", not "1e+03 million"
            return f"{x / size:.3g} {word}"
    if a >= 99.95:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def money(x) -> str:
    """``usd(x)`` with a dash for a blank (tables and cards)."""
    text = usd(x)
    return BLANK if text == "n/a" else text


def esc(v) -> str:
    """Text escaped for HTML; None as an empty string."""
    return html.escape("" if v is None else str(v))


def markdown_html(text: str) -> str:
    """The few Markdown forms the explanations use ('- ' bullets and **bold**) as HTML."""
    items, paras = [], []
    for line in str(text).splitlines():
        h = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", esc(line.strip()))
        if line.lstrip().startswith("- "):
            items.append(f"<li>{h[2:]}</li>")
        elif h:
            paras.append(f"<p>{h}</p>")
    return "".join(paras) + (f"<ul>{''.join(items)}</ul>" if items else "")


# --- tables ----------------------------------------------------------------------------------------

def _cell(v) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v))
    if isinstance(v, str):
        return v
    if v is None or (not isinstance(v, (dict, set)) and pd.isna(v)):
        return BLANK
    return number(v.item() if isinstance(v, np.generic) else v)


def _visible(df: pd.DataFrame) -> pd.DataFrame:
    """The frame with an informative index as leading columns and flat column names."""
    if not (isinstance(df.index, pd.RangeIndex) and df.index.name is None):
        df = df.reset_index()
    if isinstance(df.columns, pd.MultiIndex):
        df = df.set_axis([" ".join(str(p) for p in c if str(p)) for c in df.columns], axis=1)
    return df


_BLANK_TEXT = html.escape(BLANK)


def _values(col: pd.Series) -> list:
    """A column's values as iterating it yields them (``list(col)``), read in one call where pandas
    holds them in a numpy array: numpy dtypes other than dates and durations (``Series.__iter__`` maps
    ``ndarray.item``, which ``tolist`` does at once: the same Python floats, ints and booleans, the same
    objects) and Python-backed strings (their object array's elements, missing values as stored)."""
    dt = col.dtype
    if isinstance(dt, pd.StringDtype) and dt.storage == "python":
        return col.to_numpy(dtype=object).tolist()
    if isinstance(dt, np.dtype) and dt.kind not in "mM":
        return col.to_numpy().tolist()
    return list(col)


def table_html(df: pd.DataFrame | None, columns=None, labels: dict | None = None, highlight_first: bool = False,
               max_rows: int = 100) -> str:
    """A frame as an HTML table for notebooks, reports and the app: escaped text, readable numbers
    (``number``, right-aligned), words left-aligned (long ones wrap), column ``labels``, the first
    row optionally highlighted, at most ``max_rows`` rows (a line says how many more there are)."""
    if df is None or len(df) == 0:
        return "<p><i>No rows.</i></p>"
    df = _visible(df)
    cols = [c for c in (columns or list(df.columns)) if c in df.columns]
    labels = labels or {}
    shown = df[cols].head(max_rows)
    # a column at a time: its values as ``itertuples`` yields them (iterating the column), each text
    # made once per distinct string (the ledger's 1,500 rows repeat their categories, sources and dates)
    kind, texts = {}, []
    for c, (_, col) in zip(cols, shown.items()):
        values = _values(col)
        if isinstance(col.dtype, pd.CategoricalDtype):   # Series.map maps categories, not values
            words = col.map(lambda v: isinstance(v, str)).mean() > 0.5
            long = words and col.map(lambda v: len(v) if isinstance(v, str) else 0).max() > 32
        else:
            strs = [len(v) for v in values if isinstance(v, str)]
            words = bool(values) and len(strs) / len(values) > 0.5   # the share of text cells (a mean of booleans)
            long = words and max(strs) > 32
        k = kind[c] = ' class="wb-text"' if long else (' class="wb-str"' if words else "")
        seen: dict = {}       # text by string
        figures: dict = {}    # text by float (equal floats read the same: -0.0 and 0.0 both "0")
        others: dict = {}     # text by (type, value) of ints and booleans (True == 1: the type tells them apart)
        out = []
        for v in values:
            tv = type(v)
            if tv is str:
                t = seen.get(v)
                if t is None:
                    t = seen[v] = f"<td{k}>{html.escape(v)}</td>"        # esc(_cell(v)) of a string
            elif tv is float:
                t = figures.get(v)
                if t is None:   # _cell of a float is number's text (NaN: both the dash)
                    t = figures[v] = f"<td{k}>{html.escape(number(v))}</td>"
            elif v is None:
                t = f"<td{k}>{_BLANK_TEXT}</td>"                       # esc(_cell(None))
            elif tv is int or tv is bool:
                t = others.get((tv, v))
                if t is None:
                    t = others[(tv, v)] = f"<td{k}>{esc(_cell(v))}</td>"
            else:
                t = f"<td{k}>{esc(_cell(v))}</td>"
            out.append(t)
        texts.append(out)
    head = "".join(f"<th{kind[c]}>{esc(labels.get(c, c))}</th>" for c in cols)
    rows = []
    for i, cells in enumerate(zip(*texts) if texts else [()] * len(shown)):
        best = ' class="wb-best"' if highlight_first and i == 0 else ""
        rows.append(f"<tr{best}>{''.join(cells)}</tr>")
    more = (f"<p class='wb-sub'>The first {max_rows} of {len(df):,} rows.</p>" if len(df) > max_rows else "")
    # a wide table scrolls inside its own box (a visible scrollbar) instead of being clipped by the page
    return (f'<div class="wb-scroll" tabindex="0"><table class="dataframe wb-table"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>{more}')


def register_table_formatter() -> bool:
    """In IPython (JupyterLab, Voila, Papermill kernels), show every DataFrame with ``table_html``."""
    try:
        from IPython import get_ipython
    except ImportError:      # IPython is a third-party package: outside a kernel there is nothing to do
        return False
    ip = get_ipython()
    if ip is None:
        return False
    ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, lambda df: table_html(df))
    return True


# --- the scenario's heading ------------------------------------------------------------------------

def model_label(w) -> str:
    """What the workload runs, in words: the catalog model, the Hugging Face config it was read from,
    a custom architecture or a generic (non-transformer) model."""
    if w.model:
        return w.model
    if getattr(w, "hf_config", None):
        return f"config {w.hf_config}"
    return "custom architecture" if w.architecture is not None else "generic model"


def header_markdown(s: Scenario) -> str:
    """Title, description and the workload in one line, as Markdown."""
    w = s.workload
    what = model_label(w)
    lines = [f"**{s.title}**", ""]
    if s.description:
        lines += [s.description.strip(), ""]
    lines.append(f"Scenario `{s.name}`: {w.task} of `{what}` in {w.precision} with {w.framework}.")
    return "\n".join(lines)


def header(s: Scenario):
    """The scenario's heading as an IPython Markdown object (renders in JupyterLab, Voila and reports)."""
    from IPython.display import Markdown

    return Markdown(header_markdown(s))


# --- explanations ----------------------------------------------------------------------------------

class Explanation(str):
    """A paragraph that notebooks render as Markdown."""

    def _repr_markdown_(self) -> str:
        return str(self)


def _serving_layout(cfg: dict) -> str:
    text = (f"**{cfg['accelerator']}, tensor parallel {cfg['tp']}, batch {cfg['batch']}**: "
            f"{cfg['output_tokens_per_s']:,.0f} output tokens/s per replica "
            f"({cfg['output_tokens_per_s_per_chip']:,.0f} per chip), {cfg['tpot_ms']:.1f} ms per output token, "
            f"{cfg['ttft_ms']:.0f} ms to prefill one prompt.")
    if "decode_memory_s" in cfg and "decode_compute_s" in cfg:
        bound = "memory-bandwidth" if cfg["decode_memory_s"] >= cfg["decode_compute_s"] else "compute"
        text = text[:-1] + f". Decode is {bound}-bound."
    if cfg["tp"] <= 1:
        return text[:-1] + "; one chip per replica, so no tensor-parallel communication."
    if "decode_comm_s" in cfg:
        return text[:-1] + f"; the tensor-parallel all-reduces add {cfg['decode_comm_s'] * 1e3:.2f} ms per token."
    return text


def _dimensions(cfg: dict) -> list[str]:
    dims = []
    if cfg["tp"] > 1:
        dims.append(f"tensor parallel {cfg['tp']} (each layer's matmuls split across {cfg['tp']} chips)")
    if cfg["pp"] > 1:
        dims.append(f"pipeline parallel {cfg['pp']} (layers split into {cfg['pp']} stages"
                    + (f", {cfg['vpp']} interleaved chunks per chip)" if cfg.get("vpp", 1) > 1 else ")"))
    if cfg["cp"] > 1:
        dims.append(f"context parallel {cfg['cp']} (each sequence split across {cfg['cp']} chips)")
    if cfg["ep"] > 1:
        dims.append(f"expert parallel {cfg['ep']} (experts spread over {cfg['ep']} chips)")
    zero = {0: "", 1: " with ZeRO-1 (optimizer states sharded)", 2: " with ZeRO-2 (optimizer states and gradients sharded)",
            3: " with ZeRO-3/FSDP (weights sharded too)"}[int(cfg["zero"])]
    dims.append(f"data parallel {cfg['dp']}{zero}")
    return dims


def explain_layout(cfg: dict | None) -> Explanation:
    """A chosen configuration (a training layout or a serving row) in words: what each dimension
    does and where the step time goes."""
    if cfg is None:
        return Explanation("**No configuration fits in memory** at this chip count: add chips, "
                           "shorten the sequence, or allow more sharding.")
    if cfg.get("task") == "inference" or "tpot_ms" in cfg:
        return Explanation(_serving_layout(cfg))
    st = cfg["step_time_s"]
    parts = [("compute", cfg["compute_s"]), ("exposed communication", cfg["exposed_comm_s"]),
             ("pipeline bubble", cfg["bubble_s"]), ("recomputation", cfg["recompute_s"]),
             ("optimizer update", cfg["optimizer_s"]), ("synchronisation across domains", cfg.get("sync_s", 0.0))]
    shares = ", ".join(f"{name} {v / st:.0%}" for name, v in parts if v / st >= 0.005)
    rc = {"none": "no activation recomputation", "selective": "selective recomputation (attention core)",
          "full": "full activation recomputation"}[cfg["recompute"]]
    text = (f"**{cfg['accelerator']} x {cfg['chips']:,}: {'; '.join(_dimensions(cfg))}; micro-batches of "
            f"{cfg['micro_batch']} sequence(s), {cfg['microbatches']} per step; {rc}.** "
            f"Step {st:.2f} s, {cfg['tokens_per_s']:,.0f} tokens/s, MFU {cfg['mfu']:.0%}, "
            f"{cfg['memory_per_chip_bytes'] / 1e9:.0f} GB per chip. The step splits into {shares}.")
    if "topology" in cfg:
        text += f" Network: {cfg['topology']}."
    if cfg.get("training_days") is not None:
        d = cfg["training_days"]
        text += (f" Training takes {d:.1f} days at this rate." if d >= 1 else
                 f" Training takes {d * SECONDS_PER_DAY / 3600:.1f} hours at this rate.")
    return Explanation(text)


def _serving_verdict(curves: pd.DataFrame) -> str:
    lines = []
    for a, d in curves[curves["chosen"]].groupby("accelerator", sort=False):
        d = d.sort_values("tp")
        lo, hi = d.iloc[0], d.iloc[-1]
        line = (f"- **{a}**: from TP{lo['tp']} to TP{hi['tp']}, time per output token goes from "
                f"{lo['tpot_ms']:.1f} to {hi['tpot_ms']:.1f} ms and throughput per chip from "
                f"{lo['output_tokens_per_s_per_chip']:,.0f} to {hi['output_tokens_per_s_per_chip']:,.0f} tokens/s")
        if "decode_comm_s" in d:
            line += f"; TP communication is {hi['decode_comm_s'] * 1e3 / hi['tpot_ms']:.0%} of a token at TP{hi['tp']}"
        lines.append(line + ".")
    return "\n".join(lines) or "The model does not fit at any tensor-parallel size."


def _training_verdict(a: str, d: pd.DataFrame, efficiency_floor: float) -> str:
    ok = d[d["fits"]].sort_values("chips")
    if ok.empty:
        return f"- **{a}**: nothing fits at these chip counts ({d['reason'].iloc[-1]})."
    good = ok[ok["scaling_efficiency"] >= efficiency_floor]
    last_good = int(good["chips"].max()) if len(good) else int(ok["chips"].min())
    nb = ok[ok["network_bound"]]
    last = ok.iloc[-1]
    parts = {"compute": last["compute_s"], "exposed communication": last["exposed_comm_s"],
             "pipeline bubble": last["bubble_s"], "recomputation": last["recompute_s"],
             "synchronisation across domains": last["sync_s"]}
    worst = max((k for k in parts if k != "compute"), key=lambda k: parts[k])
    text = (f"- **{a}**: throughput per chip stays within {1 - efficiency_floor:.0%} of {int(ok['chips'].min()):,} "
            f"chips up to **{last_good:,} chips**")
    thr = float(ok["comm_share_threshold"].iloc[0])
    text += (f"; exposed communication passes {thr:.0%} of the step from **{int(nb['chips'].min()):,} chips**"
             if len(nb) else f"; exposed communication stays under {thr:.0%} of the step")
    return text + (f". At {int(last['chips']):,} chips the step is {last['compute_s'] / last['step_time_s']:.0%} "
                   f"compute, the largest overhead being {worst} ({parts[worst] / last['step_time_s']:.0%}), "
                   f"MFU {last['mfu']:.0%}.")


def scaling_verdict(curves: pd.DataFrame, efficiency_floor: float = 0.8) -> Explanation:
    """Where scaling stops paying, per accelerator, in words: the largest chip count whose throughput
    per chip stays above ``efficiency_floor`` of the smallest count's (a reader's threshold), the
    first count where exposed communication passes the curve's threshold share of the step, and what
    dominates the step at the largest count. Serving curves (``tpot_ms`` rows): how throughput per
    chip and latency move with tensor-parallel size."""
    if curves is None or curves.empty:
        return Explanation("No accelerator could be priced for this scenario.")
    if "tpot_ms" in curves.columns:
        return Explanation(_serving_verdict(curves))
    return Explanation("\n".join(_training_verdict(a, d, efficiency_floor)
                                 for a, d in curves.groupby("accelerator", sort=False)))


# --- the recommendation ----------------------------------------------------------------------------

def key_figures(figures: dict | None, unit: str | None = None) -> list[tuple[str, str]]:
    """A recommendation's few numbers (``Recommendation.figures``) as (value, what it is) pairs: the
    cost as a point estimate with its band (the one price of the option), the answer to the
    scenario's question (batch window, deadline), the chips used and billed."""
    f = figures or {}
    out = []
    for key, what in (("cost_usd", "for the run"), ("usd_per_million_tokens", unit or "per million output tokens")):
        if key in f:
            out.append((money(f[key]), f"{what}, point estimate (band {money(f.get(key + '_low'))}–"
                                       f"{money(f.get(key + '_high'))})"))
    if "usd_per_month" in f:
        out.append((money(f["usd_per_month"]), "a month"))
    if "hosting_usd" in f:
        out.append((money(f["hosting_usd"]), "hosting the bought systems (colocation, network, support, capital), "
                    + ("included in the run's cost" if "training_days" in f else "over the horizon, included")))
    out += _latency_figures(f, "to first token" if unit != "per million requests" else "request latency")
    if "hosted_api_usd_per_million_output_tokens" in f:
        out.append((money(f["hosted_api_usd_per_million_output_tokens"]),
                    "per million output tokens on a hosted API at your quote (reference)"))
        out.append((f"{f['hosted_api_breakeven_requests_per_s']:.3g} requests/s",
                    "break-even with the hosted API (self-hosting costs less above it)"))
    if "batch_hours_needed" in f and "batch_window_hours" in f:
        fits = f["batch_hours_needed"] <= f["batch_window_hours"]
        out.append((f"{f['batch_hours_needed']:.1f} h", f"{'fits' if fits else 'does NOT fit'} the "
                                                          f"{f['batch_window_hours']:g}-hour batch window"))
    if "training_days" in f:
        dl = f.get("deadline_days")
        what = "to finish" + (f" ({'inside' if f['training_days'] <= dl else 'past'} the {dl:g}-day deadline)"
                              if dl else "")
        out.append((f"{f['training_days']:.1f} days", what))
    if "p_meets_deadline" in f:
        out.append((f"{f['p_meets_deadline']:.0%}", "chance of meeting the deadline (performance band)"))
    if "chips" in f:
        out.append((f"{f['chips']:,.0f}", chips_billed_label(f["chips"], f.get("chips_billed"))))
    out += _energy_figures(f)
    if "p_cheapest" in f:
        out.append((f"{f['p_cheapest']:.0%}", "chance it is the cheapest (Monte Carlo)"))
    if "score" in f:
        out.append((f"{f['score']:.2f}", "weighted score of 1"))
    return out


def energy_text(kwh) -> str:
    """Energy for people: kWh below 10 MWh, else MWh or GWh."""
    v = float(kwh)
    return f"{v / 1e6:,.2f} GWh" if v >= 1e7 else f"{v / 1e3:,.0f} MWh" if v >= 1e4 else f"{v:,.0f} kWh"


def co2_text(kg) -> str:
    """CO2e for people: kg below 10 t, else tonnes."""
    v = float(kg)
    return f"{v / 1e3:,.0f} t CO2e" if v >= 1e4 else f"{v:,.0f} kg CO2e"


def _energy_figures(f: dict) -> list[tuple[str, str]]:
    """Energy and CO2e of the choice (workbook.cost.energy): the run, or a month of serving."""
    key, what = ("energy_kwh_per_month", "a month") if "energy_kwh_per_month" in f else ("energy_kwh", "for the run")
    if key not in f:
        return []
    out = [(energy_text(f[key]), f"of electricity {what} (chips and host x PUE)")]
    co2 = f.get(key.replace("energy_kwh", "co2_kg"))
    out.append((co2_text(co2), f"{what} at the region's grid intensity") if co2 is not None else
               ("unknown CO2e", "(no published grid intensity for the offer's region)"))
    return out


def _target(f: dict, key: str) -> str:
    return f" (target {f[key]:g} ms)" if key in f else ""


def _latency_figures(f: dict, what: str = "to first token") -> list[tuple[str, str]]:
    """Serving: time to first token (a generic model: the request latency) at the SLO's percentile
    under load (else unloaded) and time per output token, each with its target."""
    out = []
    if "ttft_ms_at_slo_percentile" in f:
        out.append((f"{f['ttft_ms_at_slo_percentile']:,.0f} ms", f"{what} at P{f['ttft_slo_percentile']:g} "
                                                                 f"under load{_target(f, 'ttft_slo_ms')}"))
    elif "ttft_ms" in f:
        out.append((f"{f['ttft_ms']:,.0f} ms", what + _target(f, "ttft_slo_ms")))
    if "user_rtt_ms" in f:
        out.append((f"{f['user_rtt_ms']:,.0f} ms", "round trip to the users, included in the time to first token"))
    if "tpot_ms" in f:
        out.append((f"{f['tpot_ms']:.1f} ms", "per output token" + _target(f, "tpot_slo_ms")))
    return out


def recommendation_text(d: dict) -> str:
    """The recommendation (``Recommendation.as_dict()`` or ``recommendation`` of ``estimate --json``)
    in plain text for a terminal: the choice or "no option" in words, warnings, key figures, reasons,
    and what would change it (for no option: the nearest changes that would make one pass)."""
    if not d:
        return "Recommendation: none (the estimate did not run)."
    if d.get("accelerator"):
        lines = [f"Recommendation: {d.get('summary')}"]
    else:
        lines = ["Recommendation: no option passes the hard constraints."]
    lines += [f"  ! {w}" for w in d.get("warnings") or []]
    figs = key_figures(d.get("figures"), d.get("unit")) if d.get("accelerator") else []
    if figs:
        lines.append("  " + "; ".join(f"{v} {k}" for v, k in figs))
    lines += [f"  - {r}" for r in d.get("reasons") or []]
    if d.get("runner_up"):
        lines.append(f"Runner-up: {_runner_up_text(d)}")
    flips = d.get("flip_conditions") or []
    if flips:
        lines.append("Nearest changes that would make an option pass:" if not d.get("accelerator")
                     else "What would change the decision:")
        lines += [f"  - {x}" for x in flips]
    return "\n".join(lines)


def _runner_up_text(d: dict) -> str:
    r = d.get("runner_up")
    return (r.get("summary", "") if isinstance(r, dict) else str(r)) if r else ""


def recommendation_table(rec) -> pd.DataFrame:
    """The recommendation as a two-column table (renders well in notebooks and reports)."""
    d = rec.as_dict()
    rows = [("recommendation", d["summary"])] + [("before acting", w) for w in d.get("warnings") or []]
    if d.get("runner_up"):
        rows.append(("runner-up", _runner_up_text(d)))
    rows += [("why", r) for r in d.get("reasons") or []]
    rows += [("what would change it", f) for f in d.get("flip_conditions") or []]
    return pd.DataFrame(rows, columns=["", "detail"])


def recommendation_markdown(rec) -> Explanation:
    """The recommendation, its reasons, the runner-up and what would change it, as Markdown."""
    d = rec.as_dict()
    lines = [f"**Recommendation: {d['summary']}**", ""]
    if d.get("warnings"):
        lines += ["**Before acting:**", ""] + [f"- {w}" for w in d["warnings"]] + [""]
    lines += [f"- {r}" for r in d.get("reasons") or []]
    lines += ["", f"**Runner-up:** {_runner_up_text(d) or 'none'}", "", "**What would change the decision:**", ""]
    lines += [f"- {f}" for f in d.get("flip_conditions") or []]
    return Explanation("\n".join(lines))


def recommendation_html(rec) -> str:
    """The recommendation as a card: headline, key figures, reasons, runner-up, flip conditions;
    its data attributes name the choice (``data-accelerator``, ``data-pricing-model``, ...). ``rec``: a
    ``Recommendation`` or its ``as_dict()``, which may carry ``price_text`` and ``tie_text`` (``views.buyer``)."""
    d = rec.as_dict() if hasattr(rec, "as_dict") else rec
    data = " ".join(f'data-{k.replace("_", "-")}="{esc(d.get(k) or "")}"'
                    for k in ("accelerator", "provider", "offering", "pricing_model"))
    none = "" if d.get("accelerator") else " wb-none"
    parts = [f'<div class="wb-rec{none}" {data}><div class="wb-rec-label">Recommendation</div>',
             f'<div class="wb-rec-headline">{esc(d["summary"] if d.get("accelerator") else "No option passes the hard constraints.")}</div>']
    if d.get("price_text"):
        parts.append(f'<div class="wb-price-text"><b>Price:</b> {esc(d["price_text"])}</div>')
    if d.get("tie_text"):   # starts "Tie:" or "Clear lead:"
        head, _, rest = d["tie_text"].partition(":")
        parts.append(f'<div class="wb-tie-text"><b>{esc(head)}:</b>{esc(rest)}</div>')
    figs = key_figures(d.get("figures"), d.get("unit")) if d.get("accelerator") else []
    if figs:
        parts.append('<div class="wb-figures">' + "".join(
            f'<div class="wb-figure"><b>{esc(v)}</b><span>{esc(k)}</span></div>' for v, k in figs) + "</div>")
    warns = d.get("warnings") or []
    if warns:
        parts.append('<div class="wb-warnings" role="alert"><b>Before acting</b><ul>'
                     + "".join(f"<li>{esc(w)}</li>" for w in warns) + "</ul></div>")
    reasons = "".join(f"<li>{esc(r)}</li>" for r in d.get("reasons") or [])
    if reasons:
        parts.append(f'<div class="wb-why"><b>Why</b><ul class="wb-reasons">{reasons}</ul></div>')
    if d.get("runner_up"):
        parts.append(f'<div class="wb-runner-up"><b>Runner-up:</b> {esc(_runner_up_text(d))}</div>')
    flips = d.get("flip_conditions") or []
    if flips:
        title = "What would change the decision" if d.get("accelerator") else "Nearest changes that would make an option pass"
        parts.append(f'<div class="wb-flip"><b>{title}</b><ul>'
                     + "".join(f"<li>{esc(x)}</li>" for x in flips) + "</ul></div>")
    return "".join(parts) + "</div>"

