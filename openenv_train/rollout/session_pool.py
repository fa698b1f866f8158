"""A pool of connected env sessions spread over N servers, reused across episodes.

An episode borrows a connected client, resets it (a new episode on the same WebSocket), and gives
it back. A client that saw an infrastructure error is closed and never reused; a server that
refuses connections is benched for ``dead_cooldown_s`` so retries land on the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import InfrastructureError
from .errors import NoLiveServerError as NoLiveServerError


@dataclass
class PooledSession:
    client: Any
    url: str


@dataclass
class _Server:
    url: str
    idle: list[Any] = field(default_factory=list)
    open: int = 0
    dead_until: float = 0.0
    failures: int = 0


class SessionPool:
    """Hands out connected clients; ``make_client(url)`` builds an unconnected one."""

    def __init__(
        self,
        make_client: Callable[[str], Any],
        base_urls: Sequence[str],
        *,
        dead_cooldown_s: float = 5.0,
        close_timeout_s: float = 2.0,
        batch_frames: bool = True,
    ) -> None:
        urls = [u for u in base_urls if isinstance(u, str) and u]
        if not urls:
            raise ValueError(
                "base_urls: empty; pass at least one env server URL (e.g. provider.base_url)"
            )
        self._make_client = make_client
        self._servers = [_Server(url) for url in urls]
        self.dead_cooldown_s = dead_cooldown_s
        self.close_timeout_s = close_timeout_s
        #: ask each client to share one batch-framed connection per server (when it offers it)
        self.batch_frames = batch_frames
        self.connects = 0
        self.connect_failures = 0
        self.discarded = 0
        self.last_connect_error: BaseException | None = None

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self._servers]

    def _live(self, avoid: frozenset[str]) -> list[_Server]:
        now = time.monotonic()
        live = [s for s in self._servers if s.dead_until <= now]
        preferred = [s for s in live if s.url not in avoid]
        # When every server is benched, try them anyway (once each per acquire) before giving up.
        return preferred or live or list(self._servers)

    async def acquire(self, avoid: frozenset[str] = frozenset()) -> PooledSession:
        """A connected client, preferring an idle one on a server not in ``avoid``."""
        tried: set[str] = set()
        while True:
            candidates = [s for s in self._live(avoid) if s.url not in tried]
            if not candidates:
                raise NoLiveServerError(
                    f"no env server accepts connections (tried {sorted(tried) or self.urls}; last "
                    f"error: {self.last_connect_error!r}); check that the servers are running"
                )
            with_idle = [s for s in candidates if s.idle]
            if with_idle:
                server = max(with_idle, key=lambda s: len(s.idle))
                return PooledSession(server.idle.pop(), server.url)
            server = min(candidates, key=lambda s: s.open)
            client = self._make_client(server.url)
            if self.batch_frames and hasattr(client, "batch_frames"):
                client.batch_frames = True
            server.open += 1
            try:
                await client.connect()
            except (InfrastructureError, OSError, asyncio.TimeoutError) as exc:
                server.open -= 1
                server.failures += 1
                server.dead_until = time.monotonic() + self.dead_cooldown_s
                self.connect_failures += 1
                tried.add(server.url)
                await self._close_quietly(client)
                self.last_connect_error = exc
                continue
            self.connects += 1
            return PooledSession(client, server.url)

    def release(self, session: PooledSession) -> None:
        """Give back a healthy client for reuse."""
        for server in self._servers:
            if server.url == session.url:
                server.idle.append(session.client)
                return

    async def discard(self, session: PooledSession, *, server_failed: bool = False) -> None:
        """Close a client that may be broken; ``server_failed`` benches its server for a while."""
        self.discarded += 1
        for server in self._servers:
            if server.url == session.url:
                server.open -= 1
                if server_failed:
                    server.failures += 1
                    server.dead_until = time.monotonic() + self.dead_cooldown_s
                    # Its other idle sockets are likely dead too: drop them rather than fail on each.
                    stale, server.idle = server.idle, []
                    server.open -= len(stale)
                    self.discarded += len(stale)
                    await asyncio.gather(*(self._close_quietly(c) for c in stale))
        await self._close_quietly(session.client)

    async def _close_quietly(self, client: Any) -> None:
        try:
            await asyncio.wait_for(client.close(), self.close_timeout_s)
        except Exception:  # closing a broken socket may fail in many ways; it is gone either way
            pass

    async def aclose(self) -> None:
        clients = [c for s in self._servers for c in s.idle]
        for s in self._servers:
            s.open -= len(s.idle)
            s.idle.clear()
        await asyncio.gather(*(self._close_quietly(c) for c in clients))

    def stats(self) -> dict[str, Any]:
        return {
            "connects": self.connects,
            "connect_failures": self.connect_failures,
            "sessions_discarded": self.discarded,
            "open_sessions": sum(s.open for s in self._servers),
        }
