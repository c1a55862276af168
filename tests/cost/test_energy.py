"""Energy and carbon per offer (workbook.cost.energy): golden numbers from the cited figures, regions
that differ, the cap and the carbon price in the decision, and the data tables' coverage."""
import math

import numpy as np
import pandas as pd
import pytest

from workbook import analysis, catalog, paths
from workbook.cost import energy
from workbook.errors import InputError
from workbook.scenario import parse_scenario

from pricing_helpers import SERVE, TRAIN, decide, offering, offers, price, scenario, serve_perf, train_perf

# The cited figures the golden numbers are computed from (data/system_power.csv, pue.csv, grid_carbon.csv)
DGX_H100_W = 10200.0         # NVIDIA DGX H100 maximum system power
AWS_PUE, GCP_PUE = 1.14, 1.10  # AWS 2025 global PUE; Google 2023 fleet PUE
US_EAST_1 = 379.069          # Cloud Carbon Footprint, NERC SERC, gCO2e/kWh
EEMSHAVEN = 194.35           # Google region-carbon-info 2025, europe-west4


def _offer(name, provider, region, acc="H100-SXM5-80GB", cpi=8):
    return {**offering(name, acc=acc, cpi=cpi, provider=provider), "region": region}


def test_one_8xh100_instance_hour_in_us_east_1_by_hand():
    # 8 x 700 W x (10,200 / 5,600) = 10.2 kW at full load; x PUE 1.14 = 11.628 kWh; x 379.069 g = 4.408 kg
    e = energy.offer_energy(offers(_offer("p5", "AWS", "us-east-1")), utilization=1.0).iloc[0]
    assert e["system_overhead"] == pytest.approx(DGX_H100_W / (8 * 700))
    assert e["energy_kwh_per_instance_hour"] == pytest.approx(DGX_H100_W / 1000 * AWS_PUE)  # 11.628
    assert e["co2_kg_per_instance_hour"] == pytest.approx(11.628 * US_EAST_1 / 1000)          # 4.4078
    half = energy.offer_energy(offers(_offer("p5", "AWS", "us-east-1")), utilization=0.5).iloc[0]
    assert half["energy_kwh_per_instance_hour"] == pytest.approx(11.628 / 2)  # linear, no idle floor


def test_llama2_7b_reported_emissions_are_reproduced_from_its_own_inputs():
    # Touvron et al. 2023 (Llama 2), Table 2: 7B, 184,320 GPU-hours at 400 W, 31.22 tCO2eq; Meta's method
    # is GPU power x hours x PUE; 1.1 x 0.385 kg/kWh is the product the table implies (31.22 / 73.728 MWh)
    kwh = energy.energy_kwh_per_instance_hour(energy.it_power_w(1, 400.0, 1.0, 1.0), 1.1) * 184_320
    assert float(energy.co2_kg(kwh, 385.0)) / 1000 == pytest.approx(31.22, rel=2e-3)


def test_a_chip_without_a_system_figure_takes_epochs_overhead():
    e = energy.offer_energy(offers(_offer("l4", "GCP", "us-central1", acc="L4", cpi=1)), utilization=1.0).iloc[0]
    assert e["system_overhead"] == energy.SYSTEM_OVERHEAD == 1.82
    assert e["energy_kwh_per_instance_hour"] == pytest.approx(72 * 1.82 * GCP_PUE / 1000)


GH200_MODULE_W = 1000.0        # NVIDIA GH200 datasheet: superchip module configurable up to 1,000 W
DGX_GH200_BLOCK_W = 15000.0    # NVIDIA forum: a DGX GH200 block of 8 superchips + 3 switch trays, ~15 kW
IRONWOOD_POD_W, IRONWOOD_POD_CHIPS = 10e6, 9216  # Google, Hot Chips 2025: ~10 MW per 9,216-chip superpod
LAMBDA_PUE = 1.58              # Uptime Institute 2023 industry average (Lambda publishes none)
# Offered chips whose power no source publishes (accelerators.csv notes; README "Not modelled")
UNPOWERED = {"TPU-v5e", "TPU-v5p", "TPU-v6e", "Trainium1", "Trainium2", "Inferentia2"}


