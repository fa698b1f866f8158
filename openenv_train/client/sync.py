"""Blocking wrapper around an async ``EnvClient``.

All sync clients share one private event loop on a daemon thread (a :class:`LoopThread`), so a
blocking call works the same from plain scripts, from threads and from code that already runs an
event loop (Jupyter): the caller's loop is never touched and never re-entered.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core.models import ActT, ObsT, StateT, StepResult

if TYPE_CHECKING:
    from .env_client import EnvClient

T = TypeVar("T")


class LoopThread:
    """A daemon thread running one event loop, so blocking code can drive async code:
    ``run(coro)`` blocks until the coroutine is done. The sync clients share one (:func:`run_sync`);
    each rollout function and async-GRPO rollout worker owns one for its pooled sessions."""

    def __init__(self, name: str = "openenv-train-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on this loop and wait for it. If the wait ends early (KeyboardInterrupt,
        ``timeout``), the coroutine is cancelled; an ``EnvClient`` then drops its connection so no
        late reply can be mismatched."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError(
                f"a blocking call was made from inside the event loop it waits on "
                f"({self._thread.name}); await the coroutine (the async client) instead"
            )
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except BaseException:
            fut.cancel()
            raise

    def close(self) -> None:
        """Cancel what still runs on the loop (a shared batch connection's reader, for one), as
        ``asyncio.run`` does, then stop and close it: a task left pending would be destroyed
        with the loop ("Task was destroyed but it is pending!")."""
        if self.loop.is_closed():
            return
        if self.alive and threading.current_thread() is not self._thread:
            try:
                self.run(_cancel_other_tasks(), timeout=10)
            except Exception:  # noqa: BLE001 - closing goes on; what is left is destroyed
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


async def _cancel_other_tasks() -> None:
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=5)


_lock = threading.Lock()
_shared: LoopThread | None = None


def _shared_loop() -> LoopThread:
    global _shared
    with _lock:
        if _shared is None or not _shared.alive:
            _shared = LoopThread(name="openenv-train-sync-loop")
        return _shared


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the sync clients' shared background loop and block until it finishes."""
    return _shared_loop().run(coro)


class SyncEnvClient(Generic[ActT, ObsT, StateT]):
    """``with EchoEnv(base_url=...).sync() as env: env.reset()``: the async API, blocking.

    Methods not listed here (e.g. ``list_tools``/``call_tool`` of ``MCPToolClient``) are
    forwarded: any coroutine method of the wrapped client becomes a blocking one.
    """

    def __init__(self, client: EnvClient[ActT, ObsT, StateT]) -> None:
        shared = _shared
        if client.connected and (shared is None or client.bound_loop is not shared.loop):
            raise RuntimeError(
                "call .sync() before connecting: the session's socket belongs to the loop that "
                "opened it"
            )
        self._client = client

    @property
    def async_client(self) -> EnvClient[ActT, ObsT, StateT]:
        """The wrapped async client (use it only through this wrapper)."""
        return self._client

    @property
    def base_url(self) -> str:
        return self._client.base_url

    def connect(self) -> SyncEnvClient[ActT, ObsT, StateT]:
        run_sync(self._client.connect())
        return self

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> StepResult[ObsT]:
        return run_sync(self._client.reset(seed=seed, episode_id=episode_id, **kwargs))

    def step(self, action: ActT) -> StepResult[ObsT]:
        return run_sync(self._client.step(action))

    def state(self) -> StateT:
        return run_sync(self._client.state())

    def close(self) -> None:
        run_sync(self._client.close())

    def __enter__(self) -> SyncEnvClient[ActT, ObsT, StateT]:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or not asyncio.iscoroutinefunction(attr):
            return attr

        def blocking(*args: Any, **kwargs: Any) -> Any:
            return run_sync(attr(*args, **kwargs))

        blocking.__name__ = name
        blocking.__doc__ = attr.__doc__
        return blocking


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to the end from blocking code: ``asyncio.run`` where this thread runs no event
    loop (scripts, the CLI: signals reach it as usual); where one runs (Jupyter, or blocking code
    called from async code), ``asyncio.run`` on a fresh thread, so nested calls work too."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="openenv-train-blocking") as pool:
        return pool.submit(asyncio.run, coro).result()
