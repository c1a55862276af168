"""What owning a system costs beyond its list price and its electricity: colocation (space and
power capacity), network, a support contract and the cost of the capital tied up in it, over the
depreciation period (``pricing.depreciation_years``). Formulas over scalars or arrays.

Sources: the colocation rate is a market figure (``pricing.colocation_usd_per_kw_month``, default
CBRE's average asking rate for a 250-500 kW requirement in primary North American markets, H2 2024);
the capital recovery factor is the textbook equivalent annual cost of an asset (Brealey, Myers and
Allen, "Principles of Corporate Finance", ch. 6: annuity factor); network and support have no
published default and are priced only when the scenario gives them.
"""
from __future__ import annotations

import numpy as np

from ..terms import HOURS_PER_MONTH


def capital_usd_per_month(purchase_usd, months, annual_rate):
    """Level monthly payment that repays ``purchase_usd`` over ``months`` at ``annual_rate`` (the cost
    of capital): P · r / (1 - (1 + r)^-n) with the monthly rate r = (1 + annual)^(1/12) - 1 (capital
    recovery factor); P / n at a rate of 0 (straight-line depreciation). $329,736 over 48 months:
    $6,869.50 a month at 0, $8,150.62 at 9%."""
    p = np.asarray(purchase_usd, dtype=float)
    n = np.asarray(months, dtype=float)
    r = (1.0 + np.asarray(annual_rate, dtype=float)) ** (1.0 / 12.0) - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        annuity = p * r / (1.0 - (1.0 + r) ** -n)
    return np.where(r > 0, annuity, p / n)


def colocation_usd_per_month(system_power_w, usd_per_kw_month):
    """Colocation space and power capacity for one system: its maximum input power in kW x the rate
    per kW-month (colocation is leased by critical IT kW, electricity metered on top: the bill's
    energy line, power x PUE x $/kWh)."""
    return np.asarray(system_power_w, dtype=float) / 1000.0 * usd_per_kw_month


def support_usd_per_month(purchase_usd, fraction_per_year):
    """A support contract priced as a share of the list price per year, per month."""
    return np.asarray(purchase_usd, dtype=float) * fraction_per_year / 12.0


def hosting_usd_per_hour(purchase_usd, system_power_w, other_usd_per_month, months, *, usd_per_kw_month,
                         network_usd_per_month, support_fraction_per_year, cost_of_capital):
    """(capital, hosting) per system-hour of the depreciation life: capital = P / n straight line;
    hosting = colocation + network + support + the system's own hosting figure
    (``other_usd_per_month``, blank = 0) + the cost of capital (the capital recovery payment less
    P / n), each per 730-h month. Network and support count 0 when not given (None)."""
    capital = np.asarray(purchase_usd, dtype=float) / np.asarray(months, dtype=float)
    financing = capital_usd_per_month(purchase_usd, months, cost_of_capital) - capital
    monthly = (colocation_usd_per_month(system_power_w, usd_per_kw_month) + (network_usd_per_month or 0.0)
               + support_usd_per_month(purchase_usd, support_fraction_per_year or 0.0)
               + np.nan_to_num(np.asarray(other_usd_per_month, dtype=float)) + financing)
    return capital / HOURS_PER_MONTH, monthly / HOURS_PER_MONTH
