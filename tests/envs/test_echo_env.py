"""The echo env through a real server: the seed's quick start verbatim, tools, errors, state."""

from __future__ import annotations

import httpx
import pytest

from openenv_train.client import ToolCallError
from openenv_train.core.mcp_types import CallToolObservation, ListToolsObservation, ToolErrorType


async def test_quick_start_async(echo_url):
    from echo_env import CallToolAction, EchoEnv

    async with EchoEnv(base_url=echo_url) as client:
        result = await client.reset()
        assert result.observation.echoed_message == "Echo environment ready!"
        result = await client.step(
            CallToolAction(tool_name="echo_message", arguments={"message": "Hello, World!"})
        )
        assert result.observation.result == "Hello, World!"
        assert result.reward == pytest.approx(1.3)  # len("Hello, World!") / 10
        assert result.done is False


def test_quick_start_sync(echo_url):
    from echo_env import CallToolAction, EchoEnv

    with EchoEnv(base_url=echo_url).sync() as client:
        result = client.reset()
        assert result.observation.echoed_message == "Echo environment ready!"
        result = client.step(
            CallToolAction(tool_name="echo_message", arguments={"message": "Hello, World!"})
        )
        assert result.observation.result == "Hello, World!"
        assert result.reward == pytest.approx(1.3)
        assert {t.name for t in client.list_tools()} == {"echo_message", "echo_with_length"}
        assert client.call_tool("echo_message", message="blocking") == "blocking"


@pytest.mark.parametrize(("mode", "steps"), [("simulation", 4), ("production", 1)])
async def test_list_tools_and_shortcuts(echo_url, mode, steps):
    """In simulation mode every tool call is a step on the session; in production mode (OpenEnv's
    default for MCP clients) the shortcuts call the tools directly over /mcp, as OpenEnv does."""
    from echo_env import EchoEnv, ListToolsAction

    async with EchoEnv(base_url=echo_url, mode=mode) as env:
        await env.reset()
        obs = (await env.step(ListToolsAction())).observation
        assert isinstance(obs, ListToolsObservation)
        tools = {t.name: t for t in obs.tools}
        assert set(tools) == {"echo_message", "echo_with_length"}
        schema = tools["echo_message"].input_schema
        assert (
            schema["required"] == ["message"]
            and schema["properties"]["message"]["type"] == "string"
        )
        assert "Echo a message back" in tools["echo_message"].description
        assert [t.name for t in await env.list_tools()] == list(tools)
        assert await env.call_tool("echo_message", message="hi") == "hi"
        assert await env.call_tool("echo_with_length", message="four") == {
            "message": "four",
            "length": 4,
        }
        state = await env.state()
        assert state.step_count == steps and state.episode_id


async def test_tool_errors_come_back_and_the_session_survives(echo_url):
    from echo_env import CallToolAction, EchoEnv

    async with EchoEnv(base_url=echo_url) as env:
        await env.reset()
        obs = (await env.step(CallToolAction(tool_name="nope", arguments={}))).observation
        assert isinstance(obs, CallToolObservation) and obs.error is not None
        assert (
            obs.error.error_type == ToolErrorType.TOOL_NOT_FOUND
            and "echo_message" in obs.error.message
        )
        with pytest.raises(ToolCallError, match="message"):
            await env.call_tool("echo_message", text="wrong field")
        with pytest.raises(ToolCallError, match="message"):
            await env.call_tool("echo_message", message=5)
        assert await env.call_tool("echo_message", message="still alive") == "still alive"


async def test_reset_gives_a_fresh_episode(echo_url):
    from echo_env import EchoEnv

    async with EchoEnv(base_url=echo_url) as env:
        await env.reset(episode_id="first")
        await env.call_tool("echo_message", message="x")
        assert (await env.state()).episode_id == "first"
        await env.reset()
        st = await env.state()
        assert st.step_count == 0 and st.episode_id != "first"


def test_http_routes(echo_url):
    with httpx.Client(base_url=echo_url, timeout=10) as http:
        assert http.get("/health").json()["status"] == "healthy"
        assert http.get("/metadata").json()["name"] == "echo_env"
        schema = http.get("/schema").json()
        assert "tool_name" in schema["action"]["properties"]
        assert "echoed_message" in schema["observation"]["properties"]
        body = http.post("/reset", json={}).json()
        assert body["observation"]["echoed_message"] == "Echo environment ready!"


async def test_echo_code_never_hops_to_a_worker_thread(monkeypatch):
    """What the echo env's docstring promises: tools and the reward hook run on the event loop."""
    from echo_env import CallToolAction
    from echo_env.server.environment import EchoEnvironment

    import openenv_train.server.mcp_environment as server_mcp

    def no_hop(*args, **kwargs):
        raise AssertionError("echo_env code was sent to a worker thread")

    monkeypatch.setattr(server_mcp, "run_sync", no_hop)  # a spy on the thread hop, not a fake
    env = EchoEnvironment()
    await env.reset()
    for tool in ("echo_message", "echo_with_length"):
        obs = await env.step(CallToolAction(tool_name=tool, arguments={"message": "hi"}))
        assert obs.error is None and obs.reward == pytest.approx(0.2)
