"""Evidence (workbook.decision.evidence): the assumptions ledger, and public claims that hold, do not
hold, or do not apply to the scenario, with the measured figure and the reason."""
import datetime as dt
import math

import pandas as pd
import pytest

from workbook import decision
from workbook.scenario import parse_scenario

from pricing_helpers import SERVE, TRAIN, offering, offers, price, scenario, serve_perf, train_perf, two_chip_perf


def test_ledger_lists_inputs_and_flags_old_prices():
    s = scenario()
    o = offers(offering("h", od=100.0, as_of="2025-01-01"), offering("a", acc="A100-SXM4-80GB", od=30.0))
    perf = two_chip_perf()
    priced = price(s, perf, offerings=o)
    led = decision.assumptions(s, perf, priced, today=dt.date(2026, 11, 29))
    assert {"scenario", "performance", "price", "accelerator", "software", "model convention"} <= set(led["category"])
    old = led[(led["category"] == "price") & led["item"].str.startswith("h ")]
    # the staleness rule of issue 12: the price's validity date (price_as_of), over a year or undated
    assert old["flag"].str.contains("older than 365 days").all()
    new = led[(led["category"] == "price") & led["item"].str.startswith("a ")]
    assert new["flag"].isna().all()
    assert led.loc[led["item"] == "pricing.utilization", "value"].iloc[0] == "0.9"


def test_ledger_flags_an_undated_price_and_dates_prices_by_validity():
    s = scenario()
    o = offers(offering("u", od=100.0, as_of="2026-11-20", price_as_of=None),
               offering("a", acc="A100-SXM4-80GB", od=30.0, as_of="2026-11-20", price_as_of="2025-06-01"))
    perf = two_chip_perf()
    led = decision.assumptions(s, perf, price(s, perf, offerings=o), today=dt.date(2026, 11, 29))
    undated = led[(led["category"] == "price") & led["item"].str.startswith("u ")]
    assert undated["flag"].str.contains("price date unknown").all() and undated["as_of"].isna().all()
    old = led[(led["category"] == "price") & led["item"].str.startswith("a ")]
    assert (old["as_of"] == "2025-06-01").all(), "a price row is dated by when the price was valid, not when read"
    assert old["flag"].str.contains("older than 365 days").all()


def _status(table, claim_id):
    return table.set_index("claim_id").loc[claim_id]


def _train():
    s = parse_scenario(TRAIN)
    perf = train_perf()
    return s, perf, price(s, perf, offerings=offers(offering("o1")))


def test_every_claim_has_a_source_a_date_and_a_known_check():
    t = decision.claims()
    assert len(t) >= 8
    assert t["source"].str.len().gt(10).all() and t["as_of"].notna().all()
    assert set(t["check"]) <= set(decision.evidence.CHECKS)


def test_tpu_v5e_393_tflops_bf16_does_not_hold():
    """Google's TPU v5e docs: 197 TFLOP/s BF16, 393 TOPS INT8."""
    s, perf, priced = _train()
    r = _status(decision.check_claims(s, perf, priced), "tpu-v5e-393-tflops-bf16")
    assert r["status"] == decision.FAILS
    assert r["measured"] == pytest.approx(1.97e14)
    assert "INT8" in r["why"]


def test_spec_claims_that_match_the_datasheets_hold():
    s, perf, priced = _train()
    t = decision.check_claims(s, perf, priced)
    assert _status(t, "tpu-v5p-8960-chips")["status"] == decision.HOLDS
    assert _status(t, "trn1-16-chips-per-node")["status"] == decision.HOLDS


def test_serving_claims_do_not_apply_to_a_training_scenario():
    s, perf, priced = _train()
    t = decision.check_claims(s, perf, priced)
    assert _status(t, "tpu-v5e-half-a100-cost")["status"] == decision.NA
    assert _status(t, "xla-80pct-matmul")["status"] == decision.NA


def test_gradient_checkpointing_cuts_more_than_claimed_for_llama2_7b():
    """Korthikanti et al. 2022 with FlashAttention, h = 4096, f = 11008 gated: per layer
    11h + (3h + 6f) + 4h = 139,776 bytes per token; full recompute keeps 2h = 8,192: 94% less."""
    s, perf, priced = _train()
    r = _status(decision.check_claims(s, perf, priced), "checkpointing-60")
    assert r["measured"] == pytest.approx(1 - 8192 / 139776)
    assert r["status"] == decision.FAILS


def test_spot_discount_after_interruptions():
    """Sticker $20 vs $80 is 75% off; 8 instances at 0.05/h, 30-min checkpoints and 10-min restarts add
    18.3% to the hours (Daly 2006: e^(1/15) (e^0.2 - 1) / 0.2 = 1.1833): 1 - 0.25 x 1.1833 = 70.4%."""
    s, perf, priced = _train()
    r = _status(decision.check_claims(s, perf, priced), "spot-70-90")
    assert r["measured"] == pytest.approx(1 - 0.25 * math.exp(1 / 15) * math.expm1(0.2) / 0.2)
    assert r["status"] == decision.HOLDS
    assert "75%" in r["why"]


