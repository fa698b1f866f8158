"""One ASGI app per textarena game id, built on first use: ``textarena_env.server.apps:<game id>``.

``uvicorn textarena_env.server.apps:GuessTheNumber-v0`` (or ``openenv-train serve
textarena/GuessTheNumber-v0``) serves that game. ``TEXTARENA_MAX_SESSIONS`` (default 1024) and
``TEXTARENA_SESSION_TIMEOUT`` (idle seconds, default 300) configure it.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from openenv_train import create_app

from ..games import game_ids
from ..models import GameObservation, MoveAction, TextArenaState
from .environment import TextArenaEnvironment


@functools.cache
def app_for(game: str) -> Any:
    """The server app of ``game`` (one per process, built once)."""
    if game not in game_ids():
        raise AttributeError(
            f"no single-player textarena game {game!r} is served here; `openenv-train envs` "
            "lists the textarena/<game id> names"
        )
    return create_app(
        functools.partial(TextArenaEnvironment, game),
        MoveAction,
        GameObservation,
        TextArenaState,
        metadata=TextArenaEnvironment.metadata_for(game),
        max_sessions=int(os.environ.get("TEXTARENA_MAX_SESSIONS") or 1024),
        session_timeout=float(os.environ.get("TEXTARENA_SESSION_TIMEOUT") or 300),
    )


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return app_for(name)
