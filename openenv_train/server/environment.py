"""The ``Environment`` base class env authors subclass; its docstring is the env contract."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic

from ..core.models import ActT, EnvironmentMetadata, ObsT, State, StateT
from .errors import NoEpisodeError as NoEpisodeError

if TYPE_CHECKING:
    from ..core.rubrics import Rubric


class Transform(ABC, Generic[ObsT]):
    """Rewrites an observation (adds a reward, a metric, a formatted prompt): OpenEnv's
    TorchRL-style transform. An env applies its own with ``self._apply_transform(obs)``."""

    @abstractmethod
    def __call__(self, observation: ObsT) -> ObsT: ...


class CompositeTransform(Transform[ObsT]):
    """Several transforms as one, applied in order (OpenEnv's name)."""

    def __init__(self, transforms: list[Transform[ObsT]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, observation: ObsT) -> ObsT:
        for transform in self.transforms:
            observation = transform(observation)
        return observation


class NullTransform(Transform[ObsT]):
    """The observation unchanged: a placeholder where a transform is expected (OpenEnv's name)."""

    def __call__(self, observation: ObsT) -> ObsT:
        return observation


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

    Rewards and transforms (OpenEnv's semantics): ``Environment.__init__(transform=None,
    rubric=None)`` stores them; the env applies them where it chooses, with
    ``observation.reward = self._apply_rubric(action, observation)`` in ``step``,
    ``self._reset_rubric()`` in ``reset`` and ``self._apply_transform(observation)``. The server
    never applies them behind the env's back. Calling ``super().__init__()`` is optional: both
    default to ``None``.

    OpenEnv's ``reset_async``/``step_async`` exist too; the server uses an overridden
    ``step_async`` (or ``reset_async``) when ``step`` (``reset``) itself is a plain ``def``.
    """

    #: Applied by the env through :meth:`_apply_transform`; ``None`` leaves observations as they are.
    transform: Transform[Any] | None = None
    #: Scores steps through :meth:`_apply_rubric`; training code may inspect it (``named_rubrics``).
    rubric: Rubric | None = None

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

    def __init__(
        self, transform: Transform[Any] | None = None, rubric: Rubric | None = None
    ) -> None:
        self.transform = transform
        self.rubric = rubric

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ObsT:
        raise NotImplementedError(f"{type(self).__name__} must implement reset()")

    def step(self, action: ActT, **kwargs: Any) -> ObsT:
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ObsT:
        """OpenEnv's async ``reset``: by default the plain ``reset`` (awaited if it is async)."""
        obs = self.reset(seed=seed, episode_id=episode_id, **kwargs)
        return await obs if inspect.isawaitable(obs) else obs

    async def step_async(self, action: ActT, **kwargs: Any) -> ObsT:
        """OpenEnv's async ``step``: by default the plain ``step`` (awaited if it is async)."""
        obs = self.step(action, **kwargs)
        return await obs if inspect.isawaitable(obs) else obs

    # ---- OpenEnv's reward and transform helpers -------------------------------------------

    def _apply_transform(self, observation: ObsT) -> ObsT:
        """``observation`` through ``self.transform`` (unchanged when there is none)."""
        return self.transform(observation) if self.transform is not None else observation

    def _apply_rubric(self, action: ActT, observation: ObsT) -> Any:
        """The rubric's score for this step, 0.0 without a rubric. An async rubric returns an
        awaitable here: use :meth:`_apply_rubric_async` from async code."""
        return self.rubric(action, observation) if self.rubric is not None else 0.0

    async def _apply_rubric_async(self, action: ActT, observation: ObsT) -> float:
        """The rubric's score for this step, awaited when the rubric (or a child) is async."""
        score = self._apply_rubric(action, observation)
        return await score if inspect.isawaitable(score) else score

    def _reset_rubric(self) -> None:
        """Clear the rubric's per-episode state (a trajectory rubric's record); call in ``reset``."""
        if self.rubric is not None:
            self.rubric.reset()

    async def _reset_rubric_async(self) -> None:
        """:meth:`_reset_rubric` for async envs; awaits a rubric's own ``reset_async`` if it has one."""
        if self.rubric is None:
            return
        reset = getattr(self.rubric, "reset_async", None)
        out = reset() if callable(reset) else self.rubric.reset()
        if inspect.isawaitable(out):
            await out

    def state(self) -> StateT:
        """The current episode state. (OpenEnv uses a property; both are accepted by the server.)"""
        return State()  # type: ignore[return-value]

    def close(self) -> None:
        """Release resources held by this session's env."""

    def get_metadata(self) -> EnvironmentMetadata:
        """OpenEnv's metadata hook; override it (or set ``metadata``) to change ``/metadata``."""
        return type(self).describe()

    @classmethod
    def describe(cls) -> EnvironmentMetadata:
        if cls.metadata is not None:
            return cls.metadata
        doc = inspect.getdoc(cls) or ""
        return EnvironmentMetadata(name=cls.__name__, description=doc.split("\n\n")[0])
