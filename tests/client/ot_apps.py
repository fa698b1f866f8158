"""Test envs served by our own ``openenv_train.server.create_app`` (imported by path by the launcher).

``app``: many sessions; ``cap_app``: one session at a time; ``idle_app``: reaps after 0.5 s idle. Actions can sleep (to outlast a client
timeout), fail (an exception inside the env) or kill the whole server process (a crash).
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

from openenv_train.core import InfrastructureError
from openenv_train.core.models import Action, Observation, State
from openenv_train.server import Environment, Limits, create_app


class TAction(Action):
    message: str
    sleep_s: float = 0.0
    fail: bool = False
    infra: bool = False
    crash: bool = False
    done_file: str = ""  # touched as the step returns: a test waits on it, not on the clock


class TObservation(Observation):
    echoed_message: str = ""
    step_count: int = 0


class TState(State):
    seed: int | None = None
    last_message: str = ""


class TEnv(Environment[TAction, TObservation, TState]):
    """Echoes messages; a sync env, so the server runs it off the event loop."""

    def __init__(self) -> None:
        self._state = TState(episode_id=uuid.uuid4().hex)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> TObservation:
        self._state = TState(episode_id=episode_id or uuid.uuid4().hex, seed=seed)
        return TObservation(echoed_message=f"ready seed={seed}", reward=0.0)

    def step(self, action: TAction, **kwargs: Any) -> TObservation:
        if action.crash:
            os.kill(os.getpid(), signal.SIGKILL)
        if action.sleep_s:
            time.sleep(action.sleep_s)
        if action.fail:
            raise ValueError(f"env refused message {action.message!r}")
        if action.infra:
            raise InfrastructureError("the sandbox behind this env went away")
        self._state.step_count += 1
        self._state.last_message = action.message
        if action.done_file:
            Path(action.done_file).touch()
        return TObservation(
            echoed_message=action.message,
            step_count=self._state.step_count,
            reward=float(len(action.message)),
            done=action.message == "bye",
        )

    def state(self) -> TState:
        return self._state


app = create_app(TEnv, TAction, TObservation, TState, limits=Limits(max_sessions=256))
cap_app = create_app(TEnv, TAction, TObservation, TState, limits=Limits(max_sessions=1))
idle_app = create_app(TEnv, TAction, TObservation, TState, limits=Limits(session_timeout_s=0.5))
