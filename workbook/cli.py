"""Command line: ``python -m workbook <command>``.

Expected mistakes (bad scenario, unknown id, missing file) print one line per problem naming file
and field, and exit with status 2, never a traceback. Anything else (a bug) prints one line with
the exception and how to report it, and exits with status 3; ``--debug`` shows the traceback.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

from .errors import InputError
from .inputs import excerpt_text


class _Lazy:
    """A module imported on first attribute use: ``--help`` and ``validate`` load neither pandas'
    display stack nor Altair/Jupyter, and each verb pays only for the modules it calls."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)


pd = _Lazy("pandas")
analysis, catalog, terms = _Lazy("workbook.analysis"), _Lazy("workbook.catalog"), _Lazy("workbook.terms")
layouts, text = _Lazy("workbook.calibrate.layouts"), _Lazy("workbook.views.text")
_scenario = _Lazy("workbook.scenario")
buyer, _yamlsafe = _Lazy("workbook.views.buyer"), _Lazy("workbook.yamlsafe")


# Sub-commands that live in their own modules: name -> (module, help). Each module defines
# ``add_arguments(parser)`` and ``run(args) -> int``; it is imported only when its verb runs.
_COMMANDS = {
    "calibrate": ("workbook.calibrate.command", "compare the performance model with published runs"),
    "report": ("workbook.report.command", "render decision reports (HTML) for scenarios with Papermill"),
    "prices": ("workbook.pricesync", "import or refresh price catalogs (SkyPilot vms.csv, gpuhunt, Azure Retail Prices API) into offerings"),
    "diff": ("workbook.diff", "what changed between two summary.json files or report folders"),
    "plan": ("workbook.plan.command", "plan a fleet over months for a portfolio of workloads (commitments and bursts)"),
}


def _validate(args) -> int:
    """The catalogs (every ``data/*.csv`` through ``catalog.load``), then each scenario file."""
    files = args.files or [str(_scenario.resolve_path(n)) for n in _scenario.scenario_names()]
    bad = 0
    for name in catalog.SCHEMAS:
        try:
            catalog.load(name)
        except InputError as e:
            bad += 1
            for line in e.problems:
                print(line, file=sys.stderr)
    if bad:
        return 2
    for f in files:
        try:
            s = _scenario.load_scenario(f)
            print(f"{f}: ok ({s.name}: {s.workload.task})")
        except InputError as e:
            bad += 1
            for line in e.problems:
                print(line, file=sys.stderr)
    return 2 if bad else 0


def _catalog(args) -> int:
    df = catalog.load(args.name)
    cols = {
        "accelerators": ["accelerator", "vendor", "family", "memory_bytes", "memory_bytes_per_s",
                         "peak_bf16_flops_per_s", "peak_fp8_flops_per_s", "chips_per_node", "as_of"],
        "offerings": ["offering", "provider", "instance", "accelerator", "chips_per_instance",
                      "on_demand_usd_per_hour", "spot_usd_per_hour", "commit_1y_usd_per_hour",
                      "commit_3y_usd_per_hour", "as_of"],
        "models": ["model", "display_name", "params_published", "layers", "hidden", "ffn_hidden", "heads",
                   "kv_heads", "vocab", "experts", "experts_per_token"],
        "software": ["platform", "capability", "support", "as_of"],
    }[args.name]
    if args.csv:
        df.to_csv(sys.stdout, index=False)
        return 0
    view = df[cols].copy()
    for c in view.columns:
        if c.endswith("_bytes") or c.endswith("_bytes_per_s"):
            view[c.replace("_bytes", "_gb")] = (view.pop(c) / 1e9).round(1)
        elif c.endswith("_flops_per_s"):
            view[c.replace("_flops_per_s", "_tflops")] = (view.pop(c) / 1e12).round(0)
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_columns", None):
        print(view.to_string(index=False, na_rep="-"))
    return 0


def _schema(args) -> int:
    print(json.dumps(_scenario.scenario_schema(), indent=2))
    return 0


TRAINING_TABLE = ["step_time_s", "tokens_per_s", "mfu", "training_days", "chip_hours",
                  "tp", "pp", "dp", "ep", "cp", "zero", "recompute", "micro_batch"]
SERVING_TABLE = ["ttft_ms", "ttft_ms_p99", "tpot_ms", "output_tokens_per_s", "max_batch", "replicas", "tp", "layout", "meets_slo"]


