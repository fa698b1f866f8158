"""Typed base models shared by env servers and clients (OpenEnv 0.10 compatible on the wire)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field


class Action(BaseModel):
    """What an agent sends to ``step``. Unknown fields are rejected so typos never pass silently."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, arbitrary_types_allowed=True
    )

    metadata: dict[str, Any] = Field(default_factory=dict)


class Observation(BaseModel):
    """What ``reset``/``step`` return; ``reward`` and ``done`` are lifted to the top level on the wire."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, arbitrary_types_allowed=True
    )

    done: bool = False
    reward: bool | int | float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class State(BaseModel):
    """Episode bookkeeping; envs may add fields freely."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)

    episode_id: str | None = None
    step_count: int = Field(default=0, ge=0)


class SeatObservation(Observation):
    """An observation of a game with seats: one session plays one game, and every observation
    names the seat whose turn it is and shows only what that seat may see.

    A session holds every seat (self-play: the client answers for ``current_player`` each
    step) or one seat (``reset(seat=k, opponent=...)``: the server plays the other seats, so an
    OpenEnv single-agent client sees an ordinary one-player episode). The top-level ``reward``
    is the held seat's reward, or, holding every seat, the reward of the seat that just moved;
    ``rewards`` has every seat's. The protocol page on seats says why one session per game.
    """

    #: seats in the game
    num_players: int = Field(1, ge=1)
    #: the seat to move next; None once the game is over
    current_player: int | None = None
    #: whose view this observation is (the held seat, or the seat to move)
    seat: int | None = None
    #: this step's reward per seat (the game's returns once it is over); empty at reset
    rewards: list[float] = Field(default_factory=list)


class SeatState(State):
    """A seated game's bookkeeping: seats, the seat to move, the held seat (None: all)."""

    num_players: int = Field(1, ge=1)
    current_player: int | None = None
    held_seat: int | None = None
    returns: list[float] = Field(default_factory=list)


def check_seat_reset(seed: Any, seat: Any, moves: Any, *, num_players: int, max_moves: int) -> None:
    """The ``reset`` arguments every seated env takes (``seed``, ``seat``, ``moves``), checked
    the same way everywhere: a ``ValueError`` naming the argument and what it must be."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be an integer >= 0 (or omitted), got {seed!r}")
    if seat is not None and (
        isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < num_players
    ):
        raise ValueError(f"seat must be an integer 0..{num_players - 1} (or omitted: every seat)")
    if moves is not None and (
        not isinstance(moves, list)
        or len(moves) > max_moves
        or not all(isinstance(m, str) for m in moves)
    ):
        raise ValueError(f"moves must be a list of at most {max_moves} move strings")
    if moves and seed is None:
        raise ValueError("moves replays a seeded game: give the seed it was played with")


ObsT = TypeVar("ObsT", bound=Observation)
ActT = TypeVar("ActT", bound=Action)
StateT = TypeVar("StateT", bound=State)


@dataclass
class StepResult(Generic[ObsT]):
    """A client's view of one ``reset``/``step`` answer."""

    observation: ObsT
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


class EnvironmentMetadata(BaseModel):
    """Served at ``GET /metadata``."""

    name: str
    description: str = ""
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None
