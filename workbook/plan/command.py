"""``python -m workbook plan PORTFOLIO [--json] [--html OUT]``: the fleet plan of a portfolio file."""
from __future__ import annotations

import json
import sys

from ..report.plan_page import write_plan_html
from .fleet import plan_portfolio
from .output import plan_json, plan_text
from .portfolio import load_portfolio


def add_arguments(p) -> None:
    p.add_argument("portfolio", help="a portfolio id (data/portfolios/ID.yaml) or a YAML path")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--html", metavar="OUT", help="also write the plan as one offline HTML page to OUT")


def run(args) -> int:
    pf, scenarios = load_portfolio(args.portfolio)
    plan = plan_portfolio(pf, scenarios)
    if args.json:
        json.dump(plan_json(plan), sys.stdout, indent=2)
        print()
    else:
        print(plan_text(plan))
    if args.html:
        print(f"wrote {write_plan_html(plan, args.html)}", file=sys.stderr)
    return 0
