"""Typed action, observation and state of the coding env."""

from __future__ import annotations

from pydantic import Field

from openenv_train import Action, Observation, State


class CodeAction(Action):
    """``{"code": "def add(a, b):\\n    return a + b"}``: Python source defining the task's function."""

    code: str = Field(max_length=65_536, description="Python source that defines the function")


class CodingObservation(Observation):
    """The task (after reset) or the verdict on a submission (after step)."""

    task_id: str = ""
    function: str = ""
    prompt: str = ""
    passed: int = 0
    total: int = 0
    status: str = "ready"
    errors: list[str] = Field(default_factory=list)
    output: str = ""
    attempts_left: int = 0


class CodingState(State):
    seed: int | None = None
    task_id: str = ""
    attempts: int = 0
    best_fraction: float = 0.0
    done: bool = False
