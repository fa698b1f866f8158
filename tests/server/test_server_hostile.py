"""Hostile and careless input: every bad frame or body gets a small error that names the field.

Each test here reproduces a defect found by trying the servers as an attacker would (issue 10);
they failed on the code before the fix.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket

import pytest
import websockets
from server_envs import (
    AddAction,
    CounterEnv,
    CounterState,
    GameTools,
    NoteAction,
    NoteEnv,
    TotalObservation,
)
from server_helpers import http_request, masked_frame, raw_ws_connect, read_http_response, rpc

from openenv_train.core import CallToolAction, CallToolObservation, Observation
from openenv_train.server import create_app

pytestmark = pytest.mark.timeout(60)

#: An error reply never carries more than this, whatever the size of the bad input.
SMALL = 8 * 1024


def counter_app(**kw):
    return create_app(CounterEnv, AddAction, TotalObservation, CounterState, **kw)


def note_app(**kw):
    return create_app(NoteEnv, NoteAction, Observation, **kw)


async def _still_works(ws) -> None:
    r = await rpc(ws, {"type": "step", "data": {"n": 1}})
    assert r["type"] == "observation", r


@pytest.mark.parametrize("kind", [["step"], {"step": 1}, 1.5, None, True, "x" * 100_000])
async def test_frame_type_that_is_not_a_name_is_unknown_type(serve_app, kind):
    """Defect 1: ``{"type": ["step"]}`` raised TypeError and dropped the TCP connection."""
    s = serve_app(counter_app())
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        r = await rpc(ws, {"type": kind, "data": {}})
        assert r["type"] == "error" and r["data"]["code"] == "UNKNOWN_TYPE", r
        assert len(json.dumps(r)) < SMALL
        await _still_works(ws)


@pytest.mark.parametrize("kind", [["call_tool"], {"a": 1}])
async def test_mcp_action_type_that_is_not_a_name_is_validation_error(serve_app, kind):
    """Found by the long fuzz profile: an MCP env's action ``{"type": [...]}`` raised TypeError
    (an EXECUTION_ERROR over /ws, a bare HTTP 500 on /step)."""
    s = serve_app(create_app(GameTools, CallToolAction, CallToolObservation))
    action = {"type": kind, "tool_name": "add", "arguments": {"a": 1}}
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        r = await rpc(ws, {"type": "step", "data": action})
        assert r["type"] == "error" and r["data"]["code"] == "VALIDATION_ERROR", r
        assert r["data"]["errors"][0]["loc"] == ["type"]
    status, body = await asyncio.to_thread(_post, s.port, "/step", json.dumps({"action": action}))
    assert status == 422 and json.loads(body)["detail"][0]["loc"] == ["body", "action", "type"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/reset", b"NaN", "body"),
        ("/reset", b"Infinity", "body"),
        ("/reset", b'{"seed": NaN}', "body"),
        ("/step", b'{"action": {"text": "\\ud800", "nope": 1}}', "body"),
        ("/step", b'{"action": {"text": "\\ud800"}}', "body"),
        ("/step", b'{"action": {"text": 1e999}}', "body"),
    ],
)
def test_bad_http_bodies_are_4xx_and_keep_alive_survives(serve_app, path, body, field):
    """Defect 2: NaN or a lone surrogate made the 422 handler fail (HTTP 500, connection reset)."""
    s = serve_app(note_app())
    with socket.create_connection(("127.0.0.1", s.port)) as sock:
        sock.sendall(http_request("POST", path, body))
        status, _, reply = read_http_response(sock)
        assert 400 <= status < 500, (status, reply[:300])
        detail = json.loads(reply)["detail"]
        assert detail and detail[0]["loc"][0] == field, detail
        sock.sendall(http_request("GET", "/health"))  # the same keep-alive connection
        status, _, reply = read_http_response(sock)
        assert status == 200 and json.loads(reply)["status"] == "healthy"


async def test_lone_surrogate_over_ws_is_a_clean_error(serve_app):
    s = serve_app(note_app())
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        r = await rpc(ws, '{"type": "step", "data": {"text": "\\ud800"}}')
        assert r["type"] == "error" and r["data"]["code"] in ("INVALID_JSON", "VALIDATION_ERROR")
        r = await rpc(ws, {"type": "step", "data": {"text": "fine"}})
        assert r["data"]["observation"]["metadata"] == {"echo": "fine"}


async def test_error_reply_is_bounded_and_names_field_and_limit(serve_app):
    """Defect 3: a bad 500 KB value came back four times (a 2 MB error frame)."""
    s = serve_app(counter_app())
    big = "x" * 500_000
    async with websockets.connect(s.ws_url, max_size=2**24) as ws:
        await rpc(ws, {"type": "reset"})
        r = await rpc(ws, {"type": "step", "data": {"n": big}})
        raw = json.dumps(r)
        assert r["data"]["code"] == "VALIDATION_ERROR"
        assert len(raw) < SMALL, len(raw)
        assert "'n'" in r["data"]["message"]
        (err,) = r["data"]["errors"]
        assert err["loc"] == ["n"] and err["input_truncated"] is True
        assert "500000" in err["input"]  # says how big the input was
        await _still_works(ws)
    reply = await asyncio.to_thread(_post, s.port, "/step", json.dumps({"action": {"n": big}}))
    status, body = reply
    assert status == 422 and len(body) < SMALL, (status, len(body))
    assert json.loads(body)["detail"][0]["loc"] == ["body", "action", "n"]


def _post(port: int, path: str, body: str) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(http_request("POST", path, body.encode()))
        status, _, reply = read_http_response(sock)
    return status, reply


@pytest.mark.parametrize("depth", [200, 1000, 10_000])
async def test_deeply_nested_action_is_validation_error(serve_app, depth):
    """Defect 3: 1,000 nested levels were an EXECUTION_ERROR (a RecursionError); past the
    parser's 1,024 levels they were INVALID_JSON (issue 41): too deep is VALIDATION_ERROR."""
    s = serve_app(counter_app())
    nested = "[" * depth + "]" * depth
    async with websockets.connect(s.ws_url) as ws:
        await rpc(ws, {"type": "reset"})
        r = await rpc(ws, '{"type": "step", "data": {"n": 1, "metadata": {"x": ' + nested + "}}}")
        if depth > 500 or r["type"] == "error":  # shallower input may also be served
            assert r["type"] == "error", r
            assert r["data"]["code"] == "VALIDATION_ERROR", r
        assert len(json.dumps(r)) < SMALL
        await _still_works(ws)
    status, body = await asyncio.to_thread(
        _post, s.port, "/step", '{"action": {"n": 1, "metadata": {"x": ' + nested + "}}}"
    )
    assert 400 <= status < 500 and len(body) < SMALL, (status, body[:300])


