"""vl-convert, as every process here uses it: configured once before its first drawing (``converter``)
and, in report and test processes, laying text out in its own font (``vendored_fonts_only``)."""
from __future__ import annotations

import functools
import os

from ... import paths


@functools.cache
def converter():
    """vl-convert, configured once per process before its first drawing: no data or image read from a
    URL or a relative path. vl-convert 2.0 reads ``https:`` and ``http:`` URLs and resolves relative
    paths against the vega-datasets CDN by default (``vl_convert.get_config()``); every chart here
    carries its data inline, and reports, the app and CI must never reach the network, so a spec that
    names a URL fails with ``VLC_ACCESS_DENIED`` instead. Imported on first use: ``estimate`` never
    pays for it."""
    import vl_convert

    if not hasattr(vl_convert, "configure"):   # 1.x: no process-wide settings (and Vega 6.2, other layouts)
        raise RuntimeError(f"vl-convert-python {vl_convert.__version__} is installed; the charts need the version "
                           "pyproject.toml pins (2.0.0rc7): reinstall the project (`make report` or "
                           "`pip install -e .`)")
    vl_convert.configure(allowed_base_urls=[], base_url=False)
    return vl_convert


@functools.cache
def long_lived_converter():
    """``converter()`` for a process that stays up and draws now and then (the app's kernels): V8
    collects its garbage after each drawing and gives the memory back (vl-convert's
    ``gc_after_conversion``). Why: vl-convert 2.0 holds about 45 MB more than 1.9 in an app kernel
    (``benchmarks/bench_app.py``, largest kernel: 310 MB with 2.0, 264 MB with 1.9, 281 MB with this;
    target < 300 MB); a V8 heap cap of 64 MB gave 295 MB. The price is CPU per drawing (about 60 ms
    more: an update of the app to a value not analysed before 0.42-0.51 s of CPU instead of 0.35-0.44 s,
    3 December 2026), which reports, short-lived and measured by their CPU, do not pay."""
    vlc = converter()
    vlc.configure(gc_after_conversion=True)
    return vlc


# Read by vl-convert's font database: no system font, its own Liberation Sans (``vendored_fonts_only``).
FONTS_CONF = paths.VL_CONVERT_FONTS_CONF


def vendored_font() -> bool:
    """Whether this process points vl-convert at its vendored font only (``vendored_fonts_only``)."""
    return os.environ.get("FONTCONFIG_FILE") == str(FONTS_CONF)


def vendored_fonts_only() -> bool:
    """Have vl-convert measure and name text with its own in-memory Liberation Sans rather than the
    system's fonts, by pointing its font database (fontdb, which reads fontconfig's ``FONTCONFIG_FILE``)
    at a font folder that does not exist. Call before the process draws its first chart; does
    nothing when ``FONTCONFIG_FILE`` is set already. Returns whether it was set.

    Why: a chart's layout then depends on nothing but its spec and vl-convert, not on the fonts a
    machine has (which is what lets ``svg_cache_folder`` key a drawing by its spec). The charts' font
    is ``sans-serif``, which vl-convert resolves to Arial, Helvetica or Liberation Sans, whichever is
    installed (Liberation Sans is metric-compatible with Arial); with this setting every family falls
    back to the vendored Liberation Sans (checked with vl-convert 2.0.0rc7: "DejaVu Sans", "serif" and
    "monospace" all measure as Liberation Sans, where the system's fonts give other widths). The
    labels use two non-ASCII characters (the middle dot and the ellipsis), both in Liberation Sans.
    (With vl-convert 1.x it also saved time: fontdb re-opened a system font's file for each text it
    measured, 75,000 opens for four drawings of the offers chart; 2.0 measures with a cached canvas.)"""
    if os.environ.get("FONTCONFIG_FILE"):
        return False
    os.environ["FONTCONFIG_FILE"] = str(FONTS_CONF)
    return True
