"""Guess-the-number env: ``from guess_number_env import GuessAction, GuessNumberEnv``."""

from .client import GuessNumberEnv
from .game import BASELINES, GuessGame, binary_search_budget, play, render, solve_reward
from .models import GuessAction, GuessNumberObservation, GuessNumberState

__all__ = [
    "BASELINES",
    "GuessAction",
    "GuessGame",
    "GuessNumberEnv",
    "GuessNumberObservation",
    "GuessNumberState",
    "binary_search_budget",
    "play",
    "render",
    "solve_reward",
]
