"""Shared by the benchmark scripts: the median time of repeated calls, and the figure lines that
``run.py`` gathers into one table (``figure``)."""
import json
import statistics
import time

FIGURE_TAG = "@@figure "


def median_time(fn, repeat, clock=time.perf_counter):
    """Median seconds of ``repeat`` calls of ``fn`` (``clock``: wall by default, ``time.process_time``
    for CPU) and the last call's result."""
    times, out = [], None
    for _ in range(repeat):
        t = clock()
        out = fn()
        times.append(clock() - t)
    return statistics.median(times), out


def figure(name: str, value, unit: str, target=None, note: str = "") -> bool:
    """Print one measured figure for ``run.py``'s table: ``value`` against ``target`` (an upper bound,
    in ``unit``; None: reported only). A figure that could not be measured is ``None`` (a miss).
    Returns whether the target is met (True when there is none)."""
    met = None if target is None else (value is not None and value < target)
    print(FIGURE_TAG + json.dumps({"name": name, "value": value, "unit": unit, "target": target, "met": met,
                                   "note": note}), flush=True)
    return met is not False
