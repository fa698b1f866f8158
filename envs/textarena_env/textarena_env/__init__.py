"""textarena games as typed envs: ``from textarena_env import MoveAction, TextArenaEnv``."""

from .client import TextArenaEnv
from .models import GameObservation, MoveAction, TextArenaState

__all__ = ["GameObservation", "MoveAction", "TextArenaEnv", "TextArenaState"]
