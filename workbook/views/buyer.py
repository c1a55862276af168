"""What a buyer reads first, from the ``estimate --json`` object (``analysis.summary_json``): the winner's
price with its basis, source and age; whether the winner is a tie and on what share of draws; every caveat
that could change the decision; a compact ranking; tables with the buyer's columns in front and the rest
behind "more columns"; the assumptions ledger as a collapsed appendix that starts with the rows behind the
winner and the runner-up.

The report header, the CLI's ranking table and the app's card all call these functions on the same
object, so they print the same figures.
"""
from __future__ import annotations

import datetime as _dt
import math

import pandas as pd

from .. import catalog, terms
from ..decision.rank import TIE_BREAKERS
from ..decision.recommend import Recommendation, _clean
from .text import BLANK, esc, money, number, table_html

STALE_DAYS = 365            # as decision.evidence / prices.is_stale: older than a year counts as stale
CLEAR_LEAD = 0.9            # decision.rank.ties: a lead held in fewer than 90% of the joint draws is a tie
TIE_DRAWS = 2000            # decision.rank.ties' default number of joint Monte Carlo draws
BASIS_WORDS = {"catalog": "maintained catalog", "provider_page": "provider's own page",
               "transcription": "third-party transcription", "secondary": "secondary note"}


def _num(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _today(summary: dict) -> _dt.date:
    """The day the figures were made (``generated_utc``), so a report's ages do not move after it is written."""
    stamp = summary.get("generated_utc") or (summary.get("report") or {}).get("generated_utc")
    try:
        return pd.Timestamp(stamp).date() if stamp else _dt.date.today()
    except ValueError:
        return _dt.date.today()


def _catalog_row(offering: str | None) -> dict:
    if not offering:
        return {}
    off = catalog.offerings()
    row = off[off["offering"] == offering]
    return row.iloc[0].to_dict() if len(row) else {}


def offer_row(summary: dict, offering: str | None, pricing_model: str | None) -> dict:
    """The ``offers`` entry of one offering and way to pay ({} when absent)."""
    return next((o for o in summary.get("offers") or []
                 if o.get("offering") == offering and o.get("pricing_model") == pricing_model), {})


def price_facts(summary: dict, offering: str | None, pricing_model: str | None) -> dict:
    """Basis, validity date, age in days, source and shape of an offer's price: from its ``offers`` entry
    where ``estimate --json`` carries them (``price_basis``, ``price_age_days``), else from its row of
    ``data/offerings.csv`` (``price_basis``, ``price_as_of``, ``source``, ``shape_confirmed``)."""
    offer, row = offer_row(summary, offering, pricing_model), _catalog_row(offering)
    basis = offer.get("price_basis") or row.get("price_basis")
    as_of = offer.get("price_as_of") or row.get("price_as_of")
    as_of = None if as_of is None or (isinstance(as_of, float) and math.isnan(as_of)) else str(as_of)[:10]
    age = _num(offer.get("price_age_days"))
    if age is None and as_of:
        try:
            age = float((_today(summary) - pd.Timestamp(as_of).date()).days)
        except ValueError:
            age = None
    shape = row.get("shape_confirmed")
    return {"basis": basis if isinstance(basis, str) else None, "as_of": as_of, "age_days": age,
            "source": row.get("source") if isinstance(row.get("source"), str) else None,
            "shape_confirmed": None if shape is None or (isinstance(shape, float) and math.isnan(shape)) else bool(shape)}


def age_text(age_days: float | None) -> str:
    if age_days is None:
        return "undated"
    return f"{age_days:,.0f} days old" if age_days < 90 else f"{age_days / 30.44:,.0f} months old"


def price_text(p: dict) -> str:
    """'maintained catalog, valid 2025-06-01 (18 months old)' / 'secondary note, undated'."""
    basis = BASIS_WORDS.get(p.get("basis"), p.get("basis") or "basis not recorded")
    when = f"valid {p['as_of']} ({age_text(p.get('age_days'))})" if p.get("as_of") else "undated"
    return f"{basis}, {when}"


def winner_price_text(summary: dict) -> str | None:
    """The header's price line: the basis and age of the winner's price, and its source."""
    rec = summary.get("recommendation") or {}
    if not rec.get("offering"):
        return None
    p = price_facts(summary, rec.get("offering"), rec.get("pricing_model"))
    source = f"; source: {p['source']}" if p.get("source") else ""
    return f"{price_text(p)}{source}"


def winner_price_short(summary: dict) -> str | None:
    """The index's price cell: basis and age of the winner's price, without its source."""
    rec = summary.get("recommendation") or {}
    return price_text(price_facts(summary, rec.get("offering"), rec.get("pricing_model"))) if rec.get("offering") else None


def tie_short(summary: dict) -> str | None:
    """The index's cell: 'tie (leads in 51% of draws)' or 'clear lead'."""
    rec = summary.get("recommendation") or {}
    if not rec.get("accelerator") or "ties" not in rec:
        return None
    t = tie_facts(summary)
    if not t["tie"]:
        return "clear lead"
    if t["share"] is None and t["level"]:
        return "tie (same plan, same price)"
    return f"tie (leads in {t['share']:.0%} of draws)" if t["share"] is not None else "tie"


def _level(t: dict) -> bool:
    """A tied offer that scores the same as the first in every draw (gap zero at the point estimate and at
    P10 and P90: the same plan at the same price, e.g. the same instance in another region, whose price
    doubt is drawn once per instance), as ``decision.recommend._tie_words`` says it."""
    return all(_num(t.get(k)) == 0 for k in ("score_gap", "gap_p10", "gap_p90"))


def tie_facts(summary: dict) -> dict:
    """Whether the winner is tied (``recommendation.ties``), the offers tied with it (``with``), those level
    with it in every draw (``level``: the same plan at the same price, which it "leads" in no draw), the
    lowest share of joint draws in which the top-scored offer leads one of the others (``share``; None when
    every tied offer is level), and whether a tie-breaker put a lower-scored offer first."""
    rec = summary.get("recommendation") or {}
    ties = rec.get("ties") or []
    level = [t for t in ties if _level(t)]
    shares = [s for s in (_num(t.get("p_top_leads")) for t in ties if not _level(t)) if s is not None]
    score, ru = _num((rec.get("figures") or {}).get("score")), _num((rec.get("runner_up") or {}).get("score"))
    return {"tie": bool(ties), "share": min(shares) if shares else None, "with": [t.get("option") for t in ties],
            "level": [t.get("option") for t in level],
            "causes": {t.get("cause") for t in ties if t.get("cause")},
            "score": score, "runner_up_score": ru, "lower_scored_first": score is not None and ru is not None and ru > score}


def _offers(n: int) -> str:
    return f"{n} other offer{'s' if n > 1 else ''}"


def tie_text(summary: dict) -> str | None:
    """'Tie: ...' or 'Clear lead: ...' in one sentence, with the share of draws."""
    rec = summary.get("recommendation") or {}
    if not rec.get("accelerator") or "ties" not in rec:   # no tie test in this (older) summary: say nothing
        return None
    t = tie_facts(summary)
    if t["tie"]:
        n_level = len(t["level"])
        n = len(t["with"]) - n_level
        same = "the same plan at the same price, such as the same instance in another region"
        if not n:
            return (f"Tie: the best-scored offer is level with {_offers(n_level)} in every draw ({same}); the "
                    f"tie-breakers ({', then '.join(TIE_BREAKERS)}) chose this one.")
        level = f", and is level with {n_level} more in every draw ({same})" if n_level else ""
        share = f"in only {t['share']:.0%}" if t["share"] is not None else "in fewer than 90%"
        if t["causes"] == {"price doubt"}:   # decision.rank.ties: stated, the order kept (cost.doubt)
            return (f"Tie on the doubt of the prices: the best-scored offer leads {_offers(n)} "
                    f"{share} of {TIE_DRAWS:,} joint Monte Carlo draws with each price varied within its doubt (a "
                    f"clear win needs {CLEAR_LEAD:.0%}){level}; at the catalog's prices it leads clearly, so the "
                    "order is kept: confirm the prices before acting.")
        text = (f"Tie: the best-scored offer leads {_offers(n)} {share} of {TIE_DRAWS:,} "
                f"joint Monte Carlo draws (a clear win needs {CLEAR_LEAD:.0%}){level}; the tie-breakers "
                f"({', then '.join(TIE_BREAKERS)}) chose this one")
        if t["lower_scored_first"]:
            text += (f", although the runner-up scores higher ({t['runner_up_score']:.3f} vs {t['score']:.3f}), "
                     "a gap within the noise")
        return text + "."
    return (f"Clear lead: its weighted-score lead over every other offer holds in at least {CLEAR_LEAD:.0%} of "
            f"{TIE_DRAWS:,} joint Monte Carlo draws.")


def caveats(summary: dict) -> list[str]:
    """'Before acting': every caveat that could change the decision: the recommendation's warnings (stale or
    undated price, uncalibrated or optimistic estimate, short host), plus a port whose cost is not priced, a
    price from a secondary note, a shape no source confirms, and a tie, each once."""
    rec = summary.get("recommendation") or {}
    out = list(rec.get("warnings") or [])
    if not rec.get("offering"):
        return out
    said = " ".join(out).lower()
    label = rec.get("summary") or rec.get("offering")
    p = price_facts(summary, rec.get("offering"), rec.get("pricing_model"))
    if p.get("basis") == "secondary" and "secondary" not in said:
        out.append(f"Secondary price: {label} is priced from a secondary note ({p.get('source') or 'no source named'}), "
                   "not the provider's own page; confirm it with the provider before acting.")
    if p.get("age_days") is not None and p["age_days"] > STALE_DAYS and "stale" not in said and "older" not in said:
        out.append(f"Stale price: {label}'s price is {age_text(p['age_days'])} (valid {p['as_of']}); refresh it "
                   "(python -m workbook prices refresh) before acting.")
    if p.get("shape_confirmed") is False and "shape" not in said:
        out.append(f"Unconfirmed shape: no source confirms that {rec.get('provider')} sells "
                   f"{rec.get('offering')} with this many chips per instance; check the instance exists before acting.")
    port = next((r for r in rec.get("reasons") or [] if "porting cost not priced" in r or "not priced" in r and "port" in r), None)
    if port and "port" not in said:
        out.append("Porting cost not priced: the recommended platform needs a port of the team's code and no "
                   "published effort prices it (set pricing.porting_weeks or pricing.porting_cost_usd); it could "
                   "change the ranking.")
    t = tie_facts(summary)
    if t["tie"] and "tie" not in said:
        why = "the doubt of the prices" if t["causes"] == {"price doubt"} else "the model's noise"
        out.append(f"Tie: the lead over {len(t['with'])} offer(s) is within {why}; treat them as equals "
                   "and let price quotes decide.")
    return out


# --- the compact ranking (CLI, app) -----------------------------------------------------------------

def _time_value(summary: dict, offer: dict) -> str:
    if offer.get("training_days") is not None:
        d = _num(offer.get("training_days"))
        return BLANK if d is None else (f"{d:,.1f} d" if d >= 1 else f"{d * 24:,.1f} h")
    ttft = _num(offer.get("ttft_ms_at_slo_percentile"))
    return BLANK if ttft is None else f"{ttft:,.0f} ms"


def ranking_frame(summary: dict, n: int = 8) -> pd.DataFrame:
    """The best ``n`` offers of ``offers`` as a buyer reads them: offer, way to pay, price basis and age,
    cost (the scenario's metric), time (training days, or first-token time at the SLO percentile under
    the request rate) and the verdict (winner, tie, runner-up)."""
    rec = summary.get("recommendation") or {}
    metric = rec.get("metric") or ("usd_per_million_tokens" if summary.get("task") == "inference" else "cost_usd")
    ru = rec.get("runner_up") or {}
    offers = [o for o in summary.get("offers") or [] if not o.get("excluded_reason") and o.get("rank") is not None]
    offers.sort(key=lambda o: o["rank"])
    pct = _num((rec.get("figures") or {}).get("ttft_slo_percentile")) or 99
    generic = rec.get("unit") == terms.metric_unit(False, generic=True)  # a generic model's service: per request
    per, first = ("req", "request latency") if generic else ("tok", "first token")
    time_col = "time" if metric == "cost_usd" else f"{first} P{pct:g} (under load)"
    rows = []
    for o in offers[:n]:
        p = price_facts(summary, o.get("offering"), o.get("pricing_model"))
        won = o.get("offering") == rec.get("offering") and o.get("pricing_model") == rec.get("pricing_model")
        is_ru = o.get("offering") == ru.get("offering") and o.get("pricing_model") == ru.get("pricing_model")
        verdict = ("winner, tied" if o.get("tie") else "winner") if won else (
            "tied with the winner" if o.get("tie") else ("runner-up" if is_ru else ""))
        cost = _num(o.get(metric))
        rows.append({"rank": int(o["rank"]), "offer": f"{o.get('accelerator')} · {o.get('provider')} {o.get('instance')}"
                                                       f"{' · ' + o['region'] if o.get('region') not in (None, 'all', 'unspecified') else ''}",
                     "pay": _pay_label(o.get("pricing_model")),
                     "price": f"{p['basis'] or '?'}, {age_text(p['age_days'])}",
                     "cost": BLANK if cost is None else (f"${cost:,.3g}/M {per}" if metric == "usd_per_million_tokens" else money(cost)),
                     time_col: _time_value(summary, o), "verdict": verdict})
    return pd.DataFrame(rows, columns=["rank", "offer", "pay", "price", "cost", time_col, "verdict"])


def _pay_label(model: str | None) -> str:
    label = terms.PRICING_MODELS[model].label if model in terms.PRICING_MODELS else str(model)
    return label[2:] if label.startswith("a ") else label


def ranking_text(summary: dict, n: int = 8) -> str:
    """``ranking_frame`` as a fixed-width table for a terminal."""
    df = ranking_frame(summary, n)
    if df.empty:
        return "No offer passes the hard constraints."
    with pd.option_context("display.width", 200, "display.max_columns", None, "display.max_colwidth", 48):
        return df.to_string(index=False)


# --- report tables: the buyer's columns, the rest behind "more columns" -----------------------------

BUYER_COLUMNS = {   # at most about nine columns: what fits 1280 px without scrolling
    "ranking": ["rank", "accelerator", "pricing_model", "provider", "usd_per_million_tokens", "cost_usd",
                "usd_per_month", "training_days", "tpot_ms", "score"],
    "offers": ["rank", "accelerator", "provider", "pricing_model", "usd_per_chip_hour", "price_basis", "price_as_of",
               "usd_per_million_tokens", "cost_usd", "training_days", "ttft_ms_at_slo_percentile", "tie"],
    "energy": ["accelerator", "provider", "region", "pricing_model", "energy_kwh_per_month", "co2_kg_per_month",
               "energy_kwh", "co2_kg", "energy_reason"],
    "excluded": ["accelerator", "pricing_model", "offerings", "constraint"],
    "claims": ["claim", "status", "measured", "claimed", "why"],
}
LABELS = {"pricing_model": "way to pay", "usd_per_million_tokens": "$ per M output tokens", "cost_usd": "$ per run",
          "usd_per_month": "$ per month", "training_days": "days", "tpot_ms": "ms per token",
          "ttft_ms_at_slo_percentile": "TTFT ms (load)", "usd_per_chip_hour": "$ per chip-hour",
          "price_basis": "price basis", "price_as_of": "price valid", "energy_kwh_per_month": "kWh per month",
          "co2_kg_per_month": "kg CO2e per month", "energy_kwh": "kWh", "co2_kg": "kg CO2e", "energy_reason": "note"}


def _with_price_basis(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``price_basis`` from ``data/offerings.csv`` when it has an ``offering`` column but no basis."""
    if "offering" not in df or "price_basis" in df:
        return df
    basis = catalog.offerings().set_index("offering")["price_basis"]
    return df.assign(price_basis=df["offering"].map(basis))


def table(df: pd.DataFrame | None, kind: str, max_rows: int = 15) -> "HTML":
    """A table with the columns a buyer needs (``BUYER_COLUMNS[kind]``, those present; at most ``max_rows``
    rows) and, collapsed under "more columns", the whole frame (every column, up to 100 rows)."""
    from IPython.display import HTML  # third-party: only when a notebook renders a table

    if df is None or len(df) == 0:
        return HTML("<p><i>No rows.</i></p>")
    df = _with_price_basis(df)
    cols = [c for c in BUYER_COLUMNS.get(kind, []) if c in df.columns] or list(df.columns)[:8]
    rest = [c for c in df.columns if c not in cols]
    hidden = max(len(df) - max_rows, 0)
    what = ", ".join(x for x in (f"{len(rest)} more columns" if rest else "", f"{hidden:,} more rows" if hidden else "") if x)
    more = (f'<details class="wb-more"><summary>More columns and rows ({what})</summary>{table_html(df)}</details>'
            if what else "")
    return HTML(table_html(df, columns=cols, labels=LABELS, highlight_first=kind in ("ranking", "offers"),
                           max_rows=max_rows) + more)


def ledger_appendix(ledger: pd.DataFrame, rec) -> "HTML":
    """The assumptions ledger collapsed (``<details>``), starting with the rows behind the winner and the
    runner-up (their offerings, accelerators and prices), then every other row. ``rec``: a
    ``Recommendation`` or its ``as_dict()``."""
    from IPython.display import HTML

    if isinstance(rec, Recommendation):   # the four names only, not as_dict's JSON of the ranking and exclusions
        rec = {"offering": rec.offering, "accelerator": rec.accelerator,
               "runner_up": {k: _clean(rec.runner_up.get(k)) for k in ("offering", "accelerator")}
               if rec.runner_up else None}
    rec = rec.as_dict() if hasattr(rec, "as_dict") else (rec or {})
    ru = rec.get("runner_up") or {}
    keys = [k for k in (rec.get("offering"), rec.get("accelerator"), ru.get("offering"), ru.get("accelerator")) if k]
    hit = ledger["item"].astype(str).map(lambda s: any(k in s for k in keys)) if keys else pd.Series(False, index=ledger.index)
    behind, others = ledger[hit], ledger[~hit]
    flagged = int((ledger["flag"].fillna("").astype(str).str.len() > 0).sum()) if "flag" in ledger else 0
    return HTML(
        f'<details class="wb-appendix"><summary>Assumptions ledger: {len(ledger):,} inputs with their source and date '
        f'({flagged:,} flagged); the {len(behind):,} behind the winner and the runner-up first</summary>'
        f'<h4>Behind the winner and the runner-up</h4>{table_html(behind, max_rows=max(len(behind), 1))}'
        f'<h4>Every other input</h4>{table_html(others, max_rows=max(len(others), 1))}</details>')


def number_or_blank(v) -> str:
    return BLANK if _num(v) is None else number(v)
