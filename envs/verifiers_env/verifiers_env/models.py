"""Typed action, observation and state shared by every verifiers environment served here."""

from __future__ import annotations

from pydantic import Field

from openenv_train import Action, Observation, State


class AnswerAction(Action):
    """``{"answer": "12"}``: the model's reply to the prompt, as the rubric scores it."""

    answer: str = Field(description="the reply to the prompt (the assistant message)")


class VerifiersObservation(Observation):
    """One dataset row: its prompt messages and the last user message as ``question``; after the
    answer, ``done``, the rubric's ``reward`` and each reward function's score in ``scores``."""

    env_id: str = ""
    example_id: int | None = None
    prompt: list[dict[str, str]] = Field(default_factory=list)
    question: str = ""
    expected: str | None = None
    scores: dict[str, float] = Field(default_factory=dict)


class VerifiersState(State):
    """Which row this episode is (``seed`` picks it) and its score once answered."""

    env_id: str = ""
    seed: int | None = None
    example_id: int | None = None
    done: bool = False
    reward: float | None = None
