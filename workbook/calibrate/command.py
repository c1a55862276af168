"""The ``calibrate`` command: the performance model against the published runs (or the team's own),
per run, per kind and family, the held-out band coverage and the per-case table (``cases``);
``--write`` refits ``data/efficiency.csv`` first (``params.write_parameters``)."""
from __future__ import annotations

import sys

import pandas as pd

from .. import catalog
from . import cases, own
from .params import write_parameters
from .runs import calibration_table, coverage_summary, error_summary, summary_markdown


# --- command line -------------------------------------------------------------------------------------

def add_arguments(p) -> None:
    p.add_argument("--write", action="store_true", help="refit the parameters and write data/efficiency.csv first")
    p.add_argument("--markdown", action="store_true", help="print only the summary as a markdown table")
    p.add_argument("--csv", action="store_true", help="print the per-run table as CSV")
    p.add_argument("--params", action="store_true", help="print the fitted parameters (data/efficiency.csv)")
    p.add_argument("--runs", metavar="FILE", help="compare the model with the team's own runs (a measurements CSV) "
                                                  "instead of the published ones")


def run(args) -> int:
    if args.write:
        df = write_parameters()
        print(f"wrote data/efficiency.csv ({len(df)} parameters)", file=sys.stderr)
    if args.params:
        df = catalog.load("efficiency")[["parameter", "scope", "value", "unit", "n_runs"]]
        with pd.option_context("display.max_rows", None, "display.width", 200):
            print(df.to_string(index=False))
        return 0
    table = own.calibration_table(own.to_runs(own.read_measurements(args.runs))) if args.runs else calibration_table()
    summary = error_summary(table)
    if args.markdown:
        print(summary_markdown(summary))
        if not args.runs:
            print()
            print(cases.cases_markdown())
        return 0
    if args.csv:
        table.to_csv(sys.stdout, index=False)
        return 0
    view = table[["run", "family", "metric", "published_value", "published_metric", "value", "predicted", "error", "split"]].copy()
    view["error"] = (view["error"] * 100).round(1).astype(str) + "%"
    for c in ("value", "predicted"):
        view[c] = view[c].map(lambda v: f"{v:.4g}")
    view["published_metric"] = view["published_metric"].str.slice(0, 34)
    with pd.option_context("display.max_rows", None, "display.width", 250, "display.max_colwidth", 60):
        print(view.to_string(index=False))
        print()
        s = summary.copy()
        for c in ("median_abs_error", "median_abs_error_holdout"):
            s[c] = s[c].map(lambda v: "-" if pd.isna(v) else f"{v:.1%}")
        print(s.to_string(index=False))
        if "in_band" in table:
            print()
            print("P10-P90 band coverage of the held-out runs (a P10-P90 band should cover about 80%):")
            c = coverage_summary(table)
            c["band_coverage_holdout"] = c["band_coverage_holdout"].map(lambda v: "-" if pd.isna(v) else f"{v:.0%}")
            c["median_band_width"] = c["median_band_width"].map(lambda v: "-" if pd.isna(v) else f"{v:.2f}x")
            print(c.to_string(index=False))
        if not args.runs:
            print()
            print("Per case (the kinds of issue 15; calibrate.cases):")
            print(cases.cases_text())
    return 0
