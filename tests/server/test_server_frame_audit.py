"""The WebSocket frame path audited (issue 41): batch sub-frames for a session still being
opened wait for it, every path and every refused message pays the rate limit, an env built for
a client that left is closed, deep JSON is a ``VALIDATION_ERROR``, and a request carrying both
``Content-Length`` and ``Transfer-Encoding`` closes its connection (no request smuggled behind
it is answered). Each test failed on the code before its fix; each runs on both receive paths
(our protocol classes, as ``openenv-train serve`` runs them, and uvicorn's own, as a plain
``uvicorn module:app`` does).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time

import httpx
import pytest
import websockets
from server_envs import (
    REG,
    AddAction,
    AsyncCounterEnv,
    CounterEnv,
    CounterState,
    GameTools,
    TotalObservation,
)
from server_helpers import read_http_response, rpc, until, wait_until

from openenv_train.core import CallToolAction, CallToolObservation
from openenv_train.server import Limits, create_app
from openenv_train.server.ws_batch import BATCH_SUBPROTOCOL, MAX_BATCH_FRAMES

pytestmark = pytest.mark.timeout(90)

#: (http, ws) protocol classes: ``openenv-train serve``'s, and plain uvicorn's
LAUNCHES = {
    "ours": {},
    "uvicorn": {"http": "h11", "ws": "websockets-sansio"},
}
#: 300 messages at 100/s: 100 ride the one-second burst, the other 200 wait for tokens, so the
#: last is handled at least 1.99 s after the first (a lower bound: safe on a loaded machine)
RATE, MESSAGES, AT_LEAST_S = 100, 300, 1.95


class SlowCounterEnv(CounterEnv):
    """A counter whose constructor takes a while (a container start, a model load)."""

    build_s = 0.3

    def __init__(self) -> None:
        with REG.lock:
            REG.building += 1
        time.sleep(self.build_s)
        super().__init__()


class VerySlowCounterEnv(SlowCounterEnv):
    build_s = 1.0


def counter_app(env_cls=CounterEnv, **kw):
    return create_app(env_cls, AddAction, TotalObservation, CounterState, **kw)


def batch_connect(url: str):
    return websockets.connect(url, subprotocols=[BATCH_SUBPROTOCOL], max_size=None)


async def send_batch(ws, frames: list[dict]) -> None:
    await ws.send(json.dumps({"type": "batch", "frames": frames}))


async def collect(ws, want: int) -> dict[int, list[dict]]:
    """Read batch replies until ``want`` sub-frames came back; each session's in arrival order."""
    out: dict[int, list[dict]] = {}
    got = 0
    while got < want:
        msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
        assert msg["type"] == "batch", msg
        for f in msg["frames"]:
            out.setdefault(f.pop("session"), []).append(f)
            got += 1
    return out


# ---- 1. sub-frames for a session being opened wait for it, in order --------------------------


@pytest.mark.parametrize("launch", LAUNCHES)
@pytest.mark.parametrize("env_cls", [SlowCounterEnv, CounterEnv, AsyncCounterEnv])
async def test_sub_frames_for_a_new_session_wait_for_it_in_order(serve_app, launch, env_cls):
    """Before: only the first sub-frame for a new number ran; the others, sent while the
    session was being created, were answered SESSION_ERROR (1,023 of 1,024 per number)."""
    s = serve_app(counter_app(env_cls), **LAUNCHES[launch])
    async with batch_connect(s.ws_url) as ws:
        await send_batch(
            ws,
            [
                {"session": 7, "type": "reset", "data": {"seed": 3}},
                {"session": 7, "type": "step", "data": {"n": 2}},
                {"session": 7, "type": "state"},
            ],
        )
        r = (await collect(ws, 3))[7]
        assert [f["type"] for f in r] == ["observation", "observation", "state"], r
        assert r[1]["data"]["observation"]["total"] == 5 and r[2]["data"]["total"] == 5
        per = MAX_BATCH_FRAMES // 4  # a full message: 4 new numbers, 1,024 sub-frames each
        frames = []
        for i in range(per):
            for k in (10, 11, 12, 13):
                frames.append(
                    {"session": k, "type": "reset", "data": {"seed": k}}
                    if i == 0
                    else {"session": k, "type": "step", "data": {"n": 1}}
                )
        await send_batch(ws, frames)
        r = await collect(ws, len(frames))
        for k in (10, 11, 12, 13):
            errors = [f for f in r[k] if f["type"] == "error"]
            assert not errors, (k, len(errors), errors[:1])
            totals = [f["data"]["observation"]["total"] for f in r[k]]
            assert totals == list(range(k, k + per)), (k, totals[:5])
    await asyncio.to_thread(wait_until, lambda: REG.closed == REG.created == 5)


