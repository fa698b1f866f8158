"""Which transport each MCP client really used: asserted from what the server saw, per route."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from ledger_env import Ledger
from server_helpers import wait_until
from transport_recorder import TransportRecorder

from openenv_train.client import MCPToolClient, ToolCallError
from openenv_train.core import CallToolAction, CallToolObservation
from openenv_train.server import create_app

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def recorded(serve_app):
    recorder = TransportRecorder(create_app(Ledger, CallToolAction, CallToolObservation))
    return serve_app(recorder), recorder


def active(server) -> int:
    return httpx.get(server.url + "/health").json()["active_sessions"]


async def test_our_client_simulation_sends_tools_as_ws_step_actions(recorded):
    server, rec = recorded
    async with MCPToolClient(server.url, mode="simulation") as env:
        assert {t.name for t in await env.list_tools()} == {"deposit", "balance", "explode"}
        assert await env.call_tool("deposit", amount=3) == 3
    assert rec.routes("step:list_tools") == {"ws /ws"}
    assert rec.routes("step:call_tool") == {"ws /ws"}
    assert not [s for s in rec.seen if s[1] == "/mcp"]  # nothing went over HTTP /mcp


async def test_our_client_production_uses_http_mcp_and_shares_the_env(recorded):
    server, rec = recorded
    env = MCPToolClient(server.url, mode="production")
    try:
        assert {t.name for t in await env.list_tools()} == {"deposit", "balance", "explode"}
        assert await env.call_tool("deposit", amount=4) == 4
        with pytest.raises(ToolCallError, match="boom") as info:
            await env.call_tool("explode")
        assert info.value.error_type == "execution_error"
        assert rec.routes("tools/list") == {"POST /mcp"}
        assert rec.routes("tools/call") == {"POST /mcp"}
        assert rec.routes("openenv/session/create") == {"POST /mcp"}
        assert not [s for s in rec.seen if s[0] == "ws"]  # no WebSocket opened for tool calls
        # reset/step attach the WebSocket to the same session: one env behind both transports
        balance = await env.step(CallToolAction(tool_name="balance"))
        assert balance.observation.result == {"total": 4}
        assert rec.routes("step:call_tool") == {"ws /ws?session_id"}
        assert active(server) == 1
    finally:
        await env.close()
    await asyncio.to_thread(wait_until, lambda: active(server) == 0, 15, "session closed")


async def test_openenv_mcp_tool_client_uses_http_mcp(recorded):
    from openenv.core.mcp_client import MCPToolClient as OpenEnvMCPToolClient

    server, rec = recorded
    with pytest.raises(ValueError, match="only supports 'production'"):
        OpenEnvMCPToolClient(base_url=server.url, mode="simulation")
    async with OpenEnvMCPToolClient(base_url=server.url) as env:
        assert env.use_production_mode
        assert {t.name for t in await env.list_tools()} == {"deposit", "balance", "explode"}
        assert await env.call_tool("deposit", amount=2) == 2
        assert await env.call_tool("balance") == {"total": 2}
    assert rec.routes("tools/list") == {"POST /mcp"}
    assert rec.routes("tools/call") == {"POST /mcp"}
    assert rec.routes("step:call_tool") == set()  # the tools never went over the WebSocket
    await asyncio.to_thread(wait_until, lambda: active(server) == 0, 15, "session closed")


async def test_openenv_generic_client_sends_tool_steps_over_ws(recorded):
    from openenv.core.generic_client import GenericEnvClient

    server, rec = recorded
    async with GenericEnvClient(base_url=server.url) as env:
        await env.reset()
        result = await env.step(
            {"type": "call_tool", "tool_name": "deposit", "arguments": {"amount": 6}}
        )
        assert result.observation["result"] == 6
    assert rec.routes("step:call_tool") == {"ws /ws"}
    assert rec.routes("tools/call") == set()
    await asyncio.to_thread(wait_until, lambda: active(server) == 0, 15, "session closed")
