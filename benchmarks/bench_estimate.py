"""How long ``perf.compare`` takes for one scenario across the whole accelerator catalog.

For every shipped scenario, with its candidate list and pinned cluster removed (so every catalog chip
with a peak for the precision is estimated), prints the number of accelerators and the median time
of ``perf.compare`` on the fast path (``scaling_model=False``: the data-parallel fallback for
multi-chip training; what the widgets use) and with the parallel-layout search of
``workbook.scaling`` (what ``estimate`` uses for training), plus the first (cold) call of the
process. Target (issue 3): the fast path well under 100 ms, so a widget feels instant. Exit status 1
when the target is missed.
Usage: ``python benchmarks/bench_estimate.py [--repeat 5]``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbook import perf  # noqa: E402
from workbook.scenario import load_scenario, scenario_names, with_overrides  # noqa: E402

TARGET_S = 0.100


def _median_time(fn, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    names = scenario_names()
    first = with_overrides(load_scenario(names[0]), **{"candidates.accelerators": None, "cluster": None})
    t = time.perf_counter()
    perf.compare(first, scaling_model=False)
    cold = time.perf_counter() - t
    print(f"first call in this process (loads catalogs and data/efficiency.csv): {cold * 1e3:.0f} ms")
    print(f"{'scenario':24s} {'task':10s} {'chips':>5s} {'fast ms':>8s} {'scaling ms':>10s}")
    missed = 0
    for name in names:
        s = with_overrides(load_scenario(name), **{"candidates.accelerators": None, "cluster": None})
        t_fast, df = _median_time(lambda: perf.compare(s, scaling_model=False), args.repeat)
        if s.workload.task == "inference":
            t_full = t_fast
        else:
            t_full, _ = _median_time(lambda: perf.compare(s, scaling_model=True), max(1, args.repeat // 2))
        print(f"{name:24s} {s.workload.task:10s} {len(df):5d} {t_fast * 1e3:8.1f} {t_full * 1e3:10.1f}")
        missed += t_fast > TARGET_S
    print(f"target: fast path < {TARGET_S * 1e3:.0f} ms per scenario over the whole catalog; "
          f"{'all met' if not missed else f'{missed} scenario(s) missed'} (the scaling column is informational: "
          f"training with workbook.scaling's layout search{'' if perf.scaling is not None else ', not importable here'})")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
