"""The app's server against the probes of issue 13: URL theme/template overrides (reflected XSS, CDN
templates, a template that never answers), foreign Host headers (DNS rebinding), routes without the
token (``/voila/query/<kernel-id>``), missing security headers, server paths in errors, kernels never
reclaimed, no cap on kernels, and a 60 s hang when kernels cannot start (no loopback).

The server tests start the launcher on a free loopback port with a token, a short culling time and a
cap of two visitors, talk plain HTTP to it and stop it by its PID; every request has a timeout. The
culling and the cap are observed on a server of their own (``test_app_kernel_cap.py``: no wait for
these tests' kernels to go first, and it runs beside this module on another test worker)."""
from __future__ import annotations

import http.client
import socket
import sys
import time
import uuid

import pytest

import browser_helpers as bh
from workbook import netcheck
from workbook.app import __main__ as launcher
from workbook.app import server

_request = bh.http_request

TOKEN = "s3cr3t-token-for-tests"
CULL_S = 25          # long enough that page loads in a row are all alive (a load takes 2-8 s alone, 10-12 s on a loaded 2-core machine, where 15 s let the first kernel be culled before the cap was reached)
MAX_KERNELS = 8      # room for every page this module loads: the cap itself is test_app_kernel_cap.py's (its own server)


# --- without a server -----------------------------------------------------------------------------

@pytest.mark.parametrize("host, ok", [
    ("127.0.0.1:8866", True), ("localhost:8866", True), ("[::1]:8866", True), ("127.0.0.2", True),
    ("LOCALHOST", True), ("evil.example", False), ("evil.example:8866", False), ("10.0.0.5:8866", False),
    ("", False), ("localhost.evil.example", False)])
def test_host_allowed_only_loopback_by_default(host, ok):
    assert server.host_allowed(host) is ok


def test_host_allowed_adds_configured_names():
    assert server.host_allowed("workbook.example.com:443", ["workbook.example.com"])
    assert not server.host_allowed("other.example.com", ["workbook.example.com"])
    assert server.host_allowed("anything", ["*"])


def test_voila_config_disables_url_overrides_and_culls_unused_kernels():
    c = launcher.voila_config(cull_unused_s=30, max_kernels=3, allowed_hosts=["a.example"])
    assert c.VoilaConfiguration.allow_template_override == "NO"
    assert c.VoilaConfiguration.allow_theme_override == "NO"
    assert c.MappingKernelManager.cull_idle_timeout == 30
    assert c.MappingKernelManager.cull_interval <= 15
    assert c.WorkbookVoila.max_kernels == 3 and c.WorkbookVoila.allowed_hosts == ["a.example"]
    # a closed page's kernel is culled even while it computes (an upload once held one 21 min)
    assert c.MappingKernelManager.cull_busy is True and c.MappingKernelManager.cull_connected is False


def test_request_info_route_is_not_served():
    from voila.request_info_handler import RequestInfoSocketHandler

    assert server.guarded(RequestInfoSocketHandler) is server.NotServed


def test_loopback_problem_is_none_here_and_a_sentence_when_bind_fails(monkeypatch):
    assert netcheck.loopback_problem() is None

    class Down(socket.socket):
        def bind(self, addr):
            raise OSError(99, "Cannot assign requested address")

    monkeypatch.setattr(netcheck.socket, "socket", Down)
    msg = netcheck.loopback_problem()
    assert "127.0.0.1" in msg and "Cannot assign requested address" in msg and "\n" not in msg


def test_launcher_exits_2_at_once_when_kernels_cannot_start(monkeypatch, capsys):
    monkeypatch.setattr(launcher, "loopback_problem", lambda: "cannot start a Jupyter kernel: lo is down")
    monkeypatch.setattr(launcher.WorkbookVoila, "launch_instance",
                        classmethod(lambda cls, **kw: pytest.fail("Voila must not start")))
    t0 = time.monotonic()
    assert launcher.main(["--port", "18999"]) == 2
    assert time.monotonic() - t0 < 2
    assert capsys.readouterr().err.strip() == "cannot start a Jupyter kernel: lo is down"


# --- against a running server ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def app(tmp_path_factory):
    yield from bh.token_app(tmp_path_factory, "voila-sec", TOKEN, CULL_S, MAX_KERNELS)


@pytest.mark.slow
def test_foreign_host_header_is_refused(app):
    port = app[0]
    assert _request(port, f"/?token={TOKEN}", headers={"Host": "evil.example"})[0] == 403
    assert _request(port, "/voila/static/voila.js", headers={"Host": f"rebind.evil.example:{port}"})[0] == 403
    assert _request(port, "/voila/static/voila.js", headers={"Host": f"localhost:{port}"})[0] == 200


@pytest.mark.slow
def test_every_route_needs_the_token(app):
    port = app[0]
    kid = str(uuid.uuid4())
    ws = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
          "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    for path, method, headers in [("/", "GET", {}), (f"/voila/query/{kid}", "GET", ws),
                                  (f"/api/kernels/{kid}/channels", "GET", ws), (f"/api/kernels/{kid}", "GET", {}),
                                  (f"/voila/api/shutdown/{kid}", "POST", {})]:
        status, _, body = _request(port, path, method, headers)
        assert status in (302, 403, 404), (path, status)
        assert TOKEN not in body
    # with the token the request-info socket is still not served: it replayed the query string
    assert _request(port, f"/voila/query/{kid}?token={TOKEN}", headers=ws)[0] == 404


