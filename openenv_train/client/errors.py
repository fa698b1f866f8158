"""The client's exceptions: a server that cannot be reached or answers outside the protocol
(infrastructure, never a reward) and a tool call that failed (the agent's doing)."""

from __future__ import annotations

from typing import Any

from ..core.errors import ConnectionLostError, InfrastructureError, OpenEnvTrainError
from ..core.mcp_types import ToolErrorType


class UnexpectedFrameError(InfrastructureError):
    """The server answered with a frame that is not the reply the protocol promises."""


class ServerUnreachableError(ConnectionLostError):
    """No WebSocket session could be opened (nothing listening, refused handshake, bad URL)."""


class McpHttpError(InfrastructureError):
    """``/mcp`` could not be reached or answered something that is not JSON-RPC."""


class JsonRpcCallError(Exception):
    """A JSON-RPC error reply: ``code``, ``message`` and ``data`` as the server sent them.

    The reply's wire model is ``core.messages.JsonRpcError`` (OpenEnv's name); this is the
    exception ``McpHttpSession.request`` raises for it.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class ToolCallError(OpenEnvTrainError, RuntimeError):
    """A tool call came back with an error (unknown tool, bad arguments, the tool raised...).

    A ``RuntimeError``, as OpenEnv's ``call_tool`` raises, so ``except RuntimeError`` keeps working.
    """

    def __init__(self, tool_name: str, error_type: ToolErrorType | str, message: str) -> None:
        self.tool_name = tool_name
        self.error_type = error_type
        self.message = message
        kind = error_type.value if isinstance(error_type, ToolErrorType) else error_type
        super().__init__(f"tool {tool_name!r} failed ({kind}): {message}")
