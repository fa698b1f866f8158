"""Optional bearer-token access control: HTTP, /mcp and the WebSocket upgrade; our clients send it."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import websockets
from ports import free_port
from server_envs import AddAction, CounterEnv, CounterState, GameTools, TotalObservation
from server_helpers import rpc, wait_until
from websockets.exceptions import InvalidStatus

from openenv_train.client import EnvClient, GenericEnvClient, MCPToolClient, ServerUnreachableError
from openenv_train.core import CallToolAction, CallToolObservation
from openenv_train.server import create_app
from openenv_train.server.serve import ensure_token

pytestmark = pytest.mark.timeout(90)

TOKEN = "t0ken-for-tests-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(autouse=True)
def _no_token_in_env(monkeypatch):
    monkeypatch.delenv("OPENENV_TRAIN_TOKEN", raising=False)
    monkeypatch.delenv("OPENENV_TRAIN_TOKEN_FILE", raising=False)


class CounterClient(EnvClient[AddAction, TotalObservation, CounterState]):
    action_cls, observation_cls, state_cls = AddAction, TotalObservation, CounterState


def counter_app(**kw):
    return create_app(CounterEnv, AddAction, TotalObservation, CounterState, **kw)


ROUTES = [
    ("GET", "/schema", None),
    ("GET", "/metadata", None),
    ("GET", "/state", None),
    ("GET", "/sessions", None),
    ("GET", "/openapi.json", None),
    ("GET", "/docs", None),
    ("POST", "/reset", {}),
    ("POST", "/step", {"action": {"n": 1}}),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}),
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_every_route_but_health_needs_the_token(serve_app, method, path, body):
    s = serve_app(counter_app(token=TOKEN))
    assert httpx.get(s.url + "/health").status_code == 200  # liveness stays open
    for headers in (
        {},
        {"Authorization": "Bearer wrong-token-wrong-token"},
        {"Authorization": TOKEN},
    ):
        r = httpx.request(method, s.url + path, json=body, headers=headers)
        assert r.status_code == 401, (path, headers, r.status_code)
        assert r.headers["www-authenticate"] == "Bearer"
        assert "Authorization: Bearer" in r.json()["detail"]["message"]
    r = httpx.request(method, s.url + path, json=body, headers=AUTH)
    assert r.status_code == 200, (path, r.status_code, r.text[:200])


async def test_ws_upgrade_needs_the_token(serve_app):
    s = serve_app(counter_app(token=TOKEN))
    with pytest.raises(InvalidStatus) as info:
        async with websockets.connect(s.ws_url):
            pass
    assert info.value.response.status_code == 401
    async with websockets.connect(s.ws_url, additional_headers=AUTH) as ws:
        assert (await rpc(ws, {"type": "reset", "data": {"seed": 2}}))["type"] == "observation"
    assert httpx.get(s.url + "/health").json()["active_sessions"] == 0  # refused ones made none


async def test_token_from_env_and_file(serve_app, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENENV_TRAIN_TOKEN", TOKEN)
    s = serve_app(counter_app())
    assert httpx.get(s.url + "/schema").status_code == 401
    async with CounterClient(s.url) as client:  # the client reads the same variable
        assert (await client.reset(seed=1)).observation.total == 1
    monkeypatch.delenv("OPENENV_TRAIN_TOKEN")
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    monkeypatch.setenv("OPENENV_TRAIN_TOKEN_FILE", str(path))
    s2 = serve_app(counter_app())
    assert httpx.get(s2.url + "/schema", headers=AUTH).status_code == 200
    assert httpx.get(s2.url + "/schema").status_code == 401
    monkeypatch.setenv("OPENENV_TRAIN_TOKEN_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="OPENENV_TRAIN_TOKEN_FILE"):
        counter_app()


def test_weak_token_is_refused_without_echoing_it():
    with pytest.raises(ValueError, match="at least 16") as info:
        counter_app(token="short")
    assert "short" not in str(info.value)


async def test_our_clients_send_the_token(serve_app):
    s = serve_app(counter_app(token=TOKEN))
    async with CounterClient(s.url, token=TOKEN) as client:
        assert (await client.reset(seed=3)).observation.total == 3
    async with GenericEnvClient(s.url, token=TOKEN) as client:
        assert (await client.step({"n": 2})).observation["total"] == 2
    tools = serve_app(create_app(GameTools, CallToolAction, CallToolObservation, token=TOKEN))
    async with MCPToolClient(tools.url, token=TOKEN) as client:
        await client.reset()
        assert await client.call_tool("add", a=2, b=3) == 5
    with pytest.raises(ServerUnreachableError, match="token is missing"):
        await EnvClient(s.url).connect()
    with pytest.raises(ServerUnreachableError, match="token was refused"):
        await EnvClient(s.url, token="x" * 32).connect()


async def test_clients_use_the_token_remembered_for_their_server(serve_app, monkeypatch):
    """A runtime that gives a server a token of its own remembers it by URL; our clients send
    it without being told (before the environment's token), and stop once it is forgotten."""
    from openenv_train.client.mcp_http import McpHttpSession
    from openenv_train.core.auth import (
        forget_server_token,
        register_server_token,
        register_server_tokens,
        server_tokens,
    )

    s = serve_app(counter_app(token=TOKEN))
    monkeypatch.setenv("OPENENV_TRAIN_TOKEN", "another-token-0123456789abcdef")
    register_server_token(s.url + "/", TOKEN)
    try:
        assert server_tokens([s.url, "http://127.0.0.1:1"]) == {s.url: TOKEN}
        async with CounterClient(s.url) as client:
            assert (await client.reset(seed=4)).observation.total == 4
        session = McpHttpSession(s.url)
        try:
            assert await session.request("openenv/session/create")  # past the gate
        finally:
            await session.close()
    finally:
        forget_server_token(s.url)
    with pytest.raises(ServerUnreachableError, match="token was refused"):
        await CounterClient(s.url).connect()  # the environment's token is not this server's
    register_server_tokens({s.url: TOKEN})  # what a child process does with its parent's map
    try:
        async with CounterClient(s.url) as client:
            assert (await client.reset(seed=5)).observation.total == 5
    finally:
        forget_server_token(s.url)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.text: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.text.append(record.getMessage() + str(record.args))


async def test_tokens_are_never_logged(serve_app):
    s = serve_app(counter_app(token=TOKEN), log_level="debug")  # configures uvicorn's loggers
    handler = _Records()
    loggers = [logging.getLogger(n) for n in ("", "uvicorn", "uvicorn.error", "uvicorn.access")]
    old = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    quiet = logging.getLogger("tests.raw_client")  # the raw client below is not ours
    quiet.propagate = False
    try:
        wrong = "guess-" + "g" * 30
        httpx.get(s.url + "/schema", headers={"Authorization": f"Bearer {wrong}"})
        httpx.get(s.url + "/schema", headers=AUTH)
        with pytest.raises(InvalidStatus):
            async with websockets.connect(
                s.ws_url, additional_headers={"Authorization": wrong}, logger=quiet
            ):
                pass
        async with CounterClient(s.url, token=TOKEN) as client:
            await client.reset()
    finally:
        for lg, level in zip(loggers, old, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)
    assert any("GET /ws" in t for t in handler.text)  # the handshakes were logged at debug
    assert not [t for t in handler.text if TOKEN in t or wrong in t]


def test_serve_beyond_loopback_generates_a_token():
    env: dict[str, str] = {}
    token, how = ensure_token("0.0.0.0", environ=env)
    assert token and env["OPENENV_TRAIN_TOKEN"] == token and len(token) >= 32
    assert how is not None and token in how and "Authorization: Bearer" in how
    assert ensure_token("0.0.0.0", environ={})[0] != token  # a fresh one each time
    assert ensure_token("127.0.0.1", environ={}) == (None, None)  # loopback: no token by default
    assert ensure_token("0.0.0.0", environ={"OPENENV_TRAIN_TOKEN": TOKEN}) == (TOKEN, None)


def test_serve_subprocess_with_token_file(tmp_path):
    """``python -m openenv_train.server APP --token-file F`` requires that token (loopback)."""
    path = tmp_path / "token"
    path.write_text(TOKEN)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENENV_TRAIN_TOKEN")}
    env["PYTHONPATH"] = str(Path(__file__).parent)
    port = free_port()
    cmd = [sys.executable, "-m", "openenv_train.server", "server_cli_app:app", "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--token-file", str(path)], env=env)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.poll() is None
        try:
            return httpx.get(url + "/health").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(up, timeout=30, what="server health")
        assert httpx.get(url + "/schema").status_code == 401
        assert httpx.get(url + "/schema", headers=AUTH).status_code == 200
    finally:
        proc.terminate()
        proc.wait(15)


async def test_refusal_on_servers_without_the_http_response_extension():
    """ASGI servers that cannot send an HTTP response to an upgrade get a close (HTTP 403)."""
    from openenv_train.server.guard import Gate
    from openenv_train.server.limits import Limits

    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "websocket.connect"}

    async def send(message: dict) -> None:
        sent.append(message)

    gate = Gate(Limits(), TOKEN)
    scope = {"type": "websocket", "path": "/ws", "headers": [(b"authorization", b"Bearer no")]}
    assert not gate.authorised(scope)
    await gate.refuse_websocket(scope, receive, send)
    assert sent == [{"type": "websocket.close", "code": 1008}]
