"""The client side of the ``/ws`` batch extension: many sessions, one connection, few messages.

Clients with ``batch_frames = True`` that talk to the same server from the same event loop share
one ``BatchChannel``. Frames sent during one loop turn (a rollout engine stepping all its
sessions at once) leave as one WebSocket message; the server answers the same way. The channel
offers the extension as a WebSocket subprotocol; a server that does not pick it (OpenEnv's, or
ours when told not to) is remembered as such and its clients fall back to one connection per
session, the standard protocol.

Each session is a number on the channel, never reused: a session that timed out, was cancelled or
was closed by the server is retired, so a late reply can never answer a later request.

Request deadlines are the channel's, not a timer per request: requests with the same timeout
expire in the order they were sent, so one queue per timeout value and one timer for the earliest
deadline serve them all (a rollout engine sends thousands of requests a second; a timer each was
a tenth of its client CPU).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from ..core.errors import ConnectionLostError
from .trace_context import current_traceparent

if TYPE_CHECKING:
    from .transport import WebSocketOptions

#: The WebSocket subprotocol that asks an env server for batch framing (the server's name for it).
BATCH_SUBPROTOCOL = "openenv-train.batch.v1"

Handshake = Callable[..., Awaitable[ClientConnection]]


class BatchChannel:
    """One batch-framed connection, shared by every batching client of one server and loop."""

    def __init__(self, ws: ClientConnection, url: str) -> None:
        self.ws = ws
        self.url = url
        self.loop = asyncio.get_running_loop()
        self.next_key = 0
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.outbox: list[str] = []
        self.flush_scheduled = False
        self.dead: str | None = None
        #: per timeout value, (deadline, reply future) in the order sent: deadlines ascend
        self.deadlines: dict[float, deque[tuple[float, asyncio.Future[dict[str, Any]]]]] = {}
        self._deadline_timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self.reader = self.loop.create_task(self._read())

    def open_session(self) -> BatchTransport:
        key = self.next_key
        self.next_key += 1
        return BatchTransport(self, key)

    def submit(
        self, key: int, text: str, timeout: float | None = None
    ) -> asyncio.Future[dict[str, Any]]:
        """Queue ``text`` (a standard request frame) for session ``key``; the reply's future,
        which fails with ``asyncio.TimeoutError`` when no reply came within ``timeout``."""
        if self.dead is not None:
            raise ConnectionLostError(f"the batch connection to {self.url} closed: {self.dead}")
        fut = self.loop.create_future()
        self.pending[key] = fut
        self.post(key, text)
        if timeout is not None:
            self._expire_at(self.loop.time() + timeout, timeout, fut)
        return fut

    def _expire_at(self, when: float, timeout: float, fut: asyncio.Future[Any]) -> None:
        queue = self.deadlines.get(timeout)
        if queue is None:
            queue = self.deadlines[timeout] = deque()
        while queue and queue[0][1].done():  # answered: forget (replies mostly come in order)
            queue.popleft()
        queue.append((when, fut))
        if self._deadline_timer is None or when < self._timer_at:
            self._arm(when)

    def _arm(self, when: float) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        self._timer_at = when
        self._deadline_timer = self.loop.call_at(when, self._expire)

    def _expire(self) -> None:
        """Fail every request past its deadline; arm the timer for the next deadline."""
        self._deadline_timer = None
        now = self.loop.time()
        earliest: float | None = None
        for timeout, queue in list(self.deadlines.items()):
            while queue:
                when, fut = queue[0]
                if not fut.done():
                    if when > now:
                        break
                    fut.set_exception(asyncio.TimeoutError())
                queue.popleft()
            if queue:
                earliest = queue[0][0] if earliest is None else min(earliest, queue[0][0])
            else:
                del self.deadlines[timeout]
        if earliest is not None:
            self._arm(earliest)

    def post(self, key: int, text: str) -> None:
        """Queue a frame with no reply (``close``)."""
        self.outbox.append(f'{{"session":{key},{text.lstrip()[1:]}')
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        out, self.outbox = self.outbox, []
        self.flush_scheduled = False
        if self.dead is not None or not out:
            return
        text = '{"type":"batch","frames":[' + ",".join(out) + "]}"
        try:
            # the connection writes at once when its buffer has room; a full buffer waits
            self.loop.create_task(self._send(text))
        except RuntimeError:  # pragma: no cover - loop closing
            pass

    async def _send(self, text: str) -> None:
        try:
            await self.ws.send(text)
        except (ConnectionClosed, OSError) as exc:
            self._die(f"sending failed: {exc}")

    async def _read(self) -> None:
        why = "the server closed it"
        try:
            async for raw in self.ws:
                msg = json.loads(raw)
                frames = msg.get("frames") if msg.get("type") == "batch" else None
                if frames is None:  # a message-level error: our own framing was refused
                    why = f"the server refused a batch: {str(raw)[:300]}"
                    break
                pending = self.pending
                for frame in frames:
                    fut = pending.pop(frame.pop("session", -1), None)
                    if fut is not None and not fut.done():
                        fut.set_result(frame)
        except (ConnectionClosed, OSError, ValueError) as exc:
            why = f"{type(exc).__name__}: {exc}"
        finally:
            self._die(why)

    def _die(self, why: str) -> None:
        if self.dead is not None:
            return
        self.dead = why
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None
        self.deadlines.clear()
        if _CHANNELS.get((self.loop, self.url)) is self:
            del _CHANNELS[(self.loop, self.url)]
        pending, self.pending = self.pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(
                    ConnectionLostError(f"the batch connection to {self.url} closed: {why}")
                )
        self.ws.transport.abort()


class BatchTransport:
    """One session on a shared channel: the ``Transport`` of a batching ``EnvClient``."""

    __slots__ = ("channel", "key")

    def __init__(self, channel: BatchChannel, key: int) -> None:
        self.channel = channel
        self.key = key

    @classmethod
    async def open(cls, options: WebSocketOptions) -> BatchTransport | None:
        """A session on the shared channel to ``options.url``; None when the server does not batch."""
        return await open_session(options.url, options.open)

    @property
    def url(self) -> str:
        return self.channel.url

    @property
    def usable(self) -> bool:
        return self.channel.dead is None

    @property
    def closed_reason(self) -> str:
        return self.channel.dead or "open"

    async def request(self, text: str, timeout: float | None) -> dict[str, Any]:
        """Send one standard frame and return its decoded reply frame (``asyncio.TimeoutError``
        when none came within ``timeout``)."""
        parent = current_traceparent()
        if parent is not None:  # our extension's per-frame trace context (many sessions share it)
            text = '{"traceparent":"' + parent + '",' + text.lstrip()[1:]
        return await self.channel.submit(self.key, text, timeout)

    def abort(self) -> None:
        """Forget this session and tell the server to end it (no reply is awaited): the
        session number is never reused, so a late reply cannot reach a later request."""
        channel = self.channel
        channel.pending.pop(self.key, None)
        if channel.dead is None:
            channel.post(self.key, '{"type":"close"}')

    async def close(self) -> None:
        self.abort()


_CHANNELS: dict[tuple[asyncio.AbstractEventLoop, str], BatchChannel | None] = {}
_OPENING: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Future[BatchChannel | None]] = {}


async def open_session(url: str, handshake: Handshake) -> BatchTransport | None:
    """A session on the shared channel to ``url``, or None when the server does not batch.

    ``handshake(subprotocols=[...])`` opens a WebSocket as the calling client would (token,
    timeouts, error mapping); it runs once per server and loop.
    """
    loop = asyncio.get_running_loop()
    key = (loop, url)
    if key in _CHANNELS:
        channel = _CHANNELS[key]
        return None if channel is None else channel.open_session()
    opening = _OPENING.get(key)
    if opening is None:
        opening = _OPENING[key] = loop.create_future()
        try:
            ws = await handshake(subprotocols=[BATCH_SUBPROTOCOL])
            if ws.subprotocol == BATCH_SUBPROTOCOL:
                result: BatchChannel | None = BatchChannel(ws, url)
            else:  # a standard server accepted a plain session: end it politely
                result = None
                await _close_plain(ws)
            _CHANNELS[key] = result
            opening.set_result(result)
        except BaseException as exc:
            opening.set_exception(exc)
            opening.exception()  # retrieved: waiters re-raise it, nobody else must
            raise
        finally:
            _OPENING.pop(key, None)
    channel = await asyncio.shield(opening)
    return None if channel is None else channel.open_session()


async def _close_plain(ws: ClientConnection) -> None:
    try:
        await ws.send('{"type":"close"}')
        await ws.close()
    except (ConnectionClosed, OSError):
        pass


def forget_channels() -> None:
    """Drop remembered channels and 'does not batch' answers (tests; servers that restarted)."""
    for channel in list(_CHANNELS.values()):
        if channel is not None:
            channel._die("forgotten")
    _CHANNELS.clear()
