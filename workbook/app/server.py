"""The app's Voila server, hardened: every route checks the Host header, sends security headers and
answers errors with a bare page; the page route refuses visitors beyond a kernel cap; kernels no
page uses are culled. ``python -m workbook.app`` (``app/__main__.py``) launches ``WorkbookVoila``.

Why each guard (the probes of issue 13):

* **Host header** against loopback names (``127.0.0.0/8``, ``::1``, ``localhost``) plus the names
  given with ``--allow-host``: a page on another site that re-points its DNS name at 127.0.0.1
  (DNS rebinding) sends its own name as Host and is refused with 403. Voila itself sets
  ``allow_remote_access=True`` and checks nothing; its static and query handlers are not even
  Jupyter handlers, so the check is a mixin put on every handler class.
* **Security headers** on every answer: a Content-Security-Policy that allows only this origin
  (``default-src 'self'``, ``frame-ancestors 'none'``, ``object-src 'none'``, ``base-uri 'self'``),
  ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY``, ``Referrer-Policy: no-referrer``.
  Voila's pages need inline scripts and styles (its templates have no nonces), hence
  ``'unsafe-inline'``/``'unsafe-eval'`` for scripts: the policy stops loading from or sending to
  other origins, the escaping and the fixed template/theme stop injection.
* **Errors** are ``<code>: <standard reason>`` and nothing else: no exception text, so no server path.
* ``/voila/query/<kernel-id>`` (Voila's request-info socket, which needs no token and replays the
  visitor's query string, token included) is not served: the app's notebook never asks for it.
* **Kernel cap**: the page route answers 503 with a sentence when ``max_kernels`` visitors' kernels
  are alive (each costs about 250 MB).
"""
from __future__ import annotations

import asyncio
import html
import ipaddress
import re
import time
from datetime import timedelta

import tornado.web
from jupyter_core.utils import ensure_async
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from jupyter_server._tz import utcnow
from tornado.httputil import responses
from traitlets import Float, Int, List, Unicode
from voila.app import Voila
from voila.request_info_handler import RequestInfoSocketHandler
from voila.tornado.handler import TornadoVoilaHandler

CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
       "base-uri 'self'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
LOOPBACK_NAMES = ("localhost",)
MAX_WEBSOCKET_MESSAGE_BYTES = 128 * 2 ** 20   # the largest upload refused in words (base64 of ~90 MB)
FULL_PAGE = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>The app is busy</title></head><body>"
             "<h1>The app is busy</h1><p>It is already serving {n} visitors, its limit (each visitor "
             "has a Python process of its own). Close an open page or try again in a few minutes.</p>"
             "</body></html>")


def host_allowed(host_header: str, allowed: list[str] | tuple[str, ...] = ()) -> bool:
    """Is ``host_header`` (``name[:port]``) a loopback address, ``localhost`` or one of ``allowed``
    (``*`` allows any)? Same rule as jupyter_server's ``check_host``, plus the configured names."""
    if "*" in allowed:
        return True
    match = re.match(r"^(.*?)(:\d+)?$", host_header or "")
    host = (match.group(1) if match else "").lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return ipaddress.ip_address(host).is_loopback or host in allowed
    except ValueError:
        return bool(host) and (host in LOOPBACK_NAMES or host in [a.lower() for a in allowed])


class Guard:
    """Mixin put first on every handler class the app serves (see the module docstring)."""

    def set_default_headers(self) -> None:
        super().set_default_headers()
        for name, value in SECURITY_HEADERS.items():
            self.set_header(name, value)

    def set_cookie(self, name, value, *args, **kwargs):
        """Every cookie ``SameSite=Strict``, ``HttpOnly`` (but ``_xsrf``, which the page's script
        reads to send back) and ``Secure`` when the request came over TLS."""
        kwargs.setdefault("samesite", "Strict")
        if name != "_xsrf":
            kwargs["httponly"] = True
        if self.request.protocol == "https":
            kwargs["secure"] = True
        return super().set_cookie(name, value, *args, **kwargs)

    def prepare(self, *args, **kwargs):
        if not host_allowed(self.request.host, self.settings.get("workbook_allowed_hosts", ())):
            raise tornado.web.HTTPError(403)
        return super().prepare(*args, **kwargs)

    def write_error(self, status_code: int, **kwargs) -> None:
        reason = html.escape(responses.get(status_code, "Error"))
        self.set_header("Content-Type", "text/html; charset=UTF-8")
        self.finish(f"<!DOCTYPE html><html><head><title>{status_code}: {reason}</title></head>"
                    f"<body><h1>{status_code}: {reason}</h1></body></html>")