def test_the_gh200_offer_now_has_energy_from_its_module_power_by_hand():
    # 1 x 1,000 W x (15,000 / 8,000 = 1.875, not Epoch's 1.82: the module holds the CPU) x 0.9 x 1.58
    # = 2.666 kWh per instance-hour
    e = energy.offering_energy(0.9).loc["lambda-gpu-1x-gh200-all"]
    assert e["chip_power_w"] == GH200_MODULE_W
    assert e["system_overhead"] == pytest.approx(DGX_GH200_BLOCK_W / (8 * GH200_MODULE_W)) != energy.SYSTEM_OVERHEAD
    assert e["energy_kwh_per_instance_hour"] == pytest.approx(1000 * 1.875 * 0.9 * LAMBDA_PUE / 1000)  # 2.66625
    assert pd.isna(e["co2_kg_per_instance_hour"]) and "region all" in e["energy_reason"]  # Lambda has no region


def test_a_gh200_option_carries_energy_kwh_in_the_priced_frame():
    s = scenario()
    gh = {**offering("gh", acc="GH200-96GB", cpi=1, provider="Lambda"), "region": "all"}
    priced = price(s, train_perf(acc="GH200-96GB", chips=8), offerings=offers(gh))
    r = priced[priced["pricing_model"] == "on_demand"].iloc[0]
    # 8 instances x 240 h x 2.666 kWh (utilization 0.9, the default)
    assert r["energy_kwh"] == pytest.approx(8 * 240 * 1000 * 1.875 * 0.9 * LAMBDA_PUE / 1000, rel=1e-6)


def test_a_chip_with_only_a_system_figure_draws_that_system_per_chip():
    # TPU7x: no chip TDP, but ~10 MW per 9,216-chip superpod -> 1,085 W per chip, everything included
    tpu7x = offers(_offer("ironwood", "GCP", "us-central1", acc="TPU-7x", cpi=4))
    e = energy.offer_energy(tpu7x, utilization=1.0).iloc[0]
    assert pd.isna(e["chip_power_w"]) and pd.isna(e["system_overhead"]) and pd.isna(e["energy_reason"])
    assert e["energy_kwh_per_instance_hour"] == pytest.approx(4 * IRONWOOD_POD_W / IRONWOOD_POD_CHIPS * GCP_PUE / 1000)
    assert float(energy.per_chip_system_w(700.0, 1.82, np.nan, np.nan)) == pytest.approx(1274.0)  # chip figure first


def test_the_offered_chips_without_power_are_exactly_the_documented_ones():
    off = catalog.offerings()
    e = energy.offering_energy(0.9)
    blank = set(off.set_index("offering").loc[e.index[e["energy_kwh_per_instance_hour"].isna()], "accelerator"])
    assert blank == UNPOWERED
    readme = " ".join((paths.ROOT / "docs" / "how-to" / "scenario.md").read_text().split())
    assert all(name in readme for name in ("TPU v5e, v5p and v6e", "Trainium", "Inferentia2"))


def test_the_same_offer_in_two_regions_differs_in_co2_not_in_energy():
    e = energy.offer_energy(offers(_offer("a", "GCP", "us-central1"), _offer("b", "GCP", "europe-west4")), 0.9)
    assert e["energy_kwh_per_instance_hour"].iloc[0] == e["energy_kwh_per_instance_hour"].iloc[1]
    assert e["co2_kg_per_instance_hour"].iloc[0] / e["co2_kg_per_instance_hour"].iloc[1] == pytest.approx(
        431.95 / EEMSHAVEN)


def test_no_region_no_co2_and_the_reason_says_so():
    e = energy.offer_energy(offers(_offer("lam", "Lambda", "all"), _offer("t", "GCP", "us-central1", acc="TPU-v5p",
                                                                          cpi=4)), 0.9)
    assert math.isnan(e["co2_kg_per_instance_hour"].iloc[0]) and e["energy_kwh_per_instance_hour"].iloc[0] > 0
    assert "no grid intensity for Lambda region all" in e["energy_reason"].iloc[0]
    assert "no published chip power for TPU-v5p" in e["energy_reason"].iloc[1]


def test_every_offering_has_a_pue_and_a_grid_row_with_a_figure_or_a_reason():
    off = catalog.offerings()
    pue = set(energy.table("pue")["provider"])
    assert set(off["provider"]) <= pue
    grid = energy.table("grid_carbon").set_index(["provider", "region"])
    for key in set(zip(off["provider"], off["region"].fillna("unspecified"))):
        assert key in grid.index, key
        r = grid.loc[key]
        assert pd.notna(r["grid_gco2e_per_kwh"]) or str(r["notes"]).startswith("BLANK"), key


