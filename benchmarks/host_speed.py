"""How fast this host runs Python right now: a fixed workload's CPU seconds, printed by ``run.py``
before the first benchmark and after the last.

The machines we benchmark on are shared: the same report took 3.0 s in one minute and 4.4 s a few
minutes later (3 December 2026), so a figure near its target says as much about the minute as
about the code. This reference does not change between commits. Two benchmark tables compare only
where their references agree, or after dividing by them, and a reference that moved between the
start and the end of one run shows that the host changed during it. It has no target.

The workload is standard-library Python only, the kind a report's main thread runs most
(bytecode, dicts of strings, method calls, sorting, JSON, formatting). It leaves out imports and
disk, which depend on the page cache more than on the CPU. Each run is a fresh interpreter of the
same venv pinned to one CPU, and the figure is the median of ``RUNS``."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys

RUNS = 5

WORKLOAD = r"""
import json, time
t = time.process_time()
s = 0
for i in range(1_500_000):
    s += i % 7
d = {f"k{i}": i for i in range(200_000)}
class Row:
    __slots__ = ("a", "b")
    def __init__(self, a, b): self.a, self.b = a, b
    def cost(self): return self.a * 1.5 + self.b
rows = [Row(i, i % 13) for i in range(200_000)]
total = sum(r.cost() for r in rows)
order = sorted(rows, key=lambda r: (r.b, -r.a))
text = json.dumps([{"name": f"offer-{i}", "usd": i * 0.37, "tags": ["a", "b"]} for i in range(40_000)])
back = json.loads(text)
lines = [f"{r.a:>8d} {r.cost():10.3f}" for r in order[:100_000]]
print(time.process_time() - t)
"""


def reference_s(runs: int = RUNS) -> float:
    """Median CPU seconds of ``WORKLOAD`` over ``runs`` fresh interpreters pinned to one CPU."""
    pin = sorted(os.sched_getaffinity(0))[:1] if hasattr(os, "sched_getaffinity") else None
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", WORKLOAD], capture_output=True, text=True, check=True,
                             preexec_fn=(lambda: os.sched_setaffinity(0, pin)) if pin else None)
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


if __name__ == "__main__":
    print(f"host reference: {reference_s():.3f} s CPU (median of {RUNS})")
