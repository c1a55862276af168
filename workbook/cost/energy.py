"""Energy and carbon of every offer: kWh and kg CO2e per instance-hour, and per option for the work.

The model, stated once (each piece names its source in its function):

    IT power of an instance (W)  = chips x chip power (``tdp_w``, accelerators.csv) x system overhead
                                   x utilization
    energy per instance-hour (kWh) = IT power x PUE / 1000
    CO2e per instance-hour (kg)    = energy x grid intensity (gCO2e/kWh) / 1000

- **system overhead** (host CPUs, memory, NICs, switches, fans) is the ratio of a published system's
  maximum power to its accelerators' TDP (``data/system_power.csv``: DGX H100 10.2 kW / 8 x 700 W =
  1.82, DGX A100 2.03, DGX B200 1.79, DGX GH200 1.875 over the 1,000 W CPU+GPU module), else Epoch
  AI's 1.82 for every system (``SYSTEM_OVERHEAD``); a chip whose own power is unpublished but whose
  whole system's is (Google's ~10 MW, 9,216-chip Ironwood superpod) takes that system's power per
  chip (``per_chip_system_w``); a purchased system uses its own ``system_power_w`` (data/hardware.csv)
  instead of chips x TDP x overhead.
- **draw**: rated power scaled linearly by ``pricing.utilization`` (the scenario's average load while
  the work runs), with no idle floor: no sourced idle power of these systems was found, so a lightly
  loaded fleet is under-counted. At full load the rating is an upper bound: 8-GPU H100 nodes training
  at near-full GPU utilization were measured at about 76% of the 10.2 kW rating (Newkirk et al. 2025,
  arXiv:2506.14551), so the default utilization 0.9 is about 18% above that measurement.
- **PUE**: the provider's published fleet figure, or the Uptime Institute industry average for GPU
  clouds that publish none (``data/pue.csv``); a purchased system uses ``pricing.pue``.
- **grid intensity**: location-based annual average of the region's grid (``data/grid_carbon.csv``:
  Google's region-carbon-info for GCP, Cloud Carbon Footprint's factors for AWS and Azure); an offer
  with no region has none, and its ``co2_kg`` is blank with the reason in ``energy_reason``. A
  purchased system uses ``pricing.grid_gco2e_per_kwh`` (no default: own site unknown).

Per option (columns added to the priced frame by ``add_per_instance_hour`` and ``add_totals``):
training, the whole run (instances x wall-clock hours, failures included); serving,
``energy_kwh_per_month`` / ``co2_kg_per_month`` (instances, spares included, x ``hours_per_day`` x
30.4 days) and ``energy_kwh`` / ``co2_kg`` over ``pricing.horizon_months``. Commitment hours no work
uses are not counted. ``pricing.carbon_usd_per_tonne`` (default 0) prices the CO2e into the bill as a
cost per instance-hour, so ranking, budget and Monte Carlo see it (``carbon_usd`` shows it).
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from .. import catalog, paths
from ..catalog import Col
from ..errors import InputError
from ..scenario import Scenario
from ..terms import DAYS_PER_MONTH, HOURS_PER_DAY

# Epoch AI, "GPU clusters" documentation, Estimation (epoch.ai/data/gpu-clusters-documentation/estimation,
# read 2026-12-01): "a 1.82x multiplier for non-GPU hardware ... based on NVIDIA DGX H100 server specifications"
SYSTEM_OVERHEAD = 1.82

_SRC = {"source": Col("str", True), "as_of": Col("date", True), "notes": Col()}
SCHEMAS = {
    "system_power": {"accelerator": Col("str", True), "system": Col("str", True),
                     "chips_per_system": Col("int", True, 1, 100_000), "system_power_w": Col("float", True, 10, 1e8),
                     **_SRC},
    "pue": {"provider": Col("str", True), "pue": Col("float", True, 1, 3),
            "basis": Col("str", True, choices=("provider_fleet", "industry_average")),
            "year": Col("int", False, 2000, 2100), **_SRC},
    "grid_carbon": {"provider": Col("str", True), "region": Col("str", True),
                    "grid_gco2e_per_kwh": Col("float", False, 0, 2000), "year": Col("int", False, 2000, 2100),
                    "method": Col(), **_SRC},
}


@functools.lru_cache(maxsize=None)
def table(name: str) -> pd.DataFrame:
    """``data/<name>.csv`` (``system_power``, ``pue``, ``grid_carbon``), validated once per process by the
    catalog's reader (malformed cells named by file, row and column; no duplicate keys)."""
    df = catalog.read_module_table(name, SCHEMAS[name])
    rel = paths.rel(paths.DATA_DIR / f"{name}.csv")
    key = {"system_power": ["accelerator"], "pue": ["provider"], "grid_carbon": ["provider", "region"]}[name]
    dup = df.duplicated(key)
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"{rel}: row {i + 2}: {key[-1]}: duplicate {' / '.join(str(df[k].iloc[i]) for k in key)}")
    return df


