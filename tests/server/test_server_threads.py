"""The worker pool that keeps sync env code off the event loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest
from server_helpers import until

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
    await until(lambda: runner.workers == 1 and runner._taken == 1, 10, "a worker to take it")
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
    # both workers are stuck and two jobs have waited for 15 watchdog periods (0.02 s each):
    # every period would have recruited, were the pool not bounded
    await until(lambda: runner.stalled_s() >= 0.3, 10, "the jobs to wait on a stuck pool")
    assert runner.workers == 2
    gate.set()
    assert await asyncio.wait_for(asyncio.gather(*blocked), 10) == [True] * 4
    runner.shutdown()
