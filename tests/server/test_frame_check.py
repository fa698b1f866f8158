"""One receive path: ``FrameCheck``'s bounds hold the same for every connection kind (standard
``/ws``, batch framing, MCP over ``/mcp``) on both receive paths (push and ASGI loop)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import httpx
import pytest
import websockets
from server_envs import AddAction, AsyncCounterEnv, CounterState, GameTools, TotalObservation
from server_helpers import rpc, wait_until

from openenv_train.core import CallToolAction, CallToolObservation
from openenv_train.server import Limits, create_app
from openenv_train.server.frame_check import GONE, TOO_BIG, FrameCheck
from openenv_train.server.mcp_ws import SESSION_GONE
from openenv_train.server.ws_batch import BATCH_SUBPROTOCOL

pytestmark = pytest.mark.timeout(60)

#: the push path (our protocol class) and the ASGI loop (uvicorn's own class)
PATHS = ["openenv_train.server.wsproto_fast:FastWebSocketsProtocol", "websockets-sansio"]


def test_verdict_order_size_then_rate_then_session():
    session = SimpleNamespace(closed=False, pending_close=False)
    check = FrameCheck(Limits(max_frame_bytes=10, max_messages_per_s=2), session, "gone")
    assert check.verdict("x" * 11) is TOO_BIG
    assert check.verdict("{}") == 0.0 and check.verdict("{}") == 0.0  # one second's burst
    assert 0.0 < check.verdict("{}") <= 0.5  # past the burst: wait, then ask gone()
    assert not check.gone()
    session.pending_close = True
    assert check.gone()
    fresh = FrameCheck(Limits(max_messages_per_s=2), session, "gone")
    assert fresh.verdict("{}") is GONE
    assert FrameCheck(Limits(max_messages_per_s=2)).charge(3) > 0.0  # a batch's sub-frames


@pytest.mark.parametrize("ws", PATHS)
async def test_every_kind_closes_1009_on_an_oversize_message(serve_app, ws):
    limits = Limits(max_frame_bytes=2000)
    counter = create_app(AsyncCounterEnv, AddAction, TotalObservation, CounterState, limits=limits)
    tools = create_app(GameTools, CallToolAction, CallToolObservation, limits=limits)
    s, t = serve_app(counter, ws=ws), serve_app(tools, ws=ws)
    big = "x" * 3000
    async with websockets.connect(s.ws_url) as c:
        assert (await rpc(c, {"type": "reset"}))["type"] == "observation"
        await c.send(big)
        await asyncio.wait_for(c.wait_closed(), 10)
        assert c.close_code == 1009
    async with websockets.connect(s.ws_url, subprotocols=[BATCH_SUBPROTOCOL]) as c:
        frames = [{"session": 1, "type": "reset"}]
        reply = await rpc(c, {"type": "batch", "frames": frames})
        assert reply["frames"][0]["type"] == "observation"
        await c.send(big)
        await asyncio.wait_for(c.wait_closed(), 10)
        assert c.close_code == 1009
    async with websockets.connect(t.ws_url.replace("/ws", "/mcp")) as c:
        listed = await rpc(c, {"jsonrpc": "2.0", "method": "tools/list", "id": 1})
        assert "add" in {tool["name"] for tool in listed["result"]["tools"]}
        assert (await rpc(c, "not json"))["error"]["code"] == -32700
        await c.send(big)
        await asyncio.wait_for(c.wait_closed(), 10)
        assert c.close_code == 1009
    for url in (s.url, t.url):
        wait_until(lambda u=url: httpx.get(u + "/health").json()["active_sessions"] == 0)


@pytest.mark.parametrize("ws", PATHS)
async def test_mcp_websocket_session_reaped_under_it_answers_gone_and_closes(serve_app, ws):
    app = create_app(
        GameTools, CallToolAction, CallToolObservation, limits=Limits(session_timeout_s=0.3)
    )
    s = serve_app(app, ws=ws)
    async with websockets.connect(s.ws_url.replace("/ws", "/mcp")) as c:
        listed = await rpc(c, {"jsonrpc": "2.0", "method": "tools/list", "id": 1})
        assert listed["result"]["tools"]
        await asyncio.to_thread(
            wait_until, lambda: httpx.get(s.url + "/sessions").json()["reaped"] == 1
        )
        reply = await rpc(c, {"jsonrpc": "2.0", "method": "tools/list", "id": 2})
        assert reply["error"]["message"] == SESSION_GONE
        await asyncio.wait_for(c.wait_closed(), 10)
        assert c.close_code == 1000
