"""The plan's chart, text and page, on a small hand-made plan (no analysis run)."""
import pandas as pd
import pytest

from workbook.plan import fleet, output
from workbook.plan.portfolio import Portfolio
from workbook.report.plan_page import plan_html
from workbook.scenario import load_scenario
from workbook.views.charts import plan as charts


@pytest.fixture(scope="module")
def plan():
    rows = [{"offering": "o1", "accelerator": "X1", "provider": "P", "region": "r", "pricing_model": m,
             "instances": 2.0, "spare_instances": 0.0, "usd_per_instance_hour": price, "excluded_reason": None,
             "used_instance_hours": 1460.0, "porting_usd": 0.0, "cost_usd": None}
            for m, price in (("on_demand", 10.0), ("commit_1y", 6.0))]
    pf = Portfolio.model_validate({"name": "t", "title": "A test fleet", "months": 12, "workloads": [
        {"scenario": "chat-70b-realtime", "hourly_load": [0.5] * 12 + [1.0] * 12}]})
    return fleet.make_plan(pf, [load_scenario("chat-70b-realtime")], [pd.DataFrame(rows)])


def test_monthly_chart_stacks_cost_by_offer_and_way_to_pay(plan):
    spec = charts.monthly_cost(output.monthly(plan), plan.all_on_demand_usd).to_dict()
    bars, rule = spec["layer"]
    assert bars["mark"]["type"] == "bar" and bars["encoding"]["y"]["aggregate"] == "sum"
    assert bars["encoding"]["color"]["field"] == "offer"
    offers = {r["offer"] for r in spec["datasets"][bars["data"]["name"]]}
    assert offers == {"o1 · 1-year commitment", "o1 · on-demand"}
    assert spec["datasets"][rule["data"]["name"]][0]["usd"] == pytest.approx(plan.all_on_demand_usd / 12)


def test_text_and_page_lead_with_the_total_and_the_commitments(plan):
    text = output.plan_text(plan)
    # 1 committed (its second instance would be busy 50% < 6/10): 6 x 8,760 + 10 x 12 h x 365 days
    assert "$96,360 over 12 months with 1 commitment (1 instance)" in text
    assert "against $131,400 all on-demand" in text          # 10 $/h x (2 x 12 + 1 x 12) h x 365 days
    page = plan_html(plan)
    assert page.index("Commitments to sign") < page.index("Cost per month") < page.index("Assumptions")


def test_summary_table_says_the_commitments_in_words(plan):
    t = output.summary_table(plan).set_index("figure")["value"]
    assert t["commitments"] == "1 x o1, 1-year commitment from month 1"
    assert t["saving"].startswith("$35,040 (26.7%)")
