"""The ``Environment`` base class env authors subclass.

An env may implement ``reset``/``step``/``state``/``close`` as plain methods or as coroutines
(``async def``). The server calls coroutines on the event loop and runs plain methods in a worker
thread, so a slow sync env never stalls other sessions.
"""

from __future__ import annotations

import inspect
from typing import Any, Generic

from ..core.models import ActT, EnvironmentMetadata, ObsT, State, StateT


class Environment(Generic[ActT, ObsT, StateT]):
    """One instance per session. Subclasses override ``reset``, ``step`` and ``state``."""

    #: Shown at ``GET /metadata``; defaults to the class name and docstring.
    metadata: EnvironmentMetadata | None = None

    #: Opt-in speed-up for sync envs whose ``reset``/``step``/``state`` are pure computation that
    #: returns in microseconds (no I/O, sleeps, locks or subprocesses). The server then calls them
    #: on the event loop instead of hopping to a worker thread (~20-30 us saved per call). A
    #: watchdog demotes the class back to worker threads, with a warning, when inline calls
    #: overrun 2 ms repeatedly (5 in 200 calls) or once by 50 ms. Leave False when in doubt.
    inline_sync_calls: bool = False

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ObsT:
        raise NotImplementedError(f"{type(self).__name__} must implement reset()")

    def step(self, action: ActT, **kwargs: Any) -> ObsT:
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    def state(self) -> StateT:
        """The current episode state. (OpenEnv uses a property; both are accepted by the server.)"""
        return State()  # type: ignore[return-value]

    def close(self) -> None:
        """Release resources held by this session's env."""

    @classmethod
    def describe(cls) -> EnvironmentMetadata:
        if cls.metadata is not None:
            return cls.metadata
        doc = inspect.getdoc(cls) or ""
        return EnvironmentMetadata(name=cls.__name__, description=doc.split("\n\n")[0])


def is_async(fn: Any) -> bool:
    """True when calling ``fn`` returns an awaitable we must await on the loop."""
    return inspect.iscoroutinefunction(fn)
