"""MCP tool actions and observations as they travel over ``/ws`` step frames."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .models import Action, Observation

RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})


class Tool(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class ToolErrorType(str, Enum):
    EXECUTION_ERROR = "execution_error"
    INVALID_ARGS = "invalid_args"
    TRANSPORT_ERROR = "transport_error"
    TOOL_NOT_FOUND = "tool_not_found"
    TIMEOUT = "timeout"


class ToolError(BaseModel):
    model_config = ConfigDict(extra="forbid")

    error_type: ToolErrorType
    message: str


class ListToolsAction(Action):
    type: Literal["list_tools"] = "list_tools"


class CallToolAction(Action):
    type: Literal["call_tool"] = "call_tool"
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ListToolsObservation(Observation):
    tools: list[Tool]


class CallToolObservation(Observation):
    tool_name: str
    result: Any = None
    error: ToolError | None = None


MCP_ACTION_TYPES: dict[str, type[Action]] = {
    "list_tools": ListToolsAction,
    "call_tool": CallToolAction,
}


class JsonRpcCode:
    """JSON-RPC 2.0 error codes used by ``/mcp`` (OpenEnv uses -32000 for capacity too)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_ERROR = -32000
