"""LoopThread: the one background event loop (sync clients, rollout functions, async GRPO)."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest

from openenv_train.client.sync import LoopThread


def test_run_waits_refuses_its_own_thread_and_cancels_when_the_wait_ends_early() -> None:
    loop = LoopThread(name="test-loop")
    try:

        async def add(a: int, b: int) -> int:
            await asyncio.sleep(0)
            return a + b

        assert loop.run(add(2, 3)) == 5

        async def nested() -> None:
            loop.run(add(1, 1))  # would wait on the loop it blocks

        with pytest.raises(RuntimeError, match="inside the event loop it waits on"):
            loop.run(nested())

        cancelled = asyncio.Event()

        async def slow() -> None:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        with pytest.raises(concurrent.futures.TimeoutError):
            loop.run(slow(), timeout=0.1)

        async def was_cancelled() -> bool:
            await asyncio.wait_for(cancelled.wait(), 5)
            return cancelled.is_set()

        assert loop.run(was_cancelled())  # no orphan coroutine keeps running
    finally:
        loop.close()
    assert not loop.alive
    loop.close()  # twice is fine
