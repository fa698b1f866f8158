"""Session lifecycle: idle reaper, vanished clients, slow envs, shutdown."""

from __future__ import annotations

import asyncio
import socket
import struct

import httpx
import pytest
import websockets
from server_envs import (
    REG,
    AddAction,
    AsyncCounterEnv,
    CounterEnv,
    CounterState,
    TotalObservation,
)
from server_helpers import raw_ws_connect, rpc, until, wait_until
from websockets.exceptions import ConnectionClosed

from openenv_train.server import Limits, create_app

pytestmark = pytest.mark.timeout(60)


def app_for(env_cls=CounterEnv, **kw):
    return create_app(env_cls, AddAction, TotalObservation, CounterState, **kw)


def active(s) -> int:
    return httpx.get(s.url + "/health").json()["active_sessions"]


def reaped(s) -> int:
    return httpx.get(s.url + "/sessions").json()["reaped"]


async def test_idle_session_is_reaped_and_socket_closed(serve_app):
    s = serve_app(
        app_for(limits=Limits(session_timeout_s=1.5))
    )  # room to count it as active before it is reaped
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        assert active(s) == 1
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), timeout=20)
        assert ws.close_code == 1000 and "idle" in (ws.close_reason or "")
    assert active(s) == 0
    assert REG.closed == 1
    assert httpx.get(s.url + "/sessions").json()["reaped"] == 1


async def test_active_session_is_not_reaped(serve_app):
    s = serve_app(app_for(limits=Limits(session_timeout_s=1.0)))
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        for _ in range(25):  # 2.5 s of traffic, more than the timeout
            r = await rpc(ws, {"type": "step", "data": {"n": 1}})
            await asyncio.sleep(0.1)
        assert r["data"]["observation"]["total"] == 25
    assert httpx.get(s.url + "/sessions").json()["reaped"] == 0


async def test_busy_session_is_not_reaped_mid_step(serve_app):
    s = serve_app(app_for(limits=Limits(session_timeout_s=0.2)))
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        pending = asyncio.create_task(rpc(ws, {"type": "step", "data": {"n": 1, "block": True}}))
        await asyncio.to_thread(REG.entered.wait, 10)
        # a session last active after the busy one is reaped: the reaper has run past the busy
        # session's timeout too while its step ran
        async with websockets.connect(s.ws_url) as idle:
            await rpc(idle, {"type": "reset"})
            await until(lambda: reaped(s) == 1, 20, "the reaper to close the idle session")
        REG.release.set()
        r = await asyncio.wait_for(pending, 20)
        assert r["data"]["observation"]["total"] == 1
    assert reaped(s) == 1  # the idle one only


@pytest.mark.parametrize("env_cls", [CounterEnv, AsyncCounterEnv])
def test_vanished_client_frees_its_session(serve_app, env_cls):
    s = serve_app(app_for(env_cls))
    socks = [raw_ws_connect(s.port) for _ in range(3)]
    wait_until(lambda: active(s) == 3, what="3 sessions")
    for sock in socks:  # TCP reset: no close frame, no FIN handshake
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    wait_until(lambda: active(s) == 0, what="sessions freed after TCP reset")
    wait_until(lambda: REG.closed == 3, what="env.close() for each vanished session")


def test_client_that_just_disconnects_frees_its_session(serve_app):
    s = serve_app(app_for())
    sock = raw_ws_connect(s.port)
    wait_until(lambda: active(s) == 1)
    sock.close()  # FIN without a close frame
    wait_until(lambda: active(s) == 0, what="session freed after FIN")
    wait_until(lambda: REG.closed == 1, what="env.close() after FIN")


async def test_slow_sync_env_does_not_stall_other_sessions(serve_app):
    s = serve_app(app_for())
    async with websockets.connect(s.ws_url) as slow, websockets.connect(s.ws_url) as fast:
        await rpc(slow, {"type": "reset"})
        blocked = asyncio.create_task(rpc(slow, {"type": "step", "data": {"n": 1, "block": True}}))
        await asyncio.to_thread(REG.entered.wait, 10)
        # The slow env is now inside step() and will stay there until we release it. If it ran
        # on the event loop, nothing below could complete.
        await asyncio.wait_for(rpc(fast, {"type": "reset", "data": {"seed": 10}}), 10)
        for _ in range(20):
            r = await asyncio.wait_for(rpc(fast, {"type": "step", "data": {"n": 1}}), 10)
        assert r["data"]["observation"]["total"] == 30
        assert (await rpc(fast, {"type": "state"}))["data"]["step_count"] == 20
        assert httpx.get(s.url + "/health").status_code == 200
        assert not blocked.done()
        REG.release.set()
        r = await asyncio.wait_for(blocked, 20)
        assert r["data"]["observation"]["total"] == 1


async def test_shutdown_closes_every_env(serve_app):
    s = serve_app(app_for())
    conns = [await websockets.connect(s.ws_url) for _ in range(3)]
    for c in conns:
        await rpc(c, {"type": "reset"})
    await asyncio.to_thread(s.stop)
    await asyncio.to_thread(wait_until, lambda: REG.closed == 3, 15, "env.close() at shutdown")
    for c in conns:
        await c.close()
