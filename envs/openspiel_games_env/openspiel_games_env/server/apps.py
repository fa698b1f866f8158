"""One ASGI app per OpenSpiel game, built on first use: ``openspiel_games_env.server.apps:<game>``.

``uvicorn openspiel_games_env.server.apps:kuhn_poker`` (or ``openenv-train serve
openspiel/kuhn_poker``) serves that game. ``OPENSPIEL_MAX_SESSIONS`` (default 1024) and
``OPENSPIEL_SESSION_TIMEOUT`` (idle seconds, default 300) configure it.
"""

from __future__ import annotations

import functools
from typing import Any

from openenv_train import create_app
from openenv_train.server.member_apps import member_apps, session_limits

from ..games import game_names
from ..models import GameAction, GameObservation, GameState
from .environment import OpenSpielEnvironment


def _build(game: str) -> Any:
    return create_app(
        functools.partial(OpenSpielEnvironment, game),
        GameAction,
        GameObservation,
        GameState,
        limits=session_limits("OPENSPIEL", 1024),
    )


app_for, __getattr__ = member_apps(
    _build,
    lambda game: game in game_names(),
    lambda game: (
        f"no two-player OpenSpiel game {game!r} is served here; `openenv-train envs` lists the "
        "openspiel/<game> names"
    ),
)
