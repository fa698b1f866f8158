"""Echo env models. Tool actions/observations are the shared MCP ones; reset has its own."""

from __future__ import annotations

from openenv_train import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Observation,
    State,
    Tool,
    ToolError,
)

READY_MESSAGE = "Echo environment ready!"


class EchoObservation(Observation):
    """What ``reset`` returns (field names as OpenEnv's echo env, so its users feel at home)."""

    echoed_message: str = ""
    message_length: int = 0


EchoState = State

__all__ = [
    "READY_MESSAGE",
    "CallToolAction",
    "CallToolObservation",
    "EchoObservation",
    "EchoState",
    "ListToolsAction",
    "ListToolsObservation",
    "Tool",
    "ToolError",
]
