"""BlackJack env (OpenSpiel rules): ``from blackjack_env import BlackjackAction, BlackjackEnv``."""

from .client import BlackjackEnv
from .game import HIT, STAND, basic_strategy
from .models import BlackjackAction, BlackjackObservation, BlackjackState

__all__ = [
    "HIT",
    "STAND",
    "BlackjackAction",
    "BlackjackEnv",
    "BlackjackObservation",
    "BlackjackState",
    "basic_strategy",
]
