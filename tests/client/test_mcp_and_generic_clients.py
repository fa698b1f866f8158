"""MCPToolClient and GenericEnvClient against the real echo_env and blackjack_env servers."""

from __future__ import annotations

import pytest
from echo_env import CallToolAction, EchoEnv, ListToolsAction

from openenv_train.client import GenericEnvClient, MCPToolClient, ToolCallError
from openenv_train.core import CallToolObservation, ListToolsObservation, Tool, ToolErrorType


async def test_echo_quick_start_async(echo_url: str) -> None:
    async with EchoEnv(base_url=echo_url) as client:
        result = await client.reset()
        assert result.observation.echoed_message == "Echo environment ready!"
        result = await client.step(
            CallToolAction(tool_name="echo_message", arguments={"message": "Hello, World!"})
        )
        assert isinstance(result.observation, CallToolObservation)
        assert result.observation.result == "Hello, World!"
        assert result.reward is not None
        listed = await client.step(ListToolsAction())
        assert isinstance(listed.observation, ListToolsObservation)
        assert "echo_message" in {t.name for t in listed.observation.tools}


def test_echo_quick_start_sync(echo_url: str) -> None:
    with EchoEnv(base_url=echo_url).sync() as client:
        assert client.reset().observation.echoed_message == "Echo environment ready!"
        r = client.step(
            CallToolAction(tool_name="echo_message", arguments={"message": "Hello, World!"})
        )
        assert r.observation.result == "Hello, World!"
        assert client.call_tool("echo_message", message="via getattr") == "via getattr"
        assert [t.name for t in client.list_tools()][:1] == ["echo_message"]


async def test_list_and_call_tools(echo_url: str) -> None:
    async with MCPToolClient(echo_url) as env:
        await env.reset()
        tools = await env.list_tools()
        assert all(isinstance(t, Tool) for t in tools)
        echo = next(t for t in tools if t.name == "echo_message")
        assert "message" in echo.input_schema["properties"]
        assert await env.call_tool("echo_message", message="hi") == "hi"


async def test_tool_errors_raise_typed(echo_url: str) -> None:
    async with MCPToolClient(echo_url) as env:
        await env.reset()
        with pytest.raises(ToolCallError) as exc:
            await env.call_tool("no_such_tool", x=1)
        assert exc.value.tool_name == "no_such_tool"
        assert exc.value.error_type == ToolErrorType.TOOL_NOT_FOUND
        with pytest.raises(ToolCallError) as exc:
            await env.call_tool("echo_message", wrong_arg="x")
        assert exc.value.error_type == ToolErrorType.INVALID_ARGS
        with pytest.raises(ValueError, match="name"):
            await env.call_tool("")
        assert await env.call_tool("echo_message", message="after errors") == "after errors"


async def test_generic_client_needs_no_env_package(echo_url: str) -> None:
    async with GenericEnvClient(echo_url) as env:
        r = await env.reset()
        assert r.observation["echoed_message"] == "Echo environment ready!"
        r = await env.step(
            {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "x"}}
        )
        assert r.observation["result"] == "x"
        state = await env.state()
        assert isinstance(state, dict) and state["step_count"] == 1
        with pytest.raises(TypeError, match="dict"):
            await env.step("not an action")
