"""How fast the stakeholder app is in a real browser (Debian's chromium through Playwright).

Prints two figures against the issue's targets:
* first render: from ``page.goto`` until the recommendation card is on screen, with the kernel
  pre-started (how ``make app`` runs: ``preheat_kernel=True``), and once without pre-start (cold);
* update: from a control change (utilization slider, one arrow key) until the app has redrawn the
  recommendation, the ranking and the chart (its update counter ``.wb-status[data-version]`` moved).

* memory: the resident memory (RSS, from ``/proc``) of each kernel the app holds after the visits
  (one per open page plus the pre-started one).

Targets (issue 30): first render < 2 s, update < 0.3 s; < 300 MB per kernel. Exit status 1 when a
target is missed. A visit or a change that times out (120 s) is recorded as a miss and the other
figures are still measured and printed.
Usage: ``python benchmarks/bench_app.py [--visits 3] [--changes 6]``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "app"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import browser_helpers as bh  # noqa: E402
from _timing import figure  # noqa: E402

FIRST_RENDER_TARGET_S = 2.0
UPDATE_TARGET_S = 0.3
VISIT_TIMEOUT_MS = 120000
KERNEL_RSS_TARGET_MB = 300.0
READY = ".wb-status[data-version]"


def wait_for_log(log: Path, text: str, count: int = 1, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists() and log.read_text(errors="replace").count(text) >= count:
            return
        time.sleep(0.2)
    raise TimeoutError(f"{log}: {text!r} not seen {count} time(s) in {timeout_s:.0f} s")


def _children(pid: int) -> list[int]:
    """Every descendant process of ``pid`` (Linux ``/proc``)."""
    kids: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kids.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def kernel_rss_mb(server_pid: int) -> list[float]:
    """Resident memory of each ipykernel process under the app's server, in MB."""
    out = []
    for pid in _children(server_pid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if b"ipykernel" in cmd:
            kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
            out.append(kb / 1024.0)
    return out


def first_render_s(browser, url: str) -> float:
    page, guard = bh.open_page(browser, url)
    t0 = time.perf_counter()
    try:
        page.goto(url, timeout=VISIT_TIMEOUT_MS)
        page.wait_for_selector(READY, timeout=VISIT_TIMEOUT_MS)
    except Exception as e:  # Playwright's TimeoutError and a dropped connection: a miss, not a crash
        print(f"  visit of {url} did not finish: {e.__class__.__name__}: {str(e).splitlines()[0]}")
        page.context.close()
        return None
    elapsed = time.perf_counter() - t0
    if guard.external:
        raise RuntimeError(f"the page asked for something outside the machine: {guard.external}")
    page.context.close()
    return elapsed


def update_times_s(browser, url: str, changes: int) -> list[float]:
    page, _ = bh.open_page(browser, url)
    try:
        page.goto(url, timeout=VISIT_TIMEOUT_MS)
        page.wait_for_selector(READY, timeout=VISIT_TIMEOUT_MS)
    except Exception as e:
        print(f"  the page for the updates did not load: {e.__class__.__name__}: {str(e).splitlines()[0]}")
        page.context.close()
        return []
    handle = page.locator(".wb-utilization .noUi-handle")
    out = []
    for i in range(changes):
        handle.focus()
        before = bh.status_version(page)
        t0 = time.perf_counter()
        page.keyboard.press("ArrowLeft" if i % 2 == 0 else "ArrowRight")
        try:
            bh.wait_for_update(page, before)
        except Exception as e:
            print(f"  change {i + 1} was not redrawn: {e.__class__.__name__}: {str(e).splitlines()[0]}")
            out.append(None)
            continue
        out.append(time.perf_counter() - t0)
    page.context.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--visits", type=int, default=3, help="first renders to time with a pre-started kernel")
    ap.add_argument("--changes", type=int, default=6, help="control changes to time")
    ap.add_argument("--settle", type=float, default=8.0,
                    help="seconds to let the next pre-started kernel run the notebook between visits")
    args = ap.parse_args(argv)
    if not bh.CHROMIUM.exists():
        print(f"bench_app: {bh.CHROMIUM} not found (apt-get install -y chromium); nothing measured")
        return 1
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="bench_app_"))
    ok = True
    with sync_playwright() as p:
        browser = bh.launch_chromium(p)
        # pre-started kernel (what `make app` runs)
        port = bh.free_port()
        log = tmp / "voila.log"
        proc = bh.start_app(port, log)
        url = f"http://127.0.0.1:{port}/"
        warm, updates, rss = [], [], []
        try:
            wait_for_log(log, "is filled with 1 kernel")
            for i in range(args.visits):
                time.sleep(args.settle)   # the pool's kernel has run the notebook, as for a visitor who comes later
                warm.append(first_render_s(browser, url))
            updates = update_times_s(browser, url, args.changes)
            rss = kernel_rss_mb(proc.pid)
        except TimeoutError as e:  # the pre-started kernel never came: every figure of this part is a miss
            print(f"  {e}")
            warm, updates = warm + [None], updates or [None]
        finally:
            bh.stop_process(proc)
        # cold: no pre-started kernel
        port = bh.free_port()
        proc = bh.start_app(port, tmp / "voila-cold.log", ["--no-preheat"])
        try:
            cold = first_render_s(browser, f"http://127.0.0.1:{port}/")
        finally:
            bh.stop_process(proc)
        browser.close()

    def med(xs):
        got = [x for x in xs if x is not None]
        return statistics.median(got) if got and len(got) == len(xs) else None   # a miss spoils the median

    def show(xs):
        return ", ".join("miss" if x is None else f"{x:.2f}" for x in xs) or "none"

    print(f"app first render, pre-started kernel: {show(warm)} s over {len(warm)} visits")
    ok &= figure("app first render, pre-started kernel (median)", med(warm), "s", FIRST_RENDER_TARGET_S,
                 "" if med(warm) is not None else "a visit timed out")
    print(f"app first render, no pre-started kernel (cold): {show([cold])} s (for comparison)")
    figure("app first render, no pre-started kernel", cold, "s", None, "" if cold is not None else "timed out")
    print(f"app update after a control change (utilization slider): {show(updates)} s")
    ok &= figure("app update after a control (median)", med(updates), "s", UPDATE_TARGET_S,
                 "" if med(updates) is not None else "a change was not redrawn")
    if rss:
        print(f"app kernel memory: {len(rss)} kernel(s), RSS {', '.join(f'{r:.0f}' for r in rss)} MB")
        ok &= figure("app kernel memory (largest RSS)", max(rss), "MB", KERNEL_RSS_TARGET_MB)
    else:
        print("app kernel memory: no kernel process found under the server (not measured)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
