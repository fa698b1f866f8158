"""``FrameCheck``: the checks every WebSocket message passes before a handler sees it.

Why one object: ``/ws`` (standard and batch framing) and MCP over ``/mcp`` apply the same three
bounds, in the same order, on both receive paths (the ASGI loop and the protocol's push
callback): the message size (close 1009), the per-connection token-bucket rate limit (a flooding
client is slowed down, not refused), and whether the connection's session was closed under it
(the idle reaper, ``openenv/session/close``): then the frame gets ``gone_reply`` and the socket
closes.
"""

from __future__ import annotations

from typing import Any

from .limits import Limits, RateLimiter


class _Outcome:
    """A named sentinel: what a receive path ends with (truthy, unlike an accepted ``0.0``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: The message is larger than ``Limits.max_frame_bytes``: close with 1009.
TOO_BIG = _Outcome("TOO_BIG")
#: The session was closed under the socket: send ``gone_reply``, then close.
GONE = _Outcome("GONE")
#: A handler's answer to a ``close`` frame: the caller closes the session, then the socket.
CLOSE = _Outcome("CLOSE")
#: The client went away.
DISCONNECTED = _Outcome("DISCONNECTED")


def session_gone(session: Any) -> bool:
    """True once a session was closed or is being closed: its frames must not reach the env."""
    return session.closed or session.pending_close


class FrameCheck:
    """One connection's size, rate and session-state checks.

    ``session``: the connection's one session, or None where a handler checks its own (batch
    framing carries many). ``gone_reply``: the frame sent before closing on a closed session.
    """

    __slots__ = ("max_frame", "limiter", "session", "gone_reply", "too_big_reason")

    def __init__(
        self,
        limits: Limits,
        session: Any = None,
        gone_reply: str = "",
        too_big_reason: str = "message too big",
    ) -> None:
        self.max_frame = limits.max_frame_bytes
        self.limiter = RateLimiter(limits.max_messages_per_s)
        self.session = session
        self.gone_reply = gone_reply
        self.too_big_reason = too_big_reason

    def verdict(self, text: str | bytes) -> Any:
        """``0.0``: handle the message now; a float > 0: wait that long, then ask ``gone()``;
        ``TOO_BIG``; ``GONE``. Spends one rate-limit token."""
        if len(text) > self.max_frame:  # a server without our protocol class let it through
            return TOO_BIG
        wait = self.limiter.delay()
        if wait:
            return wait
        session = self.session
        if session is not None and (session.closed or session.pending_close):
            return GONE
        return 0.0

    def charge(self, messages: int) -> float:
        """Spend ``messages`` more tokens at once (a batch message's sub-frames after its first,
        whether they run or the message is refused); the seconds to wait."""
        if messages <= 0:
            return 0.0
        limiter = self.limiter
        limiter.delay()  # refills the bucket to now and spends the first
        tokens = limiter.tokens = limiter.tokens - (messages - 1)
        return 0.0 if tokens >= 0.0 else -tokens / limiter.rate

    def gone(self) -> bool:
        """Whether the connection's session was closed (asked again after a rate-limit wait)."""
        return self.session is not None and session_gone(self.session)
