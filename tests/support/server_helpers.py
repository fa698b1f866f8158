"""Helpers for the server tests: a real uvicorn server in a thread, frame I/O, polling.

(A uniquely named module, not conftest: test directories share one ``conftest`` module name.)
"""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvicorn

from openenv_train.server import uvicorn_kwargs


class ServerThread:
    """Runs ``app`` with uvicorn on 127.0.0.1 (OS-picked port) in a daemon thread."""

    def __init__(self, app: Any, **options: Any) -> None:
        kw = uvicorn_kwargs(**options)
        self.config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", **kw)
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.ws_url = f"ws://127.0.0.1:{port}/ws"
        self.port = port
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        assert not self.thread.is_alive(), "server thread did not stop"


async def rpc(ws: Any, frame: dict[str, Any] | str) -> dict[str, Any]:
    """Send one frame over /ws and return the decoded reply."""
    await ws.send(frame if isinstance(frame, str) else json.dumps(frame))
    return json.loads(await ws.recv())


def wait_until(
    predicate: Callable[[], bool], timeout: float = 15.0, what: str = "condition"
) -> None:
    """Poll until ``predicate()`` holds (a deadline, not a timing assert)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


async def until(
    predicate: Callable[[], bool], timeout: float = 15.0, what: str = "condition"
) -> None:
    """``wait_until`` for a coroutine: polls without blocking the event loop the test runs on."""
    import asyncio

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def raw_ws_connect(port: int) -> socket.socket:
    """A hand-made WebSocket client socket that has done one reset (for vanish/RFC tests)."""
    sock = socket.create_connection(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head
    payload = json.dumps({"type": "reset"}).encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
    reply = sock.recv(4096)
    assert b'"observation"' in reply
    return sock


def read_http_response(
    sock: socket.socket, timeout: float = 10.0
) -> tuple[int, dict[str, str], bytes]:
    """Read one HTTP/1.1 response with a Content-Length body from ``sock``."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed before a response head: {data[:200]!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
    size = int(headers.get("content-length", "0"))
    while len(body) < size:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed mid-body")
        body += chunk
    return status, headers, body[:size]


def http_request(
    method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> bytes:
    """The bytes of one HTTP/1.1 request with a Content-Length body."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    if body or method == "POST":
        hdrs.setdefault("Content-Length", str(len(body)))
    lines += [f"{k}: {v}" for k, v in hdrs.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def masked_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """One complete, masked client WebSocket frame."""
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, 0x80 | n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


@pytest.fixture
def serve_app() -> Iterator[Callable[..., ServerThread]]:
    """Start apps on real uvicorn servers; all are stopped after the test (a conftest imports
    this fixture to offer it)."""
    started: list[ServerThread] = []

    def start(app: Any, **options: Any) -> ServerThread:
        s = ServerThread(app, **options).start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
