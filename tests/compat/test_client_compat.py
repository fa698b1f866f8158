"""OpenEnv 0.10's client API, as its docs and source describe it, on our clients.

Wire behaviour runs against our server and against OpenEnv 0.10's own server (``oe_tools_url``);
the argument handling needs no server.
"""

from __future__ import annotations

import pytest

from openenv_train import client as native
from openenv_train.openenv.client import (
    ClientBootstrap,
    EnvClient,
    GenericAction,
    GenericEnvClient,
    MCPToolClient,
    ToolCallError,
)
from openenv_train.runtime import ContainerProvider, LocalProcessProvider
from openenv_train.runtime.connect import container_provider
from openenv_train.runtime.hub import HubUnreachableError, provider_for_hub_id

URL = "http://127.0.0.1:9"  # never connected to by the argument tests


# ---- constructor arguments ------------------------------------------------------------------


def test_openenv_argument_names_map_onto_ours() -> None:
    c = EnvClient(
        URL,
        connect_timeout_s=3.0,
        message_timeout_s=7.0,
        max_message_size_mb=2,
        websocket_ping_interval_s=15.0,
        websocket_ping_timeout_s=5.0,
        headers={"X-Team": "a"},
    )
    assert (c.connect_timeout, c.timeout, c.max_message_size) == (3.0, 7.0, 2 * 2**20)
    assert (c.ping_interval, c.ping_timeout, c.headers) == (15.0, 5.0, {"X-Team": "a"})
    ours = EnvClient(URL, connect_timeout=3.0, timeout=7.0)
    assert (ours.connect_timeout, ours.timeout) == (3.0, 7.0)


def test_both_spellings_of_one_setting_and_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="connect_timeout_s=.*connect_timeout="):
        EnvClient(URL, connect_timeout=3.0, connect_timeout_s=4.0)
    with pytest.raises(TypeError, match="connect_timeout_s"):
        EnvClient(URL, connect_timeout_seconds=4.0)
    with pytest.raises(ValueError, match="headers"):
        EnvClient(URL, headers={"X": 1})


def test_the_native_client_takes_only_its_own_names() -> None:
    """OpenEnv's spellings live in openenv_train.openenv; the native client refuses them."""
    with pytest.raises(TypeError, match="connect_timeout_s"):
        native.EnvClient(URL, connect_timeout_s=3.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="mode"):
        native.GenericEnvClient(URL, mode="simulation")  # type: ignore[call-arg]
    assert not hasattr(native.EnvClient, "from_docker_image")
    assert native.MCPToolClient(URL).mode == "production"  # mode is native to the MCP client
    assert native.MCPToolClient(URL, mode="simulation").mode == "simulation"
    with pytest.raises(ValueError, match="mode"):
        native.MCPToolClient(URL, mode="turbo")
    assert issubclass(MCPToolClient, native.MCPToolClient)
    assert issubclass(GenericEnvClient, native.GenericEnvClient)


def test_mode_argument_env_var_and_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENENV_CLIENT_MODE", raising=False)
    assert GenericEnvClient(URL).mode == "simulation"
    assert GenericEnvClient(URL, mode="PRODUCTION").mode == "production"
    assert MCPToolClient(URL).mode == "production"  # OpenEnv's MCPToolClient default
    assert MCPToolClient(URL, mode="simulation").mode == "simulation"
    monkeypatch.setenv("OPENENV_CLIENT_MODE", "Production")
    assert GenericEnvClient(URL).mode == "production"
    assert GenericEnvClient(URL, mode="simulation").mode == "simulation"  # the argument wins
    monkeypatch.setenv("OPENENV_CLIENT_MODE", "fast")
    with pytest.raises(ValueError, match="OPENENV_CLIENT_MODE"):
        GenericEnvClient(URL)
    with pytest.raises(ValueError, match="mode"):
        GenericEnvClient(URL, mode="turbo")


def test_generic_action_is_a_dict_of_its_keywords() -> None:
    action = GenericAction(code="print(1)", timeout=3)
    assert action == {"code": "print(1)", "timeout": 3} and isinstance(action, dict)
    assert repr(action) == "GenericAction(code='print(1)', timeout=3)"


def test_tool_call_error_is_a_runtime_error() -> None:
    assert issubclass(ToolCallError, RuntimeError)


# ---- the wire: our server and OpenEnv 0.10's ---------------------------------------------------


