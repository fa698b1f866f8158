"""uvicorn's h11 HTTP protocol with a deadline for the request head (slowloris).

uvicorn closes a keep-alive connection that stays silent, but a connection that sends a request
head slowly, a byte now and then, or connects and sends nothing, is held forever. Here every
request head (the first on a connection, and each next one) must arrive within the app's
``Limits.request_timeout_s``; the body's deadline is the gate's (``guard``).

A deadline that passes while the server itself was stalled (a long garbage collection, a starved
CPU) must not blame the client: libuv (uvloop) runs due timers before it reads the sockets, so a
head that arrived in time would still be sitting unread in the kernel. The verdict is therefore
given only after one more read of every socket (a second, short timer); a client that really
sent nothing is dropped ``VERDICT_DELAY_S`` later than its deadline, no more.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .limits import find_limits

#: After a head deadline passes, wait this long (past the loop's next socket read) before dropping.
VERDICT_DELAY_S = 0.05


class GuardedH11Protocol(H11Protocol):
    """Drop-in ``http=`` class for uvicorn (``uvicorn_kwargs`` selects it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timeout = find_limits(self.app).request_timeout_s
        self._head_timer: asyncio.TimerHandle | None = None
        self._waiting_scope: Any = None

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self._waiting_scope = self.scope
        self._head_timer = self.loop.call_later(self._head_timeout, self._head_late)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        # a head already in the socket is read before the next timer runs: judge after that
        self._head_timer = self.loop.call_later(VERDICT_DELAY_S, self._head_verdict)

    def _head_verdict(self) -> None:
        self._head_timer = None
        if self.scope is self._waiting_scope and not self.transport.is_closing():
            self.transport.close()  # no request head arrived in time

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_timer()

    def handle_websocket_upgrade(self, event: Any) -> None:
        self._disarm_head_timer()
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)
