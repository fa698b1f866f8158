"""Bridges for synchronous callers (TRL calls ``rollout_func(prompts, trainer)`` synchronously).

``LoopThread`` owns one background event loop for the engine's whole life, so pooled WebSocket
sessions and the batcher survive between trainer steps (they are bound to that loop).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from .engine import RolloutEngine
from .records import RolloutBatch

T = TypeVar("T")


class LoopThread:
    """A daemon thread running one event loop; ``run(coro)`` blocks until the coroutine is done."""

    def __init__(self, name: str = "openenv-train-rollout") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self._thread:
            raise RuntimeError(
                "LoopThread.run called from its own loop; await the coroutine instead"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


def _group_size_of(trainer: Any, group_size: int | None) -> int:
    if group_size is not None:
        return group_size
    for obj in (trainer, getattr(trainer, "args", None)):
        n = getattr(obj, "num_generations", None)
        if isinstance(n, int) and n >= 1:
            return n
    raise ValueError(
        "group_size: not given and the trainer has no num_generations; pass group_size= "
        "(TRL's num_generations) to engine_rollout_func"
    )


def engine_rollout_func(
    engine_factory: RolloutEngine | Callable[[], Any],
    *,
    group_size: int | None = None,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
    thread_name: str = "openenv-train-rollout",
) -> Callable[[list[str], Any], dict[str, Any]]:
    """A TRL ``rollout_func(prompts, trainer)`` backed by one ``RolloutEngine``.

    ``engine_factory`` is an engine (built anywhere: it opens nothing until it runs) or a callable
    returning one, called once inside the background loop; either way its sessions and batcher
    live on that loop, so pooled connections survive between trainer steps. Anything with
    ``async run(prompts, group_size) -> RolloutBatch`` and ``async aclose()`` serves as an engine
    (the harness's ``HarnessRunner`` does).
    Dropped groups were already retried ``config.group_retries`` times by the engine; if any still
    fail, :class:`GroupsDroppedError` reaches the trainer: rows are never invented. ``on_batch``
    sees every batch (metrics logging). The function has ``.close()`` and ``.last_batch``.
    """
    runner = LoopThread(name=thread_name)
    holder: dict[str, Any] = {}

    async def _run(prompts: list[str], g: int) -> RolloutBatch:
        if "engine" not in holder:
            engine = engine_factory if hasattr(engine_factory, "run") else engine_factory()
            holder["engine"] = engine
        return await holder["engine"].run(prompts, g)

    def rollout_func(prompts: list[str], trainer: Any = None) -> dict[str, Any]:
        batch = runner.run(_run(list(prompts), _group_size_of(trainer, group_size)))
        rollout_func.last_batch = batch  # type: ignore[attr-defined]
        if on_batch is not None:
            on_batch(batch)
        return batch.to_trl(reward_key)  # raises GroupsDroppedError rather than invent rows

    def close() -> None:
        if "engine" in holder:
            runner.run(holder.pop("engine").aclose())
        runner.close()

    rollout_func.close = close  # type: ignore[attr-defined]
    rollout_func.runner = runner  # type: ignore[attr-defined]
    rollout_func.last_batch = None  # type: ignore[attr-defined]
    return rollout_func
