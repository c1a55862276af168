"""How estimate's cost grows with the offerings catalog: 1x, 5x and 10x today's rows.

The shipped ``data/`` folder is copied into a temporary folder and every ``offerings.csv`` row is
replicated into k-1 synthetic regions (``<region>~2``, ... with their ``regions.csv`` and
``grid_carbon.csv`` rows copied, so each copy prices, locates and emits like its original); the copy
is read through the same loader (``catalog.load``, the workbook pointed at the folder), and
``data/`` itself is never written. For each scale and shipped scenario a fresh interpreter (as one CLI call) times,
in CPU seconds (``time.process_time``, comparable on a shared machine): the catalog load and
validation, and ``estimate --json`` in-process (``analysis.analyse`` + ``summary_json`` + the JSON
dump, catalogs already loaded). Offers that share a chip, shape and network share one performance
plan, so the cost must grow far slower than the rows (issue 30, item 2).
At the first scale each scenario runs ``--runs`` times (default 3) and the median counts (the
machine is shared); at the others once. Usage: ``python benchmarks/bench_scale.py [--scales 1 5 10]
[--scenarios a b] [--runs 3]``.
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import figure  # noqa: E402

TARGET_S = 1.0   # estimate --json, in-process, per scenario (issue 30)

CHILD = r"""
import json, sys, time
from pathlib import Path
import workbook.paths as paths
paths.DATA_DIR = Path(sys.argv[1]); paths.SCENARIO_DIR = paths.DATA_DIR / "scenarios"
from workbook import analysis, catalog
from workbook.scenario import load_scenario
t0 = time.process_time()
for name in catalog.SCHEMAS:
    catalog.load(name)
t1 = time.process_time()
out = {"rows": len(catalog.load("offerings")), "load_s": t1 - t0, "estimate_s": {}}
for name in sys.argv[2:]:
    t = time.process_time()
    json.dumps(analysis.summary_json(analysis.analyse(load_scenario(name))))
    out["estimate_s"][name] = time.process_time() - t
print(json.dumps(out))
"""


def _rows(path: Path) -> tuple[list[str], list[dict]]:
    with path.open(newline="", encoding="utf-8") as f:
        r = csv.DictReader(f)
        return list(r.fieldnames or []), list(r)


def _write(path: Path, fields: list[str], rows: list[dict]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def replicate(src: Path, dst: Path, k: int) -> None:
    """``src`` (a data folder) copied to ``dst`` with offerings (and their regions' rows) k times."""
    shutil.copytree(src, dst)
    for name, key in (("offerings", "offering"), ("regions", None), ("grid_carbon", None)):
        path = dst / f"{name}.csv"
        if not path.exists():
            continue
        fields, rows = _rows(path)
        out = list(rows)
        for i in range(2, k + 1):
            for r in rows:
                c = dict(r, region=f"{r['region']}~{i}")
                if key:
                    c[key] = f"{r[key]}~{i}"
                out.append(c)
        _write(path, fields, out)


def measure(data: Path, scenarios: list[str]) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, str(data), *scenarios], cwd=ROOT, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    sys.path.insert(0, str(ROOT))
    from workbook.scenario import scenario_names

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", type=int, nargs="*", default=[1, 5, 10])
    ap.add_argument("--scenarios", nargs="*", default=None)
    ap.add_argument("--runs", type=int, default=3, help="processes per scenario at the first scale (median); 1 at the others")
    args = ap.parse_args(argv)
    names = args.scenarios or scenario_names()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        for k in args.scales:
            data = Path(tmp) / f"x{k}"
            replicate(ROOT / "data", data, k)
            runs = args.runs if k == args.scales[0] else 1   # the target's scale: the median of several runs
            per = {name: [measure(data, [name]) for _ in range(runs)] for name in names}  # one process each, as the CLI runs
            results[k] = {"rows": per[names[0]][0]["rows"], "load_s": min(p["load_s"] for ps in per.values() for p in ps),
                          "estimate_s": {n: statistics.median(p["estimate_s"][n] for p in ps) for n, ps in per.items()}}
    print(f"{'scenario':24s}" + "".join(f"{f'{k}x CPU s':>11s}" for k in args.scales)
          + f"{'growth':>8s}")
    print(f"{'offerings rows':24s}" + "".join(f"{results[k]['rows']:11d}" for k in args.scales))
    print(f"{'catalog load':24s}" + "".join(f"{results[k]['load_s']:11.2f}" for k in args.scales))
    worst, missed = 0.0, 0
    for name in names:
        ts = [results[k]["estimate_s"][name] for k in args.scales]
        growth = ts[-1] / ts[0] if ts[0] else float("nan")
        worst = max(worst, growth)
        missed += ts[0] > TARGET_S
        print(f"{name:24s}" + "".join(f"{t:11.2f}" for t in ts) + f"{growth:7.1f}x")
    k0, k1 = args.scales[0], args.scales[-1]
    print(f"rows grew {results[k1]['rows'] / results[k0]['rows']:.1f}x, estimate CPU at most {worst:.1f}x; "
          f"target estimate --json < {TARGET_S:g} s CPU at {k0}x: {'met' if not missed else f'{missed} miss(es)'}")
    worst1 = max(results[k0]["estimate_s"].values())
    full = " (the shipped catalog)" if k0 == 1 else ""
    figure(f"estimate --json in-process, worst shipped scenario, {results[k0]['rows']} offerings rows{full}, "
           f"median of {args.runs}", worst1, "s", TARGET_S)
    for k in args.scales[1:]:
        figure(f"estimate --json, worst scenario, {k}x rows ({results[k]['rows']})",
               max(results[k]["estimate_s"].values()), "s")
    figure(f"estimate CPU growth at {k1 // k0}x rows (worst scenario)", worst, "x")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
