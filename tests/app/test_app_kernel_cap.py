"""The app's kernels are culled and capped (issue 13: kernels never reclaimed, no cap on kernels).

A server of its own (the launcher on a free loopback port with a token, a short culling time and a
cap of two visitors), so the test starts with no visitor's kernel to wait out and runs beside
``test_app_security.py`` on another test worker; it talks plain HTTP and stops the server by its PID."""
from __future__ import annotations

import time

import pytest

import browser_helpers as bh

TOKEN = "s3cr3t-token-for-tests"
CULL_S = 25          # long enough that page loads in a row are all alive (a load takes 2-8 s alone, 10-12 s on a loaded 2-core machine, where 15 s let the first kernel be culled before the cap was reached)
MAX_KERNELS = 2


@pytest.fixture(scope="module")
def capped_app(tmp_path_factory):
    yield from bh.token_app(tmp_path_factory, "voila-cap", TOKEN, CULL_S, MAX_KERNELS)


@pytest.mark.slow
def test_kernels_are_culled_and_capped(capped_app):
    port, proc, _ = capped_app
    assert bh.wait_for_kernels(proc.pid, 1, CULL_S + 30) <= 1        # at most the pre-started kernel
    t0 = time.monotonic()
    answers = [bh.http_request(port, f"/?token={TOKEN}", timeout=40) for _ in range(MAX_KERNELS + 2)]
    elapsed = time.monotonic() - t0
    statuses = [a[0] for a in answers]
    if 503 not in statuses and elapsed > CULL_S:
        # the first pages' kernels (never connected) were culled before the last request: on a loaded
        # machine the cap cannot be observed with serial page loads, which is not a failure of the cap
        pytest.skip(f"{len(answers)} page loads took {elapsed:.0f} s, past the {CULL_S} s cull window")
    assert statuses[:MAX_KERNELS] == [200] * MAX_KERNELS and 503 in statuses, statuses
    status, headers, body = answers[statuses.index(503)]
    assert status == 503 and "busy" in body and "try again" in body
    assert "content-security-policy" in headers
    assert bh.wait_for_kernels(proc.pid, 1, CULL_S + 30) <= 1, "kernels of pages nobody opened are still alive"
    assert bh.http_request(port, f"/?token={TOKEN}", timeout=40)[0] == 200
