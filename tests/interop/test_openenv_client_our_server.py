"""OpenEnv 0.10's own clients drive our echo and BlackJack servers (the wire-compatibility proof).

Everything here is OpenEnv's code on the client side (``openenv.core``), ours on the server side,
each server a real subprocess on loopback.
"""

from __future__ import annotations

import asyncio

import pytest
from blackjack_env.game import HIT, STAND, BlackjackGame, rank_label

openenv_core = pytest.importorskip("openenv.core")
from openenv.core import GenericEnvClient  # noqa: E402

pytestmark = pytest.mark.interop


async def test_generic_client_plays_blackjack_async(blackjack_url):
    async with GenericEnvClient(base_url=blackjack_url) as env:
        for seed in range(40):
            local = BlackjackGame.deal(seed=seed)
            result = await env.reset(seed=seed)
            obs = result.observation
            assert obs["player_cards"] == local.player and obs["dealer_upcard"] == rank_label(
                local.dealer_upcard
            )
            assert result.done is False and obs["legal_actions"] == [HIT, STAND]
            while not result.done:
                action = HIT if result.observation["player_total"] < 17 else STAND
                local.apply(action)
                result = await env.step({"action": action})
            assert (
                result.reward == local.reward and result.observation["dealer_cards"] == local.dealer
            )
        state = await env.state()
        assert isinstance(state, dict) and state["seed"] == 39 and state["done"] is True
        assert state["step_count"] >= 1 and state["episode_id"]


def test_generic_client_sync_wrapper_and_error_frames(blackjack_url):
    with GenericEnvClient(base_url=blackjack_url).sync() as env:
        first = env.reset(seed=3).observation
        assert first["text"].startswith("player ")
        # a bad action: our VALIDATION_ERROR frame becomes OpenEnv's RuntimeError with the code
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"action": 9})
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.reset(seed=-1)
        result = env.step({"action": "stand"})  # the session survived both errors
        assert result.done is True and result.reward in (-1.0, 0.0, 1.0)
        with pytest.raises(RuntimeError, match=r"call reset\(\).*EXECUTION_ERROR"):
            env.step({"action": 0})  # stepping a finished game
        assert env.reset(seed=3).observation == first  # same seed, same deal, same session
        state = env.state()
        assert state["seed"] == 3 and state["step_count"] == 0 and state["done"] is False


def test_generic_client_plain_with_block(blackjack_url):
    """OpenEnv's documented sync idiom: ``with GenericEnvClient(...) as env: env.reset()``."""
    with GenericEnvClient(base_url=blackjack_url) as env:
        result = env.reset(seed=8)
        while not result.done:
            result = env.step({"action": "hit" if result.observation["player_total"] < 17 else 1})
        assert result.reward in (-1.0, 0.0, 1.0) and result.observation["legal_actions"] == []


def test_generic_client_drives_echo_tools(echo_url):
    with GenericEnvClient(base_url=echo_url).sync() as env:
        result = env.reset()
        assert result.observation["echoed_message"] == "Echo environment ready!"
        tools = env.step({"type": "list_tools"}).observation["tools"]
        assert {t["name"] for t in tools} == {"echo_message", "echo_with_length"}
        assert tools[0]["input_schema"]["properties"]["message"]["type"] == "string"
        result = env.step(
            {
                "type": "call_tool",
                "tool_name": "echo_message",
                "arguments": {"message": "Hello, World!"},
            }
        )
        assert (
            result.observation["result"] == "Hello, World!" and result.observation["error"] is None
        )
        assert result.reward == pytest.approx(1.3)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"type": "call_tool", "arguments": {}})  # no tool_name
        missing = env.step({"type": "call_tool", "tool_name": "nope", "arguments": {}}).observation
        assert missing["error"]["error_type"] == "tool_not_found"
        state = env.state()
        assert state["step_count"] == 3 and state["episode_id"]


async def test_generic_client_async_echo_and_close(echo_url):
    env = GenericEnvClient(base_url=echo_url)
    await env.connect()
    try:
        assert (await env.reset()).observation["message_length"] == 0
        result = await env.step(
            {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "ab"}}
        )
        assert result.observation["result"] == "ab"
    finally:
        await env.close()
    # a fresh client after close gets a fresh session (close really ended the old one)
    async with GenericEnvClient(base_url=echo_url) as again:
        await again.reset()
        assert (await again.state())["step_count"] == 0


async def test_openenv_mcp_tool_client_over_http_mcp(echo_url):
    """OpenEnv's MCPToolClient only speaks production mode: HTTP POST /mcp with JSON-RPC."""
    from openenv.core.mcp_client import MCPToolClient

    async with MCPToolClient(base_url=echo_url) as env:
        names = {t.name for t in await env.list_tools()}
        assert names == {"echo_message", "echo_with_length"}
        assert await env.call_tool("echo_message", message="over http") == "over http"


async def test_openenv_client_beside_our_batching_clients(blackjack_url):
    """Our clients' batch connection is an addition: OpenEnv's client on the same server, at the
    same time, still speaks and gets the standard protocol, and both see the same deals."""
    from blackjack_env import BlackjackAction, BlackjackEnv

    ours = [BlackjackEnv(blackjack_url) for _ in range(4)]
    for client in ours:
        client.batch_frames = True
    async with GenericEnvClient(base_url=blackjack_url) as theirs:
        mine = await asyncio.gather(*(c.reset(seed=s) for s, c in enumerate(ours)))
        assert len({id(c.transport.channel) for c in ours}) == 1  # one shared socket
        for seed, result in enumerate(mine):
            other = await theirs.reset(seed=seed)
            assert other.observation["player_cards"] == result.observation.player_cards
        done = await asyncio.gather(*(c.step(BlackjackAction(action=STAND)) for c in ours))
        assert all(r.done and r.reward in (-1.0, 0.0, 1.0) for r in done)
        assert (await theirs.step({"action": STAND})).done is True
    await asyncio.gather(*(c.close() for c in ours))
