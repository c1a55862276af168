"""The checks of ``data/claims.csv`` that read an instance, the fault-tolerance model, the energy table
or a ratio of peaks (issue 25 item 5); the price and chip checks are in ``decision.evidence``, which
lists every check in its ``CHECKS``. Each returns the evidence row of ``evidence._result``: holds, does
not hold, or not applicable with the reason, and the figure the catalog or the model gives."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import catalog
from ..cost import energy, reliability
from ..scenario import Scenario

HOLDS, FAILS, NA = "holds", "does not hold", "not applicable"


def _result(row, status, measured, why, by=None):
    return {"claim_id": row["claim_id"], "claim": row["claim"], "status": status, "measured": measured,
            "claimed": None, "by_how_much": by, "why": why, "source": row["source"], "as_of": row["as_of"]}


def _within(x, row) -> bool:
    return bool(row["claimed_low"] <= x <= row["claimed_high"])


def _build_instance_index(full: pd.DataFrame) -> tuple[pd.DataFrame, dict, dict]:
    off = full[~catalog.is_superseded(full)]
    groups: dict = {}
    for i, k in enumerate(off["instance"].astype(str).str.lower().tolist()):
        if isinstance(k, str):
            groups.setdefault(k, []).append(i)
    return off, groups, {}


_INSTANCES = catalog.PerLoad(_build_instance_index)


def _instance_index() -> tuple[pd.DataFrame, dict, dict]:
    """The current (not superseded) offerings and the positions of each instance's rows among them, by the
    instance name lowered; built once per catalog load (11 claims read it, 1,500 rows each time before)."""
    return _INSTANCES.get(catalog.offerings())


def _instance_rows(name: str) -> pd.DataFrame:
    """The offerings of one instance type (``subject``: the instance name, case-insensitive), current rows only
    (one frame per name and catalog load; callers only read it)."""
    off, groups, frames = _instance_index()
    key = str(name).lower()
    if key not in frames:
        frames[key] = off.iloc[groups.get(key, [])]
    return frames[key]


def instance_accelerator(row, s: Scenario, perf_df, priced):
    """The instance ``subject`` carries the chip ``baseline`` (claimed_low..high chips of it, when given):
    read from ``data/offerings.csv``."""
    rows = _instance_rows(row["subject"])
    if rows.empty:
        return _result(row, NA, None, f"data/offerings.csv has no {row['subject']} instance to check against.")
    r = rows.iloc[0]
    acc, n = str(r["accelerator"]), float(r["chips_per_instance"])
    chip_ok = acc == row["baseline"]
    count_ok = pd.isna(row["claimed_low"]) or _within(n, row)
    why = f"data/offerings.csv: {row['subject']} has {n:g} x {acc} ({str(r['source']).split(' (')[0]})."
    by = "as claimed" if chip_ok and count_ok else f"{n:g} x {acc}, not {row['baseline']}" if not chip_ok \
        else f"{n:g} chips"
    return _result(row, HOLDS if chip_ok and count_ok else FAILS, n, why, by)


def _inter_node(row, per_chip: bool):
    rows = _instance_rows(row["subject"])
    if rows.empty:
        return _result(row, NA, None, f"data/offerings.csv has no {row['subject']} instance to check against.")
    r = rows[rows["inter_node_bytes_per_s"].notna()]
    if r.empty:
        return _result(row, NA, None, f"data/offerings.csv gives no network between instances for "
                                      f"{row['subject']} (inter_node_bytes_per_s blank).")
    r = r.iloc[0]
    v = float(r["inter_node_bytes_per_s"]) / (float(r["chips_per_instance"]) if per_chip else 1.0)
    what = "per chip" if per_chip else "per instance"
    why = (f"data/offerings.csv: {row['subject']} has {v * 8 / 1e9:,.0f} Gb/s between instances {what} "
           f"({v:.3g} B/s; fabric {r['fabric'] if pd.notna(r['fabric']) else 'not stated'}).")
    ok = _within(v, row)
    return _result(row, HOLDS if ok else FAILS, v, why,
                   "as claimed" if ok else f"{v / row['claimed_low']:.2f}x the claimed figure")


def offering_inter_node(row, s, perf_df, priced):
    """Network between instances of the instance ``subject`` (bytes/s per instance)."""
    return _inter_node(row, per_chip=False)


def offering_inter_node_per_chip(row, s, perf_df, priced):
    """Network between instances of the instance ``subject`` per chip (bytes/s)."""
    return _inter_node(row, per_chip=True)


def _training_point(s: Scenario, priced: pd.DataFrame):
    """The cheapest priced training option with its chips and checkpoint bytes, else None."""
    if not s.is_training or "checkpoint_bytes" not in priced:
        return None
    # the first row of the lowest cost among those with a cost and checkpoint bytes (what a stable sort of them puts
    # first), by position: no filtered and sorted copy of every priced column
    at = np.flatnonzero((priced["cost_usd"].notna() & priced["checkpoint_bytes"].notna()).to_numpy())
    return None if not len(at) else priced.iloc[at[int(np.argmin(priced["cost_usd"].to_numpy(float)[at]))]]


def checkpoint_write(row, s, perf_df, priced):
    """Seconds to write the scenario's checkpoint (the cheapest option's model and optimizer state, from
    all its chips) to the storage tier ``baseline`` (``cost.reliability.checkpoint_write_s`` and its
    sourced ``STORAGE_TIERS``)."""
    win = _training_point(s, priced)
    if win is None:
        return _result(row, NA, None, "A training claim: this scenario has no priced training option.")
    tier = str(row["baseline"])
    chips = float(win["chips"])
    t = float(reliability.checkpoint_write_s(float(win["checkpoint_bytes"]), chips, tier))
    if not math.isfinite(t):
        return _result(row, NA, None, f"The '{tier}' tier has no sourced write bandwidth.")
    why = (f"Writing {float(win['checkpoint_bytes']) / 1e9:,.0f} GB of model and optimizer state from {chips:,.0f} "
           f"chips ({win['accelerator']}) to {tier.replace('_', ' ')} takes {t:,.0f} s "
           f"(the sourced bandwidth of workbook.cost.reliability.STORAGE_TIERS['{tier}']).")
    ok = _within(t, row)
    return _result(row, HOLDS if ok else FAILS, t, why, "as claimed" if ok else f"{t:,.0f} s")


def restart(row, s, perf_df, priced):
    """The restart time the scenario assumes (``pricing.restart_min``, a planning input) against the claim."""
    v = float(s.pricing.restart_min) * 60.0
    ok = _within(v, row)
    why = (f"This scenario plans {v:,.0f} s per restart (pricing.restart_min = {s.pricing.restart_min:g}, an input: "
           "set it from your own restarts); the claim would lower the lost hours of each interruption.")
    return _result(row, HOLDS if ok else FAILS, v, why, "as assumed" if ok else f"{v / row['claimed_high']:.1f}x")


def pue(row, s, perf_df, priced):
    """The provider ``subject``'s PUE in ``data/pue.csv`` (its published fleet figure or the industry average)."""
    t = energy.table("pue").set_index("provider")
    if row["subject"] not in t.index:
        return _result(row, NA, None, f"data/pue.csv has no row for {row['subject']}.")
    r = t.loc[row["subject"]]
    v = float(r["pue"])
    ok = _within(v, row)
    why = f"data/pue.csv: {row['subject']} PUE {v:.2f} ({r['basis']}, {r['year']}; {str(r['source']).split(' (')[0]})."
    return _result(row, HOLDS if ok else FAILS, v, why, "as claimed" if ok else f"{v:.2f}")