async def test_sub_frames_for_a_refused_number_get_its_refusal(serve_app):
    s = serve_app(counter_app(SlowCounterEnv, limits=Limits(max_sessions=1)))
    async with batch_connect(s.ws_url) as ws:
        await send_batch(
            ws,
            [
                {"session": 1, "type": "reset"},
                {"session": 2, "type": "reset"},
                {"session": 2, "type": "step", "data": {"n": 1}},
                {"session": 1, "type": "step", "data": {"n": 4}},
            ],
        )
        r = await collect(ws, 4)
        assert [f["data"]["observation"]["total"] for f in r[1]] == [0, 4]
        # the refused number's first sub-frame says why; it was never opened, so the rest is
        # SESSION_ERROR, as for any refused number (the same however long the refusal took)
        assert [f["data"]["code"] for f in r[2]] == ["CAPACITY_REACHED", "SESSION_ERROR"]


@pytest.mark.parametrize("launch", LAUNCHES)
async def test_a_client_gone_while_its_envs_are_built_leaks_nothing(serve_app, launch):
    """Before: the batch connection's tasks were cancelled mid-build; the sync factory's env
    was finished in its worker thread and dropped, never closed (and never counted)."""
    s = serve_app(
        counter_app(VerySlowCounterEnv, limits=Limits(max_sessions=3)), **LAUNCHES[launch]
    )
    async with batch_connect(s.ws_url) as ws:
        await send_batch(ws, [{"session": k, "type": "reset"} for k in range(3)])
        # the client leaves while the three envs are being built
        await until(lambda: REG.building == 3, 20, "the three envs' builds to start")
    await asyncio.to_thread(wait_until, lambda: REG.created == 3, 20, "the builds to finish")
    await asyncio.to_thread(wait_until, lambda: REG.closed == 3, 20, "the envs to be closed")
    health = httpx.get(s.url + "/health").json()
    assert health["active_sessions"] == 0, health
    async with batch_connect(s.ws_url) as ws:  # every slot is free again
        await send_batch(ws, [{"session": k, "type": "reset"} for k in range(3)])
        r = await collect(ws, 3)
        assert all(r[k][0]["type"] == "observation" for k in range(3)), r


async def test_sessions_in_worker_threads_each_get_their_own_results(serve_app):
    """Sync envs in worker threads, eight sessions on one batch connection, their steps
    interleaved (several per session per message): every session sees only its own steps."""
    s = serve_app(counter_app(CounterEnv))  # CounterEnv runs in worker threads for good
    keys = range(8)
    async with batch_connect(s.ws_url) as ws:
        await send_batch(
            ws, [{"session": k, "type": "reset", "data": {"seed": 1000 * k}} for k in keys]
        )
        await collect(ws, 8)
        expect = {k: 1000 * k for k in keys}
        for round_ in range(10):
            frames = []
            for rep in range(3):
                for k in keys if (round_ + rep) % 2 else reversed(keys):
                    frames.append({"session": k, "type": "step", "data": {"n": k + 1}})
            await send_batch(ws, frames)
            r = await collect(ws, len(frames))
            for k in keys:
                totals = [f["data"]["observation"]["total"] for f in r[k]]
                assert totals == [expect[k] + (k + 1) * i for i in (1, 2, 3)], (k, totals)
                expect[k] += 3 * (k + 1)
        await send_batch(ws, [{"session": k, "type": "state"} for k in keys])
        r = await collect(ws, 8)
        assert {k: r[k][0]["data"]["total"] for k in keys} == expect
        assert {k: r[k][0]["data"]["step_count"] for k in keys} == dict.fromkeys(keys, 30)


# ---- 2 and 3. every path and every refused message pays the rate limit ----------------------


async def _timed(ws, messages: list[str]) -> float:
    t0 = time.monotonic()
    for text in messages:
        await ws.send(text)
        await asyncio.wait_for(ws.recv(), 30)
    return time.monotonic() - t0


@pytest.mark.parametrize("launch", LAUNCHES)
async def test_refused_batch_messages_pay_the_rate_limit(serve_app, launch):
    """Before the restructure refused batch messages cost nothing (300 in 0.01 s); they must
    cost what standard ``/ws`` charges for a bad frame (300 take about 2 s at 100/s)."""
    s = serve_app(counter_app(limits=Limits(max_messages_per_s=RATE)), **LAUNCHES[launch])
    bad = [
        "not json",
        json.dumps({"type": "step"}),
        json.dumps({"type": "batch", "frames": [{"type": "reset"}]}),
    ]
    async with batch_connect(s.ws_url) as ws:
        took = await _timed(ws, [bad[i % 3] for i in range(MESSAGES)])
        assert took >= AT_LEAST_S, took
    async with websockets.connect(s.ws_url) as ws:  # the standard path, for comparison
        assert await _timed(ws, ["not json"] * MESSAGES) >= AT_LEAST_S


