"""``TextArenaEnv``: the typed client of every ``textarena/<game>`` env."""

from __future__ import annotations

from openenv_train import EnvClient

from .models import GameObservation, MoveAction, TextArenaState


class TextArenaEnv(EnvClient[MoveAction, GameObservation, TextArenaState]):
    """``async with TextArenaEnv(base_url=...) as env``: ``reset(seed=1)`` then
    ``step(MoveAction(message="[10]"))`` until ``done``; ``.sync()`` blocks."""

    action_cls = MoveAction
    observation_cls = GameObservation
    state_cls = TextArenaState
