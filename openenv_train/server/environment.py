"""The ``Environment`` base class env authors subclass; its docstring is the env contract."""

from __future__ import annotations

import inspect
from typing import Any, Generic

from ..core.models import ActT, EnvironmentMetadata, ObsT, State, StateT


class NoEpisodeError(RuntimeError):
    """Raise from ``step`` when no episode is in progress (no ``reset`` yet, or the last one ended).

    Over ``/ws`` and ``/mcp`` it is an ``EXECUTION_ERROR`` like any other exception; over HTTP
    ``/step``, where every request gets a fresh env that no ``/reset`` started, it becomes a 409
    that points the client to the ``/ws`` or ``/mcp`` sessions.
    """


class Environment(Generic[ActT, ObsT, StateT]):
    """The env contract: one instance per session, driven by the server as a Gymnasium-style loop.

    - ``reset(seed=None, episode_id=None, **kwargs) -> Observation`` starts an episode. ``seed``
      makes it reproducible; extra keyword arguments come from the client's ``reset`` call.
    - ``step(action) -> Observation`` applies one validated ``Action``. The observation carries
      ``reward`` (``None`` when the step is not scored) and ``done``; after ``done`` the client
      calls ``reset`` again before stepping.
    - ``state() -> State`` describes the current episode (``episode_id``, ``step_count``, ...).
    - ``close()`` releases what the instance holds; the server calls it when the session ends.

    Sync or async: each method may be a plain ``def`` or an ``async def``. Coroutines are awaited
    on the server's event loop, so they must never block it. Plain methods start in worker threads
    (a slow sync env never stalls other sessions); a class whose calls keep returning within 2 ms
    there earns calls on the event loop, with a watchdog that sends it back if it overruns
    (see ``inline_sync_calls``).

    Errors never end the session: an action that does not validate against the action model
    never reaches ``step`` (the client gets ``VALIDATION_ERROR`` naming the field), and an
    exception raised by a method comes back as ``EXECUTION_ERROR`` with its message. Raise
    ``NoEpisodeError`` from ``step`` when there is no game to step, so that HTTP clients get a
    409 that says so.
    """

    #: Shown at ``GET /metadata``; defaults to the class name and docstring.
    metadata: EnvironmentMetadata | None = None

    #: Where the server runs this class's sync ``reset``/``step``/``state``. ``None`` (default):
    #: in worker threads until 200 calls in a row returned within 2 ms there, then on the event
    #: loop (the thread hop is most of a quick env's per-step cost). ``True``: on the loop from the
    #: first call. ``False``: always in worker threads (for envs that may block: I/O, sleeps,
    #: locks, subprocesses). On the loop, a watchdog moves the class back to worker threads, with
    #: a warning, when calls overrun 2 ms repeatedly (5 in 200 calls) or once by 50 ms; a ``None``
    #: class may earn its way back after 4x as many quick calls each time, a ``True`` one may not.
    inline_sync_calls: bool | None = None

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
