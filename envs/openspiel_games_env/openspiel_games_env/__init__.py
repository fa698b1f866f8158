"""OpenSpiel's two-player games as seated envs (``openspiel/<game>`` in the env catalog).

One session plays one game; every observation names the seat to move and shows what that seat
may see. Hold every seat (self-play) or one (``reset(seat=0, opponent="random")``: the server
plays the others with a built-in opponent: ``random``, ``scripted`` or ``solver``).
"""

from .client import OpenSpielEnv
from .models import GameAction, GameObservation, GameState

__all__ = ["GameAction", "GameObservation", "GameState", "OpenSpielEnv"]
