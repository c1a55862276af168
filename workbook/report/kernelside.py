"""What the report runner runs in the shell that executes the notebooks, before and between them: the
batch shell of the worker (``inprocess``) or, with the kernel engine, inside the batch kernel.

- ``prepare()``: once, when the kernel starts: a larger first-generation threshold for the garbage
  collector. A notebook of the report allocates millions of short-lived containers (DataFrames,
  chart specs); with CPython's default threshold (700) the collector ran about 360 times per
  report, 0.4-0.6 s of CPU, measured; at 20,000 about 10 times, 0.1 s. Objects are freed as
  before (reference counting); only cycles wait a little longer.
- ``reset_namespace()``: what ``%reset -f`` does (``InteractiveShell.reset``: the user namespace,
  the output cache, the aliases; here in a new history session) without its two full ``gc.collect()`` calls,
  which cost 0.3-0.4 s of CPU per notebook in a kernel holding pandas and Altair (measured: 1.4 s
  of a five-notebook report). Garbage is still collected by the collector's normal passes.
- Charts (``prepare``): vl-convert started in a thread (``warm_converter``); an Altair chart shown by a cell is drawn by ``views.charts.base.static_bundle``
  (the same SVG, without validating the spec a second time, memoised across the scenarios of a
  worker), and vl-convert measures text with its own font rather than the system's
  (``vendored_fonts_only``: the layout depends on no installed font). Every
  report notebook draws, so importing Altair here costs nothing extra.
"""
from __future__ import annotations

import gc
import threading

import altair as alt

from ..views.charts.base import static_bundle
from ..views.charts.converter import converter, vendored_fonts_only

GC_THRESHOLD_0 = 20_000


def _shell(ip):
    if ip is None:
        from IPython import get_ipython

        ip = get_ipython()
    return ip


def prepare(ip=None) -> None:
    """Tune this batch kernel (``ip``: its shell, by default the running one): the garbage collector
    and how charts are drawn (see the module docstring)."""
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD_0, gen1, gen2)
    vendored_fonts_only()
    threading.Thread(target=warm_converter, daemon=True, name="vl-convert-warm-up").start()
    ip = _shell(ip)
    if ip is not None:
        ip.display_formatter.mimebundle_formatter.for_type(alt.TopLevelMixin, static_bundle)


def warm_converter() -> None:
    """Start vl-convert's worker (its JavaScript engine, with Vega and Vega-Lite) now, in a thread
    while the first notebook computes its analysis, so that on two cores the start-up no longer delays
    the first chart. vl-convert 2.0's own ``warm_up_workers``: 0.19 s of CPU for the start and the first
    chart, where drawing a one-point chart to warm it (this function's way with vl-convert 1.x) took
    0.26 s; a whole report 0.97x (median of 6 interleaved pairs, one core, 3 December 2026)."""
    try:
        converter().warm_up_workers()
    except Exception:  # noqa: BLE001 - no converter: the first chart says so, as before
        pass


def reset_namespace(ip=None) -> None:
    """``%reset -f`` without its full collections, in a new history session: the next cell is
    numbered 1 again, and IPython's history database, which refuses a (session, line) pair twice,
    no longer prints "ERROR! Session/line number was not unique in database" into a cell's output
    (it did, now and then, into a report: the runner used to set the count back to 1 within the
    same session)."""
    ip = _shell(ip)
    collect = gc.collect
    gc.collect = lambda generation=2: 0
    try:
        ip.reset(new_session=True)
    finally:
        gc.collect = collect