# --- formulas (scalars or arrays) ----------------------------------------------------------------------

def system_overhead(chip_power_w, system_power_w, chips_per_system):
    """IT power of a whole system over its accelerators' power: a published system's maximum input power
    / (chips x TDP) (DGX H100: 10,200 / (8 x 700) = 1.82), else ``SYSTEM_OVERHEAD`` (Epoch AI's 1.82,
    the same DGX H100 ratio applied to every system) where no system figure is published (NaN inputs)."""
    ratio = np.asarray(system_power_w, dtype=float) / (np.asarray(chips_per_system, dtype=float)
                                                       * np.asarray(chip_power_w, dtype=float))
    return np.where(np.isfinite(ratio), ratio, SYSTEM_OVERHEAD)


def per_chip_system_w(chip_power_w, overhead, system_power_w, chips_per_system):
    """A system's power per accelerator (W): chip power x system overhead; where the chip's own power
    is not published but a whole system's is (data/system_power.csv, e.g. Google's Ironwood superpod),
    that system's maximum power / its chips (the same quantity, read directly); NaN when neither is."""
    direct = np.asarray(system_power_w, dtype=float) / np.asarray(chips_per_system, dtype=float)
    via_chip = np.asarray(chip_power_w, dtype=float) * np.asarray(overhead, dtype=float)
    return np.where(np.isfinite(via_chip), via_chip, direct)


def it_power_w(chips, chip_power_w, overhead, utilization):
    """IT power of an instance (W): chips x chip power x system overhead x utilization (the linear
    power-utilization model P = P_idle + (P_max - P_idle) u of Fan, Weber and Barroso 2007, "Power
    provisioning for a warehouse-sized computer", with P_idle = 0: no sourced idle floor)."""
    return (np.asarray(chips, dtype=float) * np.asarray(chip_power_w, dtype=float) * np.asarray(overhead, dtype=float)
            * np.asarray(utilization, dtype=float))


def energy_kwh_per_instance_hour(it_w, pue):
    """Facility energy of one instance-hour (kWh): IT power x PUE / 1000 (PUE = total facility energy /
    IT energy, The Green Grid's definition as the providers apply it)."""
    return np.asarray(it_w, dtype=float) * np.asarray(pue, dtype=float) / 1000.0


def co2_kg(energy_kwh, grid_gco2e_per_kwh):
    """CO2e (kg) of ``energy_kwh`` drawn from a grid of ``grid_gco2e_per_kwh`` (location-based: the
    annual average of the grid, GHG Protocol Scope 2 guidance): kWh x g/kWh / 1000. Llama 2's reported
    31.22 tCO2e for 7B (Touvron et al. 2023, Table 2: 184,320 GPU-hours at 400 W) is 184,320 x 0.4 kWh
    x PUE 1.1 x 385 g/kWh / 1000 (tests/cost/test_energy.py)."""
    return np.asarray(energy_kwh, dtype=float) * np.asarray(grid_gco2e_per_kwh, dtype=float) / 1000.0


def carbon_usd(co2_kilograms, usd_per_tonne):
    """A carbon price on ``co2_kilograms``: kg / 1000 x USD per tonne (an internal carbon price)."""
    return np.asarray(co2_kilograms, dtype=float) / 1000.0 * usd_per_tonne


# --- per offering ----------------------------------------------------------------------------------------

_GRID: dict = {}   # grid_carbon column -> (the table frame it was read from, its values by (provider, region))