def test_offering_energy_is_per_offering_for_a_fleet_plan():
    e = energy.offering_energy(0.9)
    assert e.loc["aws-p5.48xlarge-us-east-1", "energy_kwh_per_instance_hour"] == pytest.approx(10.2 * 0.9 * AWS_PUE)
    assert e.index.is_unique


def _two_regions(**c):
    """As tests/decision/test_rules.py: one H100 shape, AWS us-east-1 $80/h, GCP europe-west4 $100/h,
    Lambda (no region) $60/h; 64 chips for 10 days = 8 instances x 240 h."""
    us = {**_offer("us", "AWS", "us-east-1"), "spot_usd_per_hour": np.nan, "commit_1y_usd_per_hour": np.nan,
          "commit_3y_usd_per_hour": np.nan}
    eu = {**us, **_offer("eu", "GCP", "europe-west4"), "on_demand_usd_per_hour": 100.0, "spot_usd_per_hour": np.nan,
          "commit_1y_usd_per_hour": np.nan, "commit_3y_usd_per_hour": np.nan}
    lam = {**us, **_offer("lam", "Lambda", "all"), "on_demand_usd_per_hour": 60.0, "spot_usd_per_hour": np.nan,
           "commit_1y_usd_per_hour": np.nan, "commit_3y_usd_per_hour": np.nan}
    us["on_demand_usd_per_hour"] = 80.0
    s = scenario({"cost": 1, "time": 0, "ecosystem": 0, "portability": 0}, c.get("constraints"), c.get("pricing"))
    return decide(s, train_perf(), offers(us, eu, lam))


def test_run_totals_are_instance_hours_times_the_hourly_figures():
    _, priced = _two_regions()
    us = priced[priced["offering"] == "us"].iloc[0]
    assert us["training_days"] == pytest.approx(10.0)
    # 8 instances x 240 h x 10.2 kW x 0.9 x 1.14 = 20,093 kWh; x 0.379069 = 7,617 kg
    assert us["energy_kwh"] == pytest.approx(8 * 240 * 10.2 * 0.9 * AWS_PUE)
    assert us["co2_kg"] == pytest.approx(8 * 240 * 10.2 * 0.9 * AWS_PUE * US_EAST_1 / 1000)
    eu = priced[priced["offering"] == "eu"].iloc[0]
    assert eu["co2_kg"] == pytest.approx(8 * 240 * 10.2 * 0.9 * GCP_PUE * EEMSHAVEN / 1000)  # 3,768 kg


def test_a_co2_cap_changes_the_decision_and_says_why():
    rec, _ = _two_regions()
    assert rec.offering == "lam"  # cheapest; its CO2e is unknown
    rec, priced = _two_regions(constraints={"max_co2_kg": 8000})
    assert rec.offering == "us"  # 7,617 kg <= 8,000; Lambda cannot be shown under the cap
    lam = priced[priced["offering"] == "lam"].iloc[0]
    assert lam["excluded_codes"] == ("carbon",) and "no grid intensity" in lam["excluded_reason"]
    rec, priced = _two_regions(constraints={"max_co2_kg": 5000})
    assert rec.offering == "eu"  # 3,768 kg
    us = priced[priced["offering"] == "us"].iloc[0]
    assert us["excluded_reason"] == "carbon: 7,617 kg CO2e for the run > constraints.max_co2_kg 5,000"


def test_a_cap_nothing_meets_names_the_cap_to_raise():
    rec, _ = _two_regions(constraints={"max_co2_kg": 1000})
    assert rec.accelerator is None
    changes = [c["changes"] for c in rec.nearest_changes]
    assert {"constraints.max_co2_kg": {"from": 1000.0, "to": 3769.0}} in changes  # GCP europe-west4: 3,768.1 kg


def test_a_carbon_price_adds_its_cost_to_the_ranked_bill():
    _, plain = _two_regions()
    _, priced = _two_regions(pricing={"carbon_usd_per_tonne": 100.0})
    for off in ("us", "eu"):
        a, b = plain[plain["offering"] == off].iloc[0], priced[priced["offering"] == off].iloc[0]
        assert b["carbon_usd"] == pytest.approx(a["co2_kg"] / 1000 * 100)
        assert b["cost_usd"] == pytest.approx(a["cost_usd"] + b["carbon_usd"])
    lam = priced[priced["offering"] == "lam"].iloc[0]
    assert "carbon" in lam["excluded_codes"]  # cannot be priced


