"""The rest of the bill, issue 19 part 2: hosting of bought hardware (colocation, network, support,
cost of capital), monthly dedicated servers (whole months, minimum term) and the round trip to the
users added to TTFT. Each changes a decision here where it should. Hand-made offerings and
performance frames keep the numbers checkable on paper."""
import numpy as np
import pandas as pd
import pytest

from workbook import catalog, cost, decision
from workbook.errors import InputError
from workbook.scenario import parse_scenario

from pricing_helpers import LIVE, SERVE, TRAIN, decide, offering, offers, price, row, serve_perf, train_perf

DGX_H100_USD, DGX_H100_KW = 329736.0, 10.2


# --- hosting of bought hardware --------------------------------------------------------------------

def test_capital_recovery_is_straight_line_at_zero_and_an_annuity_above():
    """$329,736 over 48 months: P/n = $6,869.50; at 9% a year, r = 1.09^(1/12) - 1 = 0.7207% a month,
    P r / (1 - (1 + r)^-48) = $8,150.62."""
    assert float(cost.hosting.capital_usd_per_month(DGX_H100_USD, 48, 0.0)) == pytest.approx(6869.5)
    assert float(cost.hosting.capital_usd_per_month(DGX_H100_USD, 48, 0.09)) == pytest.approx(8150.615, rel=1e-6)


def test_hosting_prices_colocation_per_kw_at_the_cbre_rate_over_the_whole_life():
    """DGX H100: 10.2 kW x $184.06/kW-month = $1,877.41 a month; a 10-day run on 8 bought systems pays
    their whole 4-year life: hosting_usd = 8 x 48 x $1,877.41 = $720,926."""
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["purchase"]}})
    r = price(s, train_perf(), offerings=offers(offering("o1"))).query("pricing_model == 'purchase'").iloc[0]
    month = DGX_H100_KW * 184.06
    assert r["hosting_usd_per_instance_hour"] == pytest.approx(month / 730)
    assert r["usd_per_instance_hour"] == pytest.approx(DGX_H100_USD / (48 * 730) + month / 730)
    assert r["hosting_usd"] == pytest.approx(8 * 48 * month)
    assert r["cost_usd"] == pytest.approx(8 * (DGX_H100_USD + 48 * month + 240 * DGX_H100_KW * 1.3 * 0.12))
    assert "colocation 10.2 kW x $184.06/kW-month" in r["price_derivation"]


def test_network_support_and_cost_of_capital_enter_hosting():
    """+ $500 network a month, support 10% of list a year ($2,747.80 a month), 9% cost of capital
    ($8,150.62 - $6,869.50 = $1,281.12 a month)."""
    p = {**TRAIN["pricing"], "models": ["purchase"], "network_usd_per_system_month": 500.0,
         "support_fraction_per_year": 0.10, "cost_of_capital": 0.09}
    r = price(parse_scenario({**TRAIN, "pricing": p}), train_perf(),
              offerings=offers(offering("o1"))).query("pricing_model == 'purchase'").iloc[0]
    month = DGX_H100_KW * 184.06 + 500.0 + DGX_H100_USD * 0.10 / 12 + (8150.615 - 6869.5)
    assert r["hosting_usd_per_instance_hour"] * 730 == pytest.approx(month, rel=1e-5)
    assert "support 10.0% of list a year" in r["price_derivation"] and "cost of capital 9.0%" in r["price_derivation"]


def _buy_or_rent(pricing):
    """A 3-year run (1,095 days) on 64 H100s: rent 8 instances at $15.70/h ($3.30M) or buy 8 DGX H100."""
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["on_demand", "purchase"],
                                            "depreciation_years": 4, **pricing}})
    rent = offers(offering("rent", od=15.7, spot=np.nan, c1=np.nan, c3=np.nan))
    perf = train_perf(days=1095.0)
    rec, priced = decide(s, perf=perf, offs=rent)
    return rec, priced


def test_hosting_makes_buying_lose_to_renting_where_it_won_without():
    """Without hosting buying costs 8 x $329,736 + power = $2.97M < renting's $3.30M; with colocation at
    CBRE's rate (+ 8 x 48 x $1,877 = $0.72M) it costs $3.69M and renting wins."""
    rec0, p0 = _buy_or_rent({"colocation_usd_per_kw_month": 0.0})
    assert rec0.pricing_model == "purchase"
    rec1, p1 = _buy_or_rent({})
    assert rec1.pricing_model == "on_demand"
    buy = p1[p1["pricing_model"] == "purchase"].iloc[0]
    rent = p1[p1["pricing_model"] == "on_demand"].iloc[0]
    assert buy["cost_usd"] - buy["hosting_usd"] < rent["cost_usd"] < buy["cost_usd"]


# --- monthly dedicated servers ---------------------------------------------------------------------

