"""How fast pricing, the Monte Carlo and the recommendation are, per shipped scenario.

Prints, for every scenario in data/scenarios: the number of priced options and of feasible ones,
the median time of pricing (``analysis.price``: software fit, ``cost.price_options``, hard
constraints), of ``cost.monte_carlo`` (10,000 draws for every feasible option) and of
``decision.recommend``. Targets: Monte Carlo well under 1 s, recommend well under 1 s (interactive
use in the app and the widgets). Exit status 1 when a target is missed.
Usage: ``python benchmarks/bench_montecarlo.py [--repeat 5] [--draws 10000]``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbook import analysis, cost, decision  # noqa: E402
from workbook.model import estimate  # noqa: E402
from workbook.scenario import load_scenario, scenario_names  # noqa: E402
from _timing import figure, median_time  # noqa: E402

MC_TARGET_S = 1.0
RECOMMEND_TARGET_S = 1.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--draws", type=int, default=10000)
    args = ap.parse_args(argv)
    missed = 0
    worst = {"price": 0.0, "mc": 0.0, "rec": 0.0}
    print(f"{'scenario':24s} {'options':>7s} {'feasible':>8s} {'price s':>8s} {'MC s':>7s} {'recommend s':>11s}")
    for name in scenario_names():
        s = load_scenario(name)
        perf_df = estimate.compare(s)
        offer_perf = analysis.offer_performance(s, perf_df)  # training: per-offer plans, as the pipeline prices them
        priced_perf = perf_df if offer_perf is None else offer_perf
        t_price, priced = median_time(lambda: analysis.price(s, priced_perf), args.repeat)
        t_mc, mc = median_time(lambda: cost.monte_carlo(s, priced, n=args.draws), args.repeat)
        t_rec, _ = median_time(lambda: decision.recommend(s, perf_df, priced, mc, n_draws=args.draws), args.repeat)
        print(f"{name:24s} {len(priced):7d} {len(mc):8d} {t_price:8.3f} {t_mc:7.3f} {t_rec:11.3f}")
        missed += t_mc > MC_TARGET_S or t_rec > RECOMMEND_TARGET_S
        worst = {"price": max(worst["price"], t_price), "mc": max(worst["mc"], t_mc), "rec": max(worst["rec"], t_rec)}
    print(f"targets: Monte Carlo < {MC_TARGET_S:g} s ({args.draws:,} draws x every feasible option), "
          f"recommend < {RECOMMEND_TARGET_S:g} s; {'all met' if not missed else f'{missed} scenario(s) missed'}")
    figure("pricing (analysis.price), worst scenario", worst["price"], "s")
    figure(f"Monte Carlo ({args.draws:,} draws), worst scenario", worst["mc"], "s", MC_TARGET_S)
    figure("recommend, worst scenario", worst["rec"], "s", RECOMMEND_TARGET_S)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
