"""What changed between two decisions: ``python -m workbook diff OLD NEW``.

OLD and NEW are ``summary.json`` files (``estimate --json`` output, or a report's ``summary.json``)
or report folders holding one. The comparison reads only those JSON objects, so it works on
reports made by other versions: the recommendation (choice, warnings), its figures (cost with band,
time, chips, score), every option's cost per way to pay, the prices behind them (effective USD per
chip-hour, offering and price date), and the assumptions (scenario inputs, catalog versions,
package version). ``batch.install`` writes one for each scenario against the report it replaces.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from . import inputs, paths
from .errors import InputError
from .terms import usd

REC_FIELDS = ("accelerator", "pricing_model", "provider", "offering")
REL_TOL = 0.005   # changes of figures below 0.5% are rounding, not news


MAX_SUMMARY_BYTES = 50_000_000   # a summary.json is about 100 kB; a report folder's largest under 5 MB


def load_summary(path: str | Path) -> dict:
    """A summary JSON object from a file or a report folder (its ``summary.json``), read through
    ``inputs`` (a regular file of at most ``MAX_SUMMARY_BYTES``, nesting and numbers bounded) and
    checked for the shapes ``diff_summaries`` reads (``_shape_problems``)."""
    p = Path(path)
    try:
        if p.is_dir():
            p = p / "summary.json"
    except (OSError, ValueError):
        pass                        # a name too long: inputs says so
    label = paths.rel(p)
    data = inputs.read_json(p, "a summary.json or a report folder", MAX_SUMMARY_BYTES, label)
    if not isinstance(data, dict):
        raise InputError(f"{label}: expected a JSON object (the estimate --json output)")
    problems = _shape_problems(data)
    if problems:
        raise InputError("", [f"{label}: {line}" for line in problems])
    return data


def _shape_problems(data: dict) -> list[str]:
    """The keys ``diff`` reads whose value has the wrong kind (a list where an object belongs)."""
    out = []
    rec = data.get("recommendation")
    if rec is not None and not isinstance(rec, dict):
        out.append(f"recommendation: expected an object, got {type(rec).__name__}")
        rec = None
    rec = rec or {}
    for key, kind in (("figures", dict), ("warnings", list)):
        if rec.get(key) is not None and not isinstance(rec[key], kind):
            out.append(f"recommendation.{key}: expected {'an object' if kind is dict else 'a list'}, "
                       f"got {type(rec[key]).__name__}")
    if isinstance(rec.get("warnings"), list) and not all(isinstance(w, str) for w in rec["warnings"]):
        out.append("recommendation.warnings: expected a list of sentences (strings)")
    opts = data.get("options")
    if opts is not None and not isinstance(opts, list):
        out.append(f"options: expected a list, got {type(opts).__name__}")
    elif opts:
        for i, o in enumerate(opts):
            if not isinstance(o, dict) or not isinstance(o.get("costs") or {}, dict) or not all(
                    isinstance(e, dict) for e in (o.get("costs") or {}).values()):
                out.append(f"options.{i}: expected an object with costs per way to pay")
                break
    for key in ("inputs", "catalog_versions"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            out.append(f"{key}: expected an object, got {type(data[key]).__name__}")
    return out


def _num(x):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _change(what: str, old, new, money: bool = False) -> dict | None:
    """One changed figure (``what``, ``old``, ``new``, ``relative``), None when equal within REL_TOL."""
    a, b = _num(old), _num(new)
    if a is not None and b is not None:
        if abs(b - a) <= REL_TOL * max(abs(a), abs(b)):
            return None
        rel = (b - a) / abs(a) if a else None
        return {"what": what, "old": a, "new": b, "relative": rel, "money": money}
    if old == new:
        return None
    return {"what": what, "old": old, "new": new, "relative": None, "money": money}


def _recommendation(old: dict, new: dict) -> list[dict]:
    ro, rn = old.get("recommendation") or {}, new.get("recommendation") or {}
    out = [_change(f"recommendation.{k}", ro.get(k), rn.get(k)) for k in REC_FIELDS]
    return [c for c in out if c]


def _figures(old: dict, new: dict) -> list[dict]:
    fo = (old.get("recommendation") or {}).get("figures") or {}
    fn = (new.get("recommendation") or {}).get("figures") or {}
    out = []
    for k in sorted(set(fo) | set(fn)):
        c = _change(f"recommendation.figures.{k}", fo.get(k), fn.get(k), money=k.startswith(("cost_usd", "usd_")))
        if c:
            out.append(c)
    return out


def _option_costs(summary: dict) -> dict:
    """(accelerator, pricing model) -> the ``costs`` entry of ``options``."""
    return {(o.get("accelerator"), pm): e for o in summary.get("options") or []
            for pm, e in (o.get("costs") or {}).items()}


def _costs_and_prices(old: dict, new: dict) -> tuple[list[dict], list[dict]]:
    co, cn = _option_costs(old), _option_costs(new)
    costs, prices = [], []
    for key in sorted(set(co) | set(cn), key=lambda k: (str(k[0]), str(k[1]))):
        eo, en = co.get(key) or {}, cn.get(key) or {}
        label = f"{key[0]} {key[1]}"
        for m in ("cost_usd", "usd_per_million_tokens", "usd_per_month"):
            c = _change(f"{label} {m}", eo.get(m), en.get(m), money=True)
            if c and (m in eo or m in en):
                costs.append(c)
        for k, money in (("offering", False), ("usd_per_chip_hour_effective", True), ("as_of", False)):
            c = _change(f"{label} {k}", eo.get(k), en.get(k), money=money)
            if c and (k in eo or k in en):
                prices.append(c)
    return costs, prices


def _flat(prefix: str, obj, out: dict) -> dict:
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = obj
    return out


def _assumptions(old: dict, new: dict) -> list[dict]:
    out = []
    if "inputs" in old and "inputs" in new:   # a summary written before inputs were kept has none to compare
        io, inn = _flat("", old["inputs"] or {}, {}), _flat("", new["inputs"] or {}, {})
        out = [_change(f"scenario {k}", io.get(k), inn.get(k)) for k in sorted(set(io) | set(inn))]
    vo, vn = old.get("catalog_versions") or {}, new.get("catalog_versions") or {}
    out += [_change(f"catalog {k}", vo.get(k), vn.get(k)) for k in sorted(set(vo) | set(vn))]
    out.append(_change("workbook version", old.get("workbook_version"), new.get("workbook_version")))
    return [c for c in out if c]


def diff_summaries(old: dict, new: dict) -> dict:
    """What changed from ``old`` to ``new``: ``recommendation`` (choice), ``figures`` (its cost, time,
    chips, score), ``costs`` (each option and way to pay), ``prices``, ``assumptions`` (scenario
    inputs, catalogs, version), ``warnings`` (added, removed), ``changed`` and a one-line ``headline``."""
    costs, prices = _costs_and_prices(old, new)
    wo = set((old.get("recommendation") or {}).get("warnings") or [])
    wn = set((new.get("recommendation") or {}).get("warnings") or [])
    d = {"scenario": new.get("scenario") or old.get("scenario"),
         "old_generated_utc": old.get("generated_utc"), "new_generated_utc": new.get("generated_utc"),
         "recommendation": _recommendation(old, new), "figures": _figures(old, new), "costs": costs,
         "prices": prices, "assumptions": _assumptions(old, new),
         "warnings": {"added": sorted(wn - wo), "removed": sorted(wo - wn)}}
    d["changed"] = any(d[k] for k in ("recommendation", "figures", "costs", "prices", "assumptions")) or bool(
        wn ^ wo)
    d["headline"] = _headline(old, new, d)
    return d


def _headline(old: dict, new: dict, d: dict) -> str:
    if not d["changed"]:
        return "no change"
    ro, rn = old.get("recommendation") or {}, new.get("recommendation") or {}
    if d["recommendation"]:
        return f"recommendation changed: {ro.get('summary') or 'none'} -> {rn.get('summary') or 'none'}"
    metric = rn.get("metric")
    main = next((c for c in d["figures"] if c["what"] == f"recommendation.figures.{metric}"), None)
    if main and main["relative"] is not None:
        return f"same choice, cost {main['relative']:+.1%} ({usd(main['old'])} -> {usd(main['new'])})"
    n = sum(len(d[k]) for k in ("figures", "costs", "prices", "assumptions"))
    return f"same choice; {n} figure(s) or input(s) changed"


def _value(c: dict, v) -> str:
    if v is None:
        return "(none)"
    if c["money"] and _num(v) is not None:
        return usd(v)
    return f"{v:,.4g}" if _num(v) is not None else inputs.excerpt_text(str(v))


def change_lines(d: dict) -> list[str]:
    """The diff as text lines: one per change, grouped by section."""
    lines = [f"{d.get('scenario')}: {d['headline']}"]
    for key, title in (("recommendation", "Recommendation"), ("figures", "Its figures"), ("costs", "Costs"),
                       ("prices", "Prices"), ("assumptions", "Assumptions")):
        if d[key]:
            lines.append(f"{title}:")
            for c in d[key]:
                rel = f" ({c['relative']:+.1%})" if c["relative"] is not None else ""
                lines.append(f"  {c['what']}: {_value(c, c['old'])} -> {_value(c, c['new'])}{rel}")
    for w in d["warnings"]["added"]:
        lines.append(f"  new warning: {w}")
    for w in d["warnings"]["removed"]:
        lines.append(f"  warning gone: {w}")
    return lines


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", help="the earlier summary.json (or report folder)")
    p.add_argument("new", help="the later summary.json (or report folder)")
    p.add_argument("--json", action="store_true", help="print the changes as one JSON object")


def run(args) -> int:
    d = diff_summaries(load_summary(args.old), load_summary(args.new))
    print(json.dumps(d, indent=2) if args.json else "\n".join(change_lines(d)))
    return 0
