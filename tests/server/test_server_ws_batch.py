"""The ``/ws`` batch extension, driven with a plain ``websockets`` client offering the subprotocol.

Each sub-frame must be answered exactly as on a one-session connection (same checks, same
errors), sessions must stay independent, numbers must never be reused, capacity must hold, and
closing the connection must end every session it carried.
"""

from __future__ import annotations

import json

import pytest
import websockets
from server_envs import REG, AddAction, AsyncCounterEnv, CounterEnv, CounterState, TotalObservation
from server_helpers import wait_until

from openenv_train.server import Limits, create_app
from openenv_train.server.ws_batch import BATCH_SUBPROTOCOL, MAX_BATCH_FRAMES

pytestmark = pytest.mark.timeout(60)


def app_for(env_cls=CounterEnv, **kw):
    return create_app(env_cls, AddAction, TotalObservation, CounterState, **kw)


def connect(url: str):
    return websockets.connect(url, subprotocols=[BATCH_SUBPROTOCOL])


async def batch(ws, *frames: dict, expect: int | None = None) -> dict[int, dict]:
    """Send one batch message; collect replies (over one or more messages) by session number."""
    await ws.send(json.dumps({"type": "batch", "frames": list(frames)}))
    want = len(frames) if expect is None else expect
    out: dict[int, dict] = {}
    while len(out) < want:
        msg = json.loads(await ws.recv())
        assert msg["type"] == "batch", msg
        for f in msg["frames"]:
            out[f.pop("session")] = f
    return out


@pytest.mark.parametrize("env_cls", [CounterEnv, AsyncCounterEnv])
async def test_many_sessions_ride_one_connection(serve_app, env_cls):
    s = serve_app(app_for(env_cls))
    async with connect(s.ws_url) as ws:
        assert ws.subprotocol == BATCH_SUBPROTOCOL
        r = await batch(
            ws, *({"session": k, "type": "reset", "data": {"seed": 10 * k}} for k in range(3))
        )
        assert {k: r[k]["data"]["observation"]["total"] for k in r} == {0: 0, 1: 10, 2: 20}
        r = await batch(
            ws,
            {"session": 0, "type": "step", "data": {"n": 1}},
            {"session": 2, "type": "step", "data": {"n": 5}},
        )
        assert r[0]["data"]["observation"]["total"] == 1
        assert r[2]["data"]["observation"]["total"] == 25 and r[2]["data"]["reward"] == 5.0
        r = await batch(ws, {"session": 1, "type": "state"})
        assert r[1] == {"type": "state", "data": {"episode_id": None, "step_count": 0, "total": 10}}


async def test_a_bad_sub_frame_gets_the_standard_error_and_spares_the_others(serve_app):
    s = serve_app(app_for())
    async with connect(s.ws_url) as ws:
        await batch(ws, *({"session": k, "type": "reset"} for k in range(3)))
        r = await batch(
            ws,
            {"session": 0, "type": "step", "data": {"n": "many"}},
            {"session": 1, "type": "nope"},
            {"session": 2, "type": "step", "data": {"n": 2}},
        )
        assert r[0]["type"] == "error" and r[0]["data"]["code"] == "VALIDATION_ERROR"
        assert "'n'" in r[0]["data"]["message"]
        assert r[1]["data"] == {"message": "Unknown message type: nope", "code": "UNKNOWN_TYPE"}
        assert r[2]["data"]["observation"]["total"] == 2


async def test_malformed_batches_are_refused_whole_and_the_connection_stays(serve_app):
    s = serve_app(app_for())
    async with connect(s.ws_url) as ws:
        for bad, needle in [
            ("not json", "INVALID_JSON"),
            (json.dumps({"type": "step", "data": {"n": 1}}), "on a batch connection"),
            (json.dumps({"type": "batch", "frames": [{"type": "reset"}]}), "frames[0]"),
            (
                json.dumps({"type": "batch", "frames": [{"session": -1, "type": "reset"}]}),
                "frames[0]",
            ),
            (json.dumps({"type": "batch", "frames": [{}] * (MAX_BATCH_FRAMES + 1)}), "at most"),
        ]:
            await ws.send(bad)
            reply = await ws.recv()
            assert json.loads(reply)["type"] == "error" and needle in reply, reply
        r = await batch(ws, {"session": 5, "type": "reset", "data": {"seed": 1}})
        assert r[5]["data"]["observation"]["total"] == 1


async def test_session_numbers_are_never_reused(serve_app):
    s = serve_app(app_for())
    closed = REG.closed
    async with connect(s.ws_url) as ws:
        await batch(ws, {"session": 3, "type": "reset"})
        await ws.send(json.dumps({"type": "batch", "frames": [{"session": 3, "type": "close"}]}))
        wait_until(lambda: REG.closed == closed + 1)
        r = await batch(ws, {"session": 3, "type": "reset"}, {"session": 1, "type": "reset"})
        for k in (1, 3):  # 3 was closed; 1 is below the highest number seen
            assert r[k]["data"]["code"] == "SESSION_ERROR", r[k]
        r = await batch(ws, {"session": 4, "type": "reset", "data": {"seed": 2}})
        assert r[4]["data"]["observation"]["total"] == 2


async def test_capacity_holds_per_session_and_disconnect_ends_every_session(serve_app):
    s = serve_app(app_for(limits=Limits(max_sessions=2)))
    closed = REG.closed
    async with connect(s.ws_url) as ws:
        r = await batch(ws, *({"session": k, "type": "reset"} for k in range(3)))
        refused = [k for k in r if r[k]["type"] == "error"]
        assert len(refused) == 1 and r[refused[0]]["data"]["code"] == "CAPACITY_REACHED"
        assert r[refused[0]]["data"]["max_sessions"] == 2
    wait_until(lambda: REG.closed == closed + 2)
    async with websockets.connect(s.ws_url) as ws:  # room again, on a standard connection
        await ws.send(json.dumps({"type": "reset"}))
        assert json.loads(await ws.recv())["type"] == "observation"