@pytest.fixture(params=["ours", "openenv"])
def tools(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(base_url, name of a tool that echoes ``message``) on each server."""
    if request.param == "ours":
        return request.getfixturevalue("echo_url"), "echo_message"
    return request.getfixturevalue("oe_tools_url"), "echo"


@pytest.mark.parametrize("mode", ["production", "simulation"])
async def test_tool_discovery_helpers(tools: tuple[str, str], mode: str) -> None:
    url, echo = tools
    async with MCPToolClient(base_url=url, mode=mode) as env:
        await env.reset()
        assert await env.has_tool(echo) and not await env.has_tool("no_such_tool")
        tool = await env.get_tool(echo)
        assert tool is not None and "message" in tool.input_schema["properties"]
        assert await env.get_tool("no_such_tool") is None
        assert await env.call_tool(echo, message="hi") == "hi"
        try:
            await env.call_tool("no_such_tool", message="x")
        except RuntimeError as err:  # OpenEnv's callers catch RuntimeError
            assert isinstance(err, ToolCallError) and "no_such_tool" in str(err)
        else:
            pytest.fail("an unknown tool must raise")


async def test_production_calls_travel_over_http_mcp(echo_url: str) -> None:
    """Production mode (the default) calls tools over POST /mcp: the WebSocket never sees them."""
    async with MCPToolClient(echo_url) as env:
        await env.reset()
        assert await env.call_tool("echo_message", message="hi") == "hi"
        assert env._http_mcp.session_id is not None  # the /mcp session the socket shares
        assert "session_id=" in env.ws_url


async def test_generic_action_steps_on_both_servers(echo_url: str, oe_tools_url: str) -> None:
    for url, tool in ((echo_url, "echo_message"), (oe_tools_url, "echo")):
        async with GenericEnvClient(url) as env:
            await env.reset()
            action = GenericAction(type="call_tool", tool_name=tool, arguments={"message": "m"})
            result = await env.step(action)
            assert "m" in str(result.observation["result"])


def test_blocking_with_statement(echo_url: str) -> None:
    """``with Client(base_url=...) as env:`` blocks, as OpenEnv 0.10's clients do."""
    with MCPToolClient(base_url=echo_url) as env:
        env.reset()
        assert env.call_tool("echo_message", message="sync") == "sync"


# ---- from_docker_image and from_env ----------------------------------------------------------


def test_from_docker_image_uses_our_hardened_container_provider() -> None:
    provider = container_provider("some/image:1", None, {"engine": "docker"})
    assert isinstance(provider, ContainerProvider) and provider.image == "some/image:1"
    assert provider.user == "10001:10001" and not provider.relax  # hardened by default
    handle = MCPToolClient.from_docker_image("some/image:1")
    assert isinstance(handle, ClientBootstrap) and "not started" in repr(handle)


def test_from_env_runs_an_installed_env_package() -> None:
    provider = provider_for_hub_id("openenv/echo-env", use_docker=False)
    assert isinstance(provider, LocalProcessProvider)
    assert provider.app == "echo_env.server.app:app"
    with MCPToolClient.from_env("openenv/echo_env", use_docker=False).sync() as env:
        env.reset()
        assert env.call_tool("echo_message", message="from the hub id") == "from the hub id"


def test_from_env_without_the_hub_names_the_fix() -> None:
    handle = GenericEnvClient.from_env("nobody/not-installed-env")
    with pytest.raises(HubUnreachableError) as err:
        handle.sync()
    text = str(err.value)
    assert "nobody/not-installed-env" in text and "base_url=" in text
    assert "openenv-train build" in text and "not_installed_env" in text
    with pytest.raises(RuntimeError, match="already resolved"):
        handle.sync()
    with pytest.raises(ValueError, match="org/echo-env"):
        provider_for_hub_id("no-slash")


def test_a_provider_not_started_is_started_on_connect_and_stopped_on_close() -> None:
    """OpenEnv's ``EnvClient(provider=...)``: the server starts with the session; natively a
    client only takes a started one (``runtime.connect_to`` starts it)."""
    provider = LocalProcessProvider("echo_env.server.app:app", startup_timeout=120)
    with pytest.raises(ValueError, match="connect_to"):
        native.GenericEnvClient(provider=provider)
    client = GenericEnvClient(provider=provider)
    assert provider.base_url is None
    with client as env:
        assert provider.base_url is not None and env.base_url == provider.base_url
        env.reset()
        action = GenericAction(
            type="call_tool", tool_name="echo_message", arguments={"message": "m"}
        )
        assert env.step(action).observation["result"] == "m"
    assert provider.base_url is None  # close() stopped the server it started
