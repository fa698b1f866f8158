"""uvicorn's sans-I/O WebSocket protocol with a lean path for the frames env sessions send.

Two costs dominate uvicorn's per-message path for small request/reply frames, and both go here:

* uvicorn pauses reading after *every* received message and resumes when the app takes it (two
  epoll updates per frame). Our protocol is strictly request/reply, so we pause only when
  ``max_queued`` messages wait unread (a client flooding frames): the same memory bound.
* every frame goes through ``websockets``' generator-based parser and serializer. Complete,
  unfragmented, uncompressed data frames (what every env client sends) are parsed and written
  here directly; everything else (handshake, control frames, fragments, compression, oversize or
  invalid frames) is handed to the ``websockets`` protocol object untouched, at a frame
  boundary, so it keeps enforcing the RFC.

An app that gets this class's own ``receive``/``send`` (no middleware wrapping them) may also
take each message as it is parsed, by a callback (``push_to``), and answer with ``write_text``:
the env server's ``/ws`` does, so a frame it can answer without waiting is answered inside
``data_received``, with no task wake-up (see ``ws_push``).

Two bounds from the app's ``Limits`` live here because only the protocol sees raw bytes: the
largest message (``max_frame_bytes``, close code 1009) and the time a started frame may take to
arrive (``request_timeout_s``; a connection that stops mid-frame is closed).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import CloseCode
from websockets.protocol import Protocol, State

from ..core.auth import HideAuthorization
from .limits import find_limits

_LOG = logging.getLogger("uvicorn.error.ws")
_LOG.addFilter(HideAuthorization())

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - the C speedups ship with websockets wheels
    from websockets.utils import apply_mask

_TEXT, _BINARY = 0x1, 0x2


class _Inbox:
    """The part of ``asyncio.Queue`` uvicorn uses, for one reader, with less bookkeeping.

    A list, not a deque: it holds at most ``max_queued`` (16) messages and usually 0 or 1, and an
    idle session's empty deque costs ~600 bytes more. Once an app calls ``push_to``, every
    message (data, and the disconnect uvicorn's code puts here) goes to its callback instead.
    """

    __slots__ = ("_items", "_waiter", "_loop", "push")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._items: list[Any] = []
        self._waiter: asyncio.Future[None] | None = None
        self._loop = loop
        self.push: Callable[[Any], None] | None = None

    def put_nowait(self, item: Any) -> None:
        if self.push is not None:
            self.push(item)
            return
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def get(self) -> Any:
        while not self._items:
            waiter = self._waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None
        return self._items.pop(0)

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)


class FastWebSocketsProtocol(WebSocketsSansIOProtocol):
    """Drop-in ``ws=`` class for uvicorn (``uvicorn.Config(app, ws=FastWebSocketsProtocol)``)."""

    max_queued = 16

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue = _Inbox(self.loop)  # type: ignore[assignment]
        self._buf = b""
        self._fast = False  # True once the handshake is done and no extension was negotiated
        self._delegating = False  # inside a fragmented message: websockets parses until FIN
        limits = find_limits(self.app)
        size = self.config.ws_max_size
        self._max_size = (
            limits.max_frame_bytes if size is None else min(size, limits.max_frame_bytes)
        )
        self.conn.max_message_size = self._max_size
        self.conn.logger = _LOG
        self._frame_timeout = limits.request_timeout_s
        self._frame_timer: asyncio.TimerHandle | None = None

    # ---- receive ---------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if not self._fast:
            super().data_received(data)
            self._maybe_go_fast()
            return
        buf = self._buf + data if self._buf else data
        n = len(buf)
        pos = 0
        while n - pos >= 2:
            b0 = buf[pos]
            b1 = buf[pos + 1]
            length = b1 & 0x7F
            head = pos + 2
            if length == 126:
                if n - pos < 4:
                    break
                length = int.from_bytes(buf[pos + 2 : pos + 4], "big")
                head = pos + 4
            elif length == 127:
                if n - pos < 10:
                    break
                length = int.from_bytes(buf[pos + 2 : pos + 10], "big")
                head = pos + 10
            masked = b1 & 0x80
            end = head + (4 if masked else 0) + length
            opcode = b0 & 0x0F
            if (
                b0 & 0xF0 == 0x80  # FIN, no RSV bits
                and masked
                and (opcode == _TEXT or opcode == _BINARY)
                and not self._delegating
                and (self._max_size is None or length <= self._max_size)
            ):
                if end > n:
                    break  # wait for the rest of this frame
                payload = apply_mask(buf[head + 4 : end], buf[head : head + 4])
                if opcode == _TEXT:
                    try:
                        self._deliver({"type": "websocket.receive", "text": payload.decode()})
                    except UnicodeDecodeError:
                        self._invalid_utf8()
                        return
                else:
                    self._deliver({"type": "websocket.receive", "bytes": payload})
            else:
                if end > n and (self._max_size is None or length <= self._max_size):
                    break  # hand websockets whole frames only
                if opcode in (0x0, _TEXT, _BINARY):
                    self._delegating = not (b0 & 0x80)
                if end > n:  # an oversize frame: websockets rejects it; it owns the rest
                    self._fast = False
                    self._buf = b""
                    super().data_received(buf[pos:])
                    return
                self._delegate(buf[pos:end])
                if not self._fast:
                    self._buf = b""
                    if end < n:
                        super().data_received(buf[end:])
                    return
            pos = end
        self._buf = buf[pos:] if pos < n else b""
        if self._buf:
            if self._frame_timer is None:
                self._frame_timer = self.loop.call_later(self._frame_timeout, self._frame_late)
        elif self._frame_timer is not None:
            self._frame_timer.cancel()
            self._frame_timer = None

    def _frame_late(self) -> None:
        """A frame was started and not finished within ``request_timeout_s``: drop the client."""
        self._frame_timer = None
        if self._buf and not self.transport.is_closing():
            self.transport.abort()

    def _invalid_utf8(self) -> None:
        """Close with 1007 as the RFC says; a client's bad bytes are not a server error to log."""
        self._fast = False
        self._buf = b""
        self.conn.send_close(CloseCode.INVALID_DATA, "invalid UTF-8 in a text frame")
        self.handle_parser_exception()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._frame_timer is not None:
            self._frame_timer.cancel()
            self._frame_timer = None
        super().connection_lost(exc)

    def _deliver(self, message: dict[str, Any]) -> None:
        if self.close_sent:
            return  # past websocket.close: drop, as uvicorn does
        self.queue.put_nowait(message)
        if not self.read_paused and self.queue.qsize() >= self.max_queued:
            self.read_paused = True
            self.transport.pause_reading()

    def _delegate(self, raw: bytes) -> None:
        """Let ``websockets`` handle these whole frames (control, fragments, errors)."""
        super().data_received(raw)
        if self.conn.state is not State.OPEN:
            self._fast = False

    def _maybe_go_fast(self) -> None:
        conn = self.conn
        reader = getattr(conn, "reader", None)
        if (
            conn.state is State.OPEN
            and not conn.extensions
            and reader is not None
            and not getattr(reader, "buffer", b"x")
        ):
            self._fast = True
            # the server parser's generator keeps the handshake request (every header) alive
            # in its frame for the connection's life; at this frame boundary the plain frame
            # parser it would continue with is the same thing, minus the request
            conn.parser = Protocol.parse(conn)
            next(conn.parser)

    def send_receive_event_to_app(self) -> None:
        if self.curr_msg_data_type == "text" and self.frames:
            try:  # a fragmented text message, parsed by websockets: check it as the fast path does
                b"".join(self.frames).decode()
            except UnicodeDecodeError:
                self.frames = []
                self.conn.send_close(CloseCode.INVALID_DATA, "invalid UTF-8 in a text frame")
                self.handle_parser_exception()
                return
        paused = self.read_paused
        self.read_paused = True  # the parent pauses only when this is False
        try:
            super().send_receive_event_to_app()
        finally:
            self.read_paused = paused
        if not paused and self.queue.qsize() >= self.max_queued:
            self.read_paused = True
            self.transport.pause_reading()

    async def receive(self) -> Any:
        message = await self.queue.get()
        if self.read_paused and self.queue.qsize() <= self.max_queued // 2:
            self.read_paused = False
            self.transport.resume_reading()
        return message

    # ---- send ------------------------------------------------------------------------------

    def push_to(self, callback: Callable[[Any], None]) -> None:
        """From now on hand every ASGI receive event to ``callback`` as it happens (in order,
        after the ones already queued) instead of queueing it for ``receive()``."""
        inbox = self.queue
        items, inbox._items = inbox._items, []
        inbox.push = callback
        if self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()
        for item in items:
            callback(item)

    def set_reading(self, on: bool) -> None:
        """Back-pressure for a ``push_to`` consumer: stop (or resume) reading from the socket."""
        if on == self.read_paused and not self.close_sent and not self.transport.is_closing():
            self.read_paused = not on
            if on:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()

    def write_text(self, text: str) -> bool:
        """Write one text frame now, if the lean path may (open, writable, no extension);
        False: nothing was written, send it through ``send()``."""
        if (
            self._fast
            and not self.close_sent
            and not self.disconnected
            and self.writable.is_set()
            and self.conn.state is State.OPEN
        ):
            self._write_frame(0x81, text.encode())
            return True
        return False

    def _write_frame(self, opcode: int, payload: bytes) -> None:
        n = len(payload)
        if n < 126:
            header = bytes((opcode, n))
        elif n < 65536:
            header = bytes((opcode, 126)) + n.to_bytes(2, "big")
        else:
            header = bytes((opcode, 127)) + n.to_bytes(8, "big")
        self.transport.write(header + payload)

    async def send(self, message: Any) -> None:
        if (
            self._fast
            and message["type"] == "websocket.send"
            and not self.close_sent
            and not self.disconnected
            and self.writable.is_set()
            and self.conn.state is State.OPEN
        ):
            text = message.get("text")
            if text is not None:
                self._write_frame(0x81, text.encode())
                return
            payload = message.get("bytes")
            if payload is not None:
                self._write_frame(0x82, payload)
                return
        await super().send(message)
        if self.conn.state is not State.OPEN:
            self._fast = False
        elif not self._fast and message["type"] == "websocket.accept":
            # the handshake's request and response (headers and all) are never read again:
            # ~2.5 KB an idle session need not hold
            self.request = self.response = None  # type: ignore[assignment]
            self._maybe_go_fast()


def upgrade_default_ws(lifespan_receive: Any) -> bool:
    """At lifespan startup: a uvicorn left on its default WebSocket implementation (``--ws
    auto``, which picks ``WebSocketsSansIOProtocol``) serves the app's later connections with
    this subclass of that class instead, so a plain ``uvicorn module:app`` gets the lean path.

    Why here: uvicorn reads ``Config.ws_protocol_class`` for each new connection, and the app
    sees uvicorn's lifespan runner (which holds the ``Config``) as the owner of ``receive``. Any
    other server, or a uvicorn told ``--ws`` explicitly (``--ws websockets-sansio`` keeps the
    plain class), is left as it is. Returns whether the setting was changed.
    """
    config = getattr(getattr(lifespan_receive, "__self__", None), "config", None)
    try:
        from uvicorn.config import Config
    except ImportError:  # pragma: no cover - uvicorn is a dependency
        return False
    if (
        not isinstance(config, Config)
        or config.ws != "auto"
        or getattr(config, "ws_protocol_class", None) is not WebSocketsSansIOProtocol
    ):
        return False
    config.ws_protocol_class = FastWebSocketsProtocol
    _LOG.debug("WebSocket connections use %s (uvicorn --ws auto)", FastWebSocketsProtocol.__name__)
    return True
