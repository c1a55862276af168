"""`make bench`: run every benchmark script in this folder, then print every figure against its
target, with the commit, in one table.

Each ``bench_*.py`` prints its own lines and, for each headline figure, a tagged line
(``_timing.figure``) that this runner gathers. A script that fails or crashes keeps the figures it
printed; its missing ones show as not measured. Before the first script and after the last, the
host's reference (``host_speed.py``: a fixed Python workload, no target) says how fast the shared
machine ran during the table. Usage: ``python benchmarks/run.py [bench_x ...]``."""
import json
import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
from _timing import FIGURE_TAG  # noqa: E402


def commit() -> str:
    r = subprocess.run(["git", "-C", str(here.parent), "describe", "--always", "--dirty"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def _fmt(v) -> str:
    return "-" if v is None else f"{v:,.3g}" if isinstance(v, float) else str(v)


def _host(when: str) -> tuple[str, dict]:
    """``host_speed``'s reference as a figure without a target (how fast the host runs Python now)."""
    from host_speed import RUNS, reference_s

    value = reference_s()
    print(f"== host reference {when}: {value:.3f} s CPU (median of {RUNS}; host_speed.py)", flush=True)
    return ("host", {"name": f"host reference {when}, fixed Python workload, CPU (median of {RUNS})",
                     "value": value, "unit": "s", "target": None, "met": None, "note": ""})


def main(argv) -> int:
    wanted = set(argv)
    scripts = [p for p in sorted(here.glob("bench_*.py")) if not wanted or p.stem in wanted]
    figures, failed = [], []
    figures.append(_host("at the start"))
    for script in scripts:
        print(f"== {script.name}", flush=True)
        proc = subprocess.Popen([sys.executable, str(script)], cwd=here.parent, stdout=subprocess.PIPE, text=True)
        for line in proc.stdout:
            if line.startswith(FIGURE_TAG):
                figures.append((script.stem, json.loads(line[len(FIGURE_TAG):])))
            else:
                print(line, end="", flush=True)
        if proc.wait() != 0:
            failed.append(script.name)
    figures.append(_host("at the end"))
    print(f"\n== every figure, commit {commit()}")
    rows = [("benchmark", "figure", "value", "target", "verdict")]
    for bench, f in figures:
        target = "-" if f["target"] is None else f"< {_fmt(f['target'])} {f['unit']}"
        verdict = {True: "met", False: "MISSED", None: "reported"}[f["met"]]
        if f["value"] is None:
            verdict = "NOT MEASURED"
        if f.get("note"):
            verdict += f" ({f['note']})"
        rows.append((bench, f["name"], f"{_fmt(f['value'])} {f['unit']}", target, verdict))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    if failed:   # a script's exit status is 1 when one of its targets is missed, or when it failed
        print(f"scripts that exited with status 1 (a target missed above, or a run that failed: a figure it "
              f"could not print is NOT MEASURED): {', '.join(failed)}")
    return 1 if failed or any(f["met"] is False for _, f in figures) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
