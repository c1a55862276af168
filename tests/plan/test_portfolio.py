"""The portfolio file: the shipped example validates, and each mistake is one line naming the file
and the field, exit status 2 from the command line."""
import json

import pytest
from cli_helpers import run_workbook

from workbook.cli import main
from workbook.errors import InputError
from workbook.plan import plan_portfolio
from workbook.plan.portfolio import load_portfolio, portfolio_names

GOOD = """name: t
months: 12
workloads:
  - scenario: chat-70b-realtime
    hourly_load: [0.3, 0.25, 0.2, 0.2, 0.2, 0.3, 0.4, 0.6, 0.8, 1, 1, 1, 1, 1, 1, 0.9, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.5, 0.4]
  - scenario: llama-8b-finetune
    repeat_every_months: 1
"""


def problems(tmp_path, text, name="p.yaml"):
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(InputError) as e:
        load_portfolio(f)
    return e.value.problems


def test_every_shipped_portfolio_validates():
    assert "fleet-2027" in portfolio_names()
    for name in portfolio_names():
        pf, scenarios = load_portfolio(name)
        assert pf.name == name and len(scenarios) == len(pf.workloads)


def test_a_good_portfolio_loads_with_defaults(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(GOOD)
    pf, scenarios = load_portfolio(f)
    assert pf.title == "t" and pf.workloads[1].start_month == 1 and pf.workloads[1].end_month is None
    assert [s.name for s in scenarios] == ["chat-70b-realtime", "llama-8b-finetune"]


def test_a_scenario_path_is_relative_to_the_portfolio_file(tmp_path, root):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mine.yaml").write_text((root / "data/scenarios/llama-8b-finetune.yaml").read_text())
    f = tmp_path / "p.yaml"
    f.write_text("name: t\nmonths: 3\nworkloads:\n  - scenario: sub/mine.yaml\n")
    assert load_portfolio(f)[1][0].name == "llama-8b-finetune"


@pytest.mark.parametrize("change,field,words", [
    ("months: 12\n", "months", "expected an integer"),
    ("    hourly_load: [0.3, 0.25", "workloads.0.hourly_load", "expected 24 shares"),
    ("    repeat_every_months: 1\n", "workloads.1.repeat_every_months", "expected a number >= 1"),
    ("  - scenario: chat-70b-realtime\n", "workloads.0.colour", "unknown key"),
])
def test_a_bad_field_is_one_line_naming_file_and_field(tmp_path, change, field, words):
    bad = {"months: 12\n": "months: lots\n",
           "    hourly_load: [0.3, 0.25": "    hourly_load: [0.25",
           "    repeat_every_months: 1\n": "    repeat_every_months: 0\n",
           "  - scenario: chat-70b-realtime\n": "  - scenario: chat-70b-realtime\n    colour: red\n"}[change]
    lines = problems(tmp_path, GOOD.replace(change, bad))
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{tmp_path / 'p.yaml'}: {field}: ") or lines[0].startswith(f"p.yaml: {field}: ")
    assert words in lines[0]


def test_months_outside_the_horizon_and_reversed_are_named(tmp_path):
    text = "name: t\nmonths: 6\nworkloads:\n  - {scenario: llama-8b-finetune, start_month: 4, end_month: 2}\n"
    assert "end_month (2) is before start_month (4)" in problems(tmp_path, text)[0]
    text = "name: t\nmonths: 6\nworkloads:\n  - {scenario: llama-8b-finetune, end_month: 9}\n"
    assert "workloads.0.end_month: month 9 is after the horizon (months: 6)" in problems(tmp_path, text)[0]


def test_an_unknown_scenario_names_the_workload_and_suggests(tmp_path):
    lines = problems(tmp_path, GOOD.replace("scenario: chat-70b-realtime", "scenario: chat-70b-realtme"))
    assert len(lines) == 1
    assert "workloads.0.scenario: " in lines[0] and "file not found" in lines[0] and "chat-70b-realtime" in lines[0]


def test_load_curve_and_repeats_belong_to_their_kind_of_workload(tmp_path):
    text = ("name: t\nmonths: 6\nworkloads:\n  - {scenario: llama-8b-finetune, hourly_load: [" + ", ".join(["1"] * 24)
            + "]}\n  - {scenario: chat-70b-realtime, repeat_every_months: 2}\n")
    lines = problems(tmp_path, text)
    assert len(lines) == 2
    assert "workloads.0.hourly_load: only for serving" in lines[0]
    assert "workloads.1.repeat_every_months: only for training and fine-tuning" in lines[1]


def test_yaml_and_missing_file_errors(tmp_path):
    assert "YAML syntax error: line 3" in problems(tmp_path, "name: t\nmonths: [\n")[0]
    with pytest.raises(InputError, match="file not found"):
        load_portfolio(tmp_path / "nope.yaml")


def test_cli_exits_2_with_one_line_per_problem(tmp_path, capsys):
    f = tmp_path / "p.yaml"
    f.write_text(GOOD.replace("months: 12", "months: 0").replace("scenario: llama-8b-finetune", "scenario: nope"))
    assert main(["plan", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "months: expected a number >= 1" in err[0]
    f.write_text(GOOD.replace("scenario: llama-8b-finetune", "scenario: nope"))
    assert main(["plan", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "workloads.1.scenario" in err[0] and "Traceback" not in err[0]


def test_plan_json_end_to_end_on_the_shipped_example(tmp_path):
    out = tmp_path / "plan.html"
    # the command's own code in this process (cli_helpers.run_workbook: what `python -m workbook` calls); a
    # fresh interpreter cost about 3 s of CPU more for its imports (issue 30)
    r = run_workbook("plan", "fleet-2027", "--json", "--html", out)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert {"months", "commitments", "total_usd", "all_on_demand_usd"} <= set(d)
    assert len(d["months"]) == 24 and all(m["by_offer"] for m in d["months"])
    assert d["total_usd"] <= d["all_on_demand_usd"]
    tail = sum(c["usd_after_horizon"] for c in d["commitments"])
    porting = sum(w["porting_usd"] for w in d["workloads"])
    assert sum(m["cost_usd"] for m in d["months"]) + tail + porting == pytest.approx(d["total_usd"])
    page = out.read_text()
    assert "<svg" in page and "All on-demand" in page and "Commitments to sign" in page
    assert "<script" not in page and 'src="http' not in page and "href=\"http" not in page   # opens offline


def test_the_hyperscaler_example_commits_its_base_load_and_bursts_the_peak():
    """hyperscaler-2027 (no spot, hyperscalers only, 200 requests/s at a daily peak): a 3-year
    commitment is cheaper than on-demand for every hour the load needs it more than
    price_commit/price_on_demand of the time, so the plan commits below the peak, bursts the rest on
    demand, and beats all-on-demand; the commitment's paid hours are not all used (night trough)."""
    p = plan_portfolio(*load_portfolio("hyperscaler-2027"))
    c = p.commitments
    assert len(c) == 1 and c.iloc[0]["pricing_model"] in ("commit_1y", "commit_3y")
    peak = int(p.workloads.iloc[0]["instances_at_peak"])
    assert 0 < c.iloc[0]["instances"] < peak
    assert 0.5 < c.iloc[0]["utilization"] < 1.0
    assert p.total_usd < 0.8 * p.all_on_demand_usd
