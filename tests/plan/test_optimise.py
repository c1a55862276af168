"""The optimiser on hand-computed portfolios: small synthetic priced frames (the columns of
``analysis.analyse(s).priced`` that the plan reads), real scenario files for the workloads' kind.

Prices are round numbers chosen so each answer can be worked by hand: on-demand 10 $/h, a 1-year
commitment 6 $/h (c/p = 0.6: a committed instance pays for itself when it is busy more than 60% of
its term). 12 months x 730 h = 8,760 h = 365 days of 24 h exactly."""
import math

import numpy as np
import pandas as pd
import pytest

from workbook.plan import demand, fleet, optimise
from workbook.plan.portfolio import Portfolio
from workbook.scenario import load_scenario

YEAR_H = 8760


@pytest.fixture(scope="module")
def chat():
    return load_scenario("chat-70b-realtime")


@pytest.fixture(scope="module")
def tune():
    return load_scenario("llama-8b-finetune")


def rows(offering, instances, od=None, spot=None, c1=None, c3=None, spare=0.0, job_hours=None, porting=0.0):
    """Priced rows of one offering: serving when ``job_hours`` is None, else a training job of
    ``instances`` for ``job_hours`` (its ``cost_usd`` = instance-hours x price + porting)."""
    out = []
    for model, price in (("on_demand", od), ("spot", spot), ("commit_1y", c1), ("commit_3y", c3)):
        if price is None:
            continue
        uih = instances * (730.0 if job_hours is None else job_hours)
        out.append({"offering": offering, "accelerator": "X1", "provider": "P", "region": "r1",
                    "pricing_model": model, "instances": float(instances),
                    "spare_instances": spare if model == "spot" else 0.0, "usd_per_instance_hour": price,
                    "excluded_reason": None, "used_instance_hours": uih, "porting_usd": porting,
                    "cost_usd": None if job_hours is None else uih * price + porting})
    return out


def portfolio(months, *workloads):
    return Portfolio.model_validate({"name": "t", "months": months, "workloads": list(workloads)})


def plan(months, workloads, scenarios, frames):
    return fleet.make_plan(portfolio(months, *workloads), scenarios, [pd.DataFrame(f) for f in frames])


def test_commitment_curve_is_the_hand_computed_cost_per_baseline():
    # demand 2 for 3 h and 1 for 1 h; burst 10, commitment 6 per hour over 4 paid hours
    b, cost = optimise.commitment_curve([2, 2, 2, 1], 10.0, 6.0, 4)
    assert list(b) == [0, 1, 2]
    assert cost == pytest.approx([70.0, 24 + 30.0, 48.0])


def test_flat_load_of_two_for_a_year_commits_two_instances(chat):
    p = plan(12, [{"scenario": "chat-70b-realtime", "hourly_load": [1.0] * 24}], [chat],
             [rows("o1", 2, od=10, c1=6)])
    assert list(p.commitments["instances"]) == [2]
    assert p.total_usd == pytest.approx(2 * 6 * YEAR_H)
    assert p.all_on_demand_usd == pytest.approx(2 * 10 * YEAR_H)
    assert p.commitments["utilization"].iat[0] == pytest.approx(1.0)


def test_spiky_load_commits_the_level_busy_more_than_c_over_p(chat):
    # 2 instances for 8 h a day, 1 for 16 h: the second is busy 1/3 of the time < 0.6 -> baseline 1
    load = [1.0] * 8 + [0.5] * 16
    p = plan(12, [{"scenario": "chat-70b-realtime", "hourly_load": load}], [chat], [rows("o1", 2, od=10, c1=6)])
    assert list(p.commitments["instances"]) == [1]
    assert p.total_usd == pytest.approx(6 * YEAR_H + 10 * 365 * 8)
    assert p.all_on_demand_usd == pytest.approx(10 * (365 * 8 * 2 + 365 * 16))
    assert p.total_usd < p.all_on_demand_usd


def test_a_three_month_job_buys_no_commitment(tune):
    p = plan(12, [{"scenario": "llama-8b-finetune"}], [tune], [rows("o1", 1, od=10, c1=6, job_hours=3 * 730)])
    assert p.commitments.empty
    assert p.total_usd == pytest.approx(3 * 730 * 10) == p.all_on_demand_usd


def test_a_monthly_job_runs_in_every_month_it_starts(tune):
    w = {"scenario": "llama-8b-finetune", "start_month": 2, "end_month": 12, "repeat_every_months": 3}
    p = plan(12, [w], [tune], [rows("o1", 2, od=10, job_hours=20.5)])
    assert sorted(p.rows["month"]) == [2, 5, 8, 11]
    assert p.rows["instance_hours"].tolist() == pytest.approx([41.0] * 4)
    assert p.total_usd == pytest.approx(4 * 41 * 10)


