"""Property-based fuzzing of ``/ws`` and the HTTP bodies against a real server on loopback.

After every example: the server answered, the reply is a small protocol frame, the session
still serves, the server is healthy. At the end of a module: no session leaked, no traceback.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fuzz_strategies import (
    ERROR_REPLY_MAX,
    FuzzServer,
    action_strategy,
    frames,
    mutate_text,
    reply_bound,
    reset_bodies,
    rpc_requests,
)
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.fuzz  # the run-wide --timeout applies (make fuzz raises it)

REPLY_TYPES = {"observation", "state", "error", "mcp"}


def test_ws_frames(fuzz_server: FuzzServer, session: Any) -> None:
    @settings(database=None)
    @given(frame=frames(fuzz_server.schema["action"]))
    def check(frame: str | bytes) -> None:
        session.send(frame)
        reply = session.recv(timeout=30)
        msg = json.loads(reply)
        assert msg["type"] in REPLY_TYPES, reply[:300]
        limit = ERROR_REPLY_MAX if msg["type"] == "error" else reply_bound(len(frame))
        assert len(reply) <= limit, (msg["type"], len(reply), reply[:300])
        if msg["type"] == "error":
            assert msg["data"]["code"] in {
                "INVALID_JSON",
                "UNKNOWN_TYPE",
                "VALIDATION_ERROR",
                "EXECUTION_ERROR",
            }, msg
        session.send('{"type": "state"}')  # the session survives
        assert json.loads(session.recv(timeout=30))["type"] == "state"

    check()
    assert fuzz_server.health()["active_sessions"] == 1


def _post(client: httpx.Client, path: str, body: bytes) -> httpx.Response:
    return client.post(path, content=body, headers={"content-type": "application/json"})


def test_http_bodies(fuzz_server: FuzzServer) -> None:
    action = action_strategy(fuzz_server.schema["action"])
    bodies = st.one_of(
        st.tuples(st.just("/step"), st.fixed_dictionaries({"action": action}).map(json.dumps)),
        st.tuples(st.just("/step"), action.map(json.dumps)),
        st.tuples(st.just("/reset"), reset_bodies().map(json.dumps)),
        st.tuples(st.just("/mcp"), rpc_requests().map(json.dumps)),
    )

    with httpx.Client(base_url=fuzz_server.url, timeout=30) as client:

        @settings(database=None)
        @given(case=bodies.flatmap(lambda pb: st.tuples(st.just(pb[0]), mutate_text(pb[1]))))
        def check(case: tuple[str, str | bytes]) -> None:
            path, body = case
            raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
            r = _post(client, path, raw)
            assert r.status_code < 500 or (
                path != "/mcp" and r.json()["detail"]["code"] == "EXECUTION_ERROR"
            ), (r.status_code, r.text[:300])
            assert r.headers["content-type"].startswith("application/json")
            limit = ERROR_REPLY_MAX if r.status_code >= 400 else reply_bound(len(raw))
            assert len(r.content) <= limit, (r.status_code, len(r.content))
            r.json()
            assert client.get("/health").status_code == 200  # same keep-alive connection

        check()
