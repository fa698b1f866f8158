"""One ASGI app per textarena game id, built on first use: ``textarena_env.server.apps:<game id>``.

``uvicorn textarena_env.server.apps:GuessTheNumber-v0`` (or ``openenv-train serve
textarena/GuessTheNumber-v0``) serves that game. ``TEXTARENA_MAX_SESSIONS`` (default 1024) and
``TEXTARENA_SESSION_TIMEOUT`` (idle seconds, default 300) configure it.
"""

from __future__ import annotations

import functools
from typing import Any

from openenv_train import create_app
from openenv_train.server.member_apps import member_apps, session_limits

from ..games import game_ids
from ..models import GameObservation, MoveAction, TextArenaState
from .environment import TextArenaEnvironment


def _build(game: str) -> Any:
    return create_app(
        functools.partial(TextArenaEnvironment, game),
        MoveAction,
        GameObservation,
        TextArenaState,
        limits=session_limits("TEXTARENA", 1024),
    )


app_for, __getattr__ = member_apps(
    _build,
    lambda game: game in game_ids(),
    lambda game: (
        f"no single-player textarena game {game!r} is served here; `openenv-train envs` "
        "lists the textarena/<game id> names"
    ),
)
