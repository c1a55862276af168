"""Capacity blocks (AWS EC2 Capacity Blocks for ML) as a way to pay: the block-length rule of the AWS
EC2 User Guide (1-day steps to 14 days, 7-day steps to 182 days, instances terminated from 30 minutes
before the end), the training and serving bills, the exclusions, and a decision the block changes."""
import shutil

import numpy as np
import pandas as pd
import pytest

import workbook as wb
from workbook import analysis, catalog, cost, paths
from workbook.errors import InputError
from workbook.scenario import parse_scenario
from workbook.terms import PRICING_MODELS, pricing_label, pricing_short

from pricing_helpers import SERVE, TRAIN, decide, offering, offers, price, row, serve_perf, train_perf

BLOCK = "capacity_block (short-term reservation)"


def _block_offer(name="b1", rate=40.0, cpi=8):
    return {**offering(name, cpi=cpi, od=np.nan, spot=np.nan, c1=np.nan, c3=np.nan, provider="AWS"),
            "other_usd_per_hour": rate, "other_price_model": BLOCK}


def _train(models=("capacity_block",), **pricing):
    return parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": list(models), **pricing}})


def test_capacity_block_is_a_reserved_way_to_pay_with_labels():
    m = PRICING_MODELS["capacity_block"]
    assert (m.kind, pricing_label("capacity_block"), pricing_short("capacity_block")) == \
        ("reserved", "a capacity block", "capacity block")


@pytest.mark.parametrize("work_h, days", [(1.0, 1), (23.5, 1), (23.6, 2), (228.0, 10), (240.0, 11), (335.0, 14),
                                          (336.0, 21), (360.0, 21), (182 * 24 - 0.5, 182), (182 * 24, np.nan)])
def test_block_is_whole_days_to_14_then_whole_weeks_to_182(work_h, days):
    """Usable hours of a D-day block = 24 D - 0.5 (terminated from 30 minutes before its end)."""
    got = float(cost.rates.capacity_block_hours(work_h)) / 24.0
    assert (np.isnan(got) and np.isnan(days)) or got == days


def test_training_pays_the_whole_days_of_its_wall_time():
    """8 instances (64 chips / 8), no failures: 10 days of work need an 11-day block (240 h > 239.5 h):
    8 x 264 h x $40 = $84,480, no reclaims (wall time 10 days, as on-demand); 9.5 days: 10 days, $76,800."""
    r = row(price(_train(), train_perf(days=10.0), offerings=offers(_block_offer())), "capacity_block", "b1")
    assert (r["block_days"], r["training_days"]) == (11.0, pytest.approx(10.0))
    assert r["cost_usd"] == pytest.approx(8 * 264 * 40.0)
    assert not r["excluded_codes"]
    r2 = row(price(_train(), train_perf(days=9.5), offerings=offers(_block_offer())), "capacity_block", "b1")
    assert r2["cost_usd"] == pytest.approx(8 * 240 * 40.0)


def test_a_run_longer_than_the_longest_block_is_ruled_out_with_the_reason():
    r = row(price(_train(), train_perf(days=200.0), offerings=offers(_block_offer())), "capacity_block", "b1")
    assert "term" in r["excluded_codes"] and np.isnan(r["cost_usd"])
    assert "longer than the longest block (182 days)" in r["excluded_reason"]


def test_more_instances_than_an_account_holds_are_ruled_out():
    """4,096 chips on 8-chip instances = 512 instances > 256 across blocks."""
    r = row(price(_train(), train_perf(chips=4096), offerings=offers(_block_offer())), "capacity_block", "b1")
    assert "term" in r["excluded_codes"] and "512 instances > the 256" in r["excluded_reason"]


def test_serving_pays_every_hour_of_the_block_covering_the_horizon_and_excludes_longer_ones():
    """3 months = 2,190 h -> 92 days -> 98 days (7-day steps) = 2,352 h; 1 instance (2 replicas x tp 2 of 8
    chips) at 50% utilization: 730 h x $40 x 2 (u) x (2,352 / 730) / 3 a month. 12 months: ruled out."""
    base = {**SERVE, "pricing": {**SERVE["pricing"], "models": ["capacity_block"], "horizon_months": 3}}
    r = row(price(parse_scenario(base), serve_perf(), offerings=offers(_block_offer())), "capacity_block", "b1")
    assert r["block_days"] == 98.0
    assert r["usd_per_month"] == pytest.approx(730 * 40.0 * 2 * (2352 / 730) / 3)
    long_ = {**base, "pricing": {**base["pricing"], "horizon_months": 12}}
    r12 = row(price(parse_scenario(long_), serve_perf(), offerings=offers(_block_offer())), "capacity_block", "b1")
    assert "term" in r12["excluded_codes"] and "pricing.horizon_months (365.0 days)" in r12["excluded_reason"]


