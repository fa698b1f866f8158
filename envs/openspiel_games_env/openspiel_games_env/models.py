"""Typed action, observation and state shared by every ``openspiel/<game>`` env."""

from __future__ import annotations

from pydantic import Field

from openenv_train import Action
from openenv_train.core.models import SeatObservation, SeatState


class GameAction(Action):
    """``{"move": "Bet"}``: one of the observation's ``moves`` (case does not matter) or the
    OpenSpiel action id as digits (``"4"``)."""

    move: str = Field(description="a legal move's name from the observation's `moves`, or its id")


class GameObservation(SeatObservation):
    """What ``seat`` sees: ``text`` (OpenSpiel's observation string, or the information state
    where the game has no observation string), the information state (the key an exact
    evaluation of a policy uses), and the legal moves of the seat to move."""

    game: str = ""
    text: str = ""
    info_state: str = ""
    #: the legal moves' names (for the seat to move), in ``legal_actions``' order
    moves: list[str] = Field(default_factory=list)
    #: OpenSpiel action ids of ``moves``
    legal_actions: list[int] = Field(default_factory=list)
    #: the moves this session has sent so far: with the seed, seat and opponent they replay
    #: the game exactly (what stateless HTTP ``/step`` takes back; see the seats protocol page)
    my_moves: list[str] = Field(default_factory=list)
    #: True when the game ended on an illegal move (the mover gets the game's lowest utility)
    invalid_move: bool = False


#: the most random opening moves ``reset(openings=k)`` takes
MAX_OPENINGS = 1_000


class GameState(SeatState):
    """The game, the seed that replays it, the opponent of a held seat, and the moves so far."""

    game: str = ""
    seed: int | None = None
    opponent: str | None = None
    #: random moves played before the seats took over (``reset(openings=k)``)
    openings: int = 0
    done: bool = False
    history: list[int] = Field(default_factory=list)
