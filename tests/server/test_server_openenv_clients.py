"""OpenEnv 0.10's own clients drive our server (wire compatibility, both MCP transports)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from server_envs import REG, AddAction, CounterEnv, CounterState, GameTools, TotalObservation
from server_helpers import wait_until

from openenv_train.core import CallToolAction, CallToolObservation
from openenv_train.server import create_app

openenv_generic = pytest.importorskip("openenv.core.generic_client")
openenv_mcp = pytest.importorskip("openenv.core.mcp_client")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


async def test_openenv_generic_client(serve_app):
    s = serve_app(create_app(CounterEnv, AddAction, TotalObservation, CounterState))
    async with openenv_generic.GenericEnvClient(base_url=s.url) as c:
        r = await c.reset(seed=3)
        assert r.observation["total"] == 3 and r.done is False
        r = await c.step({"n": 2})
        assert r.observation["total"] == 5 and r.reward == 2.0
        assert (await c.state())["step_count"] == 1
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            await c.step({"bad": 1})
        assert (await c.step({"n": 2})).observation["total"] == 7  # still the same session
    # OpenEnv's client sends {"type": "close"} and drops the socket without waiting for us.
    await asyncio.to_thread(wait_until, lambda: REG.closed == 1, 15, "env.close()")


async def test_openenv_mcp_tool_client_production_uses_http_mcp(serve_app):
    s = serve_app(create_app(GameTools, CallToolAction, CallToolObservation, mode="production"))
    async with openenv_mcp.MCPToolClient(base_url=s.url) as t:
        assert t.use_production_mode
        assert [x.name for x in await t.list_tools()] == ["add", "shout", "explode", "get_score"]
        assert await t.call_tool("add", a=2, b=3) == 5
        assert await t.call_tool("get_score") == {"score": 5}
        # Transport check: the calls went through an HTTP-created session (POST /mcp) that the
        # client's WebSocket attached to, not through a WS-owned session.
        kinds = httpx.get(s.url + "/sessions").json()["by_kind"]
        assert kinds == {"http": 1}
        with pytest.raises(RuntimeError, match="boom"):
            await t.call_tool("explode")
    await asyncio.to_thread(wait_until, lambda: REG.closed == 1, 15, "env.close()")
    assert httpx.get(s.url + "/health").json()["active_sessions"] == 0
