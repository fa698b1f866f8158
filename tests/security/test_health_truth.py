"""``/health`` tells the truth (issue 35): it used to answer "healthy" while every step failed
(the server's ``RLIMIT_NPROC`` lowered to 1 by a run of its uid) or hung (the worker pool's watch
callback dead after a failed ``Thread.start()``). Each cause is made on purpose here."""

from __future__ import annotations

import asyncio
import resource
import threading
import time

import httpx
import pytest

from openenv_train.runtime import LocalProcessProvider
from openenv_train.server._threads import ThreadRunner
from openenv_train.server.self_check import SelfCheck

pytestmark = pytest.mark.timeout(120)


def _refusing_starts(monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
    real = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        if thread.name.startswith(prefix):
            raise RuntimeError("can't start new thread")
        real(thread)

    monkeypatch.setattr(threading.Thread, "start", start)


async def _until(check, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while (found := check()) is None:
        assert time.monotonic() < deadline, "no verdict within the bound"
        await asyncio.sleep(0.01)
    return found


async def test_a_wedged_pool_is_unhealthy() -> None:
    pool = ThreadRunner(max_workers=1, name="wedged", stall_s=0.01)
    check = SelfCheck(lambda: pool, stall_limit_s=0.2, probe_timeout_s=1.0)
    assert await check.reason() is None
    gate = threading.Event()
    stuck = asyncio.ensure_future(pool.run(gate.wait, 30))  # the one worker, for good
    waiting = asyncio.ensure_future(pool.run(bool))
    why = await _until(check.pool_reason)
    assert "taken no call" in why and await check.reason() == why
    gate.set()
    await asyncio.gather(stuck, waiting)
    assert await check.reason() is None
    pool.shutdown()


async def test_a_dead_watch_loop_is_unhealthy(monkeypatch: pytest.MonkeyPatch) -> None:
    _refusing_starts(monkeypatch, "no-threads")
    pool = ThreadRunner(max_workers=2, name="no-threads", stall_s=0.01)
    monkeypatch.setattr(pool, "_watch", lambda *args: None)  # the loop that recruits: gone
    check = SelfCheck(lambda: pool, stall_limit_s=0.2, probe_timeout_s=0.3)
    job = asyncio.ensure_future(pool.run(bool))
    why = await _until(check.pool_reason)
    assert "1 thread starts refused" in why or "thread starts refused" in why
    job.cancel()


async def test_the_probe_call_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing waits, yet no call can complete (no thread starts): the no-op probe times out."""
    _refusing_starts(monkeypatch, "probe-pool")
    pool = ThreadRunner(max_workers=2, name="probe-pool", stall_s=0.01)
    check = SelfCheck(lambda: pool, stall_limit_s=60, probe_timeout_s=0.3)
    why = await check.reason()
    assert why is not None and "no-op call" in why


def test_lowered_limits_make_a_served_env_unhealthy() -> None:
    """A process of the server's uid lowers its limits (what a run could do before the filter
    refused ``prlimit64`` on other pids): ``/health`` answers 503 with the limit named."""
    with LocalProcessProvider("echo_env.server.app:app", startup_timeout=120) as server:
        url, pid = server.base_url, server.pid
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
        before = resource.prlimit(pid, resource.RLIMIT_NPROC)
        resource.prlimit(pid, resource.RLIMIT_NPROC, (1, before[1]))  # soft: restorable
        try:
            answer = httpx.get(f"{url}/health", timeout=10)
            assert answer.status_code == 503, answer.text
            assert "RLIMIT_NPROC" in answer.json()["reason"]
        finally:
            resource.prlimit(pid, resource.RLIMIT_NPROC, before)
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200


def test_the_coding_env_self_test_fails_when_its_sandbox_cannot_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from coding_env import sandbox as sandbox_module
    from coding_env.server.environment import CodingEnvironment

    monkeypatch.setattr(CodingEnvironment, "_self_test", (float("-inf"), None))
    assert CodingEnvironment.check_ready() is None
    monkeypatch.setattr(CodingEnvironment, "_self_test", (float("-inf"), None))
    monkeypatch.setattr(sandbox_module, "build_filter", lambda pid, **_: b"\xff" * 8)
    why = CodingEnvironment.check_ready()
    assert why is not None and "self-test" in why
    assert CodingEnvironment.check_ready() == why  # the verdict stands for SELF_TEST_EVERY_S
