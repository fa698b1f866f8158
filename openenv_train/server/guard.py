"""The gate in front of every HTTP request and WebSocket upgrade: token, size, time, JSON.

What passes the gate is a request from an authorised client whose whole body arrived within
``request_timeout_s``, is at most ``max_body_bytes`` and, on the JSON routes, is strict JSON
(no ``NaN``, no lone surrogates, bounded nesting). Everything else is answered here with a small
JSON error and never reaches a route, so no route has to defend against it.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any

from .encoding import JSONDecodeError, bounded_text, loads, too_deep
from .errors import _Disconnected as _Disconnected
from .errors import _InvalidJSON as _InvalidJSON
from .errors import _Refusal as _Refusal
from .limits import Limits

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Routes anyone may call without the token: a liveness probe reveals nothing about the env.
OPEN_PATHS = frozenset({"/health"})
#: Routes whose body FastAPI parses with the standard library; the gate checks it strictly first.
JSON_PATHS = frozenset({"/reset", "/step"})
#: Deeper JSON than this is refused before validation (pydantic and ``json`` recurse per level).
MAX_JSON_DEPTH = 64
_AUTH_HINT = (
    "missing or wrong bearer token: send 'Authorization: Bearer <token>' (clients: token= or the "
    "OPENENV_TRAIN_TOKEN variable)"
)


_TWO_FRAMINGS = (
    "the request has both Content-Length and Transfer-Encoding; send one of them (the "
    "connection is closed: RFC 9112 section 6.3)"
)


def json_depth_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True if ``value`` nests lists/objects more than ``limit`` levels (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in item if isinstance(child, (dict, list)))
    return False


class Gate:
    """Wraps an ASGI app; ``token=None`` means no access control (the loopback default)."""

    def __init__(self, limits: Limits, token: str | None) -> None:
        self.limits = limits
        self._expected = ("Bearer " + token).encode() if token else None

    @property
    def requires_token(self) -> bool:
        return self._expected is not None

    def authorised(self, scope: Scope) -> bool:
        """Constant-time check of the ``Authorization`` header (the token is never logged)."""
        if self._expected is None:
            return True
        for name, value in scope.get("headers") or ():
            if name == b"authorization":
                return hmac.compare_digest(value, self._expected)
        return False

    async def refuse_websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the upgrade with HTTP 401 instead of accepting it."""
        message = await receive()
        if message.get("type") != "websocket.connect":
            return
        if "websocket.http.response" not in (scope.get("extensions") or {}):
            await send({"type": "websocket.close", "code": 1008})  # the server answers 403
            return
        body = _error_body("UNAUTHORIZED", _AUTH_HINT)
        await send(
            {
                "type": "websocket.http.response.start",
                "status": 401,
                "headers": _headers(body, {b"www-authenticate": b"Bearer"}),
            }
        )
        await send({"type": "websocket.http.response.body", "body": body})

    async def http(self, scope: Scope, receive: Receive, send: Send, app: ASGIApp) -> None:
        try:
            if scope["path"] not in OPEN_PATHS and not self.authorised(scope):
                raise _Refusal(401, "UNAUTHORIZED", _AUTH_HINT)
            body = await self._read_body(scope, receive)
            if body and scope["path"] in JSON_PATHS:
                _check_json(body)
        except _Refusal as r:
            if r.status == 413:  # read the rest first, or the client sees a reset, not the 413
                await _drain(receive, self.limits.request_timeout_s)
            await _respond(send, r.status, _error_body(r.code, r.message), close=True)
            return
        except _Disconnected:
            return
        except _InvalidJSON as bad:
            await _respond(send, 422, bad.body, close=False)
            return
        await app(scope, _replay(body, receive), send)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        limit = self.limits.max_body_bytes
        declared: int | None = None
        chunked = False
        for name, value in scope.get("headers") or ():
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    raise _Refusal(400, "BAD_REQUEST", "Content-Length is not a number") from None
            elif name == b"transfer-encoding":
                chunked = True
        if declared is not None:
            if chunked:  # two framings: a request could hide behind the body (RFC 9112 6.3)
                raise _Refusal(400, "BAD_REQUEST", _TWO_FRAMINGS)
            if declared > limit:
                raise _Refusal(413, "TOO_LARGE", _too_large(limit, declared))
        try:
            return await asyncio.wait_for(_collect(receive, limit), self.limits.request_timeout_s)
        except asyncio.TimeoutError:
            raise _Refusal(
                408,
                "REQUEST_TIMEOUT",
                f"the request body did not arrive within request_timeout_s="
                f"{self.limits.request_timeout_s}s",
            ) from None


