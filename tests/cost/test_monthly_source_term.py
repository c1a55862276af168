"""A monthly price's least term can come from its source (offerings ``monthly_min_term_months``): a
bare-metal server rented by the year (Qubrid AI's price page lists annual prices) pays twelve months
even for a 10-day run. Hand-made offerings keep the numbers checkable on paper."""
import numpy as np
import pytest

from workbook.scenario import parse_scenario

from pricing_helpers import TRAIN, offering, offers, price, row, train_perf


def _yearly(term=12.0, monthly=20000.0):
    return offers({**offering("y1", od=np.nan, spot=np.nan, c1=np.nan, c3=np.nan, kind="dedicated"),
                   "monthly_usd": monthly, "monthly_min_term_months": term})


def test_a_server_rented_by_the_year_pays_the_year_for_a_short_run():
    """10 days on 8 instances: 8 x 12 x $20,000 = $1.92M (not one month, $160,000)."""
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["monthly"]}})
    r = row(price(s, train_perf(days=10.0), offerings=_yearly()), "monthly", "y1")
    assert r["cost_usd"] == pytest.approx(8 * 12 * 20000.0)
    assert "minimum 12 month(s)" in r["price_derivation"] and "source's term" in r["price_derivation"]


def test_the_longer_of_the_source_term_and_the_scenario_minimum_is_billed():
    """A 1-month source term under a 3-month scenario minimum: 3 months; a blank term is the scenario's."""
    s3 = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["monthly"], "monthly_min_term_months": 3}})
    assert row(price(s3, train_perf(days=10.0), offerings=_yearly(term=1.0)), "monthly", "y1")["cost_usd"] == \
        pytest.approx(8 * 3 * 20000.0)
    assert row(price(s3, train_perf(days=10.0), offerings=_yearly(term=np.nan)), "monthly", "y1")["cost_usd"] == \
        pytest.approx(8 * 3 * 20000.0)
    s1 = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["monthly"]}})
    r = row(price(s1, train_perf(days=40.0), offerings=_yearly(term=np.nan)), "monthly", "y1")
    assert r["cost_usd"] == pytest.approx(8 * 2 * 20000.0)
    assert "pricing.monthly_min_term_months" in r["price_derivation"]
