"""reasoning-gym datasets as typed envs: ``from reasoning_gym_env import AnswerAction, ReasoningGymEnv``."""

from .client import ReasoningGymEnv
from .models import AnswerAction, QuestionObservation, ReasoningGymState

__all__ = ["AnswerAction", "QuestionObservation", "ReasoningGymEnv", "ReasoningGymState"]
