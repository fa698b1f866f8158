"""Our clients drive a real OpenEnv 0.10 server (``openenv.core.env_server.create_app``) running
envs written with OpenEnv's own API (``tests/client/oe_apps.py``): reset/step/state/close, typed
error frames, concurrent sessions, capacity, timeouts, and MCP tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from child_env import with_pythonpath
from server_helpers import until

pytest.importorskip("openenv.core.env_server")

from openenv_train.client import EnvClient, GenericEnvClient, MCPToolClient, ToolCallError  # noqa: E402
from openenv_train.client.transport import WebSocketTransport  # noqa: E402
from openenv_train.core import (  # noqa: E402
    Action,
    ActionValidationError,
    CapacityReachedError,
    EnvExecutionError,
    ErrorCode,
    Observation,
    RequestTimeoutError,
    SessionClosedError,
    State,
    ToolErrorType,
)
from openenv_train.runtime import LocalProcessProvider  # noqa: E402

pytestmark = pytest.mark.interop

APPS_DIR = Path(__file__).resolve().parents[1] / "client"


class OEAction(Action):
    message: str
    sleep_s: float = 0.0
    fail: bool = False
    done_file: str = ""


class OEObservation(Observation):
    echoed_message: str = ""
    step_count: int = 0


class OEState(State):
    seed: int | None = None
    last_message: str = ""


class OEClient(EnvClient[OEAction, OEObservation, OEState]):
    action_cls, observation_cls, state_cls = OEAction, OEObservation, OEState


@pytest.fixture(scope="module")
def oe_url() -> Iterator[str]:
    """One OpenEnv 0.10 server process: ``/`` echo env (64 sessions), ``/cap`` (1), ``/tools`` (MCP)."""
    env = with_pythonpath(APPS_DIR)
    with LocalProcessProvider("oe_apps:app", env=env, startup_timeout=180) as p:
        yield p.base_url  # type: ignore[misc]


async def test_reset_step_state_close(oe_url: str) -> None:
    async with OEClient(oe_url) as env:
        r = await env.reset(seed=42, episode_id="oe-1")
        assert r.observation.echoed_message.startswith("ready seed=42")
        assert (r.reward, r.done) == (0.0, False)
        r = await env.step(OEAction(message="hello"))
        assert (r.observation.echoed_message, r.observation.step_count, r.reward) == (
            "hello",
            1,
            5.0,
        )
        assert r.observation.metadata == {"step": 1}
        assert (await env.step(OEAction(message="bye"))).done is True
        state = await env.state()
        assert (state.episode_id, state.step_count, state.seed, state.last_message) == (
            "oe-1",
            2,
            42,
            "bye",
        )
    assert not env.connected


async def test_error_frames_are_typed(oe_url: str) -> None:
    async with OEClient(oe_url) as env:
        await env.reset()
        with pytest.raises(EnvExecutionError) as exc:
            await env.step(OEAction(message="x", fail=True))
        assert exc.value.code == ErrorCode.EXECUTION_ERROR
        assert "env refused message 'x'" in exc.value.message
        assert (await env.step(OEAction(message="alive"))).observation.step_count == 1
    async with GenericEnvClient(oe_url) as raw:
        await raw.reset()
        with pytest.raises(ActionValidationError) as exc:
            await raw.step({"mesage": "typo"})
        assert exc.value.code == ErrorCode.VALIDATION_ERROR
        assert exc.value.errors and exc.value.message == "Invalid message"
        assert (await raw.step({"message": "ok"})).observation["echoed_message"] == "ok"
        assert (await raw.state())["last_message"] == "ok"


async def test_concurrent_sessions_are_isolated(oe_url: str) -> None:
    async def episode(i: int) -> str:
        async with OEClient(oe_url) as env:
            await env.reset(seed=i)
            for k in range(3):
                r = await env.step(OEAction(message=f"{i}.{k}"))
                assert (r.observation.echoed_message, r.observation.step_count) == (
                    f"{i}.{k}",
                    k + 1,
                )
            state = await env.state()
            assert state.seed == i
            return state.episode_id or ""

    ids = await asyncio.gather(*(episode(i) for i in range(16)))
    assert len(set(ids)) == 16


async def test_capacity_reached_and_close_frees_the_session(oe_url: str) -> None:
    first = OEClient(oe_url + "/cap")
    await first.reset(seed=1)
    second = OEClient(oe_url + "/cap")
    with pytest.raises(CapacityReachedError) as exc:
        await second.reset()
    assert exc.value.data == {"active_sessions": 1, "max_sessions": 1}
    await first.close()
    for _ in range(100):
        try:
            await second.reset(seed=2)
            break
        except CapacityReachedError:
            await asyncio.sleep(0.05)
    else:
        pytest.fail("OpenEnv never freed the closed session")
    assert (await second.state()).seed == 2
    await second.close()


async def test_timeout_never_mismatches_replies(oe_url: str, tmp_path: Path) -> None:
    env = OEClient(oe_url, timeout=0.5)
    await env.reset(seed=3)
    done = tmp_path / "slow-step-done"
    with pytest.raises(RequestTimeoutError):
        await env.step(OEAction(message="slow", sleep_s=1.5, done_file=str(done)))
    with pytest.raises(SessionClosedError, match="reset\\(\\)"):
        await env.step(OEAction(message="fast"))
    await until(done.exists, 20, "the slow step to end on the server")  # its reply exists now
    assert (await env.reset(seed=4)).observation.echoed_message.startswith("ready seed=4")
    r = await env.step(OEAction(message="fast"))
    assert (r.observation.echoed_message, r.observation.step_count) == ("fast", 1)
    await env.close()


async def test_mcp_tools_over_ws(oe_url: str) -> None:
    async with MCPToolClient(oe_url + "/tools", mode="simulation") as env:
        r = await env.reset()
        assert r.observation.metadata == {"status": "ready"}
        tools = {t.name: t for t in await env.list_tools()}
        assert set(tools) == {"echo", "add", "boom"}
        assert tools["add"].input_schema["required"] == ["a", "b"]
        assert await env.call_tool("add", a=2, b=3) == 5
        assert await env.call_tool("echo", message="hi") == "hi"
        with pytest.raises(ToolCallError, match="boom: because") as exc:
            await env.call_tool("boom")
        assert exc.value.error_type == ToolErrorType.EXECUTION_ERROR
        with pytest.raises(ToolCallError) as exc:
            await env.call_tool("missing")
        assert exc.value.error_type == ToolErrorType.TOOL_NOT_FOUND


def test_sync_client(oe_url: str) -> None:
    with OEClient(oe_url).sync() as env:
        assert env.reset(seed=5).observation.echoed_message.startswith("ready seed=5")
        assert env.step(OEAction(message="sync")).observation.echoed_message == "sync"
        assert env.state().step_count == 1


async def test_batching_clients_fall_back_to_plain_sessions(oe_url: str) -> None:
    """OpenEnv's server does not pick the batch subprotocol: our batching clients notice at the
    handshake and each gets a standard one-connection session."""

    class BatchingOEClient(OEClient):
        batch_frames = True

    clients = [BatchingOEClient(oe_url) for _ in range(4)]
    results = await asyncio.gather(*(c.reset(seed=s) for s, c in enumerate(clients)))
    assert [r.observation.echoed_message[:13] for r in results] == [
        f"ready seed={s} " for s in range(4)
    ]
    assert all(isinstance(c.transport, WebSocketTransport) for c in clients)
    steps = await asyncio.gather(
        *(c.step(OEAction(message=f"m{s}")) for s, c in enumerate(clients))
    )
    assert [(r.observation.echoed_message, r.observation.step_count) for r in steps] == [
        (f"m{s}", 1) for s in range(4)
    ]
    await asyncio.gather(*(c.close() for c in clients))