def test_serving_figures_are_per_month_and_over_the_horizon():
    s = scenario(base=SERVE)
    p = price(s, serve_perf(), offerings=offers(_offer("o1", "GCP", "us-central1")))
    r = p[p["offering"] == "o1"].iloc[0]
    hours = r["instances"] * 24 * 730 / 24
    assert r["energy_kwh_per_month"] == pytest.approx(hours * r["energy_kwh_per_instance_hour"])
    assert r["co2_kg"] == pytest.approx(r["co2_kg_per_month"] * 36)


def test_a_negative_or_zero_cap_is_a_scenario_error():
    for bad in (-5, 0):
        with pytest.raises(InputError, match=r"s.yaml: constraints.max_co2_kg: expected a number > 0"):
            parse_scenario({**TRAIN, "constraints": {"max_co2_kg": bad}}, "s.yaml")
    with pytest.raises(InputError, match=r"pricing.carbon_usd_per_tonne: expected a number >= 0"):
        parse_scenario({**TRAIN, "pricing": {"carbon_usd_per_tonne": -1}}, "s.yaml")


def test_estimate_json_options_carry_energy_and_co2():
    s = scenario()
    perf = train_perf()
    priced = price(s, perf, offerings=offers(_offer("us", "AWS", "us-east-1")))
    costs = analysis._option_costs(priced, "H100-SXM5-80GB")
    opt = analysis._option_energy(costs)
    assert opt["co2_kg"] == pytest.approx(costs["on_demand"]["co2_kg"]) and opt["energy_kwh"] > 0


def test_the_card_and_the_cli_say_energy_and_co2_in_words():
    from workbook.views import text
    figs = dict((k, v) for v, k in text.key_figures({"energy_kwh": 759_094.6, "co2_kg": 147_530.0}))
    assert figs["of electricity for the run (chips and host x PUE)"] == "759 MWh"
    assert figs["for the run at the region's grid intensity"] == "148 t CO2e"
    figs = dict((k, v) for v, k in text.key_figures({"energy_kwh_per_month": 5733.4, "energy_kwh": 2e5}))
    assert figs["of electricity a month (chips and host x PUE)"] == "5,733 kWh"
    assert figs["(no published grid intensity for the offer's region)"] == "unknown CO2e"


def test_the_energy_table_puts_the_lowest_co2_first_and_unknown_last():
    from workbook import decision
    _, priced = _two_regions()
    t = decision.energy_summary(scenario(), priced)
    assert list(t["offering"]) == ["eu", "us", "lam"]
    assert "energy_kwh_per_month" not in t  # training: the run


def test_a_bought_system_draws_its_own_rating_and_needs_your_site_grid():
    """DGX H100 bought: 10.2 kW x utilization 0.9 x pricing.pue 1.3 per busy hour; CO2e only with
    pricing.grid_gco2e_per_kwh (the site is yours)."""
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["purchase"]}})
    r = price(s, train_perf(), offerings=offers(offering("o1"))).query("pricing_model == 'purchase'").iloc[0]
    assert r["energy_kwh_per_instance_hour"] == pytest.approx(10.2 * 0.9 * 1.3)
    assert math.isnan(r["co2_kg"]) and "own site" in r["energy_reason"]
    s = parse_scenario({**TRAIN, "pricing": {**TRAIN["pricing"], "models": ["purchase"], "grid_gco2e_per_kwh": 100}})
    r = price(s, train_perf(), offerings=offers(offering("o1"))).query("pricing_model == 'purchase'").iloc[0]
    assert r["co2_kg"] == pytest.approx(8 * 240 * 10.2 * 0.9 * 1.3 * 0.1)


def test_a_bad_cell_in_an_energy_table_names_file_row_and_column(tmp_path, monkeypatch):
    from workbook import paths
    (tmp_path / "pue.csv").write_text("provider,pue,basis,year,source,as_of,notes\nAWS,0.5,provider_fleet,2025,x,"
                                      "2026-12-01,\n")
    monkeypatch.setattr(paths, "DATA_DIR", tmp_path)
    energy.table.cache_clear()
    try:
        with pytest.raises(InputError, match=r"pue.csv: row 2: .*pue"):
            energy.table("pue")
    finally:
        monkeypatch.undo()
        energy.table.cache_clear()