def _lookup(provider: pd.Series, region: pd.Series, col: str) -> pd.Series:
    """``grid_carbon`` column ``col`` for each (provider, region) (a missing provider as "", a missing region as
    "unspecified"), NaN where the table has no row: a dict by the pair, made once per table frame, read a row at
    a time (the rows' joined key strings and ``Series.map`` cost ~2 ms a priced frame)."""
    g = table("grid_carbon")
    hit = _GRID.get(col)
    if hit is None or hit[0] is not g:
        hit = _GRID[col] = (g, dict(zip(zip(g["provider"].tolist(), g["region"].tolist()), g[col].tolist())))
    by = hit[1]
    keys = zip(provider.fillna("").tolist(), region.fillna("unspecified").tolist())
    return pd.Series([by.get(k, np.nan) for k in keys], index=provider.index, dtype=float)


def offer_energy(offers: pd.DataFrame, utilization, own_pue: float | None = None,
                 own_grid_gco2e_per_kwh: float | None = None) -> pd.DataFrame:
    """Per row of ``offers`` (columns ``accelerator``, ``provider``, ``region``, ``chips_per_instance``;
    optional ``provider_kind``, ``offering`` and ``system_power_w``: ``owned`` rows are systems of
    data/hardware.csv drawing their own rated power at ``own_pue`` and ``own_grid_gco2e_per_kwh``),
    aligned with it: ``chip_power_w``, ``system_overhead``, ``pue``, ``grid_gco2e_per_kwh``,
    ``energy_kwh_per_instance_hour``, ``co2_kg_per_instance_hour`` and ``energy_reason`` (why a figure
    is blank, else None). ``utilization``: a number or one per row. Pure given the data files."""
    o = offers.reset_index(drop=True)
    chip_w = o["accelerator"].map(catalog.accelerators_by_id()["tdp_w"]).astype(float)
    sp = table("system_power").set_index("accelerator")
    sys_w = o["accelerator"].map(sp["system_power_w"]).astype(float)
    sys_chips = o["accelerator"].map(sp["chips_per_system"]).astype(float)
    overhead = system_overhead(chip_w, sys_w, sys_chips)
    chips = o["chips_per_instance"].astype(float)
    it_w = it_power_w(chips, per_chip_system_w(chip_w, overhead, sys_w, sys_chips), 1.0, utilization)
    owned = (o["provider_kind"] == "owned") if "provider_kind" in o else pd.Series(False, index=o.index)
    pue = o["provider"].map(table("pue").set_index("provider")["pue"]).astype(float)
    grid = _lookup(o["provider"], o["region"], "grid_gco2e_per_kwh").astype(float)
    if owned.any():
        system_w = (o["system_power_w"].astype(float) if "system_power_w" in o else
                    o["offering"].map(catalog.hardware().set_index("system")["system_power_w"]).astype(float))
        it_w = np.where(owned, system_w * np.asarray(utilization, dtype=float) * np.ones(len(o)), it_w)
        pue = pue.mask(owned, np.nan if own_pue is None else own_pue)
        grid = grid.mask(owned, np.nan if own_grid_gco2e_per_kwh is None else own_grid_gco2e_per_kwh)
    kwh = energy_kwh_per_instance_hour(it_w, pue)
    out = pd.DataFrame({"chip_power_w": chip_w, "system_overhead": np.where(owned | chip_w.isna().to_numpy(), np.nan, overhead), "pue": pue,
                        "grid_gco2e_per_kwh": grid, "energy_kwh_per_instance_hour": kwh,
                        "co2_kg_per_instance_hour": co2_kg(kwh, grid)})
    out["energy_reason"] = _reasons(o, out, owned.reset_index(drop=True))
    return out


