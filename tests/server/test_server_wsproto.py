"""The lean WebSocket frame path still speaks RFC 6455 for everything it hands to websockets."""

from __future__ import annotations

import asyncio
import json
import os
import socket

import pytest
import websockets
from server_envs import AddAction, CounterEnv, CounterState, GameTools, TotalObservation
from server_helpers import raw_ws_connect, rpc, wait_until
from websockets.exceptions import ConnectionClosed

from openenv_train.core import CallToolAction, CallToolObservation
from openenv_train.server import create_app
from openenv_train.server.wsproto_fast import FastWebSocketsProtocol

pytestmark = pytest.mark.timeout(60)


def tools_app():
    return create_app(GameTools, CallToolAction, CallToolObservation)


def shout(text: str) -> dict:
    return {
        "type": "step",
        "data": {"type": "call_tool", "tool_name": "shout", "arguments": {"text": text}},
    }


async def test_fast_path_is_used_and_sizes_round_trip(serve_app):
    s = serve_app(tools_app())
    async with websockets.connect(s.ws_url, max_size=None) as ws:
        await rpc(ws, {"type": "reset"})
        (proto,) = [
            c for c in s.server.server_state.connections if isinstance(c, FastWebSocketsProtocol)
        ]
        assert proto._fast  # the lean path is engaged after the handshake
        for size in (10, 125, 126, 200, 65535, 65536, 300_000):
            r = await rpc(ws, shout("a" * size))
            assert r["data"]["observation"]["result"] == "A" * size
        await ws.send([json.dumps({"type": "reset"})[:5], json.dumps({"type": "reset"})[5:]])
        assert json.loads(await ws.recv())["type"] == "observation"  # fragmented message
        await asyncio.wait_for(await ws.ping(), 10)  # control frame mid-session
        assert (await rpc(ws, shout("still here")))["data"]["observation"]["result"] == "STILL HERE"


async def test_oversize_message_closes_1009(serve_app):
    s = serve_app(
        create_app(CounterEnv, AddAction, TotalObservation, CounterState), ws_max_size=1000
    )
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        await ws.send(json.dumps({"type": "step", "data": {"n": 1, "metadata": {"x": "y" * 2000}}}))
        with pytest.raises(ConnectionClosed):
            await ws.recv()
        assert ws.close_code == 1009


def test_invalid_utf8_closes_1007(serve_app):
    s = serve_app(create_app(CounterEnv, AddAction, TotalObservation, CounterState))
    sock = raw_ws_connect(s.port)
    mask = os.urandom(4)
    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(b"\xff\xfe"))
    sock.sendall(bytes([0x81, 0x82]) + mask + payload)
    sock.settimeout(10)
    data = b""
    while len(data) < 4:
        chunk = sock.recv(64)
        if not chunk:
            break
        data += chunk
    assert data[0] == 0x88 and int.from_bytes(data[2:4], "big") == 1007
    sock.close()


def test_unmasked_client_frame_is_a_protocol_error(serve_app):
    s = serve_app(create_app(CounterEnv, AddAction, TotalObservation, CounterState))
    sock = raw_ws_connect(s.port)
    body = b'{"type":"state"}'
    sock.sendall(bytes([0x81, len(body)]) + body)
    sock.settimeout(10)
    data = sock.recv(64)
    assert data[0] == 0x88 and int.from_bytes(data[2:4], "big") == 1002
    sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _masked(text: str) -> bytes:
    body = text.encode()
    mask = os.urandom(4)
    n = len(body)
    head = bytes([0x81, 0x80 | n]) if n < 126 else bytes([0x81, 0x80 | 126]) + n.to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(body))


def _read_frames(sock: socket.socket, count: int) -> list[dict]:
    sock.settimeout(10)
    buf, out = b"", []
    while len(out) < count:
        buf += sock.recv(65536)
        while len(buf) >= 2:
            n, off = buf[1] & 0x7F, 2
            if n == 126:
                n, off = int.from_bytes(buf[2:4], "big"), 4
            if len(buf) < off + n:
                break
            out.append(json.loads(buf[off : off + n]))
            buf = buf[off + n :]
    return out


def test_frames_split_and_coalesced_across_tcp_writes(serve_app):
    s = serve_app(create_app(CounterEnv, AddAction, TotalObservation, CounterState))
    sock = raw_ws_connect(s.port)  # already did one reset
    (proto,) = [
        c for c in s.server.server_state.connections if isinstance(c, FastWebSocketsProtocol)
    ]
    steps = b"".join(_masked(json.dumps({"type": "step", "data": {"n": i}})) for i in range(1, 4))
    sock.sendall(steps)  # three frames in one write
    assert [f["data"]["observation"]["total"] for f in _read_frames(sock, 3)] == [1, 3, 6]
    big = _masked(json.dumps({"type": "step", "data": {"n": 4, "metadata": {"pad": "p" * 300}}}))
    for cut in (1, 3, 7, 100):  # a frame dribbled in pieces, header included
        head = big[:cut]
        sock.sendall(head)
        wait_until(lambda h=head: proto._buf == h, 10, "the server to hold the first piece")
        sock.sendall(big[cut:])
        _read_frames(sock, 1)
    assert _read_frames(sock, 0) == []
    sock.sendall(_masked(json.dumps({"type": "state"})))
    assert _read_frames(sock, 1)[0]["data"]["step_count"] == 7
    sock.close()


async def test_compression_negotiated_falls_back_to_websockets(serve_app):
    s = serve_app(tools_app(), ws_per_message_deflate=True)
    async with websockets.connect(s.ws_url, compression="deflate") as ws:
        await rpc(ws, {"type": "reset"})
        (proto,) = [
            c for c in s.server.server_state.connections if isinstance(c, FastWebSocketsProtocol)
        ]
        assert proto.conn.extensions and not proto._fast
        assert (await rpc(ws, shout("z" * 5000)))["data"]["observation"]["result"] == "Z" * 5000
