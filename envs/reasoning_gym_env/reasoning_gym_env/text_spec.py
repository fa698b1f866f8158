"""``ReasoningGymSpec``: a reasoning-gym dataset as text for the rollout engine and the
``grpo_text`` recipe (``env.spec: reasoning_gym_env.text_spec:ReasoningGymSpec``,
``env.spec_kwargs: {dataset: leg_counting, seed: 0}``).

The question is the prompt, the model's whole answer is the ``answer`` (one turn), and the
reward is the dataset's score. ``vocabulary`` holds every word of ``vocabulary_samples`` drawn
questions and answers, so a word-level tiny model can read the dataset.
"""

from __future__ import annotations

import random
from typing import Any

from openenv_train.rollout import SeededTextSpec

from .models import AnswerAction


def sample_items(
    dataset: str, n: int, config: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Items of ``dataset`` for seeds ``0..n-1`` (as ``reset(seed=s)`` draws them)."""
    import reasoning_gym

    return [
        reasoning_gym.create_dataset(dataset, size=1, seed=s, **(config or {}))[0] for s in range(n)
    ]


class ReasoningGymSpec(SeededTextSpec):
    """One question, one answer. ``seed``: repeatable tasks (same task per GRPO group);
    ``config``: the dataset's options, passed to every ``reset``."""

    invalid_action_reward = 0.0
    truncation_reward = 0.0

    def __init__(
        self,
        dataset: str,
        seed: int | None = None,
        config: dict[str, Any] | None = None,
        vocabulary_samples: int = 256,
        same_task_per_group: bool = True,
    ) -> None:
        super().__init__(seed, same_task_per_group)
        self.dataset = dataset
        self.config = dict(config or {})
        self._samples = sample_items(dataset, vocabulary_samples, self.config)
        words: dict[str, None] = {}
        for item in self._samples:
            for word in f"{item['question']} {item['answer']}".split():
                words.setdefault(word)
        self.vocabulary = tuple(words)

    @property
    def client_cls(self) -> Any:  # type: ignore[override]
        from .client import ReasoningGymEnv

        return ReasoningGymEnv

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        kwargs = super().reset_kwargs(prompt, group, row)
        return {**kwargs, "config": self.config} if self.config else kwargs

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return result.observation.question.strip()

    def render(self, result: Any) -> str:
        return ""  # one answer ends the episode

    def parse_action(self, text: str) -> AnswerAction | None:
        answer = " ".join(text.replace("<eos>", " ").split())
        return AnswerAction(answer=answer) if answer else None

    def random_episode(self, rng: random.Random) -> list[tuple[str, str]]:
        """A question with another question's answer: the format warm-up's data (right form,
        random content)."""
        question = rng.choice(self._samples)["question"].strip()
        return [("user", question), ("assistant", str(rng.choice(self._samples)["answer"]))]
