"""Plan over time: a fleet for several workloads (a portfolio file, ``data/portfolios/``), a committed
baseline and on-demand or spot bursts, month by month. ``load_portfolio`` -> ``plan_portfolio``
(each workload through ``analysis.analyse``) -> ``Plan``; ``plan_json`` is ``plan --json``."""
from .fleet import ASSUMPTIONS, Plan, make_plan, plan_portfolio
from .output import assumptions, headline, monthly, plan_json, plan_text, summary_table
from .portfolio import Portfolio, load_portfolio, portfolio_names

__all__ = ["ASSUMPTIONS", "Plan", "Portfolio", "assumptions", "headline", "load_portfolio", "make_plan", "monthly",
           "plan_json", "plan_portfolio", "plan_text", "portfolio_names", "summary_table"]
