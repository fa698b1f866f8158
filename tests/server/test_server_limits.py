"""Every resource a client can spend has a bound: body and frame sizes, time to send a request,
message rate, sessions per client, and unused sessions. Each reproduces a defect of issue 10."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import httpx
import pytest
import websockets
from server_envs import AddAction, CounterEnv, CounterState, TotalObservation
from server_helpers import (
    http_request,
    masked_frame,
    raw_ws_connect,
    read_http_response,
    rpc,
    wait_until,
)
from websockets.exceptions import ConnectionClosed

from openenv_train.client import GenericEnvClient
from openenv_train.core import InfrastructureError, QuotaExceededError
from openenv_train.server import Limits, create_app
from openenv_train.server.httpproto import GuardedH11Protocol

pytestmark = pytest.mark.timeout(90)


def app_for(limits: Limits | None = None, **kw):
    return create_app(CounterEnv, AddAction, TotalObservation, CounterState, limits=limits, **kw)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes ``sock`` (EOF or reset) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def test_defaults_are_bounded():
    lim = Limits()
    assert lim.max_body_bytes == 1024 * 1024 and lim.max_frame_bytes == 1024 * 1024
    assert 0 < lim.request_timeout_s <= 30 and lim.max_messages_per_s > 0
    assert lim.unused_session_timeout_s < 300 and lim.max_sessions_per_client > 0


def test_limits_from_environment(monkeypatch):
    monkeypatch.setenv("OPENENV_TRAIN_MAX_BODY_BYTES", "2048")
    monkeypatch.setenv("OPENENV_TRAIN_REQUEST_TIMEOUT_S", "2.5")
    lim = Limits.from_env()
    assert lim.max_body_bytes == 2048 and lim.request_timeout_s == 2.5
    monkeypatch.setenv("OPENENV_TRAIN_MAX_FRAME_BYTES", "lots")
    with pytest.raises(ValueError, match="OPENENV_TRAIN_MAX_FRAME_BYTES"):
        Limits.from_env()
    with pytest.raises(ValueError, match="max_body_bytes"):
        Limits(max_body_bytes=0)


def test_session_bounds_are_limits_too(monkeypatch):
    assert Limits().max_sessions == 4096 and Limits().session_timeout_s == 300
    assert Limits(session_timeout_s=None).session_timeout_s is None  # never reaped when used
    monkeypatch.setenv("OPENENV_TRAIN_MAX_SESSIONS", "8")
    monkeypatch.setenv("OPENENV_TRAIN_SESSION_TIMEOUT_S", "none")
    lim = Limits.from_env()
    assert lim.max_sessions == 8 and lim.session_timeout_s is None
    monkeypatch.setenv("OPENENV_TRAIN_SESSION_TIMEOUT_S", "12.5")
    assert Limits.from_env(max_sessions=3) == Limits(max_sessions=3, session_timeout_s=12.5)
    monkeypatch.setenv("OPENENV_TRAIN_MAX_SESSIONS", "8.5")
    with pytest.raises(ValueError, match="OPENENV_TRAIN_MAX_SESSIONS"):
        Limits.from_env()
    with pytest.raises(ValueError, match="max_sessions"):
        Limits(max_sessions=2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="session_timeout_s"):
        Limits(session_timeout_s=0)
    assert Limits().with_sessions(2, None) == Limits(max_sessions=2, session_timeout_s=None)


def test_content_length_over_limit_is_413_before_any_body(serve_app):
    """Defect 4: a Content-Length of 50 MB with no body was never refused."""
    s = serve_app(app_for(Limits(max_body_bytes=1000)))
    with socket.create_connection(("127.0.0.1", s.port)) as sock:
        sock.sendall(http_request("POST", "/step", headers={"Content-Length": "50000000"}))
        status, headers, body = read_http_response(sock, timeout=5)
        assert status == 413
        assert "1000" in json.loads(body)["detail"]["message"]
        assert headers.get("connection") == "close"


def test_chunked_body_over_limit_is_413(serve_app):
    s = serve_app(app_for(Limits(max_body_bytes=1000)))
    with socket.create_connection(("127.0.0.1", s.port)) as sock:
        head = (
            "POST /step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"x" * 600
        sock.sendall(head.encode() + (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 2)
        status, _, body = read_http_response(sock, timeout=5)
        assert status == 413 and b"max_body_bytes" in body


def test_body_under_limit_still_served(serve_app):
    s = serve_app(app_for(Limits(max_body_bytes=1000)))
    r = httpx.post(s.url + "/step", json={"action": {"n": 2}})
    assert r.status_code == 200 and r.json()["observation"]["total"] == 2


async def test_ws_frame_over_limit_is_refused_and_others_unaffected(serve_app):
    s = serve_app(app_for(Limits(max_frame_bytes=1000)))
    async with websockets.connect(s.ws_url) as other, websockets.connect(s.ws_url) as ws:
        await rpc(other, {"type": "reset"})
        await rpc(ws, {"type": "reset"})
        await ws.send(json.dumps({"type": "step", "data": {"n": 1, "metadata": {"x": "y" * 5000}}}))
        with pytest.raises(ConnectionClosed):
            await ws.recv()
        assert ws.close_code == 1009
        assert (await rpc(other, {"type": "step", "data": {"n": 1}}))["type"] == "observation"


@pytest.mark.parametrize("sent", [b"", b"GET /health HTTP/1.1\r\nHost: x\r\n"])
def test_slow_request_head_is_dropped(serve_app, sent):
    """Slowloris: a connection that never finishes its request head is closed."""
    s = serve_app(app_for(Limits(request_timeout_s=0.5)))
    with socket.create_connection(("127.0.0.1", s.port)) as sock:
        sock.sendall(sent)
        assert _closed_within(sock, 10)


class _StallingH11(GuardedH11Protocol):
    """Reading ``STALL`` blocks the whole server for 1.5 s inside a socket read, as a long GC
    pause does."""

    stalled = threading.Event()  # set as the stall begins (each test sets a fresh one)

    def data_received(self, data: bytes) -> None:
        if data.startswith(b"STALL"):
            type(self).stalled.set()
            time.sleep(1.5)
            self.transport.close()
            return
        super().data_received(data)


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_server_stall_does_not_drop_a_client_whose_head_arrived(serve_app, loop):
    """The head deadline passes while the server is stalled, but the head is in the socket:
    it is read before the verdict (uvloop runs due timers before it reads sockets)."""
    _StallingH11.stalled = threading.Event()
    s = serve_app(app_for(Limits(request_timeout_s=0.5)), loop=loop, http=_StallingH11)
    connections = s.server.server_state.connections
    with socket.create_connection(("127.0.0.1", s.port)) as waiting:
        wait_until(
            lambda: any(getattr(c, "_head_timer", None) for c in list(connections)),
            what="the server to accept the waiting client and arm its head deadline",
        )
        deadline = time.monotonic() + 0.5  # no earlier than the server's own (armed before)
        with socket.create_connection(("127.0.0.1", s.port)) as staller:
            staller.sendall(b"STALL")
            wait_until(_StallingH11.stalled.is_set, what="the server to stall")
            wait_until(
                lambda: time.monotonic() > deadline, what="the waiting client's deadline to pass"
            )
            waiting.sendall(http_request("GET", "/health"))
            assert read_http_response(waiting)[0] == 200
    with socket.create_connection(("127.0.0.1", s.port)) as silent:  # and slowloris still loses
        assert _closed_within(silent, 10)


def test_local_runtime_servers_drop_slow_heads():
    """The local runtime's launcher uses the same protocol classes as ``serve()``."""
    from openenv_train.runtime import LocalProcessProvider

    env = {"OPENENV_TRAIN_REQUEST_TIMEOUT_S": "0.5"}
    with LocalProcessProvider("echo_env.server.app:app", env=env) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\n")
            assert _closed_within(sock, 10)


