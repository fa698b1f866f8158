"""One row of a verifiers environment's dataset per episode, scored by the environment's rubric.

The verifiers environment is loaded once per server process (``load_verifiers_env``); each
session's ``reset(seed=s)`` takes row ``s % len(dataset)`` (the same row for the same seed) and
``step`` hands the answer, as the assistant message, to the environment's scorer: the rubric's
``score_rollout`` (verifiers 0.3, the v0 API) or the task's rewards on a trace (0.4, v1; ``api``).
"""

from __future__ import annotations

import functools
import importlib.metadata
import random
import uuid
from dataclasses import dataclass
from typing import Any

from openenv_train import Environment, EnvironmentMetadata, NoEpisodeError

from ..models import AnswerAction, VerifiersObservation, VerifiersState
from .api import Scorer, api_version, load_v0, load_v1


@dataclass(frozen=True)
class LoadedEnv:
    """A loaded verifiers environment: its rows (plain dicts), its scorer and which API."""

    env_id: str
    rows: tuple[dict[str, Any], ...]
    score: Scorer
    api: str = "v0"


@functools.cache
def load_verifiers_env(env_id: str) -> LoadedEnv:
    """The verifiers environment ``env_id`` and its rows, once per process, through whichever
    API the installed verifiers has."""
    api = api_version()
    rows, score = (load_v1 if api == "v1" else load_v0)(env_id)
    if not rows:
        raise ValueError(f"verifiers environment {env_id!r} has no dataset rows to serve")
    return LoadedEnv(env_id, tuple(rows), score, api)


def _messages(prompt: Any) -> list[dict[str, str]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [{"role": str(m["role"]), "content": str(m.get("content") or "")} for m in prompt]


class VerifiersEnvironment(Environment[AnswerAction, VerifiersObservation, VerifiersState]):
    """Answer one prompt of a verifiers environment; reward = its rubric's score."""

    def __init__(self, loaded: LoadedEnv) -> None:
        self.loaded = loaded
        self._rng = random.Random()
        self._row: dict[str, Any] | None = None
        self._index = 0
        self._state = VerifiersState(env_id=loaded.env_id)

    @classmethod
    def metadata_for(cls, env_id: str) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=f"verifiers/{env_id}",
            description=f"verifiers environment {env_id}: one prompt of its dataset per "
            "episode, scored by its rubric.",
            version=importlib.metadata.version("verifiers"),
        )

    def get_metadata(self) -> EnvironmentMetadata:
        """``/metadata`` names this member of the family (the server builds one env to ask)."""
        return self.metadata_for(self.loaded.env_id)

    async def reset(
        self, seed: int | None = None, episode_id: str | None = None
    ) -> VerifiersObservation:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be an integer >= 0 (or omitted), got {seed!r}")
        seed = self._rng.randrange(2**31) if seed is None else seed
        rows = self.loaded.rows
        self._index = seed % len(rows)
        self._row = row = rows[self._index]
        example_id = row.get("example_id", self._index)
        self._state = VerifiersState(
            episode_id=episode_id or uuid.uuid4().hex,
            env_id=self.loaded.env_id,
            seed=seed,
            example_id=example_id,
        )
        return self._observe(row, reward=0.0)

    def _observe(self, row: dict[str, Any], **extra: Any) -> VerifiersObservation:
        prompt = _messages(row.get("prompt") or row.get("question") or "")
        users = [m["content"] for m in prompt if m["role"] == "user"]
        return VerifiersObservation(
            env_id=self.loaded.env_id,
            example_id=self._state.example_id,
            prompt=prompt,
            question=users[-1] if users else "",
            **extra,
        )

    async def step(self, action: AnswerAction, **kwargs: Any) -> VerifiersObservation:
        row = self._row
        if row is None:
            raise NoEpisodeError("no prompt in progress: call reset() before answering")
        reward, scores = await self.loaded.score(self._index, action.answer)
        self._row = None
        self._state.step_count += 1
        self._state.done, self._state.reward = True, reward
        answer = row.get("answer")
        return self._observe(
            row,
            expected=None if answer is None else str(answer),
            scores=scores,
            done=True,
            reward=reward,
        )

    async def state(self) -> VerifiersState:
        return self._state

    async def close(self) -> None:
        self._row = None
