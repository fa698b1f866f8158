"""A small env for the observability tests: counts an event per step, raises on request."""

from __future__ import annotations

from openenv_train.core import Action, Observation, State
from openenv_train.server import Environment
from openenv_train.server.metrics import count_env_event


class TickAction(Action):
    n: int = 1
    fail: bool = False


class TickObservation(Observation):
    total: int = 0


class TickEnv(Environment[TickAction, TickObservation, State]):
    """Adds ``n``; every step counts a ``tick`` event whose status is odd or even."""

    def __init__(self) -> None:
        self.total = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> TickObservation:
        self.total = seed or 0
        return TickObservation(total=self.total)

    def step(self, action: TickAction) -> TickObservation:
        if action.fail:
            raise ValueError("asked to fail")
        self.total += action.n
        count_env_event("tick", "odd" if self.total % 2 else "even")
        return TickObservation(total=self.total, done=False)

    @property
    def state(self) -> State:
        return State(step_count=self.total)
