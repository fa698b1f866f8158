"""OpenEnv 0.10's pydantic models of the wire messages, for code that builds or checks frames.

A client or proxy written against OpenEnv imports these (``HealthResponse``, ``WSErrorResponse``,
``JsonRpcRequest``, ``WSMCPMessage``...) to validate what it sends and receives. Our server and
clients do not build them per frame: ``core.wire`` writes the same shapes as text, which is faster;
tests check that the server's real replies validate against these models, so both stay one format.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .errors import ErrorCode
from .mcp_types import JSONRPC_MESSAGES, JsonRpcErrorCode

#: OpenEnv's name for the ``code`` of an error frame (ours adds ``QUOTA_EXCEEDED`` and
#: ``REQUEST_TOO_LARGE``; OpenEnv's seven values are the same).
WSErrorCode = ErrorCode


class ServerMode(str, Enum):
    """``simulation``: the Gym-style reset/step API; ``production``: MCP tools only."""

    SIMULATION = "simulation"
    PRODUCTION = "production"


class HealthStatus(str, Enum):
    """The ``status`` of ``GET /health``."""

    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    DEGRADED = "degraded"


class BaseMessage(BaseModel):
    """A frame with fixed fields: unknown keys are a validation error, as in OpenEnv."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class HealthResponse(BaseMessage):
    """``GET /health``. Extra keys are allowed: our server adds its session counts and readiness."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    status: HealthStatus = HealthStatus.HEALTHY


class WSResetMessage(BaseMessage):
    type: Literal["reset"] = "reset"
    data: dict[str, Any] = Field(default_factory=dict, description="seed, episode_id, ...")


class WSStepMessage(BaseMessage):
    type: Literal["step"] = "step"
    data: dict[str, Any] = Field(description="the action, as the env's action schema says")


class WSStateMessage(BaseMessage):
    type: Literal["state"] = "state"


class WSCloseMessage(BaseMessage):
    type: Literal["close"] = "close"


class WSMCPMessage(BaseMessage):
    """A JSON-RPC request (``tools/list``, ``tools/call``...) sent over ``/ws``."""

    type: Literal["mcp"] = "mcp"
    data: dict[str, Any] = Field(description="the JSON-RPC payload: method, params, id")


#: A client frame on ``/ws``, told apart by ``type`` (MCP frames are ``WSMCPMessage``).
WSIncomingMessage = Annotated[
    WSResetMessage | WSStepMessage | WSStateMessage | WSCloseMessage,
    Field(discriminator="type"),
]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WSObservationResponse(_Reply):
    type: Literal["observation"] = "observation"
    data: dict[str, Any] = Field(description="observation, reward, done")


class WSStateResponse(_Reply):
    type: Literal["state"] = "state"
    data: dict[str, Any]


class WSErrorResponse(_Reply):
    type: Literal["error"] = "error"
    data: dict[str, Any] = Field(description="message and code (a WSErrorCode value)")


class WSMCPResponse(_Reply):
    type: str = "mcp"
    data: dict[str, Any] = Field(description="the JSON-RPC response")


class McpMethod(str, Enum):
    """The MCP methods every server answers."""

    TOOLS_LIST = "tools/list"
    TOOLS_CALL = "tools/call"


class JsonRpcError(_Reply):
    code: int
    message: str
    data: Any = None

    @classmethod
    def from_code(
        cls, code: JsonRpcErrorCode, message: str | None = None, data: Any = None
    ) -> JsonRpcError:
        """An error with JSON-RPC's standard message unless ``message`` is given."""
        return cls(
            code=int(code),
            message=message or JSONRPC_MESSAGES.get(code, "Unknown error"),
            data=data,
        )


class JsonRpcRequest(_Reply):
    jsonrpc: Literal["2.0"]
    method: str
    params: dict[str, Any] = Field(default_factory=dict)
    id: str | int | None = None


class JsonRpcResponse(_Reply):
    """A reply carries ``result`` or ``error``, never both: the dump leaves the other out."""

    jsonrpc: Literal["2.0"] = "2.0"
    result: Any = None
    error: JsonRpcError | None = None
    id: str | int | None = None

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        data: dict[str, Any] = {"jsonrpc": self.jsonrpc, "id": self.id}
        if self.error is not None:
            data["error"] = self.error.model_dump()
        else:
            data["result"] = self.result
        return data

    def model_dump_json(self, **kwargs: Any) -> str:
        return json.dumps(self.model_dump())

    @classmethod
    def success(cls, result: Any, request_id: str | int | None = None) -> JsonRpcResponse:
        return cls(result=result, id=request_id)

    @classmethod
    def error_response(
        cls,
        code: JsonRpcErrorCode,
        message: str | None = None,
        data: Any = None,
        request_id: str | int | None = None,
    ) -> JsonRpcResponse:
        return cls(error=JsonRpcError.from_code(code, message, data), id=request_id)