def test_a_commitment_longer_than_the_horizon_is_paid_to_its_end(chat):
    # 6 months of 1 instance: a 1-year commitment at 4 $/h costs 8,760 x 4 = 35,040 < 6 x 730 x 10 = 43,800
    p = plan(6, [{"scenario": "chat-70b-realtime", "hourly_load": [1.0] * 24}], [chat], [rows("o1", 1, od=10, c1=4)])
    c = p.commitments.iloc[0]
    assert (c["instances"], c["start_month"], c["end_month"]) == (1, 1, 12)
    assert c["usd_after_horizon"] == pytest.approx(6 * 730 * 4)
    assert p.total_usd == pytest.approx(YEAR_H * 4)
    # at 6 $/h the year (52,560) is dearer than six months on demand: no commitment
    q = plan(6, [{"scenario": "chat-70b-realtime", "hourly_load": [1.0] * 24}], [chat], [rows("o1", 1, od=10, c1=6)])
    assert q.commitments.empty and q.total_usd == pytest.approx(q.all_on_demand_usd) == pytest.approx(6 * 730 * 10)


def test_three_year_term_wins_over_two_years_when_cheap_enough(chat):
    # 24 months flat 1: 1y blocks 2 x 8,760 x 6 = 105,120; 3y 26,280 x 3.5 = 91,980 (a year paid unused)
    p = plan(24, [{"scenario": "chat-70b-realtime", "hourly_load": [1.0] * 24}], [chat],
             [rows("o1", 1, od=10, c1=6, c3=3.5)])
    assert list(p.commitments["pricing_model"]) == ["commit_3y"]
    assert p.total_usd == pytest.approx(3 * YEAR_H * 3.5)
    assert p.commitments["usd_after_horizon"].iat[0] == pytest.approx(YEAR_H * 3.5)


def test_one_year_blocks_take_their_own_counts(chat):
    # load in the first year only (end_month 12) of a 24-month horizon: the second block buys nothing
    p = plan(24, [{"scenario": "chat-70b-realtime", "end_month": 12, "hourly_load": [1.0] * 24}], [chat],
             [rows("o1", 3, od=10, c1=6)])
    assert list(zip(p.commitments["start_month"], p.commitments["instances"])) == [(1, 3)]
    assert p.total_usd == pytest.approx(3 * 6 * YEAR_H)


def test_spot_bursts_pay_their_spares(chat):
    # spot 4 $/h with 1 spare per 2 instances: 6 $/h per instance of need, cheaper than on-demand 10
    p = plan(12, [{"scenario": "chat-70b-realtime", "hourly_load": [1.0] * 24}], [chat],
             [rows("o1", 2, od=10, spot=4, spare=1.0)])
    assert set(p.rows["pricing_model"]) == {"spot"}
    assert p.total_usd == pytest.approx(2 * 6 * YEAR_H)


def test_plan_equals_all_on_demand_when_nothing_beats_it(chat):
    p = plan(12, [{"scenario": "chat-70b-realtime", "hourly_load": [1.0] * 24}], [chat],
             [rows("o1", 2, od=10, c1=11) + rows("o2", 1, od=25)])
    assert p.commitments.empty
    assert p.total_usd == pytest.approx(p.all_on_demand_usd) == pytest.approx(2 * 10 * YEAR_H)


def test_workloads_on_the_same_offering_share_one_commitment(chat):
    # day and night halves: alone each is busy 50% < 60% and bursts on o2 (9.5 $/h, no commitment);
    # pooled on o1 the pair is a flat load of 1 and one committed instance serves both
    day, night = [1.0] * 12 + [0.0] * 12, [0.0] * 12 + [1.0] * 12
    frames = [rows("o1", 1, od=10, c1=6) + rows("o2", 1, od=9.5)] * 2
    p = plan(12, [{"scenario": "chat-70b-realtime", "hourly_load": day},
                  {"scenario": "chat-70b-realtime", "hourly_load": night}], [chat, chat], frames)
    assert list(p.commitments["instances"]) == [1]
    assert set(p.workloads["offering"]) == {"o1"}
    assert p.commitments["workloads"].iat[0] == "chat-70b-realtime, chat-70b-realtime#2"
    assert p.total_usd == pytest.approx(6 * YEAR_H)
    assert p.all_on_demand_usd == pytest.approx(2 * 9.5 * YEAR_H / 2)


