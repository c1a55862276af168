"""One price per offer (duplicate resolution) and the doubt of that price (``workbook.cost.doubt``), on
pinned fixture catalogs, and the widths checked against the catalog's own evidence."""
import datetime as dt
import math

import numpy as np
import pandas as pd
import pytest

from workbook import catalog, cost
from workbook.cost import doubt
from workbook.cost.rates import Z90
from pricing_helpers import SERVE, decide, offering, offers, price, scenario, serve_perf
from workbook.decision.recommend import price_words
from workbook.scenario import parse_scenario

TODAY = dt.date(2026, 12, 1)


def same_offer(name, od, price_as_of, basis="catalog", **kw):
    """A row of one offer (provider TestCloud, instance p5, region r1) under its own offering id."""
    r = offering(name, od=od, spot=np.nan, c1=np.nan, c3=np.nan, as_of=price_as_of or "2026-11-20",
                 price_as_of=price_as_of, **kw)
    r.update(instance="p5", price_basis=basis)
    return r


def test_duplicates_resolve_to_the_newest_dated_price_and_undated_counts_as_oldest():
    """Three rows price one (provider, instance, region, on-demand): dated 2026-10-01 at 10, dated
    2026-06-01 at 8, undated at 5. The newest dated (10) is kept although it is the dearest; the others
    are evidence, and their spread ln(10/5) sets the doubt."""
    off = offers(same_offer("new", 10.0, "2026-10-01"), same_offer("old", 8.0, "2026-06-01"),
                 same_offer("undated", 5.0, None))
    res = doubt.resolve(off).set_index("row")
    assert res.loc[0, "duplicate_of"] is None
    assert res.loc[1, "duplicate_of"] == "new" and res.loc[2, "duplicate_of"] == "new"
    assert (res["duplicates"] == 3).all()
    assert res.loc[0, "duplicate_spread"] == pytest.approx(math.log(10 / 5))


def test_equally_dated_duplicates_keep_the_firmer_basis_then_the_dearer_price():
    off = offers(same_offer("note", 4.0, "2026-10-01", basis="secondary"),
                 same_offer("page", 6.0, "2026-10-01", basis="provider_page"))
    assert doubt.resolve(off).set_index("row").loc[0, "duplicate_of"] == "page"
    both_undated = offers(same_offer("cheap", 0.213, None), same_offer("dear", 0.60, None))
    assert doubt.resolve(both_undated).set_index("row").loc[0, "duplicate_of"] == "dear"


def test_a_superseded_row_is_evidence_but_does_not_widen_the_spread():
    """AWS p5.48xlarge 98.32 before its June-2025 cut, 55.04 after: a known move (the age term holds
    moves), not a disagreement between sources."""
    old = same_offer("p5-superseded", 98.32, "2025-05-31")
    old["notes"] = "SUPERSEDED by the June 2025 price cut"
    res = doubt.resolve(offers(same_offer("p5", 55.04, "2026-11-09"), old)).set_index("row")
    assert res.loc[1, "duplicate_of"] == "p5" and res.loc[0, "duplicate_spread"] == 0.0
    assert res.loc[0, "duplicates"] == 1


def regional(name, region, od, basis="catalog", price_as_of="2026-05-20"):
    """A row of instance p5 (provider TestCloud) in ``region`` under its own offering id."""
    r = same_offer(name, od, price_as_of, basis=basis)
    r["region"] = region
    return r


def test_prices_in_different_regions_are_different_offers_not_doubt():
    """One instance in two named regions at 1x and 2x (Azure's Brazil South against East US, issue 29):
    two offers, each its own price; neither is a duplicate of the other and the 2x does not widen
    either doubt (a regional difference is a different offer)."""
    s = parse_scenario(SERVE)
    off = offers(regional("east", "eastus", 10.0), regional("brazil", "brazilsouth", 20.0))
    res = doubt.resolve(off)
    assert res["duplicate_of"].isna().all() and (res["duplicates"] == 1).all()
    assert (res["duplicate_spread"] == 0.0).all()
    od = price(s, serve_perf(), offerings=off)
    od = od[od["pricing_model"] == "on_demand"].set_index("offering")
    assert od.loc["east", "price_doubt_high"] == pytest.approx(od.loc["brazil", "price_doubt_high"])
    alone = price(s, serve_perf(), offerings=offers(regional("east", "eastus", 10.0)))
    assert od.loc["east", "price_doubt_high"] == pytest.approx(
        alone[alone["pricing_model"] == "on_demand"]["price_doubt_high"].iloc[0])


