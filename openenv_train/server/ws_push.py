"""Answering ``/ws`` frames as the protocol parses them, without a task wake-up per frame.

Why: on the ASGI path every frame is queued, a future is resolved, the connection's task is
woken by the loop and resumed through the middleware chain, and the reply goes back through an
``await send``. That hop cost about as much CPU as all of our own frame handling. When the server
runs our WebSocket protocol class and hands the app its own ``receive``/``send`` (no middleware
wraps them), ``FramePump`` takes each message from the protocol's callback instead and runs the
same frame handler (``WebSocketEndpoint.frame``) right there: a frame whose handling never has to
wait (an async env, or a sync env whose calls run inline) is answered inside ``data_received``.
A frame that must wait (a sync env in a worker thread, a slow async env, a rate-limit delay)
continues in a task, and the frames behind it queue until it is answered: one frame at a time
per session, in order, as on the ASGI path. Every check, limit and reply is the ASGI path's.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

from ..core.errors import ErrorCode
from ..core.wire import error_frame_json
from .limits import RateLimiter
from .sessions import Session
from .wsproto_fast import FastWebSocketsProtocol

if TYPE_CHECKING:
    from .ws import WebSocketEndpoint

#: Messages a pump holds while a frame is in progress before it stops reading the socket
#: (resumes at half); the same bound as the protocol's own queue.
MAX_QUEUED = 16

#: What a finished pump leaves for the connection's task to do (besides ``endpoint.CLOSE`` and
#: an error frame to send before closing).
CLOSE_1009 = object()
DISCONNECTED = object()

#: The error a frame on a session closed under its socket gets (then the socket closes).
SESSION_GONE = "Session was closed (idle timeout or openenv/session/close); reconnect"


class _Continue:
    """Awaitable that carries on a coroutine that already ran up to its first suspension."""

    __slots__ = ("coro", "first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self.coro, self.first = coro, first

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, yielded = self.coro, self.first
        while True:
            try:
                value = yield yielded
            except BaseException as exc:  # cancellation and friends reach the coroutine
                try:
                    yielded = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    yielded = coro.send(value)
                except StopIteration as stop:
                    return stop.value


class FramePump:
    """One session's frames, taken from the protocol's push callback and answered in order."""

    __slots__ = (
        "endpoint",
        "session",
        "proto",
        "send",
        "ctx",
        "done",
        "pending",
        "task",
        "limiter",
        "max_frame",
        "paused",
    )

    def __init__(
        self,
        endpoint: WebSocketEndpoint,
        session: Session,
        proto: FastWebSocketsProtocol,
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        self.endpoint = endpoint
        self.session = session
        self.proto = proto
        self.send = send
        # frames run in the connection task's context, as they would inside that task
        self.ctx = contextvars.copy_context()
        self.done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending: list[dict[str, Any]] = []
        self.task: asyncio.Task[None] | None = None  # the frame now in progress, if it waits
        self.limiter = RateLimiter(endpoint.limits.max_messages_per_s)
        self.max_frame = endpoint.limits.max_frame_bytes
        self.paused = False

    async def run(self) -> Any:
        """Take the connection's messages until it ends; return what the task must finish
        (``endpoint.CLOSE``, ``CLOSE_1009``, an error frame to send before closing, or
        ``DISCONNECTED``). Cancelling this cancels the frame in progress."""
        self.proto.push_to(self.on_message)
        try:
            return await self.done
        finally:
            self.proto.queue.push = _drop
            task, self.task = self.task, None
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    # ---- called by the protocol, synchronously ----------------------------------------

    def on_message(self, message: dict[str, Any]) -> None:
        if self.done.done():
            return
        if self.task is not None or self.pending:
            self.pending.append(message)
            if not self.paused and len(self.pending) >= MAX_QUEUED:
                self.paused = True
                self.proto.set_reading(False)
            return
        try:
            self._handle(message, False)
        except BaseException as exc:  # never into the protocol's data_received
            self._fail(exc)

    def _handle(self, message: dict[str, Any], in_ctx: bool) -> None:
        """Answer one message now, or start the task that will (``in_ctx``: we run inside
        ``self.ctx`` already, in the task of the frame before)."""
        text = message.get("text")
        if text is None:
            if message["type"] == "websocket.disconnect":
                self._finish(DISCONNECTED)
                return
            text = message.get("bytes")
            if text is None:
                return
        if len(text) > self.max_frame:  # a server without our limits let it through
            self._finish(CLOSE_1009)
            return
        session = self.session
        wait = self.limiter.delay()
        if wait:
            self._start(self._later(text, wait))
            return
        if session.closed or session.pending_close:
            self._finish(error_frame_json(ErrorCode.SESSION_ERROR, SESSION_GONE))
            return
        coro = self.endpoint.frame(session, text)
        try:
            first = coro.send(None) if in_ctx else self.ctx.run(coro.send, None)
        except StopIteration as stop:
            self._reply(stop.value)
            return
        except BaseException as exc:
            self._fail(exc)
            return
        self._start(_Continue(coro, first))

    # ---- replies ------------------------------------------------------------------------

    def _reply(self, reply: Any) -> None:
        if reply is self.endpoint.CLOSE:
            self._finish(reply)
        elif not self.proto.write_text(reply):  # not writable now: the ASGI send waits
            self._start(self._send(reply))

    async def _send(self, reply: str) -> str:
        await self.send({"type": "websocket.send", "text": reply})
        return _SENT

    async def _later(self, text: str, wait: float) -> Any:
        await asyncio.sleep(wait)  # a flooding client is slowed down, not served faster
        if self.session.closed or self.session.pending_close:
            return _Finish(error_frame_json(ErrorCode.SESSION_ERROR, SESSION_GONE))
        return await self.endpoint.frame(self.session, text)

    def _start(self, work: Awaitable[Any]) -> None:
        self.task = asyncio.get_running_loop().create_task(self._wait(work), context=self.ctx)

    async def _wait(self, work: Awaitable[Any]) -> None:
        try:
            reply = await work
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self.task = None
            self._fail(exc)
            return
        self.task = None
        if isinstance(reply, _Finish):
            self._finish(reply.outcome)
            return
        if reply is not _SENT:
            self._reply(reply)
        # answer what queued up meanwhile, until one frame has to wait again
        pending = self.pending
        while pending and self.task is None and not self.done.done():
            self._handle(pending.pop(0), True)
        if self.paused and len(pending) <= MAX_QUEUED // 2:
            self.paused = False
            self.proto.set_reading(True)

    def _finish(self, outcome: Any) -> None:
        if not self.done.done():
            self.done.set_result(outcome)

    def _fail(self, exc: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exc)


class _Finish:
    __slots__ = ("outcome",)

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome


_SENT = object()


def _drop(_message: Any) -> None:
    """The callback left behind once the connection's task has taken over again."""


def pump_protocol(receive: Any, send: Any) -> FastWebSocketsProtocol | None:
    """The protocol object behind ``receive``/``send`` when it can push frames to a
    ``FramePump``: our protocol class, on its lean path, its methods unwrapped by middleware."""
    proto = getattr(receive, "__self__", None)
    if (
        isinstance(proto, FastWebSocketsProtocol)
        and getattr(send, "__self__", None) is proto
        and proto._fast
    ):
        return proto
    return None
