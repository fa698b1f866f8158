"""Typed action, observation and state of the guess-the-number env."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from openenv_train import Observation, State, TypedOrToolAction

Feedback = Literal["start", "higher", "lower", "correct", "out_of_range"]


class GuessAction(TypedOrToolAction):
    """``{"guess": 42}``. The MCP tool ``guess(number)`` does the same over tool calls."""

    guess: int = Field(description="the number to try")


class GuessNumberObservation(Observation):
    """``feedback`` on the last guess; ``lo``/``hi`` bound what the feedback still allows."""

    feedback: Feedback = "start"
    last_guess: int | None = None
    low: int = 1
    high: int = 100
    lo: int = 1
    hi: int = 100
    turns_left: int = 0
    text: str = ""


class GuessNumberState(State):
    """Episode bookkeeping; ``target`` is only shown once the episode is over."""

    seed: int | None = None
    low: int = 1
    high: int = 100
    max_turns: int = 7
    guesses: list[int] = Field(default_factory=list)
    done: bool = False
    solved: bool = False
    target: int | None = None