def _monthly_offers(monthly=20000.0):
    return offers({**offering("m1", od=np.nan, spot=np.nan, c1=np.nan, c3=np.nan, kind="dedicated"),
                   "monthly_usd": monthly},
                  offering("o1", od=80.0, spot=np.nan, c1=np.nan, c3=np.nan))


def test_monthly_server_pays_whole_months_of_the_run_and_at_least_the_minimum_term():
    """10 days = 1 month: 8 x $20,000 = $160,000; 40 days = 2 months; a 3-month minimum: 8 x 3 x $20,000."""
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["monthly"]}})
    assert row(price(s, train_perf(days=10.0), offerings=_monthly_offers()), "monthly", "m1")["cost_usd"] == \
        pytest.approx(8 * 20000.0)
    assert row(price(s, train_perf(days=40.0), offerings=_monthly_offers()), "monthly", "m1")["cost_usd"] == \
        pytest.approx(8 * 2 * 20000.0)
    s3 = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["monthly"], "monthly_min_term_months": 3}})
    r = row(price(s3, train_perf(days=10.0), offerings=_monthly_offers()), "monthly", "m1")
    assert r["cost_usd"] == pytest.approx(8 * 3 * 20000.0)
    assert "minimum 3 month(s)" in r["price_derivation"]


def test_monthly_serving_pays_the_minimum_term_when_it_is_longer_than_the_horizon():
    """Serving 2 months on 1 instance (tp 2 x 2 replicas = 4 chips of an 8-chip server) at 50% utilization:
    $20,000 x 2 (u) a month; a 6-month minimum over a 2-month horizon: x 6 / 2."""
    base = {**SERVE, "pricing": {**SERVE["pricing"], "models": ["monthly"], "horizon_months": 2}}
    r1 = row(price(parse_scenario(base), serve_perf(), offerings=_monthly_offers()), "monthly", "m1")
    assert r1["usd_per_month"] == pytest.approx(20000.0 * 2)
    r6 = row(price(parse_scenario({**base, "pricing": {**base["pricing"], "monthly_min_term_months": 6}}),
                   serve_perf(), offerings=_monthly_offers()), "monthly", "m1")
    assert r6["usd_per_month"] == pytest.approx(20000.0 * 2 * 3)


def test_monthly_servers_win_a_long_run_and_lose_it_to_a_long_minimum_term():
    """60 days on 64 chips: on-demand 8 x 1,440 h x $80 = $921,600; monthly 8 x 2 x $20,000 = $320,000
    wins; with no monthly price (the catalog today) on-demand is chosen; with a 24-month minimum the
    monthly servers cost $3.84M and on-demand wins again."""
    perf = train_perf(days=60.0)
    pr = {**TRAIN["pricing"], "models": ["on_demand", "monthly"]}
    rec, _ = decide(parse_scenario({**TRAIN, "pricing": pr}), perf=perf, offs=_monthly_offers())
    assert (rec.pricing_model, rec.offering) == ("monthly", "m1")
    rec_none, _ = decide(parse_scenario({**TRAIN, "pricing": pr}), perf=perf, offs=_monthly_offers(np.nan))
    assert rec_none.pricing_model == "on_demand"
    rec24, _ = decide(parse_scenario({**TRAIN, "pricing": {**pr, "monthly_min_term_months": 24}}), perf=perf,
                      offs=_monthly_offers())
    assert rec24.pricing_model == "on_demand"


# --- the round trip to the users -------------------------------------------------------------------

def _served(users=None, slo=500.0):
    w = {**LIVE["workload"], "ttft_slo_ms": slo}
    if users:
        w["user_locations"] = users
    s = parse_scenario({**LIVE, "workload": w, "pricing": {**LIVE["pricing"], "models": ["on_demand"]}})
    perf = serve_perf().assign(ttft_ms_p50=300.0, ttft_ms_p99=450.0, ttft_ms_at_slo_percentile=450.0)
    near = {**offering("eu", od=80.0, spot=np.nan, c1=np.nan, c3=np.nan, provider="GCP"), "region": "europe-west4"}
    far = {**offering("us", od=40.0, spot=np.nan, c1=np.nan, c3=np.nan, provider="AWS"), "region": "us-east-1"}
    return decide(s, perf=perf, offs=offers(near, far))


def test_round_trip_table_is_the_published_ibm_one():
    """data/latency.csv copies IBM Cloud's 18 Jan 2026 table: Washington DC -> London 76 ms, Frankfurt ->
    London 13 ms, Sydney -> Sao Paulo 328 ms (rows are the server, columns the users)."""
    lat = catalog.latency().set_index(["from_metro", "to_metro"])["rtt_ms"]
    assert (lat[("WAS", "LON")], lat[("FRA", "LON")], lat[("SYD", "SAO")]) == (76, 13, 328)
    assert len(lat) == 12 * 11


