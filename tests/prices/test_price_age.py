"""Price dates: age in days and the one-year staleness rule (undated counts as stale)."""
import datetime as dt
import math

import pandas as pd
import pytest

from workbook import prices

TODAY = dt.date(2026, 12, 1)


def test_age_of_a_date_a_string_and_a_row():
    assert prices.price_age_days("2026-11-01", TODAY) == 30
    assert prices.price_age_days(dt.date(2025, 12, 1), TODAY) == 365
    assert prices.price_age_days({"price_as_of": "2026-07-30"}, TODAY) == 124
    assert prices.price_age_days(pd.Series({"price_as_of": "2024-12-12"}), TODAY) == 719


@pytest.mark.parametrize("value", [None, "", float("nan"), "unknown", {"price_as_of": ""}, {}])
def test_undated_has_no_age_and_is_stale(value):
    assert math.isnan(prices.price_age_days(value, TODAY))
    assert prices.is_stale(value, TODAY)


@pytest.mark.parametrize("date, stale", [("2025-12-01", False), ("2025-11-30", True), ("2026-11-30", False),
                                         ("2025-05-31", True)])
def test_stale_after_365_days(date, stale):
    assert prices.is_stale(date, TODAY) is stale


def test_limit_is_a_parameter():
    assert prices.is_stale("2026-05-01", TODAY, max_days=180)
    assert not prices.is_stale("2026-05-01", TODAY)