def test_three_year_commitment_saving_at_the_scenarios_utilization():
    """$30 vs $80 lists 62.5% off, but a 10-day run on a 3-year term pays the whole contract (issue 11):
    1 - (36 x 730 h x $30) / (240 h x $80) = 1 - 41.06 = -4,006%."""
    s, perf, priced = _train()
    r = _status(decision.check_claims(s, perf, priced), "commit-3y-over-50")
    assert r["measured"] == pytest.approx(1 - 3 * 8760 * 30 / (240 * 80))
    assert r["status"] == decision.FAILS


def test_tpu_v5e_cost_per_token_against_a100_on_a_serving_scenario():
    s = parse_scenario(SERVE)
    perf = pd.concat([serve_perf(acc="TPU-v5e", replicas=1, tp=4), serve_perf(acc="A100-SXM4-80GB")],
                     ignore_index=True)
    o = offers(offering("t", acc="TPU-v5e", od=9.6), offering("a", acc="A100-SXM4-80GB", od=40.0))
    priced = price(s, perf, offerings=o)
    r = _status(decision.check_claims(s, perf, priced), "tpu-v5e-half-a100-cost")
    assert r["measured"] == pytest.approx(9.6 / 40.0)
    assert r["status"] == decision.HOLDS


def test_checks_run_on_every_shipped_scenario_shape():
    s = parse_scenario(SERVE)
    perf = serve_perf()
    priced = price(s, perf, offerings=offers(offering("o1")))
    t = decision.check_claims(s, perf, priced)
    assert set(t["status"]) <= {decision.HOLDS, decision.FAILS, decision.NA}
    assert t["why"].str.len().gt(10).all()


# --- issue 25: the seed articles' remaining claims ------------------------------------------------

def test_claims_catalog_has_25_rows_and_every_check_is_implemented():
    from workbook import catalog
    from workbook.decision import evidence
    table = evidence.claims()
    assert len(table) >= 25
    assert set(catalog.SCHEMAS["claims"]["check"].choices) == set(evidence.CHECKS)
    for s in (parse_scenario(TRAIN), parse_scenario(SERVE)):
        perf = train_perf() if s.is_training else serve_perf()
        got = decision.check_claims(s, perf, price(s, perf, offerings=offers(offering("o1"))))
        assert len(got) == len(table) and got["status"].isin(["holds", "does not hold", "not applicable"]).all()
        assert got["why"].map(lambda w: isinstance(w, str) and len(w) > 10).all()


def _one(check, **row):
    from workbook.decision import evidence
    base = {"claim_id": "x", "claim": "x", "check": check, "subject": None, "baseline": None, "claimed_low": 0.0,
            "claimed_high": 0.0, "unit": "s", "source": "test", "as_of": "2026-12-02", "notes": "n"}
    return pd.DataFrame([{**base, **row}])


def test_checkpoint_write_claims_use_the_sourced_storage_bandwidths():
    """1 TB from 100 chips: object storage 1e12 / (100 x 6.25e8 B/s per connection) = 16 s; one EFS
    file system at 3,414 MiB/s: 1e12 / 3.58e9 = 279 s."""
    s = parse_scenario(TRAIN)
    perf = train_perf(chips=100).assign(checkpoint_bytes=1e12)
    priced = price(s, perf, offerings=offers(offering("o1", cpi=4)))
    t = _one("checkpoint_write_s", baseline="object_store", claimed_low=30, claimed_high=60)
    r = decision.check_claims(s, perf, priced, t).iloc[0]
    assert r["measured"] == pytest.approx(1e12 / (100 * 6.25e8)) and r["status"] == "does not hold"
    t = _one("checkpoint_write_s", baseline="nfs", claimed_low=200, claimed_high=300)
    r = decision.check_claims(s, perf, priced, t).iloc[0]
    assert r["measured"] == pytest.approx(1e12 / (3414 * 2 ** 20)) and r["status"] == "holds"


def test_restart_peak_ratio_and_instance_claims():
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "restart_min": 1}})
    perf = train_perf()
    priced = price(s, perf, offerings=offers(offering("o1")))
    r = decision.check_claims(s, perf, priced, _one("restart_s", claimed_low=45, claimed_high=90)).iloc[0]
    assert r["measured"] == 60 and r["status"] == "holds"
    r = decision.check_claims(s, perf, priced, _one("peak_ratio", subject="TPU-v4", baseline="V100-SXM2-32GB",
                                                    claimed_low=3.6, claimed_high=4.4, unit="ratio")).iloc[0]
    assert r["measured"] == pytest.approx(275 / 125) and r["status"] == "does not hold"  # accelerators.csv peaks
    r = decision.check_claims(s, perf, priced, _one("instance_accelerator", subject="no-such-instance",
                                                    baseline="T4", unit="chips")).iloc[0]
    assert r["status"] == "not applicable" and "no no-such-instance instance" in r["why"]
