"""The hosted API reference (workbook.cost.rates): one request's bill and the break-even request rate."""
import math

import pytest

from workbook.cost import rates


def test_a_request_costs_its_prompt_and_answer_tokens_at_the_quoted_prices():
    # 1,000 prompt tokens at $3/M and 100 generated at $15/M: $0.003 + $0.0015
    assert rates.hosted_api_usd_per_request(1000, 100, 3.0, 15.0) == pytest.approx(0.0045)


def test_breakeven_rate_is_where_the_api_bill_equals_the_fleets_month():
    # M = $10,000 a month, c = $0.0045, around the clock: 10,000 / (3,600 x 24 x 730/24 x 0.0045)
    be = float(rates.breakeven_requests_per_s_hosted_api(10_000.0, 0.0045, 24.0))
    assert be == pytest.approx(10_000.0 / (2_628_000 * 0.0045)) == pytest.approx(0.84560, rel=1e-4)
    # at the break-even rate the API's month costs exactly M
    assert be * 3600 * 24 * (730 / 24) * 0.0045 == pytest.approx(10_000.0)


def test_a_service_running_half_the_day_breaks_even_at_twice_the_rate():
    full = float(rates.breakeven_requests_per_s_hosted_api(10_000.0, 0.0045, 24.0))
    assert float(rates.breakeven_requests_per_s_hosted_api(10_000.0, 0.0045, 12.0)) == pytest.approx(2 * full)


def test_a_free_api_never_breaks_even():
    assert math.isinf(float(rates.breakeven_requests_per_s_hosted_api(10_000.0, 0.0, 24.0)))
