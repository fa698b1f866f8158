"""Typed action, observation and state of the Wordle env."""

from __future__ import annotations

from pydantic import Field

from openenv_train import Observation, State, TypedOrToolAction


class WordleAction(TypedOrToolAction):
    """``{"guess": "crane"}``. The MCP tool ``guess(word)`` does the same over tool calls."""

    guess: str = Field(min_length=1, max_length=64, description="a five-letter word")


class WordleObservation(Observation):
    """The board so far: ``guesses[i]`` got ``patterns[i]`` (``G``/``Y``/``B`` per letter, ``""`` if invalid)."""

    guesses: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)
    turns_left: int = 0
    error: str | None = None
    text: str = ""


class WordleState(State):
    """Episode bookkeeping; ``answer`` is only shown once the episode is over."""

    seed: int | None = None
    max_turns: int = 6
    guesses: list[str] = Field(default_factory=list)
    done: bool = False
    solved: bool = False
    answer: str | None = None