def test_a_job_fills_idle_committed_hours_on_a_shared_offering(chat, tune):
    # the service needs 1 instance from 0 to 12 h and 2 from 12 to 24 h: alone its second instance is
    # busy 50% < 60% and it commits 1; a monthly 1-instance job of 300 h from hour 0 on the same
    # offering raises the second level's busy share to (4,380 + about 1,800 job hours at night) / 8,760
    # > 60%: pooled, 2 are committed, and the pair costs less than the two planned apart
    svc = {"scenario": "chat-70b-realtime", "hourly_load": [0.5] * 12 + [1.0] * 12}
    job = {"scenario": "llama-8b-finetune", "repeat_every_months": 1}
    f_svc, f_job = rows("o1", 2, od=10, c1=6), rows("o1", 1, od=10, job_hours=300)
    both = plan(12, [svc, job], [chat, tune], [f_svc, f_job])
    apart = plan(12, [svc], [chat], [f_svc]).total_usd + plan(12, [job], [tune], [f_job]).total_usd
    assert list(both.commitments["instances"]) == [2]
    assert list(plan(12, [svc], [chat], [f_svc]).commitments["instances"]) == [1]
    assert both.total_usd < apart
    assert both.commitments["workloads"].iat[0] == "chat-70b-realtime, llama-8b-finetune"


def test_porting_is_paid_once_and_can_move_a_workload(chat):
    frames = [rows("o1", 1, od=10, porting=50_000.0) + rows("o2", 1, od=11)]
    p = plan(12, [{"scenario": "chat-70b-realtime", "hourly_load": [1.0] * 24}], [chat], frames)
    assert p.workloads["offering"].iat[0] == "o2"
    assert p.total_usd == pytest.approx(11 * YEAR_H)


def test_months_add_up_to_the_total(chat, tune):
    frames = [rows("o1", 3, od=10, c1=6, c3=4), rows("o1", 2, od=10, spot=3, job_hours=30)]
    p = plan(18, [{"scenario": "chat-70b-realtime", "hourly_load": [0.3] * 8 + [1.0] * 16},
                  {"scenario": "llama-8b-finetune", "repeat_every_months": 2}], [chat, tune], frames)
    tail = p.commitments["usd_after_horizon"].sum() if len(p.commitments) else 0.0
    assert p.rows["cost_usd"].sum() + tail == pytest.approx(p.total_usd)
    assert p.total_usd <= p.all_on_demand_usd + 1e-6


def test_serving_demand_scales_capacity_with_the_hourly_share(chat):
    offers = optimise.with_burst(demand.offer_table(pd.DataFrame(rows("o1", 11, od=1.5)), False))
    w = portfolio(1, {"scenario": "chat-70b-realtime", "hourly_load": [0.25] * 12 + [1.0] * 12}).workloads[0]
    d = demand.demand(w, chat, offers, 1)
    assert d.shape == (1, 730)
    assert d[0, :12].tolist() == [3.0] * 12 and d[0, 12:24].tolist() == [11.0] * 12   # ceil(0.25 x 11) = 3


def test_energy_columns_are_summed_per_month_when_the_offers_carry_them(chat):
    f = rows("o1", 1, od=10)
    for r in f:
        r["energy_kwh"], r["co2_kg"] = 730 * 2.0, 730 * 0.5      # per month of serving: 2 kWh, 0.5 kg per hour
    p = plan(2, [{"scenario": "chat-70b-realtime", "hourly_load": [1.0] * 24}], [chat], [f])
    assert p.rows["energy_kwh"].tolist() == pytest.approx([730 * 2.0] * 2)
    assert p.rows["co2_kg"].sum() == pytest.approx(2 * 730 * 0.5)


def test_excluded_and_commit_only_offers_are_not_planned(chat):
    f = rows("o1", 1, od=10) + rows("o2", 1, c1=1)
    f[0]["excluded_reason"] = "latency: too slow"
    with pytest.raises(ValueError, match="no feasible offer"):
        plan(12, [{"scenario": "chat-70b-realtime"}], [chat], [f])


def test_energy_per_instance_hour_columns_win_and_unknown_stays_unknown(chat):
    """cost.energy's per-instance-hour figures are used as they are; an offer with no chip power
    (NaN) leaves the month's total unknown instead of counting it as 0 kWh."""
    from workbook.plan import output
    f = rows("o1", 1, od=10)
    for r in f:
        r["energy_kwh_per_instance_hour"], r["co2_kg_per_instance_hour"] = 3.0, float("nan")
        r["energy_kwh"] = 1.0                                         # ignored: the direct figure wins
    p = plan(1, [{"scenario": "chat-70b-realtime", "hourly_load": [1.0] * 24}], [chat], [f])
    assert p.rows["energy_kwh"].tolist() == pytest.approx([730 * 3.0])
    month = output.plan_json(p)["months"][0]
    assert month["energy_kwh"] == pytest.approx(730 * 3.0)
    assert month.get("co2_kg") is None
