"""A bounded soak of every WebSocket path on one real server (``/ws`` standard and batch framing,
MCP JSON-RPC on ``/mcp``): clients open sessions, step them and vanish mid-message, mid-request
and mid-opening, or close cleanly, while honest clients on each path run throughout. At the end:
every session freed, memory back near its high-water mark, not one error for the honest clients.
Plus two batch races the fuzzers found (tests/fuzz/test_fuzz_ws_paths.py): a sub-frame queued
behind its session's ``close`` never reaches the closed env, and a ``close`` never has a reply.
"""

from __future__ import annotations

import base64
import json
import os
import random
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import psutil
import pytest
import websockets
from server_envs import AddAction, AsyncCounterEnv, CounterEnv, CounterState, TotalObservation
from server_helpers import masked_frame, wait_until
from websockets.sync.client import connect

from openenv_train.runtime import LocalProcessProvider
from openenv_train.server import create_app
from openenv_train.server.ws_batch import BATCH_SUBPROTOCOL

pytestmark = pytest.mark.timeout(180)

APP = "echo_env.server.app:app"  # serves all three paths (its tools answer MCP)
#: Each phase runs this long or this many abusive client cycles, whichever ends first.
PHASE_S = 12.0
PHASE_CYCLES = 10_000


def _echo(message: str) -> dict[str, Any]:
    return {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": message}}


def _rpc(rid: Any, message: str) -> bytes:
    params = {"name": "echo_message", "arguments": {"message": message}}
    return json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    ).encode()


def _batch(*frames: dict[str, Any]) -> bytes:
    return json.dumps({"type": "batch", "frames": list(frames)}).encode()


# ---- a hand-made client: it can stop anywhere in a frame --------------------------------------


