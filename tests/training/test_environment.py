"""MCP tools of a real env server become a TRL environment_factory class with real signatures."""

from __future__ import annotations

import inspect

import pytest

from openenv_train.client import ToolCallError
from openenv_train.core.mcp_types import Tool
from openenv_train.training import make_environment_class
from openenv_train.training.environment_factory import tool_method


def test_tools_become_methods_with_schema_signatures(echo_url: str) -> None:
    cls = make_environment_class(echo_url, name="EchoTools")
    public = {n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}
    assert {"echo_message", "echo_with_length", "reset", "get_reward"} <= public
    sig = inspect.signature(cls.echo_message)
    assert list(sig.parameters) == ["self", "message"]
    assert sig.parameters["message"].annotation is str


def test_transformers_rebuilds_the_tool_schema_from_the_method(echo_url: str) -> None:
    from transformers.utils import get_json_schema

    env = make_environment_class(echo_url)()
    schema = get_json_schema(env.echo_message)["function"]
    assert schema["name"] == "echo_message"
    assert schema["parameters"]["required"] == ["message"]
    assert schema["parameters"]["properties"]["message"]["type"] == "string"
    assert schema["parameters"]["properties"]["message"]["description"]


def test_reset_call_and_reward_go_through_the_session(echo_url: str) -> None:
    env = make_environment_class(echo_url)()
    assert env.reset(prompt="ignored dataset column", seed=3) is None
    assert env.get_reward() is None  # no tool call yet: no reward, not 0
    assert env.echo_message("hello") == "hello"
    assert env.get_reward() == pytest.approx(0.5)  # the echo env's reward: len / 10
    assert '"length": 3' in env.echo_with_length(message="hey")
    assert env.get_reward() == pytest.approx(0.3)
    with pytest.raises(TypeError):
        env.echo_message()  # the required argument is enforced by the generated signature


def test_sum_reward_mode_and_reset_clears(echo_url: str) -> None:
    env = make_environment_class(echo_url, reward_mode="sum")()
    env.reset()
    env.echo_message("ab")
    env.echo_message("abcd")
    assert env.get_reward() == pytest.approx(0.6)
    env.reset()
    assert env.get_reward() is None


def test_tool_error_is_raised_not_swallowed(echo_url: str) -> None:
    bogus = Tool(
        name="no_such_tool",
        description="Missing.",
        input_schema={"type": "object", "properties": {}},
    )
    env = make_environment_class(echo_url, tools=[bogus])()
    env.reset()
    with pytest.raises(ToolCallError, match="no_such_tool"):
        env.no_such_tool()


def test_schema_types_defaults_and_bad_names() -> None:
    tool = Tool(
        name="move",
        description="Move a piece.\n\nMore text.",
        input_schema={
            "type": "object",
            "properties": {
                "steps": {"type": "integer", "description": "How far."},
                "fast": {"type": "boolean", "default": False},
                "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            },
            "required": ["steps"],
        },
    )
    method = tool_method(tool)
    sig = inspect.signature(method)
    assert [p.annotation for p in list(sig.parameters.values())[1:]] == [int, bool, str]
    assert sig.parameters["fast"].default is False
    assert method.__doc__.startswith("Move a piece.") and "steps: How far." in method.__doc__
    for bad in ("reset", "_private", "with-dash", "class"):
        with pytest.raises(ValueError, match=repr(bad)):
            tool_method(Tool(name=bad, description="", input_schema={}))


def test_no_server_url_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="servers"):
        make_environment_class([])
