"""Property-based fuzzing of the two other WebSocket paths against a real server on loopback:
the batch framing on ``/ws`` (many sessions on one connection) and MCP JSON-RPC on ``/mcp``.

Batch: every message is checked against a model of docs/reference/protocol.md's batch section:
a message that is not a batch is refused whole with one standard error frame; otherwise each
sub-frame gets exactly the reply the page promises, per session and in order (a new, larger
number opens a session, a closed or skipped number is ``SESSION_ERROR``, a ``close`` has no
reply). MCP: every non-empty message gets one JSON-RPC 2.0 response with the request's id (null
when it had no valid one) and a standard error code. Both: never a close with 1011, the
connection and an honest session beside it keep serving, and every session an example opened is
freed when its connection ends (the module's server ends healthy with none left).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from fuzz_strategies import (
    ERROR_REPLY_MAX,
    HONEST_SESSION,
    FuzzServer,
    batch_messages,
    mcp_ws_frames,
    reply_bound,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from server_helpers import wait_until
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from openenv_train.core.mcp_types import JsonRpcCode
from openenv_train.server import Limits
from openenv_train.server.ws_batch import BATCH_SUBPROTOCOL, MAX_BATCH_FRAMES

pytestmark = pytest.mark.fuzz  # the run-wide --timeout applies (make fuzz raises it)

#: Nesting past this many levels is refused (a ``VALIDATION_ERROR``), as on a standard frame.
MAX_DEPTH = 64
MAX_FRAME_BYTES = Limits().max_frame_bytes
#: What a sub-frame that reached its session may be answered with.
HANDLED_TYPES = {"observation", "state", "mcp"}
HANDLED_ERRORS = {"UNKNOWN_TYPE", "VALIDATION_ERROR", "EXECUTION_ERROR"}
RPC_CODES = {int(c) for c in JsonRpcCode}


def _depth(value: Any) -> int:
    """Levels of arrays/objects (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            stack.extend((c, level + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


class BatchModel:
    """One batch connection as the protocol page describes it: which numbers hold an open
    session and the highest number seen. ``expect`` says what a message must be answered with."""

    def __init__(self) -> None:
        self.open: set[int] = set()
        self.top = -1

    def expect(self, text: str | bytes) -> str | list[tuple[int, str]]:
        """The code of the one error frame that refuses the message, or the replies it must
        get in order: ``(session, "handled" | "gone")``."""
        try:
            msg = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            return "VALIDATION_ERROR" if "depth" in str(exc) else "INVALID_JSON"
        if _depth(msg) > MAX_DEPTH:
            return "VALIDATION_ERROR"
        frames = msg.get("frames") if type(msg) is dict and msg.get("type") == "batch" else None
        if type(frames) is not list or len(frames) > MAX_BATCH_FRAMES:
            return "VALIDATION_ERROR"
        for sub in frames:
            key = sub.get("session") if type(sub) is dict else None
            if type(key) is not int or key < 0:
                return "VALIDATION_ERROR"
        replies: list[tuple[int, str]] = []
        for sub in frames:
            key = sub.pop("session")
            is_close = sub.get("type") == "close"
            if key in self.open:
                if is_close and set(sub) <= {"type", "data"}:
                    self.open.discard(key)  # closed: no reply, the number is never reused
                else:
                    replies.append((key, "handled"))
            elif is_close:
                continue  # nothing to close: no reply
            elif key <= self.top:
                replies.append((key, "gone"))
            else:
                self.top = key
                self.open.add(key)
                replies.append((key, "handled"))
        return replies


def _batch_replies(ws: Any, count: int, size: int) -> dict[int, list[dict[str, Any]]]:
    """Read ``count`` sub-frame replies (over one or more batch messages), by session."""
    got: dict[int, list[dict[str, Any]]] = {}
    seen = 0
    while seen < count:
        raw = ws.recv(timeout=30)
        msg = json.loads(raw)
        assert msg.get("type") == "batch", raw[:300]
        for frame in msg["frames"]:
            key = frame.pop("session")
            assert type(key) is int, frame
            if frame["type"] == "error":
                assert len(json.dumps(frame)) <= ERROR_REPLY_MAX, frame["data"]["code"]
            else:
                assert len(json.dumps(frame)) <= reply_bound(size), frame["type"]
            got.setdefault(key, []).append(frame)
            seen += 1
    return got


def _kind(frame: dict[str, Any]) -> str:
    """What a sub-frame reply is, in the model's words (anything undocumented is itself)."""
    if frame["type"] in HANDLED_TYPES:
        return "handled"
    if frame["type"] == "error":
        code = frame["data"]["code"]
        if code == "SESSION_ERROR":
            return "gone"
        if code in HANDLED_ERRORS:
            return "handled"
        return f"error {code}"
    return f"type {frame['type']}"


def _exchange(ws: Any, model: BatchModel, text: str | bytes) -> None:
    """Send one message and check every reply it gets against the model."""
    expected = model.expect(text)
    ws.send(text)
    if isinstance(expected, str):
        raw = ws.recv(timeout=30)
        msg = json.loads(raw)
        assert msg["type"] == "error" and msg["data"]["code"] == expected, raw[:300]
        assert len(raw) <= ERROR_REPLY_MAX, len(raw)
        return
    got = _batch_replies(ws, len(expected), len(text))
    want: dict[int, list[str]] = {}
    for key, kind in expected:
        want.setdefault(key, []).append(kind)
    assert {k: [_kind(f) for f in v] for k, v in got.items()} == want, (got, text[:500])


def _honest_state(ws: Any) -> None:
    ws.send('{"type": "state"}')
    assert json.loads(ws.recv(timeout=30))["type"] == "state"


def test_batch_messages(fuzz_server: FuzzServer, session: Any) -> None:
    schema = fuzz_server.schema["action"]
    messages = batch_messages(schema, MAX_BATCH_FRAMES)

    @settings(database=None)
    @given(texts=st.lists(messages, min_size=1, max_size=3))
    def check(texts: list[str | bytes]) -> None:
        with connect(
            fuzz_server.ws_url,
            subprotocols=[BATCH_SUBPROTOCOL],
            max_size=2**24,
            compression=None,
            ping_interval=None,  # (keepalive pings draw from `random`, which Hypothesis flags)
        ) as ws:
            assert ws.subprotocol == BATCH_SUBPROTOCOL
            model = BatchModel()
            _exchange(
                ws,
                model,
                json.dumps({"type": "batch", "frames": [{"session": 0, "type": "reset"}]}),
            )
            for text in texts:
                size = len(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
                if size > MAX_FRAME_BYTES:  # a protocol error: the connection fails with 1009
                    ws.send(text)
                    with pytest.raises(ConnectionClosed) as closed:
                        ws.recv(timeout=30)
                    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
                    break
                _exchange(ws, model, text)
            else:  # the connection and its first session still serve
                assert HONEST_SESSION in model.open
                _exchange(
                    ws, model, '{"type": "batch", "frames": [{"session": 0, "type": "state"}]}'
                )
        _honest_state(session)

    check()
    # every session each connection carried ended with it (the honest /ws one stays); checked
    # once, not per example, so a leak fails in seconds instead of slowing every shrink step
    wait_until(lambda: fuzz_server.health()["active_sessions"] == 1, 10, "batch sessions freed")


def _expected_id(frame: str | bytes) -> Any:
    """The id a JSON-RPC reply must carry: the request's when it is valid, else null."""
    try:
        req = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return None
    rid = req.get("id") if type(req) is dict else None
    if type(rid) is str and len(rid) <= 256:
        return rid
    if type(rid) is int and abs(rid) <= 2**63:
        return rid
    return None


def test_mcp_ws_requests(fuzz_server: FuzzServer, session: Any) -> None:
    url = fuzz_server.url.replace("http://", "ws://") + "/mcp"
    with connect(url, max_size=2**24, compression=None, ping_interval=None) as ws:
        serves_tools = None

        @settings(database=None)
        @given(frame=mcp_ws_frames())
        def check(frame: str | bytes) -> None:
            nonlocal serves_tools
            ws.send(frame)
            if frame:  # an empty message is skipped, never answered
                raw = ws.recv(timeout=30)
                reply = json.loads(raw)
                assert reply["jsonrpc"] == "2.0" and reply["id"] == _expected_id(frame), raw[:300]
                assert set(reply) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"})
                if "error" in reply:
                    assert reply["error"]["code"] in RPC_CODES, reply
                    assert isinstance(reply["error"]["message"], str), reply
                    assert len(raw) <= ERROR_REPLY_MAX, len(raw)
                else:
                    assert len(raw) <= reply_bound(len(frame)), len(raw)
            # the connection's session still serves, and so does the honest /ws one
            ws.send('{"jsonrpc": "2.0", "id": "honest", "method": "tools/list"}')
            reply = json.loads(ws.recv(timeout=30))
            assert reply["id"] == "honest", reply
            tools = "result" in reply and {t["name"] for t in reply["result"]["tools"]}
            if serves_tools is None:
                serves_tools = bool(tools)
            assert (tools and "echo_message" in tools) if serves_tools else reply["error"], reply
            _honest_state(session)

        check()
        assert fuzz_server.health()["active_sessions"] == 2  # this one and the honest /ws one
    wait_until(lambda: fuzz_server.health()["active_sessions"] == 1, 10, "the MCP session freed")
