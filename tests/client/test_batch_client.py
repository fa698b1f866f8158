"""EnvClient with ``batch_frames``: sessions share one batch-framed connection per server and loop,
and behave exactly as one-connection sessions do (errors, timeouts, capacity, reaping)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from client_servers import serve
from ot_apps import TAction, TObservation, TState
from server_helpers import until

from openenv_train.client import EnvClient
from openenv_train.client.batch import BatchTransport
from openenv_train.core import (
    CapacityReachedError,
    EnvExecutionError,
    RequestTimeoutError,
    SessionClosedError,
    SessionError,
)


class BClient(EnvClient[TAction, TObservation, TState]):
    action_cls, observation_cls, state_cls = TAction, TObservation, TState
    batch_frames = True


def _reaped_and_gone(url: str) -> bool:
    """The server's reaper closed the one session, and it is freed."""
    body = httpx.get(url + "/sessions", timeout=10).json()
    return body["reaped"] == 1 and body["active_sessions"] == 0


async def test_sessions_share_one_connection_and_stay_isolated(ot_url: str) -> None:
    clients = [BClient(ot_url) for _ in range(16)]
    resets = await asyncio.gather(*(c.reset(seed=i) for i, c in enumerate(clients)))
    assert [r.observation.echoed_message for r in resets] == [f"ready seed={i}" for i in range(16)]
    assert all(isinstance(c.transport, BatchTransport) for c in clients)
    assert len({id(c.transport.channel) for c in clients}) == 1
    for k in range(3):
        steps = await asyncio.gather(
            *(c.step(TAction(message=f"{i}-{k}")) for i, c in enumerate(clients))
        )
        assert [(s.observation.echoed_message, s.observation.step_count) for s in steps] == [
            (f"{i}-{k}", k + 1) for i in range(16)
        ]
    states = await asyncio.gather(*(c.state() for c in clients))
    assert [s.seed for s in states] == list(range(16))
    with pytest.raises(EnvExecutionError, match="env refused"):
        await clients[0].step(TAction(message="no", fail=True))
    assert (await clients[0].step(TAction(message="on"))).observation.step_count == 4
    await asyncio.gather(*(c.close() for c in clients))
    assert not any(c.connected for c in clients)


async def test_timeout_retires_the_session_and_spares_the_others(
    ot_url: str, tmp_path: Path
) -> None:
    slow, other = BClient(ot_url, timeout=0.5), BClient(ot_url)
    await asyncio.gather(slow.reset(seed=1), other.reset(seed=2))
    done = tmp_path / "slow-step-done"
    with pytest.raises(RequestTimeoutError):
        await slow.step(TAction(message="slow", sleep_s=1.2, done_file=str(done)))
    with pytest.raises(SessionClosedError, match="reset\\(\\)"):
        await slow.step(TAction(message="fast"))
    assert (await other.step(TAction(message="x"))).observation.step_count == 1
    # the late reply exists now (on the shared connection); it must never reach a later call
    await until(done.exists, 20, "the slow step to end on the server")
    assert (await slow.reset(seed=9)).observation.echoed_message == "ready seed=9"
    r = await slow.step(TAction(message="fast"))
    assert (r.observation.echoed_message, r.observation.step_count) == ("fast", 1)
    await asyncio.gather(slow.close(), other.close())


async def test_capacity_is_per_session_on_the_shared_connection(ot_cap_url: str) -> None:
    first, second = BClient(ot_cap_url), BClient(ot_cap_url)
    await first.reset()
    with pytest.raises(CapacityReachedError):
        await second.reset()
    await first.close()
    for _ in range(50):  # the server frees the slot when it handles our close
        try:
            assert (await second.reset(seed=4)).observation.echoed_message == "ready seed=4"
            break
        except CapacityReachedError:
            await asyncio.sleep(0.05)
    else:
        pytest.fail("the closed session's slot was never freed")
    await second.close()


async def test_reaped_session_fails_clearly_and_reset_starts_a_new_one() -> None:
    with serve("ot_apps:idle_app") as provider:
        async with BClient(provider.base_url) as env:
            await env.reset(seed=1)
            await until(
                lambda: _reaped_and_gone(provider.base_url), 20, "the idle session reaped"
            )  # idle past session_timeout=0.5
            with pytest.raises(SessionError, match="closed"):
                await env.step(TAction(message="late"))
            assert (await env.reset(seed=2)).observation.echoed_message == "ready seed=2"
            assert (await env.step(TAction(message="ok"))).observation.step_count == 1