def _dense16(acc) -> float:
    v = acc.get("peak_bf16_flops_per_s")
    return float(v) if pd.notna(v) else float(acc["peak_fp16_flops_per_s"])


def peak_ratio(row, s, perf_df, priced):
    """A speed-up claim read per chip: the dense 16-bit peak of ``subject`` over ``baseline``
    (accelerators.csv). A cluster result also depends on chip counts and efficiency, said in the reason."""
    a, b = catalog.accelerator(row["subject"]), catalog.accelerator(row["baseline"])
    v = _dense16(a) / _dense16(b)
    ok = _within(v, row)
    why = (f"Per chip, {row['subject']} peaks at {_dense16(a) / 1e12:.0f} and {row['baseline']} at "
           f"{_dense16(b) / 1e12:.0f} dense 16-bit TFLOP/s (accelerators.csv): {v:.2f}x. A cluster result also "
           "depends on how many chips each side ran and at what efficiency; at equal chips and efficiency the "
           + ("peaks account for the claim." if ok else
              f"claim needs {row['claimed_low'] / v:.1f}x more chips or efficiency on the {row['subject']} side."))
    return _result(row, HOLDS if ok else FAILS, v, why, "as claimed" if ok else f"{v:.2f}x")


def tpot(row, s, perf_df, priced):
    """Time per output token of ``subject`` in this scenario (the serving model's point) against the claim."""
    if s.is_training or "tpot_ms" not in perf_df or row["subject"] not in set(perf_df["accelerator"]):
        return _result(row, NA, None, f"A serving claim on {row['subject']}: not a candidate serving here.")
    r = perf_df[perf_df["accelerator"] == row["subject"]].iloc[0]
    if pd.isna(r["tpot_ms"]) or not bool(r["fits"]):
        return _result(row, NA, None, f"{row['subject']} does not serve this model here ({r.get('reason')}).")
    v = float(r["tpot_ms"])
    ok = _within(v, row)
    why = (f"At this scenario's load {row['subject']} decodes at {v:.1f} ms per output token with "
           f"{int(r['chips'])} chips (model.serving, batch {r.get('batch')}).")
    return _result(row, HOLDS if ok else FAILS, v, why, "as claimed" if ok else f"{v:.1f} ms")


def not_modelled(row, s, perf_df, priced):
    """A claim about something the workbook does not model (a CPU baseline, memory fragmentation, a
    vendor benchmark's QPS): not applicable, with the row's notes as the reason."""
    return _result(row, NA, None, str(row["notes"]) if pd.notna(row.get("notes")) else "Not modelled.")


CHECKS = {"instance_accelerator": instance_accelerator, "offering_inter_node_bytes_per_s": offering_inter_node,
          "offering_inter_node_bytes_per_s_per_chip": offering_inter_node_per_chip,
          "checkpoint_write_s": checkpoint_write, "restart_s": restart, "pue": pue, "peak_ratio": peak_ratio,
          "tpot_ms": tpot, "not_modelled": not_modelled}