def test_slow_body_is_dropped(serve_app):
    s = serve_app(app_for(Limits(request_timeout_s=0.5)))
    with socket.create_connection(("127.0.0.1", s.port)) as sock:
        sock.sendall(http_request("POST", "/step", headers={"Content-Length": "100"}) + b'{"ac')
        sock.settimeout(10)
        reply = sock.recv(65536)
        assert reply == b"" or reply.startswith(b"HTTP/1.1 408"), reply[:100]


def test_keep_alive_then_slow_head_is_dropped(serve_app):
    s = serve_app(app_for(Limits(request_timeout_s=0.5)))
    with socket.create_connection(("127.0.0.1", s.port)) as sock:
        sock.sendall(http_request("GET", "/health"))
        assert read_http_response(sock)[0] == 200
        sock.sendall(b"GET /health HTTP/1.1\r\n")  # and never the rest
        assert _closed_within(sock, 10)


def test_incomplete_ws_frame_is_dropped(serve_app):
    """Defect 6: an incomplete frame header held its connection until the idle timeout."""
    s = serve_app(app_for(Limits(request_timeout_s=0.5)))
    sock = raw_ws_connect(s.port)
    sock.sendall(masked_frame(b'{"type": "state"}')[:3])
    assert _closed_within(sock, 10)
    sock.close()
    wait_until(lambda: httpx.get(s.url + "/health").json()["active_sessions"] == 0)


