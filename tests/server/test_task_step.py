"""``task_step`` leans on asyncio's private ``_enter_task``/``_leave_task``: fail loudly if an
interpreter changes them, rather than letting the ``/ws`` push path misbehave."""

from __future__ import annotations

import asyncio
import asyncio.tasks
import contextvars
import inspect

from server_helpers import until

from openenv_train.server.task_step import BUSY, first_step


def test_private_functions_exist_with_the_expected_signature():
    for name in ("_enter_task", "_leave_task"):
        fn = getattr(asyncio.tasks, name)
        assert list(inspect.signature(fn).parameters) == ["loop", "task"], name


VAR = contextvars.ContextVar("VAR", default="outside")


async def _probe(suspend: bool) -> tuple[asyncio.Task | None, str]:
    seen = asyncio.current_task(), VAR.get()
    if suspend:
        await asyncio.sleep(0)
    return seen


async def test_a_step_runs_as_the_task_in_its_context():
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    ctx.run(VAR.set, "inside")
    host = loop.create_task(asyncio.sleep(1))
    results: list = []

    def callback() -> None:  # a loop callback, like the protocol's data_received
        assert asyncio.current_task() is None
        results.append(first_step(loop, host, ctx, _probe(False)))
        coro = _probe(True)
        results.append(first_step(loop, host, ctx, coro))
        coro.close()
        results.append(asyncio.current_task())

    loop.call_soon(callback)
    await until(lambda: len(results) == 3, 10, "the loop callback to run")
    host.cancel()
    assert results[0] == (True, (host, "inside"))
    assert results[1][0] is False  # suspended at its first await
    assert results[2] is None  # left again: no task is current in the callback


async def test_inside_another_task_nothing_runs():
    loop = asyncio.get_running_loop()
    host = loop.create_task(asyncio.sleep(1))
    coro = _probe(False)
    assert first_step(loop, host, contextvars.copy_context(), coro) == (BUSY, None)
    coro.close()
    host.cancel()