@pytest.mark.parametrize("launch", LAUNCHES)
async def test_a_refused_message_pays_for_every_sub_frame_it_carried(serve_app, launch):
    """Before: 100 messages of 4,097 sub-frames (refused: too many) went through in 0.30 s at
    100/s, one token each. A refused message's sub-frames cost what they would have run for."""
    s = serve_app(counter_app(limits=Limits(max_messages_per_s=RATE)), **LAUNCHES[launch])
    async with batch_connect(s.ws_url) as ws:
        # 30 messages of 10 sub-frames, the last of each without a session number: 300 tokens
        frames = [{"session": 1, "type": "state"}] * 9 + [{"type": "state"}]
        took = await _timed(ws, [json.dumps({"type": "batch", "frames": frames})] * 30)
        assert took >= AT_LEAST_S, took
    fast = serve_app(counter_app(limits=Limits(max_messages_per_s=1000)), **LAUNCHES[launch])
    async with batch_connect(fast.ws_url) as ws:
        too_many = json.dumps({"type": "batch", "frames": [{}] * (MAX_BATCH_FRAMES + 1)})
        t0 = time.monotonic()
        await ws.send(too_many)
        reply = await asyncio.wait_for(ws.recv(), 60)
        assert "at most" in reply
        # 4,097 tokens at 1,000/s with a burst of 1,000: about 3.1 s
        assert time.monotonic() - t0 >= 2.5, time.monotonic() - t0


@pytest.mark.parametrize("launch", LAUNCHES)
async def test_mcp_over_websocket_is_rate_limited(serve_app, launch):
    app = create_app(
        GameTools, CallToolAction, CallToolObservation, limits=Limits(max_messages_per_s=RATE)
    )
    s = serve_app(app, **LAUNCHES[launch])
    request = json.dumps({"jsonrpc": "2.0", "method": "tools/list", "id": 1})
    async with websockets.connect(s.ws_url.replace("/ws", "/mcp")) as ws:
        assert await _timed(ws, [request] * MESSAGES) >= AT_LEAST_S


# ---- 4. Content-Length with Transfer-Encoding: answer, then close ----------------------------


def _smuggle(port: int, method: str, path: str) -> tuple[int, dict[str, str], bytes, bytes]:
    """A request with both framings and a second request hidden behind it; the first reply and
    whatever else the server sent before it closed."""
    body = b'{"seed": 1}'
    hidden = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(chunked) + len(hidden)}\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head + chunked + hidden)
        status, headers, reply = read_http_response(sock)
        rest = b""
        sock.settimeout(5)
        try:
            while chunk := sock.recv(65536):
                rest += chunk
        except ConnectionResetError:
            pass
        except TimeoutError:
            rest += b"<still open>"
    return status, headers, reply, rest


@pytest.mark.parametrize("launch", LAUNCHES)
@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/reset"), ("POST", "/mcp"), ("GET", "/health")]
)
def test_content_length_with_transfer_encoding_is_refused_and_closed(
    serve_app, launch, method, path
):
    """Before: the request was served (Transfer-Encoding wins) and the connection stayed open,
    so the request hidden behind it was answered too (RFC 9112 6.3: close after responding)."""
    s = serve_app(counter_app(), **LAUNCHES[launch])
    status, headers, reply, rest = _smuggle(s.port, method, path)
    assert status == 400 and headers.get("connection") == "close", (status, headers, reply)
    assert json.loads(reply)["detail"]["code"] == "BAD_REQUEST"
    assert rest == b"", rest[:300]
    with httpx.Client() as client:  # the server is fine, and keep-alive still works
        assert client.get(s.url + "/health").status_code == 200
        assert client.post(s.url + "/reset", json={"seed": 2}).json()["observation"]["total"] == 2


# ---- 5. deep nesting is a VALIDATION_ERROR everywhere ----------------------------------------


@pytest.mark.parametrize("launch", LAUNCHES)
async def test_ten_thousand_levels_of_nesting_is_a_validation_error(serve_app, launch):
    """Before: past orjson's 1,024 levels the parser's error made it INVALID_JSON, while the
    error reference (and 65..1,024 levels) say VALIDATION_ERROR."""
    s = serve_app(counter_app(), **LAUNCHES[launch])
    nested = "[" * 10_000 + "]" * 10_000
    step = '{"type": "step", "data": {"n": 1, "metadata": {"x": ' + nested + "}}}"
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        r = await rpc(ws, step)
        assert r["data"]["code"] == "VALIDATION_ERROR" and "nested deeper" in r["data"]["message"]
        assert (await rpc(ws, {"type": "step", "data": {"n": 1}}))["type"] == "observation"
    async with batch_connect(s.ws_url) as ws:
        r = await rpc(ws, '{"type": "batch", "frames": [' + nested + "]}")
        assert r["data"]["code"] == "VALIDATION_ERROR" and "nested deeper" in r["data"]["message"]
    with httpx.Client() as client:
        reply = client.post(
            s.url + "/step",
            content='{"action": {"n": 1, "metadata": {"x": ' + nested + "}}}",
            headers={"content-type": "application/json"},
        )
        assert reply.status_code == 422 and reply.json()["detail"][0]["type"] == "json_too_deep"
