"""OpenEnv's MCP environment API, from its documented behaviour: tools declared on a FastMCP
server, sync ``step``, mode-aware tools, code mode, FastMCP ``Context`` session state, and the
``/mcp`` wire (HTTP and WebSocket). One env class body is written once and built on either
implementation's base classes; the wire tests run against our server and OpenEnv 0.10's.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import types
from typing import Any
from uuid import uuid4

import httpx
import pytest
import websockets

import openenv_train
from openenv_train.core.mcp_types import JsonRpcErrorCode, Tool
from openenv_train.core.wire import deserialize_action_with_preprocessing

fastmcp = pytest.importorskip("fastmcp")


#: where each name lives in either implementation (the only lines an OpenEnv env changes)
NAMES = {
    "openenv_train": {
        n: "openenv_train"
        for n in (
            "CallToolAction",
            "CallToolObservation",
            "ListToolsAction",
            "MCPEnvironment",
            "Observation",
            "State",
            "create_app",
        )
    },
    "openenv": {
        "CallToolAction": "openenv.core.env_server.mcp_types",
        "CallToolObservation": "openenv.core.env_server.mcp_types",
        "ListToolsAction": "openenv.core.env_server.mcp_types",
        "MCPEnvironment": "openenv.core.env_server.mcp_environment",
        "Observation": "openenv.core.env_server.types",
        "State": "openenv.core.env_server.types",
        "create_app": "openenv.core.env_server.http_server",
    },
}


def _load(impl: str) -> types.SimpleNamespace:
    found = {n: getattr(importlib.import_module(m), n) for n, m in NAMES[impl].items()}
    return types.SimpleNamespace(**found)


def _ours() -> types.SimpleNamespace:
    return _load("openenv_train")


def _openenv() -> types.SimpleNamespace:
    return _load("openenv")


IMPLS = {"openenv_train": _ours, "openenv": _openenv}


def tools_env(api: Any) -> type:
    """The same env source on either implementation: FastMCP tools, a step counter, a tool
    that reads it, and one that keeps FastMCP Context state."""

    class ToolsEnv(api.MCPEnvironment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            mcp = fastmcp.FastMCP("tools_env")

            @mcp.tool
            def echo_message(message: str) -> str:
                """Echo back the provided message."""
                return message

            @mcp.tool
            def steps() -> int:
                """How many steps this episode has taken."""
                return self._state.step_count

            @mcp.tool
            async def remember(value: str, ctx: fastmcp.Context) -> str:
                """Store value in the session; answer the one stored before."""
                before = await ctx.get_state("value")
                await ctx.set_state("value", value)
                return str(before)

            super().__init__(mcp)
            self._state = api.State(episode_id=str(uuid4()), step_count=0)

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> Any:
            self._state = api.State(episode_id=episode_id or str(uuid4()), step_count=0)
            return api.Observation(metadata={"status": "ready", "seed": seed})

        def _step_impl(self, action: Any, timeout_s: float | None = None, **kw: Any) -> Any:
            return api.Observation(metadata={"error": f"unknown action {type(action).__name__}"})

        def step(self, action: Any, timeout_s: float | None = None, **kw: Any) -> Any:
            self._state.step_count += 1
            return super().step(action, timeout_s=timeout_s, **kw)

        async def step_async(self, action: Any, timeout_s: float | None = None, **kw: Any) -> Any:
            self._state.step_count += 1
            return await super().step_async(action, timeout_s=timeout_s, **kw)

        @property
        def state(self) -> Any:
            return self._state

        def get_metadata(self) -> Any:
            meta = super().get_metadata()
            return meta.model_copy(update={"name": "tools_env", "description": "FastMCP tools"})

    return ToolsEnv


@pytest.fixture(params=list(IMPLS))
def impl(request: pytest.FixtureRequest) -> str:
    if request.param == "openenv":
        pytest.importorskip("openenv.core.env_server.mcp_environment")
    return request.param


@pytest.fixture
def server(impl: str, serve_app: Any) -> Any:
    api = IMPLS[impl]()
    kwargs = {"max_concurrent_envs": 4} if impl == "openenv" else {}
    app = api.create_app(tools_env(api), api.CallToolAction, api.CallToolObservation, **kwargs)
    return serve_app(app)


def rpc(method: str, params: dict[str, Any] | None = None, rid: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": rid}


def tool_value(reply: dict[str, Any]) -> Any:
    assert "error" not in reply or reply["error"] is None, reply
    return reply["result"]["data"]


# ---- in process ----------------------------------------------------------------------------


def test_sync_step_returns_observations(impl: str) -> None:
    api = IMPLS[impl]()
    env = tools_env(api)()
    env.reset()
    listed = env.step(api.ListToolsAction())
    assert {t.name for t in listed.tools} == {"echo_message", "steps", "remember"}
    obs = env.step(api.CallToolAction(tool_name="echo_message", arguments={"message": "Hi!"}))
    assert isinstance(obs, api.CallToolObservation) and obs.error is None
    assert obs.result.data == "Hi!" and env.state.step_count == 2
    missing = env.step(api.CallToolAction(tool_name="nope", arguments={}))
    assert missing.error.error_type.value == "tool_not_found"
    other = env.step(api.Observation())  # not a tool action: the env's _step_impl answers
    assert "unknown action" in other.metadata["error"]
    env.close()


def test_reserved_fastmcp_tool_name_is_a_value_error(impl: str) -> None:
    api = IMPLS[impl]()
    mcp = fastmcp.FastMCP("bad")

    @mcp.tool
    def reset() -> str:
        return "no"

    class Bad(api.MCPEnvironment):
        def reset(self, **kw: Any) -> Any:
            return api.Observation()

        def _step_impl(self, action: Any, **kw: Any) -> Any:
            return api.Observation()

        @property
        def state(self) -> Any:
            return api.State()

    with pytest.raises(ValueError, match="reserved"):
        Bad(mcp)


def test_reserved_tool_method_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="reserved"):

        class Bad(openenv_train.MCPEnvironment):
            @openenv_train.tool(name="step")
            def go(self) -> str:
                """Never registered."""
                return ""


def test_mode_aware_tools_and_code_mode(impl: str) -> None:
    api = IMPLS[impl]()
    env = tools_env(api)()
    env._mode = "simulation"

    @env.tool(mode="simulation")
    def lookup(query: str) -> str:
        """Look something up (fake data)."""
        return f"sim:{query}"

    @env.tool(mode="production")
    def lookup(query: str) -> str:  # noqa: F811 - one tool name, one function per mode
        """Look something up (live)."""
        return f"prod:{query}"

    @env.tool(mode="production")
    def deploy() -> str:
        """Only in production."""
        return "deployed"

    names = {t.name for t in env.step(api.ListToolsAction()).tools}
    assert "lookup" in names and "deploy" not in names
    obs = env.step(api.CallToolAction(tool_name="lookup", arguments={"query": "x"}))
    assert obs.error is None and "sim:x" in json.dumps(obs.model_dump(mode="json"))
    refused = env.step(api.CallToolAction(tool_name="deploy", arguments={}))
    assert refused.error.error_type.value == "tool_not_found"
    assert "simulation" in refused.error.message
    with pytest.raises(ValueError, match="Invalid mode"):
        env.tool(mode="staging")

    assert env.supports_code_mode
    assert {"echo_message", "lookup"} <= set(env.get_callables())
    ran = env.execute_code("result = echo_message('a') + lookup('b')")
    assert ran.metadata == {"result": "asim:b"}
    assert "error" in env.execute_code("result = deploy()").metadata
    assert "Syntax error" in env.execute_code("result = (").metadata["error"]
    env.close()


def test_small_api_details_match_openenv() -> None:
    oe = pytest.importorskip("openenv.core.env_server.mcp_types")
    ser = pytest.importorskip("openenv.core.env_server.serialization")
    for member in oe.JsonRpcErrorCode:
        assert JsonRpcErrorCode[member.name] == member.value == int(member)
    assert isinstance(JsonRpcErrorCode.INVALID_PARAMS, int)
    for model in (Tool, oe.Tool):
        with pytest.raises(ValueError):
            model(name="t")  # description and input_schema are required
    data = {"type": "call_tool", "tool_name": "echo", "arguments": '{"message": "hi"}'}
    ours = deserialize_action_with_preprocessing(data, openenv_train.Action)
    theirs = ser.deserialize_action_with_preprocessing(data, oe.CallToolAction)
    assert ours.arguments == theirs.arguments == {"message": "hi"}


# ---- on the wire, against both servers -----------------------------------------------------


def test_sessionless_mcp_tool_call_needs_no_reset(server: Any) -> None:
    reply = httpx.post(
        f"{server.url}/mcp",
        json=rpc("tools/call", {"name": "echo_message", "arguments": {"message": "hi"}}),
    ).json()
    assert tool_value(reply) == "hi"
    listed = httpx.post(f"{server.url}/mcp", json=rpc("tools/list")).json()
    assert {t["name"] for t in listed["result"]["tools"]} == {"echo_message", "steps", "remember"}


def test_metadata_comes_from_the_envs_get_metadata(server: Any) -> None:
    meta = httpx.get(f"{server.url}/metadata").json()
    assert (meta["name"], meta["description"]) == ("tools_env", "FastMCP tools")


def test_mcp_tool_calls_are_not_steps(server: Any) -> None:
    created = httpx.post(f"{server.url}/mcp", json=rpc("openenv/session/create")).json()
    sid = created["result"]["session_id"]
    for _ in range(2):
        reply = httpx.post(
            f"{server.url}/mcp",
            json=rpc("tools/call", {"name": "steps", "arguments": {}, "session_id": sid}),
        ).json()
        assert tool_value(reply) == 0
    httpx.post(f"{server.url}/mcp", json=rpc("openenv/session/close", {"session_id": sid}))


async def test_mcp_over_websocket_keeps_context_state_per_connection(server: Any) -> None:
    url = server.url.replace("http://", "ws://") + "/mcp"
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps(rpc("tools/list")))
        listed = json.loads(await ws.recv())
        assert "remember" in {t["name"] for t in listed["result"]["tools"]}
        answers = []
        for i, value in enumerate(("one", "two")):
            call = {"name": "remember", "arguments": {"value": value}}
            await ws.send(json.dumps(rpc("tools/call", call, rid=i + 2)))
            answers.append(tool_value(json.loads(await ws.recv())))
        assert answers == ["None", "one"]
    async with websockets.connect(url) as ws:  # a new connection: a new session, fresh state
        await ws.send(
            json.dumps(rpc("tools/call", {"name": "remember", "arguments": {"value": "x"}}))
        )
        assert tool_value(json.loads(await ws.recv())) == "None"


async def test_ws_step_tool_calls_count_and_numeric_string_seed(server: Any, impl: str) -> None:
    reset = httpx.post(f"{server.url}/reset", json={"seed": "5"})
    assert reset.status_code == 200 and reset.json()["observation"]["metadata"]["seed"] == 5
    url = server.url.replace("http://", "ws://") + "/ws"
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": "5"}}))
        seed = json.loads(await ws.recv())["data"]["observation"]["metadata"]["seed"]
        # OpenEnv hands /ws reset data to the env unvalidated ("5"); we validate it as /reset does
        assert seed == 5 if impl == "openenv_train" else seed in (5, "5")
        action = {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "m"}}
        await ws.send(json.dumps({"type": "step", "data": action}))
        step = json.loads(await ws.recv())["data"]
        assert step["observation"]["result"]["data"] == "m"
        await ws.send(json.dumps({"type": "state"}))
        assert json.loads(await ws.recv())["data"]["step_count"] == 1


# ---- ours only: a deliberate difference, and OpenEnv's tools on our server ----------------


async def test_mcp_frames_on_ws_count_as_steps_on_our_server(serve_app: Any) -> None:
    api = _ours()
    server = serve_app(api.create_app(tools_env(api), api.CallToolAction, api.CallToolObservation))
    async with websockets.connect(server.url.replace("http://", "ws://") + "/ws") as ws:
        await ws.send(json.dumps({"type": "reset", "data": {}}))
        await ws.recv()
        call = rpc("tools/call", {"name": "steps", "arguments": {}})
        for expected in (1, 2):  # the step that runs the tool is already counted when it reads
            await ws.send(json.dumps({"type": "mcp", "data": call}))
            assert tool_value(json.loads(await ws.recv())["data"]) == expected


@pytest.fixture
def echo_server(serve_app: Any) -> Any:
    from openenv_echo_env.server.app import app

    return serve_app(app)


async def test_openenv_client_and_validators_on_the_ported_echo_env(echo_server: Any) -> None:
    mcp_client = pytest.importorskip("openenv.core.mcp_client")
    validation = pytest.importorskip("openenv.cli._validation")
    async with mcp_client.MCPToolClient(base_url=echo_server.url, mode="production") as env:
        await env.reset()
        assert [t.name for t in await env.list_tools()] == ["echo_message", "echo_with_length"]
        assert await env.call_tool("echo_message", message="Hello!") == "Hello!"
        assert await env.call_tool("echo_with_length", message="Test") == {
            "message": "Test",
            "length": 4,
        }
        with pytest.raises(RuntimeError, match="nope"):
            await env.call_tool("nope")
    report = validation.validate_running_environment(echo_server.url)
    assert report["passed"], report
    env = {**os.environ, "NO_COLOR": "1"}
    ours = subprocess.run(
        [sys.executable, "-m", "openenv_train.cli.main", "validate", echo_server.url],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert ours.returncode == 0 and "FAIL" not in ours.stdout, ours.stdout + ours.stderr


def test_ported_echo_env_in_process() -> None:
    from openenv_echo_env.server.echo_environment import EchoEnvironment

    env = EchoEnvironment()
    assert env.reset().metadata["status"] == "ready"
    obs = env.step(
        openenv_train.CallToolAction(tool_name="echo_with_length", arguments={"message": "ab"})
    )
    assert obs.result.data == {"message": "ab", "length": 2} and env.state.step_count == 1
    env.close()


async def test_mcp_session_gives_the_connected_fastmcp_client() -> None:
    env = tools_env(_ours())()
    async with env.mcp_session() as client:
        result = await client.call_tool("echo_message", {"message": "direct"})
    assert result.data == "direct"
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        async with env.mcp_session():
            pass


async def test_a_sync_step_override_is_not_bypassed_on_ws(serve_app: Any) -> None:
    """A subclass that overrides only the plain ``step`` keeps it on ``/ws`` (OpenEnv's server
    awaits the base class's ``step_async`` there and skips the override)."""
    api = _ours()
    base = tools_env(api)

    class Counting(base.__mro__[1]):  # MCPEnvironment, with only a sync step override
        def __init__(self) -> None:
            mcp = fastmcp.FastMCP("counting")

            @mcp.tool
            def ping() -> str:
                """Answer pong."""
                return "pong"

            super().__init__(mcp)
            self.calls = 0

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> Any:
            return api.Observation()

        def step(self, action: Any, timeout_s: float | None = None, **kw: Any) -> Any:
            self.calls += 1
            obs = super().step(action, timeout_s=timeout_s, **kw)
            obs.metadata["calls"] = self.calls
            return obs

        @property
        def state(self) -> Any:
            return api.State(step_count=self.calls)

    server = serve_app(api.create_app(Counting, api.CallToolAction, api.CallToolObservation))
    async with websockets.connect(server.url.replace("http://", "ws://") + "/ws") as ws:
        await ws.send(json.dumps({"type": "reset", "data": {}}))
        await ws.recv()
        action = {"type": "call_tool", "tool_name": "ping", "arguments": {}}
        await ws.send(json.dumps({"type": "step", "data": action}))
        step = json.loads(await ws.recv())["data"]
    assert step["observation"]["metadata"]["calls"] == 1
    assert step["observation"]["result"]["data"] == "pong"


def test_a_tools_only_env_may_omit_its_action_and_observation_classes(serve_app: Any) -> None:
    """OpenEnv's ``create_fastapi_app(env=MyMCPEnv, action_cls=None, observation_cls=None)``."""
    from openenv_echo_env.server.echo_environment import EchoEnvironment

    server = serve_app(openenv_train.create_app(EchoEnvironment, None, None))
    assert httpx.get(f"{server.url}/schema").json()["action"]["title"] == "CallToolAction"
    action = {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "m"}}
    reply = httpx.post(f"{server.url}/step", json={"action": action}).json()
    assert reply["observation"]["result"]["data"] == "m"
    with pytest.raises(TypeError, match="action_cls"):
        openenv_train.create_app(openenv_train.Environment, None, None)
