"""Blocking wrapper around an async ``EnvClient``.

All sync clients share one private event loop on a daemon thread, so a blocking call works the
same from plain scripts, from threads and from code that already runs an event loop (Jupyter):
the caller's loop is never touched and never re-entered.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core.models import ActT, ObsT, StateT, StepResult

if TYPE_CHECKING:
    from .base import EnvClient

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="openenv-train-sync-loop", daemon=True
            )
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the shared background loop and block until it finishes.

    If the caller is interrupted (KeyboardInterrupt), the coroutine is cancelled; an
    ``EnvClient`` then drops its connection so no late reply can be mismatched.
    """
    loop = _background_loop()
    if threading.current_thread() is _thread:
        coro.close()
        raise RuntimeError(
            "a blocking (.sync()) call was made from inside the sync client's own loop; "
            "await the async client instead"
        )
    fut = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return fut.result()
    except BaseException:
        fut.cancel()
        raise


class SyncEnvClient(Generic[ActT, ObsT, StateT]):
    """``with EchoEnv(base_url=...).sync() as env: env.reset()``: the async API, blocking.

    Methods not listed here (e.g. ``list_tools``/``call_tool`` of ``MCPToolClient``) are
    forwarded: any coroutine method of the wrapped client becomes a blocking one.
    """

    def __init__(self, client: EnvClient[ActT, ObsT, StateT]) -> None:
        if client.connected and client.bound_loop is not _loop:
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
