"""Coding env: ``from coding_env import CodeAction, CodingEnv``."""

from .client import CodingEnv
from .grading import REWARD_RANGE
from .models import CodeAction, CodingObservation, CodingState
from .sandbox import Limits, RunResult, SandboxUnavailable, run_tests
from .tasks import TASKS, TASKS_BY_ID, Task

__all__ = [
    "REWARD_RANGE",
    "TASKS",
    "TASKS_BY_ID",
    "CodeAction",
    "CodingEnv",
    "CodingObservation",
    "CodingState",
    "Limits",
    "RunResult",
    "SandboxUnavailable",
    "Task",
    "run_tests",
]
