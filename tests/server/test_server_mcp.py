"""MCPEnvironment + @tool, MCP actions over /ws, JSON-RPC on POST /mcp and in mcp frames."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import websockets
from server_envs import REG, AddAction, CounterEnv, GameTools, TotalObservation
from server_helpers import rpc, wait_until

from openenv_train.core import (
    CallToolAction,
    CallToolObservation,
    Observation,
)
from openenv_train.server import Limits, MCPEnvironment, create_app, tool

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server(serve_app):
    return serve_app(
        create_app(GameTools, CallToolAction, CallToolObservation, limits=Limits(max_sessions=3))
    )


def post(s, method, params=None, id=1, **extra):
    body = {"jsonrpc": "2.0", "method": method, "id": id, **extra}
    if params is not None:
        body["params"] = params
    return httpx.post(s.url + "/mcp", json=body).json()


# ---- the tool decorator -------------------------------------------------------------------


def test_tools_come_from_signatures_and_docstrings():
    tools = {t.name: t for t in GameTools().list_tools()}
    assert set(tools) == {"add", "shout", "explode", "get_score"}
    add = tools["add"]
    assert add.description == "Add two numbers and bank the sum."
    assert add.input_schema["required"] == ["a"]
    assert add.input_schema["properties"]["a"] == {
        "type": "integer",
        "description": "the first number",
        "title": "A",
    }
    assert add.input_schema["properties"]["b"]["default"] == 1
    assert (
        add.input_schema["properties"]["b"]["description"] == "the second number, defaults to one"
    )
    assert tools["shout"].input_schema["properties"]["text"]["type"] == "string"


@pytest.mark.parametrize("bad", ["reset", "step", "state", "close"])
def test_reserved_tool_names_fail_at_class_definition(bad):
    with pytest.raises(ValueError, match="reserved"):

        class Bad(MCPEnvironment):
            @tool(name=bad)
            def fine_method(self) -> None:
                """x"""


def test_tool_needs_type_hints():
    with pytest.raises(TypeError, match="'x' needs a type hint"):

        class Bad(MCPEnvironment):
            @tool
            def f(self, x) -> None:  # type: ignore[no-untyped-def]
                """x"""


async def test_call_tool_errors_are_observations():
    env = GameTools()
    obs = await env.step_async(CallToolAction(tool_name="nope"))
    assert obs.error.error_type.value == "tool_not_found" and "add" in obs.error.message
    obs = await env.step_async(CallToolAction(tool_name="add", arguments={"a": "x", "c": 1}))
    assert obs.error.error_type.value == "invalid_args"
    assert "'a'" in obs.error.message and "'c'" in obs.error.message
    obs = await env.step_async(CallToolAction(tool_name="explode"))
    assert obs.error.error_type.value == "execution_error" and "boom" in obs.error.message
    obs = await env.step_async(CallToolAction(tool_name="add", arguments={"a": 2}))
    assert obs.error is None and obs.result == 3 and obs.reward == 3.0
    with pytest.raises(TypeError, match="handle_action"):
        await env.step_async(AddAction(n=1))


async def test_handle_action_hook():
    class Mixed(MCPEnvironment):
        def reset(self, **kw):  # type: ignore[no-untyped-def]
            return Observation()

        def handle_action(self, action, **kw):  # type: ignore[no-untyped-def]
            return Observation(reward=float(action.n))

    assert (await Mixed().step_async(AddAction(n=4))).reward == 4.0


# ---- over /ws as step actions -------------------------------------------------------------


async def test_tools_over_ws_step(server):
    async with websockets.connect(server.ws_url) as ws:
        r = await rpc(ws, {"type": "reset"})
        assert r["data"]["observation"]["metadata"] == {"ready": True}
        r = await rpc(ws, {"type": "step", "data": {"type": "list_tools"}})
        names = [t["name"] for t in r["data"]["observation"]["tools"]]
        assert names == ["add", "shout", "explode", "get_score"]
        assert "input_schema" in r["data"]["observation"]["tools"][0]
        r = await rpc(
            ws,
            {
                "type": "step",
                "data": {"type": "call_tool", "tool_name": "add", "arguments": {"a": 5, "b": 5}},
            },
        )
        assert r["data"]["observation"]["result"] == 10 and r["data"]["reward"] == 10.0
        r = await rpc(
            ws,
            {
                "type": "step",
                "data": {"type": "call_tool", "tool_name": "shout", "arguments": {"text": "hi"}},
            },
        )
        assert r["data"]["observation"]["result"] == "HI"
        r = await rpc(
            ws, {"type": "step", "data": {"type": "call_tool", "tool_name": "add", "arguments": {}}}
        )
        assert r["type"] == "observation"
        assert r["data"]["observation"]["error"]["error_type"] == "invalid_args"
        # JSON-RPC in an mcp frame runs on this same session's env.
        r = await rpc(
            ws,
            {
                "type": "mcp",
                "data": {
                    "jsonrpc": "2.0",
                    "method": "tools/call",
                    "id": 7,
                    "params": {"name": "get_score"},
                },
            },
        )
        assert r["type"] == "mcp" and r["data"]["id"] == 7
        assert r["data"]["result"]["data"] == {"score": 10}
        r = await rpc(
            ws,
            {
                "type": "mcp",
                "data": {"jsonrpc": "2.0", "method": "openenv/session/create", "id": 8},
            },
        )
        sid = r["data"]["result"]["session_id"]
        r = await rpc(
            ws,
            {
                "type": "mcp",
                "data": {
                    "jsonrpc": "2.0",
                    "method": "openenv/session/close",
                    "id": 9,
                    "params": {"session_id": sid},
                },
            },
        )
        assert r["data"]["error"]["code"] == -32600
        r = await rpc(ws, {"type": "mcp", "data": "nope"})
        assert r["data"]["error"]["code"] == -32600


# ---- POST /mcp ----------------------------------------------------------------------------


def test_http_tools_list_and_stateless_call(server):
    r = post(server, "tools/list")
    assert r["jsonrpc"] == "2.0" and r["id"] == 1
    add = r["result"]["tools"][0]
    assert add["name"] == "add" and add["inputSchema"]["required"] == ["a"]
    r = post(server, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, id="x")
    assert r["id"] == "x"
    assert r["result"]["data"] == 3 and r["result"]["isError"] is False
    assert r["result"]["content"] == [{"type": "text", "text": "3"}]
    # no session_id: a throw-away env each call, so nothing accumulates
    assert post(server, "tools/call", {"name": "get_score"})["result"]["data"] == {"score": 0}
    assert REG.created == REG.closed


def test_http_session_create_call_close(server):
    sid = post(server, "openenv/session/create")["result"]["session_id"]
    assert httpx.get(server.url + "/health").json()["active_sessions"] == 1
    post(server, "tools/call", {"name": "add", "arguments": {"a": 4}, "session_id": sid})
    r = post(server, "tools/call", {"name": "get_score", "session_id": sid})
    assert r["result"]["data"] == {"score": 5}
    assert post(server, "tools/list", {"session_id": sid})["result"]["tools"]
    assert post(server, "openenv/session/close", {"session_id": sid})["result"] == {
        "session_id": sid,
        "closed": True,
    }
    assert httpx.get(server.url + "/health").json()["active_sessions"] == 0
    r = post(server, "openenv/session/close", {"session_id": sid})
    assert r["error"]["code"] == -32602 and "Unknown session_id" in r["error"]["message"]
    r = post(server, "tools/call", {"name": "get_score", "session_id": sid})
    assert r["error"]["code"] == -32602


async def test_ws_attaches_to_http_session(server):
    sid = post(server, "openenv/session/create")["result"]["session_id"]
    post(server, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}, "session_id": sid})
    async with websockets.connect(f"{server.ws_url}?session_id={sid}") as ws:
        r = await rpc(
            ws,
            {
                "type": "step",
                "data": {"type": "call_tool", "tool_name": "get_score", "arguments": {}},
            },
        )
        assert r["data"]["observation"]["result"] == {"score": 2}
        r = post(server, "openenv/session/close", {"session_id": sid})
        assert r["result"] == {"session_id": sid, "closed": False, "closing": True}
    await asyncio.sleep(0)
    await asyncio.to_thread(
        wait_until, lambda: httpx.get(server.url + "/health").json()["active_sessions"] == 0
    )


def test_jsonrpc_error_codes(server):
    raw = httpx.post(server.url + "/mcp", content=b"{not json").json()
    assert raw["error"]["code"] == -32700
    assert httpx.post(server.url + "/mcp", json=[1]).json()["error"]["code"] == -32600
    assert (
        httpx.post(server.url + "/mcp", json={"method": "tools/list", "id": 1}).json()["error"][
            "code"
        ]
        == -32600
    )
    r = post(server, "tools/list", bogus=1)
    assert r["error"]["code"] == -32600 and "bogus" in r["error"]["message"]
    assert post(server, "resources/list")["error"]["code"] == -32601
    assert post(server, "tools/list", params=[1])["error"]["code"] == -32602
    assert post(server, "tools/call", {"arguments": {}})["error"]["code"] == -32602
    r = post(server, "tools/call", {"name": "nope"})
    assert r["error"]["code"] == -32602 and r["error"]["data"]["error_type"] == "tool_not_found"
    r = post(server, "tools/call", {"name": "add", "arguments": {"a": "x"}})
    assert r["error"]["code"] == -32602 and "'a'" in r["error"]["message"]
    r = post(server, "tools/call", {"name": "explode"})
    assert r["error"]["code"] == -32603 and "boom" in r["error"]["message"]
    assert post(server, "openenv/session/close", {})["error"]["code"] == -32602
    sids = [post(server, "openenv/session/create")["result"]["session_id"] for _ in range(3)]
    r = post(server, "openenv/session/create")
    assert r["error"]["code"] == -32000
    assert r["error"]["data"] == {"active_sessions": 3, "max_sessions": 3}
    for sid in sids:
        post(server, "openenv/session/close", {"session_id": sid})


def test_env_without_mcp_support(serve_app):
    s = serve_app(create_app(CounterEnv, AddAction, TotalObservation))
    r = post(s, "tools/list")
    assert r["error"]["code"] == -32603 and "does not support MCP" in r["error"]["message"]


def test_http_session_is_reaped(serve_app):
    s = serve_app(
        create_app(
            GameTools, CallToolAction, CallToolObservation, limits=Limits(session_timeout_s=0.2)
        )
    )
    post(s, "openenv/session/create")
    wait_until(lambda: httpx.get(s.url + "/health").json()["active_sessions"] == 0)
    wait_until(lambda: REG.closed == 1, what="env.close() of the reaped session")
    assert json.loads(httpx.get(s.url + "/sessions").text)["reaped"] == 1


class SlowTools(MCPEnvironment):
    """A tool that takes a while; every instance logs its calls and its close, in order."""

    log: list[str] = []

    @tool
    async def wait(self, seconds: float) -> str:
        """Sleep, then answer."""
        SlowTools.log.append("call start")
        await asyncio.sleep(seconds)
        SlowTools.log.append("call end")
        return "done"

    def close(self) -> None:
        SlowTools.log.append("close")


class CountingLock(asyncio.Lock):
    """A session lock that counts who asked for it: a test waits on that, not on a sleep."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    async def acquire(self) -> bool:
        self.requests += 1
        return await super().acquire()


