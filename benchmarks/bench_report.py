"""Wall time of the batch reports, as ``make report`` runs them (``python -m workbook report``).

1. One report on one core: the first shipped scenario, ``--jobs 1``, the process pinned to one CPU.
2. Every shipped scenario on two cores: ``--jobs 2``, pinned to two CPUs.

Each run writes into a fresh temporary folder (nothing skipped) and prints the total wall time, the
CPU time of the whole process tree (comparable on a shared, loaded machine where wall time is not),
the load average, and each report's time as the runner logged it. Targets (issue 6): a report in under 10 s on one core;
the shipped scenarios in under 40 s on two cores. Exit status 1 when a run fails (not when slow).

Usage: ``python benchmarks/bench_report.py [--scenarios a b ...]``
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LINE = re.compile(r"^(ok|FAILED)\s+(\S+) \(([\d.]+) s\)")


def cpus(n: int) -> set[int] | None:
    """The first ``n`` CPUs this process may use (None where affinity cannot be set)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    mine = sorted(os.sched_getaffinity(0))
    return set(mine[:n]) if len(mine) >= n else None


def _children_cpu_s() -> float:
    """CPU seconds of finished child processes (the runner, its workers and their kernels)."""
    import resource

    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def run(label: str, scenarios: list[str], jobs: int, n_cpus: int) -> tuple[bool, float]:
    pin = cpus(n_cpus)
    with tempfile.TemporaryDirectory(prefix="bench-report-") as out:
        cmd = [sys.executable, "-m", "workbook", "report", *scenarios, "--out", out, "--jobs", str(jobs)]
        t0, c0 = time.perf_counter(), _children_cpu_s()
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                           preexec_fn=(lambda: os.sched_setaffinity(0, pin)) if pin else None)
        wall, cpu = time.perf_counter() - t0, _children_cpu_s() - c0
    where = f"{len(pin)} CPU(s) pinned" if pin else "affinity not set"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{label}: {len(scenarios)} report(s), --jobs {jobs}, {where}: {wall:.1f} s wall, {cpu:.1f} s CPU "
          f"(user+sys of the process tree), load average {load:.1f}, exit {r.returncode}")
    for line in r.stderr.splitlines():
        m = LINE.match(line)
        if m:
            print(f"  {m.group(2):<24} {float(m.group(3)):6.1f} s  {m.group(1)}")
        elif line.startswith(("FAILED", "invalid", "report:")) or "Error" in line:
            print(f"  | {line}")
    return r.returncode == 0, wall


def main() -> int:
    from workbook.scenario import scenario_names

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", nargs="*", default=None, help="default: every shipped scenario")
    args = ap.parse_args()
    names = args.scenarios or scenario_names()
    ok1, one = run("one report, one core", names[:1], jobs=1, n_cpus=1)
    ok2, batch = run("shipped scenarios, two cores", names, jobs=2, n_cpus=2)
    print(f"target: one report < 10 s on one core: {one:.1f} s ({'met' if one < 10 else 'NOT met'})")
    print(f"target: {len(names)} reports < 40 s on two cores: {batch:.1f} s ({'met' if batch < 40 else 'NOT met'}; "
          f"the issue's figure is for six scenarios)")
    return 0 if ok1 and ok2 else 1


if __name__ == "__main__":
    sys.exit(main())
