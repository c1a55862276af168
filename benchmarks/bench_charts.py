"""What the charts of a report cost: every chart the report notebooks 01-05 draw, for every shipped
scenario, built in-process as the notebooks build them (the ``workbook.views.charts`` calls of their
cells) and drawn to SVG as a report kernel draws them (``views.charts.base.static_bundle``, with
vl-convert measuring text with its vendored font). CPU seconds (``process_time``), median of
``--repeat`` rounds; the drawn-chart memo is emptied before each scenario and each report gets an
empty drawn-chart cache (``svg_cache_folder``), so every report pays for its own charts, as the first
report on a machine does ("cold"); then each report is drawn again with its cache filled ("warm": a
report run again). The converter's start-up (once per process) is measured apart.

Per chart, the stages: ``build`` (the chart function: frame work and the Altair objects), ``spec``
(``to_dict`` without validation, the data cut to the columns read, the memo key: timed again apart)
and ``draw`` (the rest of ``static_bundle``: vl-convert), with the SVG's marks counted (``<path``/``<text`` elements) for the profile.

The chart inputs (the analysis frames) are computed once and may be kept in a folder
(``--inputs DIR``: pickled, read back on later runs) so that another checkout's chart code can be
timed on the very same frames (``PYTHONPATH=/other/checkout python benchmarks/bench_charts.py
--inputs DIR``). Usage: ``python benchmarks/bench_charts.py [--repeat 3] [--inputs DIR] [--json FILE]``."""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import figure  # noqa: E402


def scenarios() -> list[str]:
    return sorted(p.stem for p in (ROOT / "data" / "scenarios").glob("*.yaml"))


def chart_inputs(scenario: str) -> list[tuple[str, str, tuple]]:
    """(notebook cell, chart function ``module.name``, arguments) for each chart the report notebooks
    01-05 draw for ``scenario``, with the arguments their cells compute."""
    import workbook as wb

    s = wb.load_scenario(scenario)
    a = wb.analyse(s)
    t = wb.model.tables
    curves = t.scenario_curves(s)
    return [
        ("01 memory_breakdown", "perf.memory_breakdown", (t.memory_breakdown(s),)),
        ("01 roofline", "perf.roofline", (t.roofline_lines(s), t.operating_points(s))),
        ("02 comparison", "perf.comparison", (a.perf,)),
        ("02 roofline", "perf.roofline", (t.roofline_lines(s), t.operating_points(s, a.perf))),
        ("02 calibration", "perf.calibration", (wb.calibrate.runs.calibration_table(),)),
        ("03 scaling_curves", "scaling.scaling_curves", (curves,)),
        ("03 mfu_curves", "scaling.mfu_curves", (curves,)),
        ("03 step_breakdown", "scaling.step_breakdown", (t.breakdown(curves),)),
        ("04 pricing_models", "cost.pricing_models", (a.priced,)),
        ("04 interactivity", "scaling.interactivity", (t.interactivity_curve(s, a.offers),)),
        ("04 breakeven_chart", "cost.breakeven_chart", (wb.cost.breakeven_curves(s, a.priced),)),
        ("04 mc_distribution", "cost.mc_distribution", (wb.cost.mc_histogram(s, a.priced, mc=a.mc),)),
        ("04 tornado_chart", "cost.tornado_chart", (wb.cost.tornado(s, a.priced),)),
        ("05 pareto_chart", "cost.pareto_chart", (a.recommendation.ranking,)),
        ("05 offers", "cost.offers", (a.offers,)),
    ]


def load_inputs(names: list[str], folder: Path | None) -> dict[str, bytes]:
    """Each scenario's chart inputs, pickled (read from ``folder`` when there, written there when not)."""
    out = {}
    for name in names:
        path = folder / f"{name}.pkl" if folder else None
        if path and path.exists():
            out[name] = path.read_bytes()
            continue
        out[name] = pickle.dumps(chart_inputs(name))
        if path:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_bytes(out[name])
    return out


