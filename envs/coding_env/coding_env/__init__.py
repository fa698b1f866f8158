"""Coding env: ``from coding_env import CodeAction, CodingEnv``."""

from .client import CodingEnv
from .models import CodeAction, CodingObservation, CodingState
from .sandbox import Limits, RunResult, run_tests
from .tasks import TASKS, TASKS_BY_ID, Task

__all__ = [
    "TASKS",
    "TASKS_BY_ID",
    "CodeAction",
    "CodingEnv",
    "CodingObservation",
    "CodingState",
    "Limits",
    "RunResult",
    "Task",
    "run_tests",
]
