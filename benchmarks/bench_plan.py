"""How long the fleet plan takes: ``plan.make_plan`` on the shipped 24-month portfolio
(``fleet-2027``: a serving curve plus a monthly fine-tune, 17,520 hours) over every offer.

The scenarios' candidate lists are removed, so every offering in the catalog that the workload can
run on is a candidate. Prints the time of ``analysis.analyse`` per workload (the one pipeline, run
once; reported apart) and the median of repeated ``make_plan`` calls over the priced frames (the
plan itself: offers, hourly demand per offer, the commitment search and the monthly breakdown).
Target (issue 18): a 24-month hourly plan over every offer in well under 2 s (the exit status is 1
when the median wall time misses 2 s); the median CPU time (``time.process_time``) is printed beside it,
the figure to compare on a shared, loaded machine. Usage: ``python benchmarks/bench_plan.py [--repeat 5]``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbook import analysis  # noqa: E402
from workbook.plan import fleet, load_portfolio  # noqa: E402
from workbook.scenario import with_overrides  # noqa: E402
from _timing import figure, median_time  # noqa: E402

TARGET_S = 2.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--portfolio", default="fleet-2027")
    args = ap.parse_args(argv)
    pf, scenarios = load_portfolio(args.portfolio)
    scenarios = [with_overrides(s, **{"candidates.accelerators": None}) for s in scenarios]
    priced = []
    for s in scenarios:
        t = time.perf_counter()
        priced.append(analysis.analyse(s, n_draws=1000).priced)
        print(f"analyse {s.name:24s} {(time.perf_counter() - t) * 1e3:8.0f} ms  ({len(priced[-1])} priced rows)")
    needs = fleet.needs_of(pf, scenarios, priced)
    hours = needs[0].demand.shape[1]
    offers = sum(len(n.offers) for n in needs)
    secs, plan = median_time(lambda: fleet.make_plan(pf, scenarios, priced), args.repeat)
    print(f"plan {pf.name}: {pf.months} months x 730 h = {hours:,} hours, {len(needs)} workloads, {offers} offers: "
          f"median {secs * 1e3:.0f} ms of {args.repeat} (target < {TARGET_S:.0f} s: {'met' if secs < TARGET_S else 'missed'})")
    print(f"  total ${plan.total_usd:,.0f} against ${plan.all_on_demand_usd:,.0f} all on-demand, "
          f"{len(plan.commitments)} commitment(s)")
    cpu_s, _ = median_time(lambda: fleet.make_plan(pf, scenarios, priced), args.repeat, clock=time.process_time)
    print(f"  CPU median {cpu_s * 1e3:.0f} ms of {args.repeat} (wall and CPU differ on a shared, loaded machine)")
    figure(f"{pf.months}-month fleet plan ({pf.name}, make_plan), wall", secs, "s", TARGET_S)
    figure(f"{pf.months}-month fleet plan ({pf.name}, make_plan), CPU", cpu_s, "s", TARGET_S)
    return 0 if secs < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