def test_a_row_that_does_not_name_its_region_is_doubted_by_the_instances_regional_spread():
    """A copy without a region (Azure ND96isr H100 v5 at 98.32, 'region not stated') carries the price
    of a region nobody can name: when the catalog prices the same instance at 10 and 20 in named
    regions, its doubt covers ln(20/10) in quadrature; the named rows, a price stated for 'all'
    regions and a superseded row in a third region are untouched or left out."""
    old = regional("old", "westus", 40.0)
    old["notes"] = "SUPERSEDED by a later price"
    off = offers(regional("east", "eastus", 10.0), regional("brazil", "brazilsouth", 20.0),
                 regional("copy", "unspecified", 10.0, basis="transcription"),
                 regional("blank", None, 12.0, basis="transcription"),
                 regional("everywhere", "all", 10.0), old)
    res = doubt.resolve(off).set_index("row")
    assert res.loc[2, "region_spread"] == pytest.approx(math.log(2))
    assert res.loc[3, "region_spread"] == pytest.approx(math.log(2))
    assert (res.loc[[0, 1, 4, 5], "region_spread"] == 0.0).all()
    alone = offers(regional("copy", "unspecified", 10.0, basis="transcription"))
    assert doubt.resolve(alone)["region_spread"].iloc[0] == 0.0  # no regional evidence: no term
    # outside the named range the spread reaches the copy's own price
    wide = offers(regional("east", "eastus", 10.0), regional("copy", "unspecified", 25.0, basis="transcription"))
    assert doubt.resolve(wide).set_index("row").loc[1, "region_spread"] == pytest.approx(math.log(2.5))
    s = parse_scenario(SERVE)
    priced = price(s, serve_perf(), offerings=off)
    od = priced[priced["pricing_model"] == "on_demand"].set_index("offering")
    age = od.loc["copy", "price_age_days"]
    h = math.sqrt(0.10 ** 2 + (0.08 * math.sqrt(age / 30.4375)) ** 2 + math.log(2) ** 2)
    assert math.log(od.loc["copy", "price_doubt_high"]) == pytest.approx(h)
    assert od.loc["copy", "region_spread"] == pytest.approx(math.log(2)) and od.loc["east", "region_spread"] == 0.0
    assert "region not stated, and the catalog prices this instance up to 100% apart" in price_words(od.loc["copy"])
    assert "region not stated" not in price_words(od.loc["east"])


def test_the_priced_frame_rules_the_evidence_rows_out_as_duplicates():
    s = parse_scenario(SERVE)
    off = offers(same_offer("new", 10.0, "2026-10-01"), same_offer("undated", 5.0, None))
    priced = price(s, serve_perf(), offerings=off)
    od = priced[priced["pricing_model"] == "on_demand"].set_index("offering")
    assert od.loc["new", "excluded_reason"] is None
    assert "duplicate" in od.loc["undated", "excluded_codes"] and "new" in od.loc["undated", "excluded_reason"]
    assert od.loc["new", "duplicates"] == 2 and od.loc["new", "duplicate_spread"] == pytest.approx(math.log(2))


def test_doubt_widens_with_age_and_with_a_weaker_basis():
    """h = sqrt(h_basis^2 + (0.08 sqrt(months))^2 + spread^2): older is wider, undated widest, and
    catalog = provider page < transcription < secondary at one age."""
    ages = [0.0, 30.0, 365.0, 730.0, np.nan]
    h = doubt.half_width(["catalog"] * 5, ages, [0.0] * 5, undated_age=800.0)
    assert list(np.diff(h) > 0) == [True] * 4
    assert h[0] == pytest.approx(0.03)
    assert h[2] == pytest.approx(math.hypot(0.03, 0.08 * math.sqrt(365 / 30.4375)))
    by_basis = doubt.half_width(list(doubt.BASES), [90.0] * 4, [0.0] * 4)
    assert by_basis[0] == by_basis[1] < by_basis[2] < by_basis[3]
    assert doubt.half_width(["catalog"], [90.0], [0.5])[0] > doubt.half_width(["catalog"], [90.0], [0.0])[0]