class CappedPage:
    """Mixin on the page route: 503 with a sentence once ``workbook_max_kernels`` kernels serve pages;
    each request first tells the kernel manager that a visitor asks for a page (a refill of the pool
    that waits for the previous visitor's page starts now: ``CullingKernelManager``)."""

    async def prepare(self, *args, **kwargs):
        if self.request.method == "GET" and hasattr(self.kernel_manager, "page_requested"):
            self.kernel_manager.page_requested()
        cap = self.settings.get("workbook_max_kernels", 0)
        if cap and self.request.method == "GET" and visitor_kernels(self.kernel_manager) >= cap:
            self.set_status(503)
            self.set_header("Retry-After", "60")
            self.finish(FULL_PAGE.format(n=cap))
            return
        return await ensure_async(super().prepare(*args, **kwargs))


class NotServed(Guard, tornado.web.RequestHandler):
    """Voila's ``/voila/query/<kernel-id>``: 404, token or not (see the module docstring)."""

    def prepare(self, *args, **kwargs):
        super().prepare(*args, **kwargs)
        raise tornado.web.HTTPError(404)


def visitor_kernels(kernel_manager) -> int:
    """Kernels alive that serve a visitor: all of them but the pre-started ones of the pool, ready or
    still starting. A starting pool kernel's id is not known until its task finishes, so each pending
    task is subtracted from the count (at worst, for the few seconds before a starting kernel is
    registered, one visitor more than the cap is let in; never one fewer)."""
    ready, pending = set(), 0
    for pool in getattr(kernel_manager, "_pools", {}).values():
        for task in pool:
            if not task.done():
                pending += 1
            elif not task.cancelled() and task.exception() is None:
                ready.add(task.result().get("kernel_id"))
    return max(0, len(set(kernel_manager.list_kernel_ids()) - ready) - pending)


def guarded(cls: type) -> type:
    """``cls`` with the ``Guard`` mixin first (and ``CappedPage`` on the page handler)."""
    if cls is RequestInfoSocketHandler:
        return NotServed
    bases = (Guard, CappedPage, cls) if issubclass(cls, TornadoVoilaHandler) else (Guard, cls)
    return type(f"Guarded{cls.__name__}", bases, {})


