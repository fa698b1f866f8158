"""Countdown: the example env of the generic text recipe (``configs/grpo_text_countdown.yaml``),
written the way the README's "Train GRPO on your own env" walks: an ``Environment`` subclass,
its app, a client and the ``TextEnvSpec`` the trainer needs.

A counter starts at 0; the model adds 1, 2 or 3 per turn; landing exactly on the target (4..9)
wins +1, overshooting loses -1. A random player wins about half the games; reading the board and
answering ``target - total`` when it is 3 or less wins them all.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from pydantic import Field

from openenv_train.client import EnvClient
from openenv_train.core.models import Action, Observation, State
from openenv_train.rollout.spec import TextEnvSpec
from openenv_train.server import create_app
from openenv_train.server.environment import Environment

MOVES = ("1", "2", "3")
TARGETS = range(4, 10)


class CountdownAction(Action):
    add: int = Field(ge=1, le=3, description="1, 2 or 3")


class CountdownObservation(Observation):
    total: int = 0
    target: int = 10


class CountdownState(State):
    total: int = 0


class CountdownEnvironment(Environment[CountdownAction, CountdownObservation, CountdownState]):
    """One game per session: ``reset(target=)``, ``step(add=)``; the reward comes at the end."""

    def __init__(self) -> None:
        self._total, self._target, self._steps, self._episode = 0, 7, 0, ""

    async def reset(
        self, seed: int | None = None, episode_id: str | None = None, target: int | None = None
    ) -> CountdownObservation:
        rng = random.Random(seed)
        self._target = int(target) if target is not None else rng.choice(TARGETS)
        self._total, self._steps = 0, 0
        self._episode = episode_id or uuid.uuid4().hex
        return CountdownObservation(total=0, target=self._target, done=False, reward=0.0)

    async def step(self, action: CountdownAction, **kwargs: Any) -> CountdownObservation:
        self._total += action.add
        self._steps += 1
        done = self._total >= self._target
        reward = (1.0 if self._total == self._target else -1.0) if done else 0.0
        return CountdownObservation(
            total=self._total, target=self._target, done=done, reward=reward
        )

    async def state(self) -> CountdownState:
        return CountdownState(episode_id=self._episode, step_count=self._steps, total=self._total)


app = create_app(CountdownEnvironment, CountdownAction, CountdownObservation, CountdownState)


class CountdownEnv(EnvClient[CountdownAction, CountdownObservation, CountdownState]):
    action_cls = CountdownAction
    observation_cls = CountdownObservation
    state_cls = CountdownState


def board(total: int, target: int) -> str:
    return f"total {total} target {target} add"


class CountdownSpec(TextEnvSpec):
    """Countdown as text: ``total 2 target 7 add`` -> ``3``. ``seed`` makes the games repeatable."""

    client_cls = CountdownEnv
    vocabulary = ("total", "target", "add", *(str(i) for i in range(13)))

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._calls = -1

    def begin_run(self) -> None:
        self._calls += 1

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        if self.seed is None:
            return {}
        return {"seed": self.seed + self._calls * 1_000_003 + row}

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return board(result.observation.total, result.observation.target)

    def render(self, result: Any) -> str:
        return " " + board(result.observation.total, result.observation.target)

    def parse_action(self, text: str) -> CountdownAction | None:
        move = text.replace("<eos>", " ").strip()
        return CountdownAction(add=int(move)) if move in MOVES else None

    @staticmethod
    def random_episode(rng: random.Random) -> list[tuple[str, str]]:
        """A game with random moves as chat turns: the format warm-up's data (no policy)."""
        total, target = 0, rng.choice(TARGETS)
        turns = [("user", board(total, target))]
        while True:
            move = rng.choice(MOVES)
            turns.append(("assistant", move))
            total += int(move)
            if total >= target:
                return turns
            turns.append(("user", " " + board(total, target)))
