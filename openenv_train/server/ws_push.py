"""Answering WebSocket frames as the protocol parses them, without a task wake-up per frame.

Why: on the ASGI path every frame is queued, a future is resolved, the connection's task is
woken by the loop and resumed through the middleware chain, and the reply goes back through an
``await send``. That hop cost about as much CPU as all of our own frame handling. When the server
runs our WebSocket protocol class and hands the app its own ``receive``/``send`` (no middleware
wraps them), ``FramePump`` takes each message from the protocol's callback instead and runs the
connection's frame handler right there: a frame whose handling never has to wait (an async env,
or a sync env whose calls run inline) is answered inside ``data_received``. A frame that must
wait (a sync env in a worker thread, a slow async env, a rate-limit delay) continues in a task,
and the frames behind it queue until it is answered: one frame at a time per connection, in
order, as on the ASGI path. The checks (``FrameCheck``) and replies are the ASGI path's; callers
reach both through ``ws_receive.receive_frames``.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

from .frame_check import CLOSE, DISCONNECTED, GONE, FrameCheck
from .task_step import first_step
from .wsproto_fast import FastWebSocketsProtocol

#: Messages a pump holds while a frame is in progress before it stops reading the socket
#: (resumes at half); the same bound as the protocol's own queue.
MAX_QUEUED = 16

Frame = Callable[[str | bytes], Coroutine[Any, Any, Any]]


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
    """One connection's frames, taken from the protocol's push callback and answered in order.

    Frames run in one task per connection (``host``), as on the ASGI path, so code that looks
    at the current task (``asyncio.timeout``, anyio, sniffio) sees one task throughout: a frame
    started in the protocol's callback runs with ``host`` entered as the current task and in
    its context (``task_step.first_step``), and if it has to wait, ``host`` carries it on.
    """

    __slots__ = (
        "check",
        "frame",
        "proto",
        "send",
        "ctx",
        "loop",
        "host",
        "wake",
        "work",
        "outcome",
        "pending",
        "attaching",
        "paused",
    )

    def __init__(
        self,
        check: FrameCheck,
        frame: Frame,
        proto: FastWebSocketsProtocol,
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        self.check = check
        self.frame = frame
        self.proto = proto
        self.send = send
        self.ctx = contextvars.copy_context()  # the host task's context
        self.loop = asyncio.get_running_loop()
        self.host: asyncio.Task[Any] | None = None
        self.wake: asyncio.Future[None] | None = None
        self.work: Awaitable[Any] | None = None  # what the host must await next
        self.outcome: Any = _RUNNING
        self.pending: list[dict[str, Any]] = []
        self.attaching = False
        self.paused = False

    async def run(self) -> Any:
        """Take the connection's messages until it ends; return how it ended (``CLOSE``,
        ``TOO_BIG``, ``GONE`` or ``DISCONNECTED``). Cancelling this cancels the frame in
        progress."""
        host = self.host = self.loop.create_task(self._host(), context=self.ctx)
        self.attaching = True  # messages queued before now wait for the host
        try:
            self.proto.push_to(self.on_message)
        finally:
            self.attaching = False
        try:
            return await host
        finally:
            self.proto.queue.push = _drop
            if not host.done():
                host.cancel()
                await asyncio.gather(host, return_exceptions=True)

    async def _host(self) -> Any:
        pending = self.pending
        while True:
            while pending and self.work is None and self.outcome is _RUNNING:
                self._handle(pending.pop(0), True)
            if self.paused and len(pending) <= MAX_QUEUED // 2:
                self.paused = False
                self.proto.set_reading(True)
            if self.outcome is not _RUNNING:
                return self.outcome
            work = self.work
            if work is None:
                self.wake = self.loop.create_future()
                await self.wake
                continue
            reply = await work
            self.work = None
            if isinstance(reply, _Finish):
                self._finish(reply.outcome)
            elif reply is not _SENT:
                self._reply(reply)

    # ---- called by the protocol, synchronously ----------------------------------------

    def on_message(self, message: dict[str, Any]) -> None:
        if self.outcome is not _RUNNING:
            return
        if self.attaching or self.work is not None or self.pending:
            self.pending.append(message)
            if not self.paused and len(self.pending) >= MAX_QUEUED:
                self.paused = True
                self.proto.set_reading(False)
            self._wake()
            return
        try:
            self._handle(message, False)
        except BaseException as exc:  # never into the protocol's data_received
            self._fail(exc)

    def _handle(self, message: dict[str, Any], in_host: bool) -> None:
        """Answer one message now, or leave the rest of its work to the host task
        (``in_host``: called from the host task itself)."""
        text = message.get("text")
        if text is None:
            if message["type"] == "websocket.disconnect":
                self._finish(DISCONNECTED)
                return
            text = message.get("bytes")
            if text is None:
                return
        verdict = self.check.verdict(text)
        if verdict:
            if type(verdict) is float:
                self._defer(self._later(text, verdict))
            else:
                self._finish(verdict)
            return
        coro = self.frame(text)
        if in_host:
            try:
                reply = coro.send(None)
            except StopIteration as stop:
                self._reply(stop.value)
            else:
                self._defer(_Continue(coro, reply))
            return
        done, value = first_step(self.loop, self.host, self.ctx, coro)  # type: ignore[arg-type]
        if done:
            self._reply(value)
        elif done is None:  # called from inside another task, not the loop's I/O callback
            self._defer(coro)
        else:
            self._defer(_Continue(coro, value))

    # ---- replies ------------------------------------------------------------------------

    def _reply(self, reply: Any) -> None:
        if reply is None:
            return  # the handler answers later itself (batch framing) or not at all
        if reply is CLOSE:
            self._finish(reply)
        elif not self.proto.write_text(reply):  # not writable now: the ASGI send waits
            self._defer(self._send(reply))

    async def _send(self, reply: str) -> Any:
        await self.send({"type": "websocket.send", "text": reply})
        return _SENT

    async def _later(self, text: str | bytes, wait: float) -> Any:
        await asyncio.sleep(wait)  # a flooding client is slowed down, not served faster
        if self.check.gone():
            return _Finish(GONE)
        return await self.frame(text)

    def _defer(self, work: Awaitable[Any]) -> None:
        self.work = work
        self._wake()

    def _wake(self) -> None:
        wake = self.wake
        if wake is not None and not wake.done():
            self.wake = None
            wake.set_result(None)

    def _finish(self, outcome: Any) -> None:
        if self.outcome is _RUNNING:
            self.outcome = outcome
            self._wake()

    def _fail(self, exc: BaseException) -> None:
        self._defer(_raise(exc))


async def _raise(exc: BaseException) -> Any:
    raise exc


_RUNNING = object()


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