def _estimate_table(result: dict) -> str:
    """``estimate``'s human-readable output: the ranking of the best offers (offer, price basis and age,
    cost, time, verdict) and whether the winner is a tie, one row per accelerator, then the recommendation."""
    training = result["task"] != "inference"
    keys = ["accelerator", "chips", "fits"] + (TRAINING_TABLE if training else SERVING_TABLE) + ["reason"]
    df = pd.DataFrame(result["options"])
    df = df[[k for k in keys if k in df.columns]]
    lines = [f"{result['scenario']}: {result['title']}", ""] + _ranking_lines(result) + [
        "Each accelerator at its best layout:"]
    with pd.option_context("display.width", 200, "display.max_columns", None, "display.float_format", "{:,.3g}".format):
        lines.append(df.to_string(index=False, na_rep="-"))
    lines += layouts.comparison_lines(result.get("published_layouts") or [])
    label = result.get("estimate_label")
    if label == terms.GENERIC_ESTIMATE_LABEL:
        lines.append(f"(generic model: every figure above is {label}: the efficiency is fitted on published "
                     "ResNet-50 runs, not on this model; read times and costs as lower bounds)")
    elif label:
        lines.append(f"(generic model, {label}: efficiency and fixed step time fitted on the published MLPerf "
                     "runs of data/reference_runs.csv; other chips and batches are extrapolated, see the band)")
    lines += ["", text.recommendation_text(result.get("recommendation") or {})]
    return "\n".join(lines)


def _ranking_lines(result: dict) -> list[str]:
    """The compact ranking (``views.buyer.ranking_text``) and the tie sentence, for ``estimate``."""
    lines = ["Best offers (price: basis, age; cost: point estimate):", buyer.ranking_text(result)]
    tie = buyer.tie_text(result)
    return lines + ([tie] if tie else []) + [""]


# --- --set KEY=VALUE: change a scenario for one run -------------------------------------------------

def _add_set_argument(parser) -> None:
    parser.add_argument("--set", action="append", dest="sets", default=[], metavar="KEY=VALUE",
                        help="change one scenario key for this run, e.g. workload.requests_per_s=40 (repeatable; "
                             "the value is read as YAML)")


def _parse_sets(items: list[str]) -> dict:
    """``["workload.requests_per_s=40", ...]`` as dotted-key overrides, each value read as YAML."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not all(key.split(".")):
            raise InputError(f"--set {item!r}: expected KEY=VALUE with a dotted scenario key, e.g. "
                             "workload.requests_per_s=40")
        try:
            out[key] = _yamlsafe.read_yaml(value) if value.strip() else None
        except Exception as e:  # yaml.YAMLError and the bounded reader's refusals
            raise InputError(f"--set {key}: cannot read {value!r} as a value ({e.__class__.__name__})") from None
    return out


def _scenario_with_sets(name: str, items: list[str]):
    """The scenario ``name`` with the ``--set`` overrides applied and re-validated; its title says what changed."""
    s = _scenario.load_scenario(name)
    changes = _parse_sets(items)
    if not changes:
        return s
    changed = _scenario.with_overrides(s, **changes)
    note = ", ".join(f"{k}={v}" for k, v in changes.items())
    return changed.model_copy(update={"title": f"{changed.title or changed.name} (with {note})"})


def _report_with_sets(args) -> int:
    """``report --set``: each scenario with the overrides is written to a stable temporary YAML file
    (one folder per output folder, so a later run with other overrides replaces the same report) and
    rendered from there; the report's title names the overrides."""
    report = importlib.import_module("workbook.report.command")
    if not args.sets:
        return report.run(args)
    folder = Path(tempfile.gettempdir()) / "workbook-set" / hashlib.sha256(
        str(Path(args.out).resolve()).encode()).hexdigest()[:12]
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for name in args.scenarios or _scenario.scenario_names():
        s = _scenario_with_sets(name, args.sets)
        path = folder / f"{s.name}.yaml"
        path.write_text(importlib.import_module("yaml").safe_dump(s.model_dump(mode="json", exclude_none=True),
                                                                  sort_keys=False))
        files.append(str(path))
    args.scenarios = files
    return report.run(args)


def _estimate(args) -> int:
    result = analysis.summary_json(analysis.analyse(_scenario_with_sets(args.scenario, args.sets)))
    if args.json:
        print(_json_indented(result))
    else:
        print(_estimate_table(result))
    # 0: a recommendation; 1: valid, but no option passes the hard constraints (docs/reference/command-line.md)
    return 0 if (result.get("recommendation") or {}).get("accelerator") else 1