def test_doubt_columns_give_the_band_the_age_and_the_monte_carlo_sigma():
    rows = pd.DataFrame({"price_basis": ["provider_page", "secondary", "catalog"],
                         "price_as_of": ["2026-11-19", "2026-05-18", None], "duplicate_spread": [0.0, 0.0, 0.0]})
    d = doubt.doubt_columns(rows, undated_age=730.0, today=TODAY)
    assert d["price_age_days"].iloc[0] == 12 and d["price_age_days"].iloc[1] == 197
    assert np.isnan(d["price_age_days"].iloc[2])
    h = -np.log(d["price_doubt_low"])
    assert np.allclose(np.log(d["price_doubt_high"]), h) and np.allclose(d["price_sigma"], h / Z90)
    assert h.iloc[0] < h.iloc[2] < h.iloc[1]  # page 12 days < undated catalog < secondary 197 days
    assert doubt.undated_age_days(pd.DataFrame({"price_as_of": ["2020-01-01"]}), TODAY) > (TODAY - dt.date(2020, 1, 1)).days


def test_the_monte_carlo_draws_one_price_per_offering_for_all_its_ways_to_pay():
    priced = pd.DataFrame({"offering": ["a", "a", "b"], "price_sigma": [0.1, 0.2, 0.1]})
    z = np.random.default_rng(0).standard_normal((2, 500))
    m = doubt_mult = cost.uncertainty.price_draws(priced, z)  # no provider/instance/region: one draw per offering
    assert m.shape == (3, 500)
    assert np.allclose(np.log(m[1]), 2 * np.log(m[0]))  # same draw, twice the sigma
    assert abs(np.corrcoef(np.log(doubt_mult[0]), np.log(doubt_mult[2]))[0, 1]) < 0.2  # offerings independent
    assert np.std(np.log(m[0])) == pytest.approx(0.1, rel=0.1)


def test_an_offer_leading_by_less_than_its_price_doubt_becomes_a_tie():
    """Two offers of one chip, 2% apart, dated on one day: with no doubt the cheaper leads in every draw
    (the same performance draw for both); a secondary note's price (+/-40%+) makes it a stated tie."""
    s = scenario(weights={"cost": 1.0, "time": 0.0, "ecosystem": 0.0, "portability": 0.0})
    firm = offering("cheap", od=98.0, spot=np.nan, c1=np.nan, c3=np.nan, provider="A")
    other = offering("dear", od=100.0, spot=np.nan, c1=np.nan, c3=np.nan, provider="B")
    perf = pd.DataFrame({"accelerator": ["H100-SXM5-80GB"], "chips": [64], "fits": [True], "reason": [None],
                         "training_days": [10.0]})
    rec, _ = decide(scenario(weights=s.weights.model_dump(), pricing={"price_doubt_scale": 0.0}), perf,
                    offers({**firm, "price_basis": "catalog"}, {**other, "price_basis": "catalog"}))
    assert rec.offering == "cheap" and rec.ties == []
    rec, _ = decide(s, perf, offers({**firm, "price_basis": "secondary"}, {**other, "price_basis": "catalog"}))
    assert rec.offering == "cheap" and [t["option"] for t in rec.ties] == ["H100-SXM5-80GB | dear | on_demand"]
    assert rec.ties[0]["cause"] == "price doubt"
    assert any(r.startswith("Its price: secondary note, ") for r in rec.reasons)


def test_an_unconfirmed_shape_can_win_only_with_a_warning():
    s = scenario()
    one = offering("per-gpu", cpi=8, od=10.0, spot=np.nan, c1=np.nan, c3=np.nan)
    perf = pd.DataFrame({"accelerator": ["H100-SXM5-80GB"], "chips": [64], "fits": [True], "reason": [None],
                         "training_days": [10.0]})
    rec, _ = decide(s, perf, offers({**one, "shape_confirmed": False}))
    assert rec.offering == "per-gpu"
    assert any(w.startswith("Unconfirmed shape: per-gpu") for w in rec.warnings)
    rec, _ = decide(s, perf, offers({**one, "shape_confirmed": None}))
    assert not any(w.startswith("Unconfirmed shape") for w in rec.warnings)


# --- the widths against the catalog's own evidence (cost.doubt docstrings) ----------------------------------