def test_a_ten_day_h100_run_on_aws_takes_a_capacity_block_over_on_demand():
    """The catalog's AWS p5.48xlarge rows: on-demand $55.04/h (post-June-2025) for 8 x 240 h = $105,677;
    the us-east-1 Capacity Block at $39.33/h for 8 x 11 days = $83,065 wins. Without the block on-demand
    is chosen; a 200-day run cannot be held by a block and goes back to on-demand."""
    off = catalog.offerings()
    pr = {"clouds": ["AWS"], "accelerators": ["H100-SXM5-80GB"]}
    with_block = parse_scenario({**TRAIN, "candidates": pr,
                                 "pricing": {**TRAIN["pricing"], "models": ["on_demand", "capacity_block"]}})
    rec, priced = decide(with_block, perf=train_perf(days=10.0), offs=off)
    assert (rec.pricing_model, rec.offering) == ("capacity_block", "aws-p5.48xlarge-us-east-1-capacity-block")
    block = row(priced, "capacity_block", "aws-p5.48xlarge-us-east-1-capacity-block")
    assert block["cost_usd"] == pytest.approx(8 * 264 * 39.33)
    assert "capacity block is 11 days, paid up front" in " ".join(rec.reasons)
    od = parse_scenario({**TRAIN, "candidates": pr, "pricing": {**TRAIN["pricing"], "models": ["on_demand"]}})
    assert decide(od, perf=train_perf(days=10.0), offs=off)[0].pricing_model == "on_demand"
    assert decide(with_block, perf=train_perf(days=200.0), offs=off)[0].pricing_model == "on_demand"


def test_breakeven_of_a_block_is_its_price_ratio():
    """$40 block against $80 on-demand (per 8 chips): it beats on-demand above 50% utilization."""
    s = _train(models=("on_demand", "capacity_block"))
    o = {**offering("o1", od=80.0, spot=np.nan, c1=np.nan, c3=np.nan)}
    priced = price(s, train_perf(), offerings=offers(o, _block_offer()))
    be = cost.breakeven(s, priced).set_index("pricing_model")
    assert be.loc["capacity_block", "utilization_to_beat_on_demand"] == pytest.approx(0.5)
    curves = cost.breakeven_curves(s, priced)
    cb = curves[curves["pricing_model"] == "capacity_block"].set_index("month")["cumulative_usd_per_chip"]
    # one month (730 h = 30.4 days) needs a 35-day block at $5 a chip-hour; 7 months exceed 182 days
    assert cb[1] == pytest.approx(35 * 24 * 5.0)
    assert np.isnan(cb[7])


def test_a_capacity_block_row_without_its_rate_is_a_one_line_error(tmp_path):
    """A row marked ``capacity_block`` in ``other_price_model`` must carry ``other_usd_per_hour``."""
    df = pd.read_csv(paths.DATA_DIR / "offerings.csv", dtype=str, keep_default_na=False)
    i = int(df.index[df["offering"] == "aws-p5.48xlarge-us-east-1-capacity-block"][0])
    df.loc[i, "other_usd_per_hour"] = ""
    df.loc[i, "spot_usd_per_hour"] = "1.0"  # keep one price in the row: the block check, not the any-price one
    df.to_csv(tmp_path / "offerings.csv", index=False)
    for other in catalog.SCHEMAS:
        if other != "offerings" and (paths.DATA_DIR / f"{other}.csv").exists():
            shutil.copy(paths.DATA_DIR / f"{other}.csv", tmp_path / f"{other}.csv")
    catalog.load.cache_clear()
    catalog.resolve_map.cache_clear()
    try:
        with pytest.raises(InputError, match=rf"offerings.csv: row {i + 2}: other_usd_per_hour: expected the "
                                             "capacity block's hourly rate"):
            catalog.load("offerings", str(tmp_path))
    finally:
        catalog.load.cache_clear()
        catalog.resolve_map.cache_clear()


def test_estimate_json_carries_the_block_bought():
    """``estimate --json``: each option's ``costs.capacity_block`` has ``block_days`` (the shipped
    llama-8b-finetune lists capacity_block; its H100 run of under a day takes a 1-day block)."""
    a = analysis.analyse(wb.load_scenario("llama-8b-finetune"))
    h100 = next(o for o in analysis.summary_json(a)["options"] if o["accelerator"] == "H100-SXM5-80GB")
    assert h100["costs"]["capacity_block"]["block_days"] == 1.0