def test_a_far_region_loses_the_ttft_slo_it_meets_without_users_far_away():
    """TTFT P99 450 ms under load, SLO 500 ms. No user locations: the cheaper us-east-1 offer wins.
    Users in London: us-east-1 (Washington DC metro) adds 76 ms -> 526 ms, misses; europe-west4
    (Frankfurt metro) adds 13 ms -> 463 ms and wins."""
    rec0, p0 = _served()
    assert rec0.offering == "us" and p0["user_rtt_ms"].isna().all()
    rec, p = _served(["LON"])
    assert rec.offering == "eu"
    us = p[p["offering"] == "us"].iloc[0]
    eu = p[p["offering"] == "eu"].iloc[0]
    assert (us["user_rtt_ms"], eu["user_rtt_ms"]) == (76, 13)
    assert us["ttft_ms_p99"] == pytest.approx(526.0) and eu["ttft_ms_at_slo_percentile"] == pytest.approx(463.0)
    assert not us["meets_slo"] and "76 ms round trip to LON" in us["excluded_reason"]


def test_the_worst_user_location_counts_and_an_unknown_region_misses_the_slo():
    """Users in London and Tokyo: the worst round trip counts (Frankfurt -> Tokyo 235 ms); both offers
    miss 500 ms. A region with no latency metro cannot be checked and misses it too."""
    _, p = _served(["LON", "TYO"])
    assert p.set_index("offering")["user_rtt_ms"].to_dict() == {"eu": 235, "us": 139}
    assert p["excluded_reason"].notna().all()
    s = parse_scenario({**LIVE, "workload": {**LIVE["workload"], "user_locations": ["WAS"]},
                        "pricing": {**LIVE["pricing"], "models": ["on_demand"]}})
    r = row(price(s, serve_perf(), offerings=offers(offering("o1", spot=np.nan))), "on_demand")
    assert np.isnan(r["user_rtt_ms"]) and "no latency metro for region r1" in r["excluded_reason"]


def test_unknown_user_location_is_one_line_naming_the_field():
    with pytest.raises(InputError, match=r"workload.user_locations.0: unknown location 'XYZ'"):
        parse_scenario({**LIVE, "workload": {**LIVE["workload"], "user_locations": ["XYZ"]}})
    with pytest.raises(InputError, match="user_locations"):
        parse_scenario({**TRAIN, "workload": {**TRAIN["workload"], "user_locations": ["LON"]}})


def test_the_bill_shown_to_people_carries_hosting_and_the_round_trip():
    """The offers table (the report's bill, notebook 04) and its summary show hosting_usd, porting_usd and
    user_rtt_ms next to the cost."""
    _, p = _buy_or_rent({})
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["on_demand", "purchase"]}})
    summary = decision.offers_summary(s, decision.offers_table(s, p))
    buy = summary[summary["pricing_model"] == "purchase"].iloc[0]
    assert buy["hosting_usd"] == pytest.approx(8 * 48 * DGX_H100_KW * 184.06)
    rec, p2 = _served(["LON"])
    s2 = parse_scenario({**LIVE, "workload": {**LIVE["workload"], "user_locations": ["LON"]}})
    served = decision.offers_summary(s2, decision.offers_table(s2, p2)).set_index("offering")
    assert served.loc["us", "user_rtt_ms"] == 76 and served.loc["eu", "ttft_ms_at_slo_percentile"] == pytest.approx(463)


def test_break_even_curve_of_a_purchase_pays_hosting_every_month_and_monthly_servers_their_minimum():
    """Per chip of a DGX H100: $329,736 / 8 up front, then $1,877.41 / 8 of colocation a month and power
    at 90% utilization; a monthly server with a 3-month minimum costs 3 months in month 1."""
    _, p = _buy_or_rent({})
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["on_demand", "purchase"]}})
    c = cost.breakeven_curves(s, p, accelerator="H100-SXM5-80GB")
    buy = c[c["pricing_model"] == "purchase"].set_index("month")["cumulative_usd_per_chip"]
    power = 730 * 0.9 * DGX_H100_KW * 1.3 * 0.12 / 8
    assert buy[0] == 0 and buy[1] == pytest.approx(DGX_H100_USD / 8 + DGX_H100_KW * 184.06 / 8 + power)
    assert buy[13] - buy[12] == pytest.approx(DGX_H100_KW * 184.06 / 8 + power)
    s3 = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["on_demand", "monthly"],
                                             "monthly_min_term_months": 3}})
    pm = price(s3, train_perf(days=60.0), offerings=_monthly_offers())
    m = cost.breakeven_curves(s3, pm, accelerator="H100-SXM5-80GB")
    m = m[m["pricing_model"] == "monthly"].set_index("month")["cumulative_usd_per_chip"]
    assert (m[1], m[3], m[4]) == pytest.approx((3 * 20000 / 8, 3 * 20000 / 8, 4 * 20000 / 8))