async def test_boolean_seed_is_refused(serve_app):
    """Defect 6: ``seed: true`` was accepted as 1 (the env and our client refuse booleans)."""
    s = serve_app(counter_app())
    async with websockets.connect(s.ws_url) as ws:
        r = await rpc(ws, {"type": "reset", "data": {"seed": True}})
        assert r["data"]["code"] == "VALIDATION_ERROR" and r["data"]["errors"][0]["loc"] == ["seed"]
        r = await rpc(ws, {"type": "reset", "data": {"seed": 3}})
        assert r["data"]["observation"]["total"] == 3
    status, body = await asyncio.to_thread(_post, s.port, "/reset", '{"seed": true}')
    assert status == 422 and json.loads(body)["detail"][0]["loc"] == ["body", "seed"]


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_invalid_utf8_closes_1007_without_an_error_traceback(serve_app):
    """Defect 6: every invalid UTF-8 text frame logged an ERROR with a traceback."""
    s = serve_app(counter_app())
    handler = _Records()
    loggers = [logging.getLogger(n) for n in ("uvicorn.error", "openenv_train", "websockets", "")]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        for _ in range(3):
            sock = raw_ws_connect(s.port)
            sock.sendall(masked_frame(b"\xff\xfe"))
            sock.settimeout(10)
            data = sock.recv(64)
            assert data[0] == 0x88 and int.from_bytes(data[2:4], "big") == 1007
            sock.close()
        sock = raw_ws_connect(s.port)  # the server still serves
        sock.close()
    finally:
        for lg in loggers:
            lg.removeHandler(handler)
    bad = [r for r in handler.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad]
