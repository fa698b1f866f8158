"""The worker pool that keeps sync env code off the event loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from openenv_train.server._threads import ThreadRunner

pytestmark = pytest.mark.timeout(60)

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


async def test_runs_off_the_loop_thread_with_context_and_errors():
    runner = ThreadRunner()
    loop_thread = threading.get_ident()
    VAR.set("from-caller")
    assert await runner.run(threading.get_ident) != loop_thread
    assert await runner.run(VAR.get) == "from-caller"
    assert await runner.run(lambda a, b=0: a + b, 2, b=3) == 5
    with pytest.raises(KeyError):
        await runner.run({}.__getitem__, "missing")

    def exits() -> None:
        raise SystemExit(3)

    with pytest.raises(RuntimeError, match="SystemExit"):
        await runner.run(exits)
    runner.shutdown()


async def test_a_stuck_worker_gets_help():
    runner = ThreadRunner(max_workers=8)
    gate = threading.Event()
    stuck = asyncio.ensure_future(runner.run(gate.wait, 30))
    await asyncio.sleep(0)
    # The only worker is now blocked; these must still complete (a helper is recruited).
    results = await asyncio.wait_for(asyncio.gather(*(runner.run(abs, -i) for i in range(20))), 10)
    assert results == list(range(20))
    assert not stuck.done()
    assert runner.workers >= 2
    gate.set()
    assert await asyncio.wait_for(stuck, 10) is True
    runner.shutdown()


async def test_max_workers_bounds_the_pool():
    with pytest.raises(ValueError, match="max_workers"):
        ThreadRunner(max_workers=0)
    runner = ThreadRunner(max_workers=2)
    gate = threading.Event()
    blocked = [asyncio.ensure_future(runner.run(gate.wait, 30)) for _ in range(4)]
    await asyncio.sleep(0.3)
    assert runner.workers == 2
    gate.set()
    assert await asyncio.wait_for(asyncio.gather(*blocked), 10) == [True] * 4
    runner.shutdown()
