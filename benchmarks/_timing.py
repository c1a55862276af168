"""Shared by the benchmark scripts: the median wall time of repeated calls."""
import statistics
import time


def median_time(fn, repeat):
    """Median seconds of ``repeat`` calls of ``fn`` and the last call's result."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out
