"""One reasoning-gym task per episode: the question on ``reset``, the dataset's own score on ``step``.

``reset(seed=s)`` draws item 0 of ``create_dataset(name, size=1, seed=s, **config)``, so a seed
names one task on every machine; without a seed the env draws one. Building a dataset is plain
Python (sometimes tens of milliseconds), so the methods are sync and run in the server's worker
threads.
"""

from __future__ import annotations

import importlib.metadata
import random
import uuid
from typing import Any

import reasoning_gym

from openenv_train import Environment, EnvironmentMetadata, NoEpisodeError

from ..models import AnswerAction, QuestionObservation, ReasoningGymState


class ReasoningGymEnvironment(Environment[AnswerAction, QuestionObservation, ReasoningGymState]):
    """Answer one procedurally generated question; reward = the dataset's ``score_answer``."""

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        self._rng = random.Random()
        self._data: Any = None
        self._entry: dict[str, Any] | None = None
        self._state = ReasoningGymState(dataset=dataset)

    @classmethod
    def metadata_for(cls, dataset: str) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=f"reasoning_gym/{dataset}",
            description=f"reasoning-gym's {dataset} dataset: one question per episode, scored "
            "by the dataset's score_answer (reward in [0, 1]).",
            version=importlib.metadata.version("reasoning-gym"),
        )

    def get_metadata(self) -> EnvironmentMetadata:
        """``/metadata`` names this member of the family (the server builds one env to ask)."""
        return self.metadata_for(self.dataset)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> QuestionObservation:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be an integer >= 0 (or omitted), got {seed!r}")
        if config is not None and not isinstance(config, dict):
            raise ValueError(
                f"config must be a mapping of {self.dataset}'s dataset options, got {config!r}"
            )
        seed = self._rng.randrange(2**31) if seed is None else seed
        config = dict(config or {})
        try:
            self._data = reasoning_gym.create_dataset(self.dataset, size=1, seed=seed, **config)
        except (TypeError, ValueError, AssertionError) as err:
            raise ValueError(
                f"config: reasoning-gym rejected {config!r} for {self.dataset} ({err}); pass only "
                "the dataset config's fields"
            ) from None
        self._entry = self._data[0]
        self._state = ReasoningGymState(
            episode_id=episode_id or uuid.uuid4().hex,
            dataset=self.dataset,
            seed=seed,
            config=config,
        )
        return QuestionObservation(
            dataset=self.dataset, question=self._entry["question"], seed=seed, reward=0.0
        )

    def step(self, action: AnswerAction, **kwargs: Any) -> QuestionObservation:
        entry = self._entry
        if entry is None:
            raise NoEpisodeError("no question in progress: call reset() before answering")
        score = float(self._data.score_answer(action.answer, entry) or 0.0)
        score = min(1.0, max(0.0, score))
        self._entry = None
        self._state.step_count += 1
        self._state.done, self._state.score = True, score
        expected = entry.get("answer")
        return QuestionObservation(
            dataset=self.dataset,
            question=entry["question"],
            seed=self._state.seed,
            expected=None if expected is None else str(expected),
            done=True,
            reward=score,
        )

    def state(self) -> ReasoningGymState:
        return self._state

    def close(self) -> None:
        self._data = self._entry = None
