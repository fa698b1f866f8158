"""textarena games as typed envs: ``from textarena_env import MoveAction, TextArenaEnv`` (the
single-player games) and ``TextArenaSeatsEnv`` (the two-player games, with seats)."""

from .client import TextArenaEnv, TextArenaSeatsEnv
from .models import (
    GameObservation,
    MoveAction,
    SeatedGameObservation,
    SeatedGameState,
    TextArenaState,
)

__all__ = [
    "GameObservation",
    "MoveAction",
    "SeatedGameObservation",
    "SeatedGameState",
    "TextArenaEnv",
    "TextArenaSeatsEnv",
    "TextArenaState",
]