@pytest.mark.slow
def test_theme_and_template_in_the_url_are_ignored(app):
    """Each request carries a script in ``theme`` and a template name: four page loads (each one a
    notebook run in a kernel), not five with the theme asked on its own."""
    port = app[0]
    xss = "%22%3E%3Cscript%3Ealert(1)%3C/script%3E"
    for i, template in enumerate(("lab", "classic", "reveal", "nonexistent")):
        t0 = time.monotonic()
        status, _, body = _request(port, f"/?token={TOKEN}&template={template}&theme={xss}", timeout=40)
        assert time.monotonic() - t0 < 30, template
        # the module's first page (the pre-started kernel) is served; 503 later only if a loaded
        # machine kept every earlier kernel
        assert status == 200 if i == 0 else status in (200, 503), (template, status)
        assert "<script>alert(1)" not in body and "alert(1)" not in body, template
        # the lab template's FontAwesome and the classic/reveal templates' jQuery come from CDNs
        assert "cdn.jsdelivr" not in body and "jquery" not in body.lower(), template
        if status == 200:   # the app's own template: the card's preview written as HTML
            assert '<div class="wbp-app wbp-preview">' in body, template


@pytest.fixture(scope="module")
def token_page(app):
    """One page load with the token, ``(status, headers with lower-case names, Set-Cookie values)``:
    shared by the cookie and header tests (a page load is a notebook run in a kernel). A page refused
    at the cap (503, no kernel started) sets no cookie: should the module's earlier pages hold every
    place, ask again each second until the culling frees one."""
    port = app[0]
    statuses = []
    deadline = time.monotonic() + 2 * CULL_S + 30
    while time.monotonic() < deadline:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=40)
        try:
            conn.request("GET", f"/?token={TOKEN}")
            r = conn.getresponse()
            r.read()
            cookies = r.headers.get_all("Set-Cookie") or []
            headers = {k.lower(): v for k, v in r.getheaders()}
        finally:
            conn.close()
        statuses.append(r.status)
        if cookies:
            break
        time.sleep(1.0)
    return statuses, headers, cookies


@pytest.mark.slow
def test_cookies_are_samesite_and_httponly(token_page):
    statuses, _, cookies = token_page
    assert cookies, f"the page sets its login and _xsrf cookies (answers: {statuses})"
    for c in cookies:
        flags = {f.strip().split("=")[0].lower(): f.strip() for f in c.split(";")[1:]}
        assert flags.get("samesite", "").lower() == "samesite=strict", c
        assert "secure" not in flags, c            # plain HTTP here; Secure only over TLS
        if not c.startswith("_xsrf="):              # the page's script reads _xsrf to send it back
            assert "httponly" in flags, c


@pytest.mark.slow
def test_security_headers_on_every_answer(app, token_page):
    port = app[0]
    for path in ("/", f"/?token={TOKEN}", "/voila/static/voila.js", "/voila/static/nope.js",
                 f"/voila/query/{uuid.uuid4()}"):
        # the page with the token: the cookie test's answer (one page load, one kernel, for both)
        headers = token_page[1] if path == f"/?token={TOKEN}" else _request(port, path)[1]
        csp = headers.get("content-security-policy", "")
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp, path
        assert "http" not in csp, path
        assert headers.get("x-content-type-options") == "nosniff", path


@pytest.mark.slow
def test_errors_name_no_server_path(app):
    port = app[0]
    leaks = [str(bh.ROOT), "site-packages", sys.prefix, "Traceback"]
    for path in ("/voila/static/nope.js", "/voila/static/../../../etc/passwd", "/voila/templates/x/../../y",
                 "/voila/labextensions/nope", "/voila/api/themes/nope", f"/voila/files/x?token={TOKEN}",
                 f"/api/kernels/{uuid.uuid4()}?token={TOKEN}", "/voila/static/%3Cscript%3E"):
        status, _, body = _request(port, path)
        for leak in leaks:
            assert leak not in body, (path, status, leak)
        assert "<script>" not in body


def test_a_pool_kernel_still_starting_is_not_counted_as_a_visitor():
    """The cap counts visitors' kernels: ready and starting pre-started kernels are the pool's (a
    starting one counted as a visitor's refused one visitor early in CI)."""
    import asyncio
    from types import SimpleNamespace

    from workbook.app.server import visitor_kernels

    async def run():
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        ready.set_result({"kernel_id": "pool-ready"})
        starting = loop.create_future()
        km = SimpleNamespace(_pools={"nb": [ready, starting]},
                             list_kernel_ids=lambda: ["pool-ready", "pool-starting", "visitor-1", "visitor-2"])
        n = visitor_kernels(km)
        starting.cancel()
        return n

    assert asyncio.run(run()) == 2
