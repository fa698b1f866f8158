"""The official MCP SDK client (streamable HTTP) against our env servers' ``/mcp``."""

from __future__ import annotations

import re

import httpx
import pytest
import websockets
from ledger_env import Ledger
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import LATEST_PROTOCOL_VERSION

try:  # mcp 2 renamed it
    from mcp.shared.exceptions import MCPError as McpError
except ImportError:
    from mcp.shared.exceptions import McpError
from server_helpers import wait_until

from openenv_train.core import CallToolAction, CallToolObservation
from openenv_train.server import Limits, create_app
from openenv_train.server.mcp_streamable import SUPPORTED_PROTOCOL_VERSIONS

pytestmark = pytest.mark.timeout(60)


def f(obj, camel: str):
    """An MCP SDK result field: snake_case in mcp 2, camelCase in mcp 1.x."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


#: the version the SDK and our server agree on: the SDK's latest, or ours when the SDK is newer
AGREED = (
    LATEST_PROTOCOL_VERSION
    if LATEST_PROTOCOL_VERSION in SUPPORTED_PROTOCOL_VERSIONS
    else SUPPORTED_PROTOCOL_VERSIONS[-1]
)


@pytest.fixture
def server(serve_app):
    return serve_app(
        create_app(Ledger, CallToolAction, CallToolObservation, limits=Limits(max_sessions=3))
    )


def health(s) -> dict:
    return httpx.get(s.url + "/health").json()


def init_body(version: str = LATEST_PROTOCOL_VERSION, id: int = 1) -> dict:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    return {"jsonrpc": "2.0", "id": id, "method": "initialize", "params": params}


async def test_sdk_client_handshake_tools_ping_and_close(server):
    async with streamable_http_client(server.url + "/mcp") as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            init = await session.initialize()
            assert f(init, "protocolVersion") == AGREED
            assert init.capabilities.tools is not None
            assert f(init, "serverInfo").name == "Ledger"
            if len(streams) == 3:  # mcp 1.x hands out the session id (mcp 2 keeps it inside)
                sid = streams[2]()
                assert sid and len(sid) == 32
            assert httpx.get(server.url + "/sessions").json()["by_kind"] == {"mcp": 1}
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"deposit", "balance", "explode"}
            assert f(tools["deposit"], "inputSchema")["required"] == ["amount"]
            await session.send_ping()
            r = await session.call_tool("deposit", {"amount": 5})
            assert (
                not f(r, "isError")
                and r.content[0].text == "5"
                and f(r, "structuredContent") == {"result": 5}
            )
            r = await session.call_tool("deposit", {"amount": 2})
            assert f(r, "structuredContent") == {"result": 7}  # the same env instance across calls
            r = await session.call_tool("explode", {})
            assert (
                f(r, "isError") and "boom" in r.content[0].text
            )  # shown to the model, not a crash
            r = await session.call_tool("deposit", {"amount": "many"})
            assert f(r, "isError") and "amount" in r.content[0].text
            with pytest.raises(McpError, match="Unknown tool 'nope'"):
                await session.call_tool("nope", {})
            assert f((await session.call_tool("balance", {})), "structuredContent") == {
                "result": {"total": 7}
            }
    # leaving the client sent DELETE /mcp: the session and its env are gone
    wait_until(lambda: health(server)["active_sessions"] == 0, what="MCP session closed")


async def test_each_mcp_session_has_its_own_env(server):
    async with (
        streamable_http_client(server.url + "/mcp") as s1,
        streamable_http_client(server.url + "/mcp") as s2,
        ClientSession(s1[0], s1[1]) as a,
        ClientSession(s2[0], s2[1]) as b,
    ):
        await a.initialize()
        await b.initialize()
        if len(s1) == 3:  # mcp 1.x hands out the session ids
            assert s1[2]() != s2[2]()
        await a.call_tool("deposit", {"amount": 10})
        await b.call_tool("deposit", {"amount": 1})
        assert f((await a.call_tool("balance", {})), "structuredContent") == {
            "result": {"total": 10}
        }
        assert f((await b.call_tool("balance", {})), "structuredContent") == {
            "result": {"total": 1}
        }
        assert health(server)["active_sessions"] == 2
    wait_until(lambda: health(server)["active_sessions"] == 0, what="both sessions closed")


async def test_capacity_is_shared_with_websocket_sessions(server):
    async with websockets.connect(server.ws_url) as w1, websockets.connect(server.ws_url) as w2:
        for ws in (w1, w2):  # hold two of the three slots over /ws
            await ws.send('{"type": "reset", "data": {}}')
            await ws.recv()
        async with (
            streamable_http_client(server.url + "/mcp") as s3,
            ClientSession(s3[0], s3[1]) as third,
        ):
            await third.initialize()
            async with (
                streamable_http_client(server.url + "/mcp") as s4,
                ClientSession(s4[0], s4[1]) as fourth,
            ):
                with pytest.raises(McpError, match="at capacity: 3/3"):
                    await fourth.initialize()
    wait_until(lambda: health(server)["active_sessions"] == 0, what="all sessions closed")


def test_version_negotiation_and_transport_errors(server):
    url = server.url + "/mcp"
    for asked in SUPPORTED_PROTOCOL_VERSIONS:
        r = httpx.post(url, json=init_body(asked))
        assert r.json()["result"]["protocolVersion"] == asked
        httpx.delete(url, headers={"mcp-session-id": r.headers["mcp-session-id"]})
    r = httpx.post(url, json=init_body("1999-01-01"))  # unknown: we offer our latest
    assert r.json()["result"]["protocolVersion"] == SUPPORTED_PROTOCOL_VERSIONS[-1]
    sid = r.headers["mcp-session-id"]
    h = {"mcp-session-id": sid}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(url, json=note, headers=h).status_code == 202
    bad = httpx.post(
        url,
        json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
        headers={**h, "mcp-protocol-version": "1999-01-01"},
    )
    assert bad.status_code == 400 and "mcp-protocol-version" in bad.json()["error"]["message"]
    again = httpx.post(url, json=init_body(id=3), headers=h).json()
    assert again["error"]["code"] == -32600
    bad_init = httpx.post(url, json={"jsonrpc": "2.0", "id": 4, "method": "initialize"}).json()
    assert bad_init["error"]["code"] == -32602 and "protocolVersion" in bad_init["error"]["message"]
    assert httpx.get(url, headers=h).status_code == 405  # no server-push stream
    assert httpx.delete(url, headers=h).status_code == 204
    gone = httpx.post(url, json={"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, headers=h)
    assert gone.status_code == 404 and "initialize again" in gone.json()["error"]["message"]
    assert httpx.delete(url, headers=h).status_code == 404
    assert httpx.delete(url).status_code == 400
    assert health(server)["active_sessions"] == 0


def test_plain_openenv_jsonrpc_still_works_on_the_same_route(server):
    url = server.url + "/mcp"
    listed = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
    assert {t["name"] for t in listed["result"]["tools"]} == {"deposit", "balance", "explode"}
    sid = httpx.post(
        url, json={"jsonrpc": "2.0", "id": 2, "method": "openenv/session/create"}
    ).json()["result"]["session_id"]
    call = {"name": "deposit", "arguments": {"amount": 4}, "session_id": sid}
    r = httpx.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
    assert r.json()["result"]["data"] == 4
    boom = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "explode"}}
    assert httpx.post(url, json=boom).json()["error"]["code"] == -32603  # OpenEnv's code kept
    # a plain session id is not an MCP session: the header route refuses it
    h = {"mcp-session-id": sid}
    assert (
        httpx.post(url, json={"jsonrpc": "2.0", "id": 5, "method": "ping"}, headers=h).status_code
        == 404
    )
    close = {
        "jsonrpc": "2.0",
        "id": 6,
        "method": "openenv/session/close",
        "params": {"session_id": sid},
    }
    assert httpx.post(url, json=close).json()["result"]["closed"] is True
    assert health(server)["active_sessions"] == 0


def test_idle_mcp_sessions_are_reaped(serve_app):
    s = serve_app(
        create_app(
            Ledger, CallToolAction, CallToolObservation, limits=Limits(session_timeout_s=0.3)
        )
    )
    r = httpx.post(s.url + "/mcp", json=init_body())
    sid = r.headers["mcp-session-id"]
    wait_until(lambda: health(s)["active_sessions"] == 0, what="idle MCP session reaped")
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert httpx.post(s.url + "/mcp", json=ping, headers={"mcp-session-id": sid}).status_code == 404