def _json_indented(result) -> str:
    """``json.dumps(result, indent=2)``: the same text, through ``jsontext.dumps_indented``
    (the C encoder for the flat containers: about half the time of the pure-Python indenting encoder
    for an estimate's 3 MB); a result it refuses (NaN, which it does not allow) is written by
    ``json.dumps`` as before."""
    try:
        return importlib.import_module("workbook.jsontext").dumps_indented(result, indent=2)
    except ValueError:
        return json.dumps(result, indent=2)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every verb; ``only`` = the one verb whose module-level sub-command is built (the others list
    their help only, without importing their modules); None builds them all."""
    p = argparse.ArgumentParser(prog="python -m workbook", description=__doc__.splitlines()[0],
                                epilog="--debug (anywhere on the line): show the traceback of an unexpected error")
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="validate scenario files (default: every shipped scenario)")
    v.add_argument("files", nargs="*")
    v.set_defaults(func=_validate)
    c = sub.add_parser("catalog", help="print a catalog as a readable table")
    c.add_argument("name", nargs="?", default="accelerators", choices=["accelerators", "offerings", "models", "software"])
    c.add_argument("--csv", action="store_true", help="print every column as CSV")
    c.set_defaults(func=_catalog)
    e = sub.add_parser("estimate", help="estimate time, throughput, cost and the recommendation for a scenario")
    e.add_argument("scenario", help="a scenario name (data/scenarios/NAME.yaml) or a YAML path")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    _add_set_argument(e)
    e.set_defaults(func=_estimate)
    s = sub.add_parser("schema", help="print the scenario file's JSON schema")
    s.set_defaults(func=_schema)
    for name, (module, help_) in _COMMANDS.items():
        sp = sub.add_parser(name, help=help_)
        if only is None or name == only:  # the other verbs' modules are not imported
            mod = importlib.import_module(module)
            mod.add_arguments(sp)
            sp.set_defaults(func=mod.run)
            if name == "report":
                _add_set_argument(sp)
                sp.set_defaults(func=_report_with_sets)
    return p


def _verb(argv: list[str]) -> str | None:
    """The sub-command ``argv`` names (its first word that is not an option), else None."""
    return next((a for a in argv if not a.startswith("-")), None)


BUG_HINT = ("this is a bug in the workbook, not in your input: please report it with the command and its "
            "input files (rerun with --debug for the traceback)")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    verb = _verb(argv)
    args = build_parser(only=verb if verb in _COMMANDS else "").parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as e:
        for line in e.problems:
            print(line, file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        if debug:
            raise
        print("error: out of memory (an input asks for more than this machine holds; "
              f"{BUG_HINT})", file=sys.stderr)
        return 3
    except Exception as e:  # noqa: BLE001 - the top level: any other failure is a bug, said in one line
        if debug:
            raise
        print(f"error: {type(e).__name__}: {excerpt_text(str(e).splitlines()[0] if str(e) else '')} ({BUG_HINT})",
              file=sys.stderr)
        return 3


# The verbs whose process ``__main__`` ends without the interpreter's teardown (``exit_now``).
EXIT_NOW_VERBS = ("report",)


def exit_now(code: int) -> None:
    """End this process with ``code`` at once, skipping the interpreter's teardown, when that is safe:
    for ``python -m workbook`` only (``__main__``, after ``main`` returned: never when the package is
    used as a library, as the tests' in-process ``main`` is); returns (the caller then exits as usual)
    when it is not.

    A report process holds pandas, IPython, Altair, nbconvert, vl-convert and a scenario's analysis;
    after its last line the interpreter spent about 0.3 s (one report, one core, an idle machine; up to
    1 s under load) tearing them down: the IPython shell's ``atexit`` reset with a full ``gc.collect()``
    (0.05-0.15 s), then the final full collections over the whole heap and the modules' deallocation
    (``gc_collect_main`` in a native profile). Here, in the order of ``Py_FinalizeEx``: no other
    non-daemon thread may be running (else it returns: the normal exit joins it); stdout and stderr are
    flushed (an error, such as a closed pipe, returns: the normal exit reports it as before); every
    object is moved to the permanent generation (``gc.freeze``), so that the collections the ``atexit``
    handlers start skip the heap; the ``atexit`` handlers all run (multiprocessing's: the semaphores'
    finalizers and its temporary folder; IPython's: its tempfiles; logging's flush; weakref
    finalizers, such as a TemporaryDirectory's removal); both streams are flushed again, and the
    process ends with ``os._exit(code)`` (120 when that last flush fails, as Python's own exit).
    It also returns under a profiler, debugger or coverage tool (``sys.getprofile``/``sys.gettrace``
    set: ``python -m pyinstrument -m workbook report``, ``python -m cProfile``), which writes its
    results only after the module returns. Every file of a report is written and closed, the pool shut down (its forkserver ends when this
    process's end closes its pipe) and the lock released before ``main`` returns."""
    import atexit
    import gc
    import threading

    if sys.getprofile() is not None or sys.gettrace() is not None:
        return   # a profiler, debugger or coverage tool wraps the run and writes its results after it
    main_thread = threading.main_thread()
    if threading.current_thread() is not main_thread or any(
            t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    gc.freeze()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        code = 120
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