def test_http_session_close_waits_for_its_calls_and_later_calls_see_it_closed(serve_app):
    """``openenv/session/close`` over HTTP ran ``env.close()`` under a ``tools/call`` still running
    on that session (and a call queued behind it then ran on the closed env)."""
    SlowTools.log = []
    app = create_app(SlowTools, CallToolAction, CallToolObservation)
    s = serve_app(app)
    sid = post(s, "openenv/session/create")["result"]["session_id"]
    lock = app.sessions.get(sid).lock = CountingLock()  # shows when the close waits its turn
    call = {"name": "wait", "arguments": {"seconds": 0.6}, "session_id": sid}
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(post, s, "tools/call", call)
        wait_until(lambda: SlowTools.log == ["call start"], timeout=5, what="the call to start")
        closing = pool.submit(post, s, "openenv/session/close", {"session_id": sid})
        # the close is queued on the session behind the call (or, before the fix, done)
        wait_until(
            lambda: lock.requests == 2 or closing.done(), timeout=5, what="the close to queue"
        )
        late = post(s, "tools/call", {**call, "arguments": {"seconds": 0}})
        assert first.result()["result"]["data"] == "done"
        assert closing.result()["result"] == {"session_id": sid, "closed": True}
    assert SlowTools.log == ["call start", "call end", "close"]  # nothing ran on a closed env
    # refused: as closed while the close was queued, or as unknown once it was done and the
    # session forgotten (a loaded machine can serve the late call after the close)
    message = late["error"]["message"]
    assert late["error"]["code"] == -32602 and ("closed" in message or "Unknown session" in message)
