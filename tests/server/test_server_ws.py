"""The /ws session protocol: frames, every error code, isolation, capacity."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets
from server_envs import (
    REG,
    AddAction,
    AsyncCounterEnv,
    CounterEnv,
    CounterState,
    InlineCounterEnv,
    PropertyStateEnv,
    TotalObservation,
    failing_factory,
)
from server_helpers import rpc, wait_until
from websockets.exceptions import ConnectionClosed

from openenv_train.server import Limits, create_app

pytestmark = pytest.mark.timeout(60)


def app_for(env_cls=CounterEnv, **kw):
    return create_app(env_cls, AddAction, TotalObservation, CounterState, **kw)


@pytest.mark.parametrize(
    "env_cls", [CounterEnv, AsyncCounterEnv, PropertyStateEnv, InlineCounterEnv]
)
async def test_episode_over_ws(serve_app, env_cls):
    s = serve_app(app_for(env_cls))
    async with websockets.connect(s.ws_url) as ws:
        r = await rpc(ws, {"type": "reset", "data": {"seed": 7, "episode_id": "ep"}})
        assert r == {
            "type": "observation",
            "data": {
                "observation": {"metadata": {}, "total": 7, "seed": 7},
                "reward": None,
                "done": False,
            },
        }
        r = await rpc(ws, {"type": "step", "data": {"n": 2}})
        assert r["type"] == "observation"
        assert r["data"]["observation"]["total"] == 9 and r["data"]["reward"] == 2.0
        st = await rpc(ws, {"type": "state"})
        assert st["type"] == "state"
        assert st["data"]["step_count"] == 1 and st["data"]["total"] == 9
        assert st["data"]["episode_id"] == ("prop" if env_cls is PropertyStateEnv else "ep")
        await ws.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed):
            await ws.recv()
        assert ws.close_code == 1000
    assert REG.closed == 1  # close frame destroys the session and closes its env
    assert httpx.get(s.url + "/health").json()["active_sessions"] == 0


async def test_error_frames_keep_the_session_usable(serve_app):
    s = serve_app(app_for())
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset", "data": {"seed": 1}})

        r = await rpc(ws, "not json")
        assert r["type"] == "error" and r["data"]["code"] == "INVALID_JSON"
        assert r["data"]["message"].startswith("Invalid JSON:")

        r = await rpc(ws, {"type": "nope"})
        assert r["data"] == {"message": "Unknown message type: nope", "code": "UNKNOWN_TYPE"}
        r = await rpc(ws, {"data": {}})
        assert r["data"]["code"] == "UNKNOWN_TYPE"

        r = await rpc(ws, {"type": "step", "data": {"n": "x", "colour": 1}})
        assert r["data"]["code"] == "VALIDATION_ERROR"
        assert {tuple(e["loc"]) for e in r["data"]["errors"]} == {("n",), ("colour",)}
        assert "'n'" in r["data"]["message"] and "'colour'" in r["data"]["message"]

        r = await rpc(ws, {"type": "step"})
        assert r["data"]["code"] == "VALIDATION_ERROR" and r["data"]["errors"][0]["loc"] == ["data"]
        r = await rpc(ws, {"type": "step", "action": {"n": 1}})
        assert r["data"]["code"] == "VALIDATION_ERROR" and "'action'" in r["data"]["message"]
        r = await rpc(ws, {"type": "reset", "data": {"seed": -3}})
        assert r["data"]["code"] == "VALIDATION_ERROR" and r["data"]["errors"][0]["loc"] == ["seed"]
        r = await rpc(ws, "[1, 2]")
        assert r["data"]["code"] == "VALIDATION_ERROR"

        r = await rpc(ws, {"type": "step", "data": {"n": 1, "fail": True}})
        assert r["data"]["code"] == "EXECUTION_ERROR"
        assert r["data"]["message"] == "RuntimeError: asked to fail"

        # After all that, the same session (same env) still works.
        r = await rpc(ws, {"type": "step", "data": {"n": 4}})
        assert r["data"]["observation"]["total"] == 5
    assert REG.created == 1


async def test_binary_frames_are_accepted(serve_app):
    s = serve_app(app_for())
    async with websockets.connect(s.ws_url) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": 2}}).encode())
        assert json.loads(await ws.recv())["data"]["observation"]["total"] == 2


async def test_async_env_exception_is_execution_error(serve_app):
    s = serve_app(app_for(AsyncCounterEnv))
    async with websockets.connect(s.ws_url) as ws:
        r = await rpc(ws, {"type": "step", "data": {"n": 1, "fail": True}})
        assert (
            r["data"]["code"] == "EXECUTION_ERROR"
            and "async env asked to fail" in r["data"]["message"]
        )


async def test_sessions_are_isolated(serve_app):
    s = serve_app(app_for())

    async def episode(i: int) -> tuple[int, int]:
        async with websockets.connect(s.ws_url) as ws:
            await rpc(ws, {"type": "reset", "data": {"seed": i}})
            for _ in range(i % 5 + 1):
                last = await rpc(ws, {"type": "step", "data": {"n": i}})
            st = await rpc(ws, {"type": "state"})
            return last["data"]["observation"]["total"], st["data"]["step_count"]

    results = await asyncio.gather(*(episode(i) for i in range(40)))
    for i, (total, steps) in enumerate(results):
        assert steps == i % 5 + 1
        assert total == i + i * steps
    assert REG.created == 40
    # Closing is the server's reaction to each client's close; wait for all 40 of them.
    await asyncio.to_thread(wait_until, lambda: REG.closed == 40, 15, "40 env.close() calls")


async def test_capacity_reached_then_freed(serve_app):
    s = serve_app(app_for(limits=Limits(max_sessions=2)))
    a = await websockets.connect(s.ws_url)
    b = await websockets.connect(s.ws_url)
    await rpc(a, {"type": "reset"})
    await rpc(b, {"type": "reset"})
    async with websockets.connect(s.ws_url) as c:
        r = json.loads(await c.recv())
        assert r["type"] == "error"
        assert r["data"]["code"] == "CAPACITY_REACHED"
        assert r["data"]["active_sessions"] == 2 and r["data"]["max_sessions"] == 2
        assert "max_sessions" in r["data"]["message"]
        with pytest.raises(ConnectionClosed):
            await c.recv()
    assert httpx.get(s.url + "/health").json()["active_sessions"] == 2
    await a.close()
    await asyncio.to_thread(
        wait_until, lambda: httpx.get(s.url + "/health").json()["active_sessions"] == 1
    )
    async with websockets.connect(s.ws_url) as d:
        assert (await rpc(d, {"type": "reset", "data": {"seed": 3}}))["type"] == "observation"
    await b.close()


async def test_factory_error_frame(serve_app):
    s = serve_app(create_app(failing_factory, AddAction, TotalObservation))
    async with websockets.connect(s.ws_url) as ws:
        r = json.loads(await ws.recv())
        assert r["data"]["code"] == "FACTORY_ERROR"
        assert r["data"]["factory_name"] == "failing_factory"
        assert "no env for you" in r["data"]["message"]
        with pytest.raises(ConnectionClosed):
            await ws.recv()
    assert httpx.get(s.url + "/health").json()["active_sessions"] == 0


async def test_unknown_attach_session_is_session_error(serve_app):
    s = serve_app(app_for())
    async with websockets.connect(s.ws_url + "?session_id=doesnotexist") as ws:
        r = json.loads(await ws.recv())
        assert r["data"]["code"] == "SESSION_ERROR" and "doesnotexist" in r["data"]["message"]
        with pytest.raises(ConnectionClosed):
            await ws.recv()


async def test_inline_env_is_demoted_when_slow(serve_app, caplog):
    from openenv_train.server.calls import calls_for

    class SlowInline(InlineCounterEnv):
        def step(self, action):
            import time

            time.sleep(0.01)  # over the inline budget: must be moved off the loop
            return super().step(action)

    app = app_for(SlowInline)
    s = serve_app(app)
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        for _ in range(6):
            r = await rpc(ws, {"type": "step", "data": {"n": 1}})
        assert r["data"]["observation"]["total"] == 6
    assert app.sessions.plans[SlowInline].inline is False  # each server keeps its own plan
    assert calls_for(InlineCounterEnv()).inline is True


async def test_quick_sync_env_earns_inline_calls_and_slow_or_opted_out_ones_do_not(serve_app):
    """Default sync envs start in worker threads; only a class whose calls stay quick moves to
    the loop, and ``inline_sync_calls = False`` keeps a class in threads whatever its speed."""
    import threading
    import time

    from openenv_train.server.calls import PROMOTE_AFTER

    seen: dict[str, set[bool]] = {}

    def recorder(name: str, delay: float = 0.0, opt: bool | None = None) -> type[CounterEnv]:
        class Recorded(CounterEnv):
            inline_sync_calls = opt

            def step(self, action):
                if delay:
                    time.sleep(delay)
                worker = threading.current_thread().name.startswith("openenv-env")
                seen.setdefault(name, set()).add(not worker)
                return super().step(action)

        Recorded.__name__ = name
        return Recorded

    quick, slow, opted_out = recorder("Quick"), recorder("Slow", 0.003), recorder("Out", 0, False)
    plans = {}
    for cls in (quick, slow, opted_out):
        app = app_for(cls)
        s = serve_app(app)
        async with websockets.connect(s.ws_url) as ws:
            await rpc(ws, {"type": "reset"})
            # the quick class is promoted after PROMOTE_AFTER quick calls in a row; on a loaded
            # machine a preempted thread breaks a streak now and then (a bounded wait, not a count)
            limit = {quick: 20 * PROMOTE_AFTER, slow: 40}.get(cls, PROMOTE_AFTER + 20)
            n = 0
            while n < limit and not (cls is quick and True in seen.get("Quick", ())):
                r = await rpc(ws, {"type": "step", "data": {"n": 1}})
                n += 1
            assert r["data"]["observation"]["total"] == n
        plans[cls] = app.sessions.plans[cls]
    assert plans[quick].inline is True and seen["Quick"] == {False, True}
    assert plans[slow].inline is False and seen["Slow"] == {False}
    assert plans[opted_out].inline is False and seen["Out"] == {False}
