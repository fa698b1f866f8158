"""Typed action, observation and state shared by every reasoning-gym dataset env."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from openenv_train import Action, Observation, State


class AnswerAction(Action):
    """``{"answer": "4"}``: the final answer, as the dataset's scorer reads it."""

    answer: str = Field(description="the final answer to the question")


class QuestionObservation(Observation):
    """The question after ``reset``; after the answer, ``done`` and the score as ``reward``
    (``expected`` is the reference answer, shown only once the episode is over)."""

    dataset: str = ""
    question: str = ""
    seed: int | None = None
    expected: str | None = None


class ReasoningGymState(State):
    """Which task this episode is: the dataset, its seed and config (enough to draw it again)."""

    dataset: str = ""
    seed: int | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    done: bool = False
    score: float | None = None