async def _collect(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise _Refusal(413, "TOO_LARGE", _too_large(limit, None))
            chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


#: At most this much of a refused body is read (and dropped) so that its 413 reaches the
#: client; a client that writes more than this sees the connection close instead.
MAX_DRAIN_BYTES = 64 * 1024 * 1024


#: Draining stops when the client sends nothing for this long (it declared a body it never
#: sends, or waits for the answer): then it gets the refusal at once.
DRAIN_IDLE_S = 0.5


async def _drain(receive: Receive, timeout_s: float) -> None:
    """Read and discard the rest of a refused body (bounded in bytes, time and idleness).

    A server that answers and closes while the client is still writing makes the client's
    socket reset, and async clients (httpx.AsyncClient) then report a ReadError instead of the
    status. Reading the body out first lets every client see the refusal.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    size = 0
    while size <= MAX_DRAIN_BYTES:
        wait = min(DRAIN_IDLE_S, deadline - loop.time())
        if wait <= 0:
            return
        try:
            message = await asyncio.wait_for(receive(), wait)
        except asyncio.TimeoutError:
            return
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _check_json(body: bytes) -> None:
    try:
        value = loads(body)
    except JSONDecodeError as exc:
        if not too_deep(exc):
            raise _InvalidJSON(_json_invalid(bounded_text(str(exc), 200))) from None
        value, deep = None, True
    except RecursionError:
        value = None
        deep = True
    else:
        deep = json_depth_exceeds(value)
    if deep:
        raise _InvalidJSON(
            _json_invalid(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", "json_too_deep")
        )


def _json_invalid(error: str, kind: str = "json_invalid") -> bytes:
    """FastAPI's shape for a body that is not JSON, so old clients read it the same way."""
    detail = [{"type": kind, "loc": ["body", 0], "msg": "JSON decode error", "input": {}}]
    detail[0]["ctx"] = {"error": error}
    return json.dumps({"detail": detail}).encode()


def _too_large(limit: int, declared: int | None) -> str:
    size = f" ({declared} bytes declared)" if declared is not None else ""
    return (
        f"request body larger than max_body_bytes={limit}{size}; send less, or raise the limit "
        "with Limits(max_body_bytes=...) or OPENENV_TRAIN_MAX_BODY_BYTES"
    )


def _error_body(code: str, message: str) -> bytes:
    return json.dumps({"detail": {"code": code, "message": message}}).encode()


def _headers(body: bytes, extra: dict[bytes, bytes] | None = None) -> list[tuple[bytes, bytes]]:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    return headers + list((extra or {}).items())


async def _respond(send: Send, status: int, body: bytes, close: bool) -> None:
    extra = {b"connection": b"close"} if close else {}
    if status == 401:
        extra[b"www-authenticate"] = b"Bearer"
    await send({"type": "http.response.start", "status": status, "headers": _headers(body, extra)})
    await send({"type": "http.response.body", "body": body})


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body read by the gate, then the real messages."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class GatedApp:
    """Any ASGI app (middleware around ``create_app``, a Starlette app) behind a ``Gate``.

    ``serve()`` puts an app it cannot gate from inside in one of these, so a token it requires
    is required on every route of the app, whatever wraps the env app.
    """

    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self.app, self.gate = app, gate
        self.limits = gate.limits  # found by find_limits (the HTTP protocol's head deadline)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self.gate.http(scope, receive, send, self.app)
            return
        if kind == "websocket" and not self.gate.authorised(scope):
            await self.gate.refuse_websocket(scope, receive, send)
            return
        await self.app(scope, receive, send)
