"""How long the command line takes to start: the CPU seconds (user + system, comparable on a shared
machine) of ``python -m workbook --help`` and of ``validate`` (every catalog loaded and validated
once, every shipped scenario), the median of three runs each in a fresh interpreter.
Target (issue 30): ``--help`` < 0.5 s of CPU. Usage: ``python benchmarks/bench_cli.py [--repeat 3]``."""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import figure  # noqa: E402

HELP_TARGET_S = 0.5


def cpu_s(args: list[str]) -> float:
    """CPU seconds of one ``python -m workbook <args>`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "workbook", *args], cwd=ROOT, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    ok = True
    for label, cmd, target in (("python -m workbook --help", ["--help"], HELP_TARGET_S),
                               ("python -m workbook validate", ["validate"], None)):
        times = [cpu_s(cmd) for _ in range(args.repeat)]
        print(f"{label}: {', '.join(f'{t:.2f}' for t in times)} s CPU")
        ok &= figure(f"{label}, CPU (median of {args.repeat})", statistics.median(times), "s", target)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
