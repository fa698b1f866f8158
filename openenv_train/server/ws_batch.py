"""The batch extension of ``/ws``: many sessions' frames in one WebSocket message.

Why: a rollout engine holds dozens of sessions on one server and steps them together; one
message per step per session costs a syscall, a frame parse and a loop wake-up on both sides
for a few bytes of JSON. A client that offers the WebSocket subprotocol ``BATCH_SUBPROTOCOL``
gets a connection that carries any number of sessions, each named by a small integer the
client picks; OpenEnv clients never offer it and see the standard protocol unchanged.

Client -> server: ``{"type": "batch", "frames": [{"session": 1, "type": "step", "data": {...}}, ...]}``
Server -> client: ``{"type": "batch", "frames": [{"session": 1, "type": "observation", "data": ...}, ...]}``

Each sub-frame is a standard frame plus ``session``, answered exactly as on a one-session
connection (same checks, same errors, same limits). Every sub-frame a message carries spends
one rate-limit token, whether it runs or the message is refused. A new, larger ``session``
number opens a session (capacity and quotas apply); its later sub-frames, in this message or
the next, wait for the session and run in order, as on a one-session connection (a refused
opening answers its first sub-frame with the refusal, the others ``SESSION_ERROR``). A number
that was closed, refused or reaped is answered ``SESSION_ERROR`` and never reused. ``close``
ends one session and has no reply. Replies are sent as their sessions finish, every reply
ready in one event-loop turn in one message, so a slow session never holds up a quick one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..core.errors import ErrorCode
from ..core.wire import error_frame_json
from .encoding import JSONDecodeError, bounded_text, loads, too_deep
from .frame_check import CLOSE, FrameCheck, session_gone
from .guard import MAX_JSON_DEPTH, json_depth_exceeds
from .sessions import FactoryError, Session, SessionRefused
from .ws_receive import DISCONNECT_ERRORS, receive_frames

if TYPE_CHECKING:
    from .ws import WebSocketEndpoint

#: The WebSocket subprotocol a client offers to get batch framing on ``/ws``.
BATCH_SUBPROTOCOL = "openenv-train.batch.v1"
#: Sub-frames one message may carry.
MAX_BATCH_FRAMES = 4096

Send = Callable[[dict[str, Any]], Awaitable[None]]


def _batch_error(code: ErrorCode, message: str) -> str:
    return error_frame_json(code, message)


def _deep_error() -> str:
    return _batch_error(
        ErrorCode.VALIDATION_ERROR,
        f"Invalid message: nested deeper than {MAX_JSON_DEPTH} levels; flatten it",
    )


class BatchConnection:
    """One batch-framed connection: its sessions, the replies waiting to go, its tasks."""

    def __init__(self, endpoint: WebSocketEndpoint, scope: dict[str, Any], send: Send) -> None:
        self.endpoint = endpoint
        self.manager = endpoint.manager
        client = scope.get("client")
        self.client = client[0] if client else None
        self.send = send
        self.sessions: dict[int, Session] = {}
        self.top = -1  # highest session number seen: numbers are never reused
        #: numbers whose session is being opened: the session once open (None: refused); their
        #: later sub-frames wait for it
        self.opening: dict[int, asyncio.Future[Session | None]] = {}
        self.outbox: list[str] = []
        self.flushing = False
        self.tasks: set[asyncio.Task[None]] = set()
        # sessions are checked per sub-frame (``_one``): a closed one gets an error sub-frame
        self.check = FrameCheck(endpoint.limits, too_big_reason="too big")

    async def serve(self, receive: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        if self.endpoint.metrics is not None:
            self.endpoint.metrics.bind()  # before the sub-frame tasks, which copy the context
        try:
            await receive_frames(receive, self.send, self.check, self._message)
        except DISCONNECT_ERRORS:
            pass
        finally:
            for task in self.tasks:
                task.cancel()
            if self.tasks:
                await asyncio.gather(*self.tasks, return_exceptions=True)
            sessions, self.sessions = list(self.sessions.values()), {}
            for session in sessions:
                await self.manager.destroy(session)

    async def _message(self, text: str | bytes) -> str | None:
        """Start one batch message's sub-frames (each replies when done); or the error frame
        that refuses the whole message."""
        frames, carried = self._frames(text)
        if self.endpoint.metrics is not None:
            self.endpoint.metrics.batch_message(len(text), carried)
        if carried > 1:  # every sub-frame spends a token (the message's first paid on arrival)
            wait = self.check.charge(carried - 1)
            if wait:
                await asyncio.sleep(wait)  # a flooding client is slowed down, not refused
        if isinstance(frames, str):
            return frames
        loop = asyncio.get_running_loop()
        for key, sub in frames:
            task = loop.create_task(self._one(key, sub))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return None

    def _frames(self, text: str | bytes) -> tuple[list[tuple[int, dict[str, Any]]] | str, int]:
        """The (session, frame) pairs of a batch message, or the error frame that refuses it;
        and how many sub-frames it carried (what it costs in rate-limit tokens, at least 1)."""
        try:
            msg = loads(text)
        except JSONDecodeError as exc:
            if too_deep(exc):
                return _deep_error(), 1
            return _batch_error(
                ErrorCode.INVALID_JSON, f"Invalid JSON: {bounded_text(str(exc), 200)}"
            ), 1
        frames = msg.get("frames") if type(msg) is dict and msg.get("type") == "batch" else None
        carried = max(1, len(frames)) if type(frames) is list else 1
        if len(text) > 2 * MAX_JSON_DEPTH and json_depth_exceeds(msg):
            return _deep_error(), carried
        if type(frames) is not list:
            return _batch_error(
                ErrorCode.VALIDATION_ERROR,
                'Invalid message: on a batch connection send {"type": "batch", "frames": '
                '[{"session": 1, "type": "step", "data": {...}}, ...]}',
            ), carried
        if len(frames) > MAX_BATCH_FRAMES:
            return _batch_error(
                ErrorCode.VALIDATION_ERROR,
                f"Invalid message: {len(frames)} frames in one batch; send at most "
                f"{MAX_BATCH_FRAMES} per message",
            ), carried
        out = []
        for i, sub in enumerate(frames):
            key = sub.pop("session", None) if type(sub) is dict else None
            if type(key) is not int or key < 0:
                return _batch_error(
                    ErrorCode.VALIDATION_ERROR,
                    f'Invalid message: frames[{i}] needs "session": a non-negative integer '
                    "naming the session (a new, larger number opens one)",
                ), carried
            out.append((key, sub))
        return out, carried

    async def _one(self, key: int, sub: dict[str, Any]) -> None:
        session = self.sessions.get(key)
        if session is None:
            opening = self.opening.get(key)
            if opening is not None:  # an earlier sub-frame is opening it: wait, then run in order
                outcome = await opening
                if outcome is None:  # refused (its first sub-frame carries why): never opened
                    if sub.get("type") != "close":
                        self._reply(key, self._gone())
                    return
                session = outcome
            elif sub.get("type") == "close":
                return  # nothing to close; close frames have no reply
            elif key <= self.top:
                self._reply(key, self._gone())
                return
            else:
                session = await self._open(key)
                if session is None:
                    return
        if session_gone(session):
            self.sessions.pop(key, None)
            await self.manager.destroy(session)
            if sub.get("type") != "close":  # (a close that waited on an opening closed since)
                self._reply(key, self._gone())
            return
        reply = await self.endpoint.answer(session, sub)
        if reply is CLOSE:
            self.sessions.pop(key, None)
            await self.manager.destroy(session)
            return
        self._reply(key, reply)

    async def _open(self, key: int) -> Session | None:
        """Open the session for a new number (None: refused, and answered). Sub-frames for the
        number that arrive meanwhile wait on ``opening`` and run after this one, in order: the
        waiters wake in the order they came and queue on the session's (FIFO) lock."""
        self.top = key
        opening: asyncio.Future[Session | None] = asyncio.get_running_loop().create_future()
        self.opening[key] = opening
        try:
            try:
                session = await self.manager.create("ws", self.client)
            except SessionRefused as exc:
                refusal = error_frame_json(exc.code, str(exc), **exc.data)
            except FactoryError as exc:
                refusal = error_frame_json(
                    ErrorCode.FACTORY_ERROR, str(exc), factory_name=exc.factory_name
                )
            else:
                self.sessions[key] = session
                opening.set_result(session)
                return session
            opening.set_result(None)
            self._reply(key, refusal)
            return None
        finally:
            del self.opening[key]
            if not opening.done():  # cancelled (the connection ended): so are its waiters
                opening.cancel()

    @staticmethod
    def _gone() -> str:
        return error_frame_json(
            ErrorCode.SESSION_ERROR,
            "Session was closed (idle timeout, close, or refused); start a new session number",
        )

    def _reply(self, key: int, frame: str) -> None:
        self.outbox.append(f'{{"session":{key},{frame[1:]}')
        if not self.flushing:
            self.flushing = True
            task = asyncio.get_running_loop().create_task(self._flush())
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _flush(self) -> None:
        """Send every reply that is ready, as one message (runs one loop turn after the first)."""
        out, self.outbox = self.outbox, []
        self.flushing = False
        text = '{"type":"batch","frames":[' + ",".join(out) + "]}"
        try:
            await self.send({"type": "websocket.send", "text": text})
        except DISCONNECT_ERRORS:
            pass
