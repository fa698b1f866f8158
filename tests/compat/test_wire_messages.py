"""OpenEnv's pydantic models of the wire messages (``openenv_train.core.messages``) describe what
our server really sends: each frame of a served env validates against its model, so code written
against OpenEnv's models reads our server, and the models cannot drift from the text encoders."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import websockets

from openenv_train.core.mcp_types import JsonRpcErrorCode
from openenv_train.core.messages import (
    HealthResponse,
    HealthStatus,
    JsonRpcError,
    JsonRpcRequest,
    JsonRpcResponse,
    McpMethod,
    WSErrorCode,
    WSErrorResponse,
    WSMCPMessage,
    WSMCPResponse,
    WSObservationResponse,
    WSResetMessage,
    WSStateMessage,
    WSStateResponse,
    WSStepMessage,
)


@pytest.fixture
def echo_server(serve_app: Any) -> Any:
    from openenv_echo_env.server.app import app

    return serve_app(app)


def test_health_validates(echo_server: Any) -> None:
    health = HealthResponse.model_validate(httpx.get(f"{echo_server.url}/health").json())
    assert health.status is HealthStatus.HEALTHY


def test_mcp_http_error_reply_is_a_jsonrpc_response(echo_server: Any) -> None:
    request = JsonRpcRequest(jsonrpc="2.0", method="no/such", id=7)
    body = httpx.post(f"{echo_server.url}/mcp", json=request.model_dump()).json()
    reply = JsonRpcResponse.model_validate(body)
    assert reply.error is not None and reply.id == 7
    assert reply.error.code == JsonRpcErrorCode.METHOD_NOT_FOUND
    assert JsonRpcError.from_code(JsonRpcErrorCode.METHOD_NOT_FOUND).message in reply.error.message


async def test_ws_frames_validate(echo_server: Any) -> None:
    async with websockets.connect(echo_server.url.replace("http://", "ws://") + "/ws") as ws:

        async def ask(frame: Any) -> dict[str, Any]:
            await ws.send(frame if isinstance(frame, str) else frame.model_dump_json())
            return json.loads(await ws.recv())

        obs = WSObservationResponse.model_validate(await ask(WSResetMessage()))
        assert obs.data["done"] is False
        step = WSStepMessage(
            data={"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "m"}}
        )
        WSObservationResponse.model_validate(await ask(step))
        state = WSStateResponse.model_validate(await ask(WSStateMessage()))
        assert state.data["step_count"] == 1
        listing = JsonRpcRequest(jsonrpc="2.0", method=McpMethod.TOOLS_LIST, id=1)
        mcp = WSMCPResponse.model_validate(
            await ask(WSMCPMessage(data=listing.model_dump(mode="json")))
        )
        tools = JsonRpcResponse.model_validate(mcp.data).result["tools"]
        assert [t["name"] for t in tools] == ["echo_message", "echo_with_length"]
        error = WSErrorResponse.model_validate(await ask("not json"))
        assert WSErrorCode(error.data["code"]) is WSErrorCode.INVALID_JSON
