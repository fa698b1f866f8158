"""Wordle env: ``from wordle_env import WordleAction, WordleEnv``."""

from .client import WordleEnv
from .game import WordleGame, partial_credit, render, score_guess
from .models import WordleAction, WordleObservation, WordleState
from .words import WORDS

__all__ = [
    "WORDS",
    "WordleAction",
    "WordleEnv",
    "WordleGame",
    "WordleObservation",
    "WordleState",
    "partial_credit",
    "render",
    "score_guess",
]
