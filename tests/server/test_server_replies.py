"""Issue 22: replies that are bounded and delivered, the token on any app, an honest /health.

Each test drives a real uvicorn server on loopback (in this process or in a subprocess).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest
import websockets
from ports import free_port
from processes import interrupt
from server_envs import REG, AddAction, CounterEnv, CounterState, GameTools, TotalObservation
from server_helpers import rpc, wait_until

from openenv_train.client import GenericEnvClient
from openenv_train.client.mcp_http import McpHttpError, McpHttpSession
from openenv_train.core import InfrastructureError, RequestTooLargeError
from openenv_train.core.mcp_types import CallToolAction, CallToolObservation
from openenv_train.server import Limits, create_app, ws

pytestmark = pytest.mark.timeout(120)

HUGE_NAME = "x" * 800_000  # a bad tool name near the body limit
MAX_REPLY = 16_000  # an error reply stays this small, whatever the client sent


def tools_server(serve_app):  # type: ignore[no-untyped-def]
    return serve_app(
        create_app(GameTools, CallToolAction, CallToolObservation, limits=Limits(max_sessions=3))
    )


def counter_app(**kw):  # type: ignore[no-untyped-def]
    return create_app(CounterEnv, AddAction, TotalObservation, CounterState, **kw)


def _mcp_body(**params) -> dict:  # type: ignore[no-untyped-def]
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


# ---- every error path echoes at most a bounded prefix ---------------------------------------


async def test_unknown_tool_name_is_echoed_bounded_over_http_ws_mcp_and_step(serve_app):
    s = tools_server(serve_app)
    r = httpx.post(s.url + "/mcp", json=_mcp_body(name=HUGE_NAME, arguments={}), timeout=30)
    assert len(r.content) < MAX_REPLY and r.json()["error"]["code"] == -32602
    assert "(800000 chars)" in r.json()["error"]["message"]
    async with websockets.connect(s.ws_url, max_size=None) as conn:
        await rpc(conn, {"type": "reset"})
        mcp = {"type": "mcp", "data": _mcp_body(name=HUGE_NAME, arguments={})}
        await conn.send(json.dumps(mcp))
        reply = await conn.recv()
        assert len(reply) < MAX_REPLY and "Unknown tool" in reply
        step = {"type": "call_tool", "tool_name": HUGE_NAME, "arguments": {}}
        await conn.send(json.dumps({"type": "step", "data": step}))
        reply = await conn.recv()
        assert len(reply) < MAX_REPLY and "tool_not_found" in reply.lower()


async def test_bad_argument_names_are_echoed_bounded(serve_app):
    s = tools_server(serve_app)
    body = _mcp_body(name="add", arguments={"a": 1, "k" * 500_000: 2})
    r = httpx.post(s.url + "/mcp", json=body, timeout=30)
    assert len(r.content) < MAX_REPLY and r.json()["error"]["code"] == -32602


# ---- a refused body's status reaches every client -------------------------------------------


async def test_oversized_body_413_reaches_an_async_client(serve_app):
    s = serve_app(counter_app(limits=Limits(max_body_bytes=1024 * 1024)))
    body = b"{" + b" " * (8 * 1024 * 1024) + b"}"
    async with httpx.AsyncClient(timeout=30) as client:
        for _ in range(3):
            r = await client.post(s.url + "/mcp", content=body)
            assert r.status_code == 413 and "max_body_bytes" in r.json()["detail"]["message"]


async def test_mcp_http_session_names_the_refusal(serve_app):
    s = serve_app(
        create_app(
            GameTools, CallToolAction, CallToolObservation, limits=Limits(max_body_bytes=100_000)
        )
    )
    session = McpHttpSession(s.url)
    try:
        await session.ensure()
        with pytest.raises(McpHttpError, match="HTTP 413: request body larger than max_body_bytes"):
            await session.call_tool("shout", {"text": "a" * 2_000_000})
    finally:
        await session.close()


# ---- a client's own oversized frame is a client error -----------------------------------------


async def test_own_oversized_frame_is_a_client_error_not_infrastructure(serve_app):
    s = serve_app(counter_app(limits=Limits(max_frame_bytes=10_000)))
    async with GenericEnvClient(s.url) as client:
        await client.reset()
        with pytest.raises(RequestTooLargeError) as caught:
            await client.step({"n": 1, "pad": "x" * 50_000})
        assert not isinstance(caught.value, InfrastructureError)
        assert "max_frame_bytes" in str(caught.value)
        await client.reset()  # a new session on the same, healthy server
        assert (await client.step({"n": 2})).observation["total"] == 2


# ---- one warning per flood, with a count ---------------------------------------------------


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def test_env_exception_warnings_are_rate_limited_with_a_count(serve_app):
    s = serve_app(counter_app())
    seen = _Records()
    logger = logging.getLogger("openenv_train.server")
    logger.addHandler(seen)
    ws._ENV_RAISED._next = 0.0  # noqa: SLF001  (start a fresh window)
    ws._ENV_RAISED._held = 0  # noqa: SLF001
    try:
        async with websockets.connect(s.ws_url) as conn:
            await rpc(conn, {"type": "reset"})
            for _ in range(300):
                r = await rpc(conn, {"type": "step", "data": {"n": 1, "fail": True}})
                assert r["data"]["code"] == "EXECUTION_ERROR"
            assert len([x for x in seen.lines if "env raised" in x]) == 1
            ws._ENV_RAISED._next = 0.0  # noqa: SLF001  (the window ends)
            await rpc(conn, {"type": "step", "data": {"n": 1, "fail": True}})
    finally:
        logger.removeHandler(seen)
    raised = [x for x in seen.lines if "env raised" in x]
    assert len(raised) == 2 and "and 299 more like it" in raised[1]


# ---- /health says when no step can complete ----------------------------------------------------


async def test_health_is_503_while_every_session_is_stuck(serve_app):
    s = serve_app(counter_app(limits=Limits(max_sessions=1, stuck_call_s=0.2)))
    assert httpx.get(s.url + "/health").json()["status"] == "healthy"
    async with websockets.connect(s.ws_url) as conn:
        await rpc(conn, {"type": "reset"})
        await conn.send('{"type": "step", "data": {"n": 1, "block": true}}')
        assert REG.entered.wait(10)

        def unhealthy() -> bool:
            return httpx.get(s.url + "/health").status_code == 503

        wait_until(unhealthy, timeout=10, what="/health 503")
        body = httpx.get(s.url + "/health").json()
        assert body["status"] == "unhealthy" and "stuck_call_s" in body["reason"]
        REG.release.set()
        await conn.recv()
    assert httpx.get(s.url + "/health").json() == {
        "status": "healthy",
        "active_sessions": 0,
        "max_sessions": 1,
        "mode": "simulation",
    }


class BrokenSandboxEnv(CounterEnv):
    ready: str | None = "the sandbox cannot start processes"

    @classmethod
    def check_ready(cls) -> str | None:
        return cls.ready


def test_health_is_503_when_the_env_check_ready_fails(serve_app):
    s = serve_app(create_app(BrokenSandboxEnv, AddAction, TotalObservation, CounterState))
    r = httpx.get(s.url + "/health")
    assert r.status_code == 503 and r.json()["reason"] == "the sandbox cannot start processes"
    BrokenSandboxEnv.ready = None
    assert httpx.get(s.url + "/health").json()["status"] == "healthy"


# ---- serve() requires the token whatever wraps the app ------------------------------------------


def _serve_wrapped_beyond_loopback() -> tuple[subprocess.Popen[str], int, str]:
    """``server_cli_app:wrapped`` served on 0.0.0.0 and listening, with the token it printed.
    Another port when the one picked was taken before the server bound it (another test's
    server then answered on it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENENV_TRAIN_TOKEN")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "openenv_train.server", "server_cli_app:wrapped"]
    for _ in range(3):
        port = free_port("0.0.0.0")
        proc = subprocess.Popen(
            [*cmd, "--host", "0.0.0.0", "--port", str(port)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        printed = ""
        while "Generated token" not in printed:
            line = proc.stderr.readline()
            assert line, f"serve() exited: {printed}"
            printed += line
        token = ""
        while not token:  # the token comes on its own indented line
            token = proc.stderr.readline().strip()
        try:
            wait_until(
                lambda p=proc, n=port: p.poll() is not None or _listens(p, n), 30, "server up"
            )
        except BaseException:
            interrupt(proc)
            raise
        if proc.poll() is None:
            return proc, port, token
        proc.communicate(timeout=30)
    raise AssertionError("3 ports in a row were taken before the server bound them")


def _listens(proc: subprocess.Popen[str], port: int) -> bool:
    try:
        conns = psutil.Process(proc.pid).net_connections(kind="tcp")
    except psutil.Error:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in conns)


async def test_serve_of_a_wrapped_app_beyond_loopback_requires_the_token():
    proc, port, token = _serve_wrapped_beyond_loopback()
    url = f"http://127.0.0.1:{port}"
    try:
        assert httpx.get(url + "/schema").status_code == 401
        assert httpx.get(url + "/extra").status_code == 401  # the wrapper's own route too
        with pytest.raises(websockets.InvalidStatus):
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws"):
                pass
        auth = {"Authorization": "Bearer " + token}
        assert httpx.get(url + "/schema", headers=auth).status_code == 200
        assert httpx.get(url + "/extra", headers=auth).text == "secret"
        assert httpx.get(url + "/health").status_code == 200
    finally:
        interrupt(proc)
