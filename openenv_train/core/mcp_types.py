"""MCP tool actions and observations as they travel over ``/ws`` step frames."""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .models import Action, Observation

RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})


class Tool(BaseModel):
    """An MCP tool spec; every field is required, as in OpenEnv 0.10."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Unique identifier for the tool")
    description: str = Field(description="Human-readable description of what the tool does")
    input_schema: dict[str, Any] = Field(description="JSON Schema for the tool's input parameters")


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


class TypedOrToolAction(Action):
    """Base of an env's own action model that also accepts the MCP ``list_tools``/``call_tool``
    actions, so one env serves typed actions and MCP tools on the same ``/ws`` step (subclass it,
    add your fields, pass it to ``create_app``; the env sees a ``CallToolAction`` for tool calls).
    """

    @model_validator(mode="wrap")
    @classmethod
    def _tool_actions(cls, data: Any, handler: Any) -> Any:
        kind = data.get("type") if isinstance(data, dict) else None
        if kind in MCP_ACTION_TYPES:
            return MCP_ACTION_TYPES[kind].model_validate(data)
        return handler(data)


class JsonRpcErrorCode(IntEnum):
    """JSON-RPC 2.0 error codes used by ``/mcp`` (OpenEnv's enum; members are ints, so
    ``code == -32602`` and JSON encoding work as before). -32000 covers capacity too."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_ERROR = -32000


#: The name this module used before the enum; kept for existing imports.
JsonRpcCode = JsonRpcErrorCode

#: The ``message`` an error reply carries when the caller gives none (JSON-RPC 2.0's wording).
JSONRPC_MESSAGES: dict[int, str] = {
    JsonRpcErrorCode.PARSE_ERROR: "Parse error",
    JsonRpcErrorCode.INVALID_REQUEST: "Invalid Request",
    JsonRpcErrorCode.METHOD_NOT_FOUND: "Method not found",
    JsonRpcErrorCode.INVALID_PARAMS: "Invalid params",
    JsonRpcErrorCode.INTERNAL_ERROR: "Internal error",
    JsonRpcErrorCode.SERVER_ERROR: "Server error",
}