class CullingKernelManager(AsyncMappingKernelManager):
    """Jupyter's culler (``cull_idle_timeout``: kernels no page is connected to) plus a second timeout
    for kernels whose page is still open but idle (``connected_idle_timeout``, 0 = never).

    It also starts the pool's next kernel after the visitor's page has drawn, not while it loads. When
    a visitor takes the pre-started kernel, Voila starts the next one at once (``fill_delay``) and runs
    the notebook in it: a second of process start-up, then the imports and the first analysis, a core
    busy for several seconds. On two cores that ran beside the browser's first render (Voila's
    JavaScript, the widgets) and the server. Here a refill (a pool kernel started with the visitor's
    ``VOILA_REQUEST_URL``; the first fill at server start has none) waits until a page connects its
    kernel socket (the visitor's page has loaded its JavaScript and is fetching the widgets), then
    ``refill_grace_s`` more; it starts at once when another visitor asks for a page meanwhile (that
    visitor waits for it), and after ``refill_max_wait_s`` at most (a request that opens no page)."""

    connected_idle_timeout = Float(0, config=True, help="seconds an open page may stay idle (0: forever)")
    refill_grace_s = Float(1.5, config=True,
                           help="seconds between a page connecting to its kernel and the pool's next kernel starting")
    refill_max_wait_s = Float(10.0, config=True,
                              help="longest wait of the pool's next kernel for the visitor's page to connect")

    def __init__(self, **kwargs):
        self._page_news = None    # the future a waiting refill awaits: True a page connected, False a new visitor
        self._closing = False     # shutdown_all has begun
        super().__init__(**kwargs)

    def notify_connect(self, kernel_id):
        super().notify_connect(kernel_id)
        self._tell_refill(True)

    def page_requested(self) -> None:
        """Another visitor asks for a page (``CappedPage``): a waiting refill starts now, as that
        visitor waits for it."""
        self._tell_refill(False)

    def _tell_refill(self, connected: bool) -> None:
        if self._page_news is not None and not self._page_news.done():
            self._page_news.set_result(connected)

    async def start_kernel(self, *args, **kwargs):
        env = kwargs.get("env") or {}
        if env.get("VOILA_PREHEAT") == "True" and env.get("VOILA_REQUEST_URL"):
            await self.wait_for_page()
            if self._closing:
                raise RuntimeError("the server is shutting down: the pool is not refilled")
        return await super().start_kernel(*args, **kwargs)

    async def shutdown_all(self, *args, **kwargs):
        """A refill still waiting for a page gives up (Voila's shutdown awaits the pool's tasks)."""
        self._closing = True
        self._tell_refill(False)
        return await ensure_async(super().shutdown_all(*args, **kwargs))

    async def wait_for_page(self) -> float:
        """Wait for the next page connection plus ``refill_grace_s``, for the next page request, or
        ``refill_max_wait_s`` in all; the seconds waited."""
        t0 = time.monotonic()
        if self._page_news is None or self._page_news.done():     # refills waiting at once share one
            self._page_news = asyncio.get_running_loop().create_future()
        try:
            connected = await asyncio.wait_for(asyncio.shield(self._page_news), self.refill_max_wait_s)
        except asyncio.TimeoutError:
            connected = False
        if connected:
            await asyncio.sleep(self.refill_grace_s)
        return time.monotonic() - t0

    async def cull_kernel_if_idle(self, kernel_id):
        kernel = self._kernels.get(kernel_id)
        if kernel is None:
            return None
        if self.connected_idle_timeout and hasattr(kernel, "last_activity") \
                and getattr(kernel, "execution_state", None) != "busy":
            if utcnow() - kernel.last_activity > timedelta(seconds=self.connected_idle_timeout):
                self.log.warning("Culling kernel %s: its page was idle %.0f s", kernel_id, self.connected_idle_timeout)
                return await ensure_async(self.shutdown_kernel(kernel_id))
        return await super().cull_kernel_if_idle(kernel_id)


class WorkbookVoila(Voila):
    """Voila with the guards above on every route."""

    allowed_hosts = List(Unicode(), config=True, help="Host names served besides loopback ('*': any)")
    max_kernels = Int(8, config=True, help="visitors' kernels alive at once (0: no cap)")

    def init_settings(self) -> dict:
        settings = super().init_settings()
        settings["allow_remote_access"] = "*" in self.allowed_hosts
        settings["local_hostnames"] = [*LOOPBACK_NAMES, *self.allowed_hosts]
        settings["workbook_allowed_hosts"] = tuple(h.lower() for h in self.allowed_hosts)
        settings["workbook_max_kernels"] = self.max_kernels
        # an upload bigger than the app takes must reach the kernel, which refuses it in words;
        # tornado's default (10 MiB) dropped the page's connection instead, and later uploads with it
        settings["websocket_max_message_size"] = MAX_WEBSOCKET_MESSAGE_BYTES
        return settings

    def init_handlers(self) -> list:
        handlers = []
        for spec in super().init_handlers():
            pattern, cls, *rest = spec
            handlers.append((pattern, guarded(cls), *rest))
        return handlers
