"""Notes env: ``from notes_env import NotesEnv, HarnessAction``."""

from openenv_train.agents.harness_env import HarnessAction, HarnessObservation

from .client import NotesClient
from .server.environment import NotesEnv, notes_task
from .solver import scripted_answer

__all__ = [
    "HarnessAction",
    "HarnessObservation",
    "NotesClient",
    "NotesEnv",
    "notes_task",
    "scripted_answer",
]
