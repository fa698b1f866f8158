"""Typed action, observation and state of the BlackJack env (shared by server and client)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from openenv_train import Action, Observation, State

from .game import HIT, STAND

_BY_NAME = {"hit": HIT, "stand": STAND}


class BlackjackAction(Action):
    """``action``: 0 = HIT, 1 = STAND. The strings ``"hit"``/``"stand"`` are accepted and stored as ints."""

    action: Literal[0, 1] = Field(description="0 = HIT (take a card), 1 = STAND (dealer plays out)")

    @field_validator("action", mode="before")
    @classmethod
    def _normalise(cls, value: Any) -> Any:
        # An LLM answer or a JSON client may send "hit"/" Stand"; a bool would silently be 0/1.
        if isinstance(value, str):
            key = value.strip().lower()
            if key in _BY_NAME:
                return _BY_NAME[key]
            if key in ("0", "1"):
                return int(key)
        elif isinstance(value, int) and not isinstance(value, bool) and value in (HIT, STAND):
            return value
        raise ValueError(
            f"action must be 0 (hit) or 1 (stand), or the string 'hit' or 'stand'; got {value!r}"
        )


class BlackjackObservation(Observation):
    """What the player may see: own cards, total, softness, the dealer's up card, legal actions.

    ``dealer_upcard`` is the rank label (``"A"``, ``"2"``..``"9"``, ``"10"`` for any ten-value card);
    ``player_cards`` are full cards, rank then suit (``"QH"``). ``dealer_cards`` stays empty until the
    game is over (then it reveals the dealer's whole hand). ``text`` is the compact rendering used in
    LLM prompts, e.g. ``"player 15 soft dealer A"``.
    """

    player_cards: list[str] = Field(default_factory=list)
    player_total: int = 0
    soft: bool = False
    dealer_upcard: str = ""
    legal_actions: list[int] = Field(default_factory=list)
    text: str = ""
    dealer_cards: list[str] = Field(default_factory=list)


class BlackjackState(State):
    """Episode bookkeeping. The dealer's hole card is only listed once the game is over."""

    seed: int | None = None
    player_cards: list[str] = Field(default_factory=list)
    dealer_cards: list[str] = Field(default_factory=list)
    done: bool = False
    reward: float | None = None
