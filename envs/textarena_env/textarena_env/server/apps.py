"""One ASGI app per textarena game id, built on first use: ``textarena_env.server.apps:<game id>``.

``uvicorn textarena_env.server.apps:GuessTheNumber-v0`` (or ``openenv-train serve
textarena/GuessTheNumber-v0``) serves that game; a two-player id (``KuhnPoker-v0``) is served
with seats. ``TEXTARENA_MAX_SESSIONS`` (default 1024) and ``TEXTARENA_SESSION_TIMEOUT`` (idle
seconds, default 300) configure it.
"""

from __future__ import annotations

import functools
from typing import Any

from openenv_train import create_app
from openenv_train.server.member_apps import member_apps, session_limits

from ..games import GAME_IDS, TWO_PLAYER_GAME_IDS
from ..models import (
    GameObservation,
    MoveAction,
    SeatedGameObservation,
    SeatedGameState,
    TextArenaState,
)
from .environment import TextArenaEnvironment
from .seats import TwoPlayerTextArenaEnvironment


def _build(game: str) -> Any:
    if game in TWO_PLAYER_GAME_IDS:
        return create_app(
            functools.partial(TwoPlayerTextArenaEnvironment, game),
            MoveAction,
            SeatedGameObservation,
            SeatedGameState,
            limits=session_limits("TEXTARENA", 1024),
        )
    return create_app(
        functools.partial(TextArenaEnvironment, game),
        MoveAction,
        GameObservation,
        TextArenaState,
        limits=session_limits("TEXTARENA", 1024),
    )


app_for, __getattr__ = member_apps(
    _build,
    lambda game: game in GAME_IDS or game in TWO_PLAYER_GAME_IDS,
    lambda game: (
        f"no textarena game {game!r} is served here; `openenv-train envs` lists the "
        "textarena/<game id> names"
    ),
)
