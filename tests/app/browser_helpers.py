"""Drive the Voila app and JupyterLab in Debian's chromium through Playwright (tests and benchmark).

Facts these helpers rely on (../shared/notes/stack-pitfalls.md): ``playwright install`` cannot
download browsers here, so Debian's ``/usr/bin/chromium`` is launched through ``executable_path``;
a server is ready when its TCP port accepts a connection (``GET /`` would start a kernel); servers
are stopped by the PID we started (SIGTERM: Voila shuts its kernels down); the page must ask for
nothing outside this machine, so every non-loopback request is blocked and recorded.
"""
from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("WORKBOOK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                 "--disable-dev-shm-usage"]
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
VIEWPORT = {"width": 1400, "height": 2200}   # tall: Voila scrolls an inner container, full-page shots cut it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout_s: float = 60.0, log: Path | None = None) -> None:
    """Return once 127.0.0.1:port accepts a TCP connection; raise if the process dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with status {proc.returncode} before listening on port {port}"
                               + (f"; log:\n{log.read_text()[-3000:]}" if log and log.exists() else ""))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout_s:.0f} s")


def start_process(cmd: list[str], port: int, log: Path, cwd: Path = ROOT, env: dict | None = None,
                  timeout_s: float = 60.0) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    fh = open(log, "wb")
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env or dict(os.environ),
                            start_new_session=True)
    proc._log_handle = fh  # closed in stop_process
    try:
        wait_for_port(port, proc, timeout_s, log)
    except Exception:
        stop_process(proc)
        raise
    return proc


def http_request(port: int, path: str, method: str = "GET", headers: dict | None = None, timeout: float = 30):
    """(status, headers with lower-case names, body) of one plain-HTTP request to 127.0.0.1:port."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def server_kernels(pid: int) -> int:
    """Kernel processes started by the server ``pid`` (its children running ipykernel)."""
    n = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (proc / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        n += ppid == pid and b"ipykernel" in cmd
    return n


def wait_for_kernels(pid: int, at_most: int, timeout_s: float) -> int:
    """Wait until the server ``pid`` has at most ``at_most`` kernels (or time runs out); the count."""
    deadline = time.monotonic() + timeout_s
    while (n := server_kernels(pid)) > at_most and time.monotonic() < deadline:
        time.sleep(0.5)
    return n


def start_app(port: int, log: Path, extra: list[str] | None = None) -> subprocess.Popen:
    """``python -m workbook.app --port PORT`` (exactly what ``make app`` runs), ready to serve."""
    return start_process([sys.executable, "-m", "workbook.app", "--port", str(port), *(extra or [])], port, log)


def token_app(tmp_path_factory, tag: str, token: str, cull_s: float, max_kernels: int):
    """A module fixture's body: the app on a free loopback port with ``token``, culling unused kernels
    after ``cull_s`` and at most ``max_kernels`` visitors; yields (port, process, log), then stops it."""
    port = free_port()
    log = tmp_path_factory.mktemp(tag) / "voila.log"
    proc = start_process([sys.executable, "-m", "workbook.app", "--port", str(port), "--cull-unused-s", str(cull_s),
                          "--max-kernels", str(max_kernels)], port, log, env={**os.environ, "WORKBOOK_APP_TOKEN": token})
    yield port, proc, log
    stop_process(proc)


def stop_process(proc: subprocess.Popen, timeout_s: float = 15.0) -> None:
    """SIGTERM the process we started (by its PID), then SIGKILL it if it does not exit."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)
    fh = getattr(proc, "_log_handle", None)
    if fh:
        fh.close()


def launch_chromium(playwright):
    return launch_chromium_type(playwright.chromium)


@contextmanager
def own_browser(browser):
    """A second chromium process, launched like ``browser`` (through its Playwright), closed on the way
    out: for a test whose page may take its browser down (JupyterLab's page once crashed chromium in
    `make test`, and every later test of the module sharing that browser errored with 'Target page,
    context or browser has been closed'); the shared browser is then untouched."""
    b = launch_chromium_type(browser.browser_type)
    try:
        yield b
    finally:
        if b.is_connected():
            b.close()


def launch_chromium_type(browser_type):
    """Chromium with the environment of this process less the font configuration tests/conftest.py
    gives vl-convert (a folder of no fonts: the browser would draw no text)."""
    from workbook.paths import VL_CONVERT_FONTS_CONF

    env = {k: v for k, v in os.environ.items() if not (k == "FONTCONFIG_FILE" and v == str(VL_CONVERT_FONTS_CONF))}
    return browser_type.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS, env=env)


@dataclass
class PageGuard:
    """Blocks and records every request that would leave the machine; records console errors."""

    external: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def attach(self, page) -> "PageGuard":
        page.route("**/*", self._route)
        page.on("console", lambda m: self.console_errors.append(f"{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        return self

    def _route(self, route):
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about") or (parts.hostname or "") in LOOPBACK_HOSTS:
            route.continue_()
        else:
            self.external.append(url)
            route.abort()


def open_page(browser, url: str, guard: PageGuard | None = None):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    guard = (guard or PageGuard()).attach(page)
    return page, guard


def status_version(page) -> int:
    """The app's update counter (``.wb-status[data-version]``), 0 before the first render."""
    v = page.evaluate("() => { const e = document.querySelector('.wb-status'); "
                      "return e ? Number(e.dataset.version) : 0 }")
    return int(v or 0)


def wait_for_update(page, after: int, timeout_ms: float = 30000) -> int:
    """Wait until the app has finished an update newer than ``after``; return the new counter."""
    page.wait_for_function(
        "(n) => { const e = document.querySelector('.wb-status'); return e && Number(e.dataset.version) > n }",
        arg=after, timeout=timeout_ms)
    return status_version(page)
