"""The pool's next kernel starts once the visitor's page has connected, not while it loads
(``workbook.app.server.CullingKernelManager``): which kernel starts waits, and what ends the wait.

The kernel start itself is replaced by a recorder (no process is started); the waits are driven by
calling the manager's hooks in a chosen order, so the tests check the order of events, not durations."""
from __future__ import annotations

import asyncio

import pytest
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager

from workbook.app import __main__ as launcher
from workbook.app.server import CullingKernelManager

REFILL_ENV = {"VOILA_PREHEAT": "True", "VOILA_REQUEST_URL": "http://127.0.0.1:8866/"}   # after a visit
FIRST_FILL_ENV = {"VOILA_PREHEAT": "True"}                                               # at server start
VISITOR_ENV = {"VOILA_PREHEAT": "False", "VOILA_REQUEST_URL": "http://127.0.0.1:8866/"}  # pool empty


@pytest.fixture
def events(monkeypatch):
    log: list[str] = []

    async def fake_start(self, *args, **kwargs):
        log.append("start")
        return "kernel-id"

    monkeypatch.setattr(AsyncMappingKernelManager, "start_kernel", fake_start)
    return log


def manager(**kw) -> CullingKernelManager:
    return CullingKernelManager(refill_grace_s=kw.get("grace", 0.0), refill_max_wait_s=kw.get("max_wait", 60.0))


async def settle(turns: int = 20) -> None:
    for _ in range(turns):
        await asyncio.sleep(0)


def test_a_refill_starts_after_the_visitors_page_connects(events):
    async def run():
        km = manager()
        km.notify_connect("earlier")           # a connection before the refill asked does not count
        task = asyncio.ensure_future(km.start_kernel(kernel_name="python3", env=dict(REFILL_ENV)))
        await settle()
        assert events == [] and not task.done()
        events.append("connect")
        km.notify_connect("the visitor's kernel")
        assert await task == "kernel-id"

    asyncio.run(run())
    assert events == ["connect", "start"]


def test_a_refill_starts_at_once_for_the_next_visitor(events):
    async def run():
        km = manager()
        tasks = [asyncio.ensure_future(km.start_kernel(env=dict(REFILL_ENV))) for _ in range(2)]
        await settle()
        assert events == []
        events.append("page")
        km.page_requested()
        await asyncio.gather(*tasks)

    asyncio.run(run())
    assert events == ["page", "start", "start"]     # every waiting refill: they share one wait


def test_a_refill_without_a_page_starts_after_the_longest_wait(events):
    async def run():
        km = manager(max_wait=0.05)
        waited = await km.wait_for_page()
        await km.start_kernel(env=dict(REFILL_ENV))
        return waited

    assert asyncio.run(run()) >= 0.05
    assert events == ["start"]


@pytest.mark.parametrize("env", [FIRST_FILL_ENV, VISITOR_ENV, None])
def test_other_kernels_start_without_waiting(events, env):
    async def run():
        km = manager()
        task = asyncio.ensure_future(km.start_kernel(**({"env": dict(env)} if env else {})))
        await settle()
        assert task.done(), "started only after a page event"

    asyncio.run(run())
    assert events == ["start"]


def test_the_launcher_lets_the_manager_time_the_refill():
    c = launcher.voila_config()
    assert c.VoilaKernelManager.fill_delay == 0
    assert c.VoilaConfiguration.multi_kernel_manager_class == "workbook.app.server.CullingKernelManager"


def test_a_waiting_refill_gives_up_when_the_server_stops(events):
    async def run():
        km = manager()
        task = asyncio.ensure_future(km.start_kernel(env=dict(REFILL_ENV)))
        await settle()
        await km.shutdown_all()
        with pytest.raises(RuntimeError, match="shutting down"):
            await task

    asyncio.run(run())
    assert events == []
