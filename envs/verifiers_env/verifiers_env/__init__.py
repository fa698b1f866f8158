"""verifiers environments as typed envs: ``from verifiers_env import AnswerAction, VerifiersEnv``."""

from .client import VerifiersEnv
from .models import AnswerAction, VerifiersObservation, VerifiersState

__all__ = ["AnswerAction", "VerifiersEnv", "VerifiersObservation", "VerifiersState"]
