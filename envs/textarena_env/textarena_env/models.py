"""Typed action, observation and state shared by every textarena game env."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from openenv_train import Action, Observation, State


class MoveAction(Action):
    """``{"message": "[5]"}``: the player's move as the game reads it (most games want the
    move in square brackets; the prompt says)."""

    message: str = Field(description="the player's move, e.g. [5] (the game's prompt says how)")


class GameObservation(Observation):
    """What the game said since the last move (the prompt after ``reset``); ``reward`` is the
    game's own reward once ``done``."""

    game: str = ""
    text: str = ""
    turn: int = 0
    invalid_move: bool = False


class TextArenaState(State):
    """The game id, the seed that replays it, and the game's info once it is over."""

    game: str = ""
    seed: int | None = None
    done: bool = False
    reward: float | None = None
    info: dict[str, Any] = Field(default_factory=dict)
