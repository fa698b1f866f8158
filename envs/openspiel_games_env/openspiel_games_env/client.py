"""``OpenSpielEnv``: the typed client of every ``openspiel/<game>`` env."""

from __future__ import annotations

from openenv_train import EnvClient

from .models import GameAction, GameObservation, GameState


class OpenSpielEnv(EnvClient[GameAction, GameObservation, GameState]):
    """``async with OpenSpielEnv(base_url=...) as env``: ``reset(seed=1)`` then
    ``step(GameAction(move=...))`` for ``observation.current_player`` until ``done``
    (self-play), or ``reset(seed=1, seat=0, opponent="random")`` to hold one seat."""

    action_cls = GameAction
    observation_cls = GameObservation
    state_cls = GameState