def test_the_age_width_lies_within_the_catalogs_dated_moves_per_root_month():
    """k = 0.08 per sqrt(month) is between the lower quartile and the median of the dated moves of one
    offer that data/offerings.csv records (AWS price cuts, superseded rows; step moves of a day excluded)."""
    m = doubt.price_moves()
    dated = m[(m["kind"] == "dated") & (m["months"] >= 1)]
    per = dated["log_ratio"] / np.sqrt(dated["months"])
    assert len(per) >= 5
    assert per.quantile(0.25) <= doubt.AGE_HALF_WIDTH_PER_SQRT_MONTH <= per.median()


def test_the_catalog_width_covers_the_catalogs_same_vintage_agreement():
    """Same vintage, same offer, on-demand: two machine catalogs agree within the catalog width."""
    m = doubt.price_moves()
    same = m[(m["pricing_model"] == "on_demand") & (m["kind"] == "same_vintage")]["log_ratio"]
    assert len(same) and same.max() <= doubt.BASIS_HALF_WIDTH["catalog"]


def test_every_copy_the_catalog_can_check_lies_within_its_band():
    """A transcription or secondary price that the catalog also has from a firm source (same instance
    and region, any region for a copy that names none) agrees with the nearest firm price within its
    basis width widened by the age between the two dates."""
    c = doubt.copy_checks()
    assert len(c) >= 3 and set(c["basis"]) == {"transcription", "secondary"}
    off = c[c["log_ratio"] > c["half_width"]]
    assert off.empty, off.to_string()


def test_the_regional_spread_is_wider_than_a_copys_width_so_it_is_its_own_term():
    """The on-demand spread of one instance across the catalog's regions (Azure: up to 2x, Brazil South
    against West US 2/3, anycloud-sh/catalog @62ff0a9) exceeds the transcription and secondary widths:
    it cannot hide in a basis width, so a row that does not name its region carries it as
    ``region_spread``, and a row in a named region (its own offer) never does."""
    m = doubt.price_moves()
    region = m[(m["pricing_model"] == "on_demand") & (m["kind"] == "region")]["log_ratio"]
    assert len(region) >= 10 and region.max() > doubt.BASIS_HALF_WIDTH["secondary"]
    off = catalog.offerings()
    res = doubt.resolution(off).merge(off[["region"]], left_on="row", right_index=True)
    named = ~res["region"].fillna("").str.strip().str.lower().isin(doubt.UNSTATED_REGIONS)
    assert (res.loc[named, "region_spread"] == 0.0).all()
    assert res.loc[~named, "region_spread"].max() > doubt.BASIS_HALF_WIDTH["transcription"]


def test_the_shipped_catalog_resolves_once_per_load_and_keeps_one_price_per_offer():
    off = catalog.offerings()
    assert doubt.resolution(off) is doubt.resolution(off)
    res = doubt.resolution(off)
    kept = res[res["duplicate_of"].isna()].merge(off[doubt.KEY], left_on="row", right_index=True)
    keys = kept[doubt.KEY].apply(lambda c: c.astype(str).str.strip().str.lower())
    assert not keys.assign(pm=kept["pricing_model"].to_numpy()).duplicated().any()


def test_two_catalog_rows_of_one_offer_share_its_price_draw():
    """On-demand kept from one row and spot from another of the same (provider, instance, region):
    one offer, one draw."""
    priced = pd.DataFrame({"offering": ["row-a", "row-b", "other"], "provider": ["P", "P", "P"],
                           "instance": ["x", "x", "y"], "region": ["r", "r", "r"], "price_sigma": [0.1, 0.1, 0.1]})
    z = np.random.default_rng(1).standard_normal((2, 200))
    m = cost.uncertainty.price_draws(priced, z)
    assert np.array_equal(m[0], m[1]) and not np.array_equal(m[0], m[2])


def test_the_tornado_moves_the_price_across_its_doubt():
    s = parse_scenario(SERVE)
    priced = price(s, serve_perf(), offerings=offers({**offering("o1"), "price_basis": "secondary"}))
    od = priced[priced["pricing_model"] == "on_demand"].iloc[0]
    t = cost.tornado(s, priced, od["option"]).set_index("input")
    r = t.loc["price doubt (secondary, cost.doubt)"]
    assert (r["low"], r["high"]) == (od["price_doubt_low"], od["price_doubt_high"])
    assert r["value_at_low"] < r["base"] < r["value_at_high"]