def draw_scenario(blob: bytes, cache_dir: Path | None = None) -> dict[str, dict]:
    """Draw one scenario's charts from fresh copies of their inputs, with an empty in-process memo and
    ``cache_dir`` as the drawn-chart cache between processes (``svg_cache_folder``); per chart the CPU
    seconds of each stage and the SVG's element counts."""
    from workbook.views import charts
    from workbook.views.charts import base

    base._SVG_MEMO.clear()
    if cache_dir is not None:
        os.environ["WORKBOOK_CACHE_DIR"] = str(cache_dir)
    out = {}
    for cell, fn_name, args in pickle.loads(blob):
        module, name = fn_name.split(".")
        fn = getattr(getattr(charts, module), name)
        t0 = time.process_time()
        chart = fn(*args)
        t1 = time.process_time()
        svg = base.static_bundle(chart)["image/svg+xml"]
        t2 = time.process_time()
        spec = base.slim_spec(chart.to_dict(validate=False, context={"pre_transform": False}))
        json.dumps(spec, sort_keys=True, default=str)
        t3 = time.process_time()
        out[cell] = {"build": t1 - t0, "spec": t3 - t2, "draw": max(0.0, (t2 - t1) - (t3 - t2)), "total": t2 - t0,
                     "paths": svg.count("<path"), "texts": svg.count("<text"),
                     "svg_sha256": hashlib.sha256(svg.encode()).hexdigest()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--inputs", type=Path, default=None, help="folder to keep the pickled chart inputs in")
    ap.add_argument("--json", type=Path, default=None, help="write every round's per-chart figures here")
    ap.add_argument("--scenario", action="append", default=None)
    args = ap.parse_args(argv)
    names = args.scenario or scenarios()
    blobs = load_inputs(names, args.inputs)

    from workbook.views.charts import converter

    converter.vendored_fonts_only()
    t = time.process_time()
    converter.converter().vegalite_to_svg({"data": {"values": [{"a": 1}]}, "mark": "point",
                                           "encoding": {"x": {"field": "a", "type": "quantitative"}}})
    start_s = time.process_time() - t
    rounds, warm = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            # cold: each report with an empty cache, as the first report on a machine; warm: the same
            # report again in a new process (the cache filled, the in-process memo empty)
            rounds.append({name: draw_scenario(blobs[name], Path(tmp) / f"{r}-{name}") for name in names})
            warm.append({name: draw_scenario(blobs[name], Path(tmp) / f"{r}-{name}") for name in names})
    if args.json:
        args.json.write_text(json.dumps({"converter_start_s": start_s, "rounds": rounds, "warm": warm}))
    print(f"converter start-up: {start_s:.2f} s CPU (once per process)")
    cells = list(rounds[0][names[0]])
    print(f"{'scenario':22} " + " ".join(f"{c.split()[0]}{c.split()[1][:9]:>10}" for c in cells) + "   total")
    totals = {}
    for name in names:
        med = {c: statistics.median(r[name][c]["total"] for r in rounds) for c in cells}
        totals[name] = statistics.median(sum(r[name][c]["total"] for c in cells) for r in rounds)
        print(f"{name:22} " + " ".join(f"{med[c]:12.3f}" for c in cells) + f"  {totals[name]:6.2f}")
    print("per chart, all scenarios (median round): build / spec / draw s, <path / <text elements")
    for c in cells:
        stage = {k: statistics.median(sum(r[n][c][k] for n in names) for r in rounds) for k in ("build", "spec", "draw")}
        marks = [(rounds[0][n][c]["paths"], rounds[0][n][c]["texts"]) for n in names]
        print(f"  {c:22} {stage['build']:6.3f} {stage['spec']:6.3f} {stage['draw']:6.3f}   "
              f"paths {min(m[0] for m in marks)}-{max(m[0] for m in marks)}, texts {min(m[1] for m in marks)}-{max(m[1] for m in marks)}")
    all_s = statistics.median(sum(sum(r[n][c]["total"] for c in cells) for n in names) for r in rounds)
    print(f"every chart of the {len(names)} reports: {all_s:.2f} s CPU (median of {args.repeat}), "
          f"+ {start_s:.2f} s converter start-up per process")
    warm_s = statistics.median(sum(sum(r[n][c]["total"] for c in cells) for n in names) for r in warm)
    print(f"the same reports again, their drawings cached on disk: {warm_s:.2f} s CPU (median of {args.repeat})")
    figure(f"charts of the {len(names)} shipped reports, CPU (median of {args.repeat})", round(all_s, 3), "s")
    figure(f"charts of the {len(names)} shipped reports drawn again (cached), CPU", round(warm_s, 3), "s")
    if "chat-70b-realtime" in totals:
        figure("charts of one report (chat-70b-realtime), CPU", round(totals["chat-70b-realtime"], 3), "s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