def _reasons(o: pd.DataFrame, e: pd.DataFrame, owned: pd.Series) -> pd.Series:
    """Why an offer's energy or CO2e is blank (None where both are known), vectorised."""
    no_kwh, no_grid = e["energy_kwh_per_instance_hour"].isna(), e["grid_gco2e_per_kwh"].isna()
    conditions = [o["provider"].isna(), no_kwh & e["chip_power_w"].isna() & ~owned, no_kwh, no_grid & owned, no_grid]

    def col(name, at, fill=None):  # the rows ``at`` of a column as text (only those rows: most have no reason)
        v = o[name].to_numpy(object)[at]
        return pd.Series(v).fillna(fill).astype(str).to_numpy(object) if fill else pd.Series(v).astype(str).to_numpy(object)
    texts = [lambda at: "energy: not priced (no offering)",
             lambda at: "energy: no published chip power for " + col("accelerator", at)
             + " (accelerators.csv tdp_w) nor system power (system_power.csv)",
             lambda at: "energy: no PUE for provider " + col("provider", at) + " (data/pue.csv)",
             lambda at: "co2: own site: set pricing.grid_gco2e_per_kwh",
             lambda at: ("co2: no grid intensity for " + col("provider", at) + " region "
                         + col("region", at, "unspecified") + " (data/grid_carbon.csv)")]
    out = np.full(len(o), None, dtype=object)
    done = np.zeros(len(o), dtype=bool)
    for cond, text in zip(conditions, texts):  # the first condition that holds wins
        at = cond.to_numpy(bool) & ~done
        if at.any():
            out[at] = text(at)
            done |= at
    return pd.Series(out, index=o.index, dtype=object)


def offering_energy(utilization: float = 0.9, offerings: pd.DataFrame | None = None) -> pd.DataFrame:
    """kWh and kg CO2e per instance-hour of every rented offering (``offer_energy`` at ``utilization``),
    indexed by ``offering``: the figures a fleet plan multiplies by the instance-hours it buys."""
    off = catalog.offerings() if offerings is None else offerings
    e = offer_energy(off, utilization)
    e.index = off["offering"].to_numpy()
    return e


# --- per option of the priced frame ----------------------------------------------------------------------

def add_per_instance_hour(s: Scenario, df: pd.DataFrame) -> None:
    """Priced rows, in place, before the bill is evaluated: the ``offer_energy`` columns at
    ``pricing.utilization``; with ``pricing.carbon_usd_per_tonne`` above 0, the carbon price of an
    instance-hour is added to ``energy_usd_per_instance_hour`` (``carbon_usd_per_instance_hour``), so the
    bill, the ranking and the Monte Carlo include it."""
    p = s.pricing
    e = offer_energy(df, p.utilization, p.pue, p.grid_gco2e_per_kwh)
    e.index = df.index
    for c in e.columns:
        df[c] = e[c]
    df["carbon_usd_per_instance_hour"] = carbon_usd(df["co2_kg_per_instance_hour"], p.carbon_usd_per_tonne)
    if p.carbon_usd_per_tonne > 0:
        df["energy_usd_per_instance_hour"] = (df["energy_usd_per_instance_hour"].astype(float)
                                              + df["carbon_usd_per_instance_hour"].fillna(0.0))


def add_totals(s: Scenario, df: pd.DataFrame) -> None:
    """Priced rows, in place, after the bill: ``energy_kwh`` and ``co2_kg`` of the work (training: the
    run, instances x wall-clock ``training_days``; serving: ``energy_kwh_per_month`` and
    ``co2_kg_per_month`` of instances x ``hours_per_day`` x 30.4 days, and ``energy_kwh``/``co2_kg`` over
    ``horizon_months``; spare spot instances carry no load, so nothing with no idle floor) and
    ``carbon_usd`` (the carbon price of ``co2_kg``, 0 when off)."""
    inst = df["instances"].astype(float)
    if s.is_training:
        hours = inst * df["training_days"].astype(float) * HOURS_PER_DAY
        months = 1.0
    else:
        hours = inst * s.workload.hours_per_day * DAYS_PER_MONTH
        months = s.pricing.horizon_months
        df["energy_kwh_per_month"] = hours * df["energy_kwh_per_instance_hour"]
        df["co2_kg_per_month"] = hours * df["co2_kg_per_instance_hour"]
    df["energy_kwh"] = hours * df["energy_kwh_per_instance_hour"] * months
    df["co2_kg"] = hours * df["co2_kg_per_instance_hour"] * months
    df["carbon_usd"] = carbon_usd(df["co2_kg"], s.pricing.carbon_usd_per_tonne)
