"""Frames answered from the protocol's callback (``ws_push``) behave as on the ASGI path."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets
from server_envs import REG, AddAction, AsyncCounterEnv, CounterEnv, CounterState, TotalObservation
from server_helpers import rpc, wait_until
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from openenv_train.server import Limits, create_app
from openenv_train.server.wsproto_fast import FastWebSocketsProtocol

pytestmark = pytest.mark.timeout(60)


def app_for(env_cls=CounterEnv, **kw):
    return create_app(env_cls, AddAction, TotalObservation, CounterState, **kw)


def ws_protocols(s) -> list:
    return [c for c in s.server.server_state.connections if hasattr(c, "conn")]


def step(n: int, **extra) -> dict:
    return {"type": "step", "data": {"n": n, **extra}}


async def test_frames_behind_a_waiting_frame_answer_in_order(serve_app):
    s = serve_app(app_for())  # CounterEnv runs in worker threads: every frame waits
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        (proto,) = ws_protocols(s)
        assert proto.queue.push is not None  # frames are pushed to the endpoint
        await ws.send(json.dumps(step(1, block=True)))
        await asyncio.to_thread(REG.entered.wait, 10)
        for n in range(2, 22):  # queue behind the blocked step, past the read-pause bound
            await ws.send(json.dumps(step(n)))
        await ws.send(json.dumps({"type": "state"}))
        REG.release.set()
        totals = [json.loads(await ws.recv())["data"]["observation"]["total"] for _ in range(21)]
        assert totals == [sum(range(1, n + 1)) for n in range(1, 22)]
        assert json.loads(await ws.recv())["data"]["step_count"] == 21


@pytest.mark.parametrize("env_cls", [CounterEnv, AsyncCounterEnv])
async def test_errors_and_close_frame(serve_app, env_cls):
    s = serve_app(app_for(env_cls))
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        assert (await rpc(ws, "not json"))["data"]["code"] == "INVALID_JSON"
        assert (await rpc(ws, step(1, fail=True)))["data"]["code"] == "EXECUTION_ERROR"
        bad = await rpc(ws, {"type": "step", "data": {"n": "x"}})
        assert bad["data"]["code"] == "VALIDATION_ERROR"
        assert bad["data"]["errors"][0]["loc"] == ["n"]
        assert (await rpc(ws, step(2)))["data"]["observation"]["total"] == 2
        await ws.send(json.dumps({"type": "close"}))
        await asyncio.wait_for(ws.wait_closed(), 10)
        assert ws.close_code == 1000
    wait_until(lambda: httpx.get(s.url + "/health").json()["active_sessions"] == 0)


async def test_session_closed_under_its_socket_gets_session_error(serve_app):
    s = serve_app(app_for(limits=Limits(session_timeout_s=0.3)))
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        await asyncio.to_thread(
            wait_until, lambda: httpx.get(s.url + "/sessions").json()["reaped"] == 1
        )
        await asyncio.wait_for(ws.wait_closed(), 10)  # the reaper closes the socket
        assert ws.close_reason == "session idle timeout"


async def test_plain_uvicorn_launch_gets_the_lean_protocol(serve_app):
    s = serve_app(app_for(AsyncCounterEnv), ws="auto")  # `uvicorn module:app` with no --ws
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        (proto,) = ws_protocols(s)
        assert type(proto) is FastWebSocketsProtocol and proto.queue.push is not None
        assert (await rpc(ws, step(3)))["data"]["observation"]["total"] == 3


async def test_explicit_ws_choice_is_left_alone(serve_app):
    s = serve_app(app_for(AsyncCounterEnv), ws="websockets-sansio")
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        (proto,) = ws_protocols(s)
        assert type(proto) is WebSocketsSansIOProtocol
        assert (await rpc(ws, step(4)))["data"]["observation"]["total"] == 4


async def test_middleware_that_wraps_receive_keeps_the_asgi_path(serve_app):
    seen: list[str] = []
    inner = app_for(AsyncCounterEnv)

    async def recording(scope, receive, send):
        async def wrapped_receive():
            message = await receive()
            seen.append(message["type"])
            return message

        await inner(scope, wrapped_receive, send)

    recording.limits = inner.limits  # type: ignore[attr-defined]  (found by the protocol)
    s = serve_app(recording)
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        assert (await rpc(ws, step(5)))["data"]["observation"]["total"] == 5
        (proto,) = ws_protocols(s)
        assert proto.queue.push is None
    assert seen.count("websocket.receive") == 2  # every frame went through the middleware


class TaskAwareEnv(CounterEnv):
    """Records the task each step runs in, and waits on every other step (asyncio.timeout and
    libraries like anyio need the current task to be the same from start to end of a call)."""

    tasks: list[object] = []

    async def step(self, action: AddAction) -> TotalObservation:
        me = asyncio.current_task()
        async with asyncio.timeout(5):
            if action.n % 2:
                await asyncio.sleep(0.01)
        assert asyncio.current_task() is me
        type(self).tasks.append(me)
        return TotalObservation(total=action.n)


async def test_frames_run_in_one_task_per_connection(serve_app):
    TaskAwareEnv.tasks = []
    s = serve_app(app_for(TaskAwareEnv))
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        for n in range(1, 7):
            reply = await rpc(ws, step(n))
            assert reply["type"] == "observation", reply
    tasks = TaskAwareEnv.tasks
    assert len(tasks) == 6 and tasks[0] is not None and all(t is tasks[0] for t in tasks)