def test_open_ws_between_requests_is_not_dropped(serve_app):
    s = serve_app(app_for(Limits(request_timeout_s=0.3)))
    sock = raw_ws_connect(s.port)
    # idle past the 0.3 s limit between complete requests: the reaper's business, not this limit's
    assert not _closed_within(sock, 1.0)
    sock.sendall(masked_frame(b'{"type": "state"}'))
    sock.settimeout(5)
    assert b'"state"' in sock.recv(4096)
    sock.close()


async def test_message_rate_is_throttled_per_session(serve_app):
    s = serve_app(app_for(Limits(max_messages_per_s=20)))
    async with websockets.connect(s.ws_url) as ws, websockets.connect(s.ws_url) as other:
        await rpc(other, {"type": "reset"})
        t0 = time.monotonic()
        for _ in range(60):  # 20 in the first second's budget, then 20 per second
            assert (await rpc(ws, {"type": "state"}))["type"] == "state"
        assert time.monotonic() - t0 >= 1.5
        await rpc(other, {"type": "state"})  # another session has its own budget


async def test_huge_and_slow_requests_do_not_stall_other_sessions(serve_app):
    """Defect 4: four 50 MB bodies at once stalled every WebSocket session for up to 1.8 s."""
    s = serve_app(app_for(Limits(request_timeout_s=2.0)))
    stop = threading.Event()

    def flood_bodies() -> None:
        big = http_request("POST", "/step", b'{"action": {"n": "' + b"9" * 3_000_000 + b'"}}')
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", s.port)) as sock:
                    sock.sendall(big)
                    read_http_response(sock)
            except OSError:
                pass

    def slowloris() -> None:
        socks = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(50)]
        for sock in socks:
            sock.sendall(b"POST /step HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n{")
        stop.wait(30)
        for sock in socks:
            sock.close()

    threads = [threading.Thread(target=flood_bodies) for _ in range(4)]
    threads.append(threading.Thread(target=slowloris))
    for t in threads:
        t.start()
    try:
        async with websockets.connect(s.ws_url) as ws:
            await rpc(ws, {"type": "reset"})
            worst = 0.0
            for _ in range(100):
                t0 = time.perf_counter()
                await rpc(ws, {"type": "step", "data": {"n": 1}})
                worst = max(worst, time.perf_counter() - t0)
                await asyncio.sleep(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert worst < 0.5, f"a concurrent session waited {worst:.3f}s"  # generous: 2 shared cores


def _mcp(url: str, method: str, **params) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(url + "/mcp", json=body).json()


async def test_sessions_per_client_quota(serve_app):
    """Defect 5: max_sessions session/create POSTs locked every WebSocket client out."""
    lim = Limits(max_sessions_per_client=3, quota_exempt_loopback=False, max_sessions=100)
    s = serve_app(app_for(lim))
    ids = [_mcp(s.url, "openenv/session/create")["result"]["session_id"] for _ in range(3)]
    err = _mcp(s.url, "openenv/session/create")["error"]
    assert err["code"] == -32000 and "max_sessions_per_client" in err["message"]
    assert err["data"] == {
        "code": "QUOTA_EXCEEDED",
        "held_sessions": 3,
        "max_sessions_per_client": 3,
    }
    async with websockets.connect(s.ws_url) as ws:
        r = json.loads(await ws.recv())
        assert r["data"]["code"] == "QUOTA_EXCEEDED"  # its own code, not the server's capacity
        assert "active_sessions" not in r["data"] and r["data"]["held_sessions"] == 3
        assert "max_sessions_per_client" in r["data"]["message"]
    assert _mcp(s.url, "openenv/session/close", session_id=ids[0])["result"]["closed"]
    async with websockets.connect(s.ws_url) as ws:
        assert (await rpc(ws, {"type": "reset"}))["type"] == "observation"


async def test_one_client_cannot_take_every_session_of_a_small_env(serve_app):
    """Issue 22 #7: the per-client quota (1024) was larger than a small env's capacity."""
    s = serve_app(app_for(Limits(quota_exempt_loopback=False, max_sessions=4)))
    for _ in range(2):
        assert "result" in _mcp(s.url, "openenv/session/create")
    err = _mcp(s.url, "openenv/session/create")["error"]
    assert err["data"]["code"] == "QUOTA_EXCEEDED" and err["data"]["max_sessions_per_client"] == 2
    assert httpx.get(s.url + "/health").json()["active_sessions"] == 2  # room left for others
    client = GenericEnvClient(s.url)
    with pytest.raises(QuotaExceededError) as caught:
        await client.reset()
    assert not isinstance(caught.value, InfrastructureError)  # the server is healthy
    await client.close()


def test_the_host_gateway_is_exempt_when_asked():
    from openenv_train.server.sessions import SessionManager, default_gateways

    manager = SessionManager(object, 4, None, Limits(quota_exempt_gateway=True))
    gateways = default_gateways()
    assert gateways, "this test needs a default route"
    assert manager._quota_key(gateways[0]) is None
    assert manager._quota_key("203.0.113.9") == "203.0.113.9"


def test_loopback_clients_are_exempt_by_default(serve_app):
    s = serve_app(app_for(Limits(max_sessions_per_client=2, max_sessions=100)))
    for _ in range(4):
        assert "result" in _mcp(s.url, "openenv/session/create")


async def test_unused_sessions_are_reaped_sooner(serve_app):
    lim = Limits(unused_session_timeout_s=0.3, session_timeout_s=300)
    s = serve_app(app_for(lim))
    _mcp(s.url, "openenv/session/create")
    async with websockets.connect(s.ws_url) as used:
        await rpc(used, {"type": "reset"})
        wait_until(lambda: httpx.get(s.url + "/health").json()["active_sessions"] == 1)
        # a witness opened after the used session's last call: once it is reaped, the used
        # session has been idle longer than the unused-session timeout too
        _mcp(s.url, "openenv/session/create")
        wait_until(lambda: httpx.get(s.url + "/health").json()["active_sessions"] == 1)
        assert (await rpc(used, {"type": "step", "data": {"n": 1}}))["type"] == "observation"
    async with websockets.connect(s.ws_url) as idle:
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(idle.recv(), 10)
