"""The harbor env's observation and state (tool calls use the MCP action/observation types)."""

from __future__ import annotations

from pydantic import Field

from openenv_train import Observation, State


class HarborObservation(Observation):
    """After ``reset``: the task's name and its ``instruction.md``."""

    task_id: str = ""
    instruction: str = ""
    tool_names: list[str] = Field(default_factory=list)


class HarborState(State):
    task_id: str | None = None
    verified: bool = False
