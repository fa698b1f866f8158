"""The ``/ws`` session endpoint as a raw ASGI app (no Starlette wrapper on the per-frame path).

One connection is one session with its own env. Frames are handled one at a time per connection
(the protocol has no request ids); sessions run concurrently with each other. Any error in a
frame is answered with an error frame and the session stays usable.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from pydantic import ValidationError

from ..core.errors import ErrorCode, env_error_members
from ..core.models import Action
from ..core.wire import (
    dumps,
    error_frame_json,
    observation_frame_json,
    parse_action,
    state_frame_json,
)
from .encoding import (
    JSONDecodeError,
    bounded_text,
    describe_errors,
    errors_list,
    loads,
    too_deep,
)
from .frame_check import CLOSE, FrameCheck
from .guard import MAX_JSON_DEPTH, json_depth_exceeds
from .jsonrpc import McpHandler
from .limits import Limits
from .lograte import LimitedWarning
from .sessions import FactoryError, Session, SessionManager, SessionRefused
from .spans import tracing_on
from .ws_batch import BATCH_SUBPROTOCOL, BatchConnection
from .ws_receive import DISCONNECT_ERRORS, receive_frames, send_and_close

log = logging.getLogger("openenv_train.server")
_ENV_RAISED = LimitedWarning(log)  # a client can make an env raise on every frame

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

#: The error a frame on a session closed under its socket gets (then the socket closes).
SESSION_GONE = "Session was closed (idle timeout or openenv/session/close); reconnect"
_GONE_FRAME = error_frame_json(ErrorCode.SESSION_ERROR, SESSION_GONE)
#: The error a frame gets when its session was closed while it waited for the session (a batch
#: message's ``close`` ahead of it): it never reaches the closed env.
_CLOSED_FRAME = error_frame_json(
    ErrorCode.SESSION_ERROR,
    "Session was closed while this request waited for it; start a new session",
)
_FRAME_KEYS = {
    "reset": frozenset({"type", "data"}),
    "step": frozenset({"type", "data"}),
    "state": frozenset({"type", "data"}),
    "close": frozenset({"type", "data"}),
    "mcp": frozenset({"type", "data"}),
}


def _validation_frame(message: str, errors: list[dict[str, Any]]) -> str:
    return error_frame_json(ErrorCode.VALIDATION_ERROR, message, errors=errors)


class WebSocketEndpoint:
    """ASGI callable for ``/ws``; owns nothing but references to the app's shared parts."""

    #: what ``handle`` returns for a ``close`` frame (no reply; the session ends)
    CLOSE = CLOSE
    #: set by ``metrics.instrument``: the server's counters, and a hook that reads a one-session
    #: connection's handshake (its ``traceparent``) before the headers are dropped
    metrics: Any = None
    on_handshake: Callable[[Session, Scope], None] | None = None

    def __init__(
        self,
        manager: SessionManager,
        action_cls: type[Action],
        reset_validator: Callable[[dict[str, Any]], dict[str, Any]],
        mcp: McpHandler,
        limits: Limits | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.manager = manager
        self.action_cls = action_cls
        self.reset_validator = reset_validator
        self.mcp = mcp
        self.action_name = action_cls.__name__

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":  # pragma: no cover - routed by path and type
            return
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        if BATCH_SUBPROTOCOL in scope.get("subprotocols", ()):
            await send({"type": "websocket.accept", "subprotocol": BATCH_SUBPROTOCOL})
            await BatchConnection(self, scope, send).serve(receive)
            return
        await send({"type": "websocket.accept"})
        session: Session | None = None
        attached = False
        try:
            sid = _query_session_id(scope)
            if sid:
                session = self.manager.get(sid)
                if session is None or session.attached or session.closed:
                    why = "already has an attached WebSocket" if session else "is unknown"
                    raise LookupError(
                        f"Session {sid} {why}; create one with openenv/session/create"
                    )
                session.attached = attached = True
                session.touch()
            else:
                client = scope.get("client")
                session = await self.manager.create("ws", client[0] if client else None)
        except SessionRefused as exc:
            await send_and_close(send, error_frame_json(exc.code, str(exc), **exc.data))
            return
        except FactoryError as exc:
            await send_and_close(
                send,
                error_frame_json(ErrorCode.FACTORY_ERROR, str(exc), factory_name=exc.factory_name),
            )
            return
        except Exception as exc:
            await send_and_close(send, error_frame_json(ErrorCode.SESSION_ERROR, str(exc)))
            return

        if self.metrics is not None:
            self.metrics.bind()
        if self.on_handshake is not None:
            self.on_handshake(session, scope)
        scope["headers"] = ()  # read by the gate and the handshake only: don't hold them
        session.on_expire = lambda: _close_soon(send, "session idle timeout")
        try:
            check = FrameCheck(self.limits, session, _GONE_FRAME)
            # tracing is read once per connection (a provider set later traces new ones)
            frame = self.frame_traced if self.metrics is not None and tracing_on() else self.frame
            if (
                await receive_frames(receive, send, check, functools.partial(frame, session))
                is CLOSE
            ):
                await self.manager.destroy(session)
                await send({"type": "websocket.close", "code": 1000, "reason": ""})
        except DISCONNECT_ERRORS:
            pass  # the client vanished mid-send; the session is freed below
        finally:
            session.on_expire = None
            if attached:
                session.attached = False
                if session.pending_close:
                    await self.manager.destroy(session)
            else:
                await self.manager.destroy(session)

    async def frame(self, session: Session, text: str | bytes) -> Any:
        """Handle one request frame and return the reply text (or ``CLOSE``); counted on
        ``metrics`` when the server has them."""
        metrics = self.metrics
        msg = self._decode(text)
        if metrics is None:
            if type(msg) is not dict:
                return msg  # the error frame
            return await self.handle(session, msg)
        if type(msg) is not dict:
            metrics.answered(None, msg, 0, len(text))
            return msg
        if len(msg) > 2:  # a traceparent member
            return await metrics.traced(self.handle, session, msg, len(text))
        # answer() inlined: one coroutine fewer per frame; the latency is the session's own
        # clock reads (handle sets ``took_ns``; nothing awaits in between)
        reply = await self.handle(session, msg)
        metrics.answered(msg.get("type"), reply, session.took_ns, len(text))
        return reply

    async def frame_traced(self, session: Session, text: str | bytes) -> Any:
        """``frame`` with a span per frame: a connection opened while tracing was on."""
        metrics = self.metrics
        assert metrics is not None
        msg = self._decode(text)
        if type(msg) is not dict:
            metrics.answered(None, msg, 0, len(text))
            return msg
        return await metrics.traced(self.handle, session, msg, len(text))

    async def answer(self, session: Session, msg: dict[str, Any]) -> Any:
        """``handle``, counted on ``metrics`` when the server has them (the batch extension
        calls this per sub-frame)."""
        metrics = self.metrics
        if metrics is None:
            return await self.handle(session, msg)
        if len(msg) > 2 or tracing_on():
            return await metrics.traced(self.handle, session, msg)
        reply = await self.handle(session, msg)
        metrics.answered(msg.get("type"), reply, session.took_ns)
        return reply

    @staticmethod
    def _decode(text: str | bytes) -> dict[str, Any] | str:
        """The frame's JSON object, or the error frame that refuses it."""
        try:
            msg = loads(text)
        except JSONDecodeError as exc:
            if too_deep(exc):
                return _too_deep()
            return error_frame_json(
                ErrorCode.INVALID_JSON, f"Invalid JSON: {bounded_text(str(exc), 200)}"
            )
        if type(msg) is not dict:
            return _validation_frame(
                'Invalid message: a frame must be a JSON object like {"type": "step", "data": {...}}',
                [{"type": "dict_type", "loc": [], "msg": "Input should be an object"}],
            )
        if len(text) > 2 * MAX_JSON_DEPTH and json_depth_exceeds(msg):  # short frames can't be
            return _too_deep()
        return msg

    async def handle(self, session: Session, msg: dict[str, Any]) -> Any:
        """Answer one decoded request frame (the batch extension calls this per sub-frame);
        ``session.took_ns`` is then its length."""
        start = session.enter()
        kind = msg.get("type")
        try:
            allowed = _FRAME_KEYS.get(kind) if type(kind) is str else None
            if allowed is None:
                shown = bounded_text(kind if type(kind) is str else dumps(kind)[:200])
                return error_frame_json(ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {shown}")
            if len(msg) > 2 or (len(msg) == 2 and "data" not in msg):
                extra = [bounded_text(k) for k in sorted(set(msg) - allowed)[:10]]
                return _validation_frame(
                    f"Invalid message: unknown field(s) {extra} in {kind!r} frame; put the "
                    "payload under 'data'",
                    [
                        {
                            "type": "extra_forbidden",
                            "loc": [k],
                            "msg": "Extra inputs are not permitted",
                        }
                        for k in extra
                    ],
                )
            lock = session.lock
            await lock.acquire()  # (not `async with`: two coroutines fewer per frame)
            try:
                if session.closed:  # closed while this frame waited (a batch close queued first)
                    return CLOSE if kind == "close" else _CLOSED_FRAME
                if kind == "step":
                    return await self._step(session, msg.get("data"))
                if kind == "reset":
                    return await self._reset(session, msg.get("data"))
                if kind == "state":
                    return state_frame_json(await session.calls.state(session.env))
                if kind == "mcp":
                    reply = await self.mcp.handle(msg.get("data"), ws_session=session, direct=False)
                    return '{"type":"mcp","data":' + dumps(reply) + "}"
                return CLOSE
            finally:
                lock.release()
        except Exception as exc:  # the env raised: report it, keep the session
            _ENV_RAISED.warn(
                "env raised in %s: %s",
                kind,
                bounded_text(str(exc), 500),
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            return error_frame_json(
                ErrorCode.EXECUTION_ERROR,
                bounded_text(f"{type(exc).__name__}: {exc}", 2000),
                exception_type=type(exc).__name__,
                **env_error_members(exc),
            )
        finally:
            session.leave(start)

    async def _step(self, session: Session, data: Any) -> str:
        if type(data) is not dict:
            return _validation_frame(
                f"Invalid message: 'data' must be an object with the {self.action_name} fields "
                "(see GET /schema)",
                [
                    {
                        "type": "missing" if data is None else "dict_type",
                        "loc": ["data"],
                        "msg": "Input should be an object",
                    }
                ],
            )
        try:
            action = parse_action(data, self.action_cls)
        except ValidationError as exc:
            errors = errors_list(exc)
            return _validation_frame(
                f"Invalid {self.action_name}: {describe_errors(errors)} (see GET /schema for the action fields)",
                errors,
            )
        except RecursionError:
            return _too_deep()
        obs = await session.calls.step(session.env, action)
        return observation_frame_json(obs)

    async def _reset(self, session: Session, data: Any) -> str:
        if data is None:
            data = {}
        elif type(data) is not dict:
            return _validation_frame(
                "Invalid message: reset 'data' must be an object like {\"seed\": 0}",
                [{"type": "dict_type", "loc": ["data"], "msg": "Input should be an object"}],
            )
        try:
            kwargs = self.reset_validator(data)
        except ValidationError as exc:
            errors = errors_list(exc)
            return _validation_frame(f"Invalid reset data: {describe_errors(errors)}", errors)
        except RecursionError:
            return _too_deep()
        obs = await session.calls.reset(session.env, kwargs)
        return observation_frame_json(obs)


def _too_deep() -> str:
    return _validation_frame(
        f"Invalid message: nested deeper than {MAX_JSON_DEPTH} levels; flatten it",
        [
            {
                "type": "too_deep",
                "loc": ["data"],
                "msg": f"Input nested deeper than {MAX_JSON_DEPTH}",
            }
        ],
    )


def _query_session_id(scope: Scope) -> str | None:
    qs = scope.get("query_string") or b""
    if not qs or b"session_id" not in qs:
        return None
    values = parse_qs(qs.decode("latin-1")).get("session_id")
    return values[0] if values else None


async def _close_soon(send: Send, reason: str) -> None:
    """Close from outside the connection's task without waiting for the handshake."""

    async def close() -> None:
        try:
            await send({"type": "websocket.close", "code": 1000, "reason": reason})
        except DISCONNECT_ERRORS:
            pass

    task = asyncio.get_running_loop().create_task(close())
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


_BACKGROUND: set[asyncio.Task[None]] = set()