def _handshake(port: int, path: str, subprotocol: str | None = None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    extra = f"Sec-WebSocket-Protocol: {subprotocol}\r\n" if subprotocol else ""
    sock.sendall(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"{extra}\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed during the handshake: {head[:200]!r}")
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head[:200]
    assert head.endswith(b"\r\n\r\n"), "the server spoke before the client did"
    return sock


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return data


def _recv_json(sock: socket.socket) -> Any:
    """One whole text message from the server (unmasked, unfragmented, as ours sends)."""
    b0, b1 = _read_exact(sock, 2)
    assert b0 == 0x81, f"not a final text frame: {b0:#x}"
    n = b1 & 0x7F
    if n == 126:
        n = int.from_bytes(_read_exact(sock, 2), "big")
    elif n == 127:
        n = int.from_bytes(_read_exact(sock, 8), "big")
    return json.loads(_read_exact(sock, n))


def _batch_replies(sock: socket.socket, count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while len(out) < count:
        msg = _recv_json(sock)
        assert msg["type"] == "batch", msg
        out += msg["frames"]
    return out


def _vanish(sock: socket.socket) -> None:
    """Close with RST (no FIN, no close frame): the client is simply gone."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _end(sock: socket.socket, rng: random.Random, next_request: bytes) -> None:
    """End a connection one of four ways: mid-frame, mid-request (a whole request sent, its
    reply never read), with a clean close, or by just vanishing."""
    how = rng.randrange(4)
    if how == 0:
        frame = masked_frame(next_request)
        sock.sendall(frame[: rng.randrange(1, len(frame))])
    elif how == 1:
        sock.sendall(masked_frame(next_request))
    elif how == 2:
        sock.sendall(masked_frame(struct.pack("!H", 1000), opcode=0x8))
        try:
            sock.recv(64)  # the server's close frame
        except OSError:
            pass
    _vanish(sock)


# ---- the abusive clients: each opens sessions, steps, then ends abruptly -------------------------


def _batch_client(port: int, rng: random.Random) -> int:
    sock = _handshake(port, "/ws", BATCH_SUBPROTOCOL)
    n = rng.randint(1, 4)
    sock.sendall(
        masked_frame(
            _batch(
                *({"session": k, "type": "reset"} for k in range(n)),
                *({"session": k, "type": "step", "data": _echo(f"b{k}")} for k in range(n)),
            )
        )
    )
    replies = _batch_replies(sock, 2 * n)
    steps = [f for f in replies if f["type"] == "observation" and f["data"]["reward"]]
    assert len(steps) == n, replies
    # next: more sessions opened (their envs may still be being built when the client goes)
    more = _batch(*({"session": n + k, "type": "reset"} for k in range(rng.randint(1, 4))))
    _end(sock, rng, more)
    return n


def _mcp_client(port: int, rng: random.Random) -> int:
    sock = _handshake(port, "/mcp")
    sock.sendall(masked_frame(_rpc(1, "m")))
    reply = _recv_json(sock)
    assert reply["id"] == 1 and reply["result"]["data"] == "m", reply
    _end(sock, rng, _rpc(2, "gone"))
    return 1


def _ws_client(port: int, rng: random.Random) -> int:
    sock = _handshake(port, "/ws")
    sock.sendall(masked_frame(json.dumps({"type": "step", "data": _echo("w")}).encode()))
    reply = _recv_json(sock)
    assert reply["type"] == "observation", reply
    _end(sock, rng, json.dumps({"type": "step", "data": _echo("gone")}).encode())
    return 1


CLIENTS: list[Callable[[int, random.Random], int]] = [_batch_client, _mcp_client, _ws_client]


def _storm(port: int, seconds: float, cycles: int, seed: int) -> tuple[int, int]:
    """Abusive clients on every path for ``seconds`` (or ``cycles`` connections): how many
    connections and sessions they opened. Any wrong reply they read fails the test."""
    deadline = time.monotonic() + seconds
    opened = [0, 0]
    failures: list[BaseException] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        rng = random.Random(seed * 100 + i)
        client = CLIENTS[i % len(CLIENTS)]
        while time.monotonic() < deadline and opened[0] < cycles:
            try:
                sessions = client(port, rng)
            except BaseException as exc:  # a wrong reply, or the server dropped a client
                failures.append(exc)
                return
            with lock:
                opened[0] += 1
                opened[1] += sessions

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(2 * len(CLIENTS))]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert not failures, failures[:3]
    return opened[0], opened[1]


# ---- the honest clients: one per path, stepping throughout ---------------------------------------


class Honest(threading.Thread):
    """A standard ``/ws`` session, a batch session and an MCP-over-WebSocket session, stepped in
    turn until stopped; every wrong or missing answer is recorded."""

    def __init__(self, base_url: str) -> None:
        super().__init__(daemon=True)
        self.ws_url = base_url.replace("http://", "ws://")
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.rounds = 0

    def run(self) -> None:
        try:
            with (
                connect(self.ws_url + "/ws") as ws,
                connect(self.ws_url + "/ws", subprotocols=[BATCH_SUBPROTOCOL]) as batch,
                connect(self.ws_url + "/mcp") as mcp,
            ):
                self._serve(ws, batch, mcp)
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def _serve(self, ws: Any, batch: Any, mcp: Any) -> None:
        while not self.stop.is_set():
            word = f"honest-{self.rounds}"
            ws.send(json.dumps({"type": "step", "data": _echo(word)}))
            reply = json.loads(ws.recv(timeout=20))
            if reply["type"] != "observation" or reply["data"]["reward"] != len(word) / 10:
                self.errors.append(f"/ws: {reply}")
            batch.send(_batch({"session": 0, "type": "step", "data": _echo(word)}).decode())
            reply = json.loads(batch.recv(timeout=20))
            frame = reply["frames"][0] if reply.get("type") == "batch" else reply
            if len(reply.get("frames", ())) != 1 or frame.get("type") != "observation":
                self.errors.append(f"batch: {reply}")
            mcp.send(_rpc(self.rounds, word).decode())
            reply = json.loads(mcp.recv(timeout=20))
            if reply.get("id") != self.rounds or reply.get("result", {}).get("data") != word:
                self.errors.append(f"/mcp: {reply}")
            self.rounds += 1
            time.sleep(0.005)


def _active(url: str) -> int:
    return httpx.get(url + "/health", timeout=10).json()["active_sessions"]


def _rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def test_soak_of_every_websocket_path_leaks_nothing():
    with LocalProcessProvider(APP) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        honest = Honest(server.base_url)
        honest.start()
        try:
            wait_until(lambda: honest.rounds > 0 or honest.errors, 20, "the honest clients")
            conns1, sessions1 = _storm(port, PHASE_S, PHASE_CYCLES, seed=1)
            # the honest sessions stay; everything the storm opened is freed
            wait_until(lambda: _active(server.base_url) == 3, 30, "storm sessions freed")
            high_water = _rss_mb(server.pid)
            rounds1 = honest.rounds
            conns2, sessions2 = _storm(port, PHASE_S, PHASE_CYCLES, seed=2)
            wait_until(lambda: _active(server.base_url) == 3, 30, "storm sessions freed")
            after = _rss_mb(server.pid)
        finally:
            honest.stop.set()
            honest.join(30)
        assert not honest.errors, honest.errors[:5]
        assert honest.rounds > rounds1 > 0  # served before, during and after each storm
        assert min(conns1, conns2) >= 150, (conns1, conns2)  # the storms were storms
        wait_until(lambda: _active(server.base_url) == 0, 30, "the honest sessions freed")
        assert after <= high_water * 1.10 + 16, (high_water, after)  # no growth per session
        assert "Traceback" not in server.logs(200)


# ---- batch races: nothing reaches a closed env, a close has no reply --------------------------------


class SlowClosingEnv(CounterEnv):
    """A step slow enough to queue frames behind it; a step after ``close()`` fails loudly."""

    def step(self, action: AddAction) -> TotalObservation:
        time.sleep(0.05)
        if getattr(self, "closed", False):
            raise RuntimeError("stepped after close()")
        return super().step(action)

    def close(self) -> None:
        self.closed = True


async def test_a_batch_frame_queued_behind_its_session_close_never_reaches_the_env(serve_app):
    s = serve_app(create_app(SlowClosingEnv, AddAction, TotalObservation, CounterState))
    async with websockets.connect(s.ws_url, subprotocols=[BATCH_SUBPROTOCOL]) as ws:
        await ws.send(_batch({"session": 1, "type": "reset"}).decode())
        assert json.loads(await ws.recv())["frames"][0]["type"] == "observation"
        step = {"session": 1, "type": "step", "data": {"n": 1}}
        close = {"session": 1, "type": "close"}
        await ws.send(_batch(step, close, step, {"session": 1, "type": "state"}, close).decode())
        got: list[dict[str, Any]] = []
        while len(got) < 3:
            got += json.loads(await ws.recv())["frames"]
        assert [f["type"] for f in got] == ["observation", "error", "error"], got
        assert {f["data"]["code"] for f in got[1:]} == {"SESSION_ERROR"}, got
        await ws.send(_batch({"session": 2, "type": "state"}).decode())  # nothing else came
        assert json.loads(await ws.recv())["frames"] == [
            {
                "session": 2,
                "type": "state",
                "data": {"episode_id": None, "step_count": 0, "total": 0},
            }
        ]


@pytest.mark.parametrize("env_cls", [CounterEnv, AsyncCounterEnv])
async def test_a_close_that_waited_on_its_session_opening_has_no_reply(serve_app, env_cls):
    # the async env's state never suspends: the first close ends the session before the second
    # wakes from the opening; the thread-run one's second close queues on the session instead
    s = serve_app(create_app(env_cls, AddAction, TotalObservation, CounterState))
    async with websockets.connect(s.ws_url, subprotocols=[BATCH_SUBPROTOCOL]) as ws:
        close = {"session": 1, "type": "close"}  # both wait while session 1 is being opened
        await ws.send(_batch({"session": 1, "type": "state"}, close, close).decode())
        assert [f["session"] for f in json.loads(await ws.recv())["frames"]] == [1]
        await ws.send(_batch({"session": 2, "type": "state"}).decode())
        assert [f["session"] for f in json.loads(await ws.recv())["frames"]] == [2]
