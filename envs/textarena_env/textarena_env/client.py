"""``TextArenaEnv`` (single-player games) and ``TextArenaSeatsEnv`` (two-player games, with seats):
the typed clients of the ``textarena/<game>`` envs."""

from __future__ import annotations

from openenv_train import EnvClient

from .models import (
    GameObservation,
    MoveAction,
    SeatedGameObservation,
    SeatedGameState,
    TextArenaState,
)


class TextArenaEnv(EnvClient[MoveAction, GameObservation, TextArenaState]):
    """``async with TextArenaEnv(base_url=...) as env``: ``reset(seed=1)`` then
    ``step(MoveAction(message="[10]"))`` until ``done``; ``.sync()`` blocks."""

    action_cls = MoveAction
    observation_cls = GameObservation
    state_cls = TextArenaState


class TextArenaSeatsEnv(EnvClient[MoveAction, SeatedGameObservation, SeatedGameState]):
    """The client of the two-player games (``textarena/KuhnPoker-v0``): ``reset(seed=1)`` then
    ``step(MoveAction(message=...))`` for ``observation.current_player`` until ``done``
    (self-play), or ``reset(seed=1, seat=0, opponent="random")`` to hold one seat."""

    action_cls = MoveAction
    observation_cls = SeatedGameObservation
    state_cls = SeatedGameState
