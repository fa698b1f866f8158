"""Typed action, observation and state of the textarena game envs: ``GameObservation`` and
``TextArenaState`` for the single-player games, ``SeatedGameObservation`` and ``SeatedGameState``
(the seats protocol's fields) for the two-player ones; ``MoveAction`` for both."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from openenv_train import Action, Observation, State
from openenv_train.core.models import SeatObservation, SeatState


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


class SeatedGameObservation(SeatObservation):
    """What ``seat`` sees of a two-player game: ``text`` is what the game told that seat since
    its last turn (its prompt first; the other seat's public moves as ``[Player k] ...``)."""

    game: str = ""
    text: str = ""
    #: moves played so far in the game, by either seat
    turn: int = 0
    #: the moves this session has sent so far: with the seed, seat and opponent they replay the
    #: game exactly (what stateless HTTP ``/step`` takes back; see the seats protocol page)
    my_moves: list[str] = Field(default_factory=list)
    #: True when the game ended on an invalid move (the mover gets -1, the other seat 0)
    invalid_move: bool = False


class SeatedGameState(SeatState):
    """The game, the seed that replays it, the opponent of a held seat, and every move so far."""

    game: str = ""
    seed: int | None = None
    opponent: str | None = None
    done: bool = False
    #: ``[seat, move]`` for every move played, by either seat
    history: list[tuple[int, str]] = Field(default_factory=list)
    info: dict[str, Any] = Field(default_factory=dict)
