"""Sessions: one env instance each, bounded by ``max_sessions``, reaped when idle.

A session is owned by a WebSocket connection (``kind="ws"``) or created over HTTP ``/mcp``
(``kind="http"``, closed by ``openenv/session/close`` or the reaper). Capacity counts sessions
whose env is still being built, so a burst of connections can never overshoot it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from .calls import EnvCalls, build_env, calls_for

log = logging.getLogger("openenv_train.server")


class CapacityError(Exception):
    def __init__(self, active: int, limit: int) -> None:
        super().__init__(
            f"Server at capacity: {active}/{limit} sessions active. Close an idle session, "
            "retry later, or start the server with a larger max_sessions."
        )
        self.active_sessions = active
        self.max_sessions = limit


class FactoryError(Exception):
    def __init__(self, factory_name: str, cause: BaseException) -> None:
        super().__init__(
            f"Environment factory {factory_name!r} failed: {type(cause).__name__}: {cause}"
        )
        self.factory_name = factory_name


class Session:
    """One env instance plus the bookkeeping the reaper and the transports need."""

    __slots__ = (
        "id",
        "env",
        "calls",
        "kind",
        "lock",
        "last_active",
        "busy",
        "closed",
        "attached",
        "pending_close",
        "on_expire",
        "created_at",
    )

    def __init__(self, sid: str, env: Any, kind: str) -> None:
        self.id = sid
        self.env = env
        self.calls: EnvCalls = calls_for(env)
        self.kind = kind
        self.lock = asyncio.Lock()
        self.last_active = time.monotonic()
        self.busy = 0
        self.closed = False
        self.attached = False
        self.pending_close = False
        self.on_expire: Callable[[], Awaitable[None]] | None = None
        self.created_at = time.time()

    def touch(self) -> None:
        self.last_active = time.monotonic()


def factory_name(factory: Callable[..., Any]) -> str:
    return getattr(factory, "__qualname__", None) or getattr(factory, "__name__", repr(factory))


class SessionManager:
    """Creates, finds, reaps and destroys sessions."""

    def __init__(
        self,
        env_factory: Callable[[], Any],
        max_sessions: int,
        session_timeout: float | None,
    ) -> None:
        self.env_factory = env_factory
        self.max_sessions = max_sessions
        self.session_timeout = session_timeout
        self.sessions: dict[str, Session] = {}
        self._reserved = 0
        self._reaper: asyncio.Task[None] | None = None
        self.reaped = 0

    @property
    def active(self) -> int:
        return len(self.sessions) + self._reserved

    async def create(self, kind: str) -> Session:
        """Reserve a slot, build the env (off the loop if sync), register the session."""
        if self.active >= self.max_sessions:
            raise CapacityError(self.active, self.max_sessions)
        self._reserved += 1
        try:
            try:
                env = await build_env(self.env_factory)
            except Exception as exc:
                log.exception("env factory failed")
                raise FactoryError(factory_name(self.env_factory), exc) from exc
            sid = uuid.uuid4().hex
            session = Session(sid, env, kind)
            self.sessions[sid] = session
        finally:
            self._reserved -= 1
        self._ensure_reaper()
        return session

    def get(self, sid: str) -> Session | None:
        return self.sessions.get(sid)

    async def destroy(self, session: Session) -> None:
        """Forget the session and call ``env.close()``; idempotent."""
        if session.closed:
            return
        session.closed = True
        self.sessions.pop(session.id, None)
        try:
            await session.calls.close(session.env)
        except Exception:
            log.exception("env.close() raised for session %s", session.id)

    # ---- idle reaper ---------------------------------------------------------------------

    def _ensure_reaper(self) -> None:
        if not self.session_timeout or (self._reaper is not None and not self._reaper.done()):
            return
        self._reaper = asyncio.get_running_loop().create_task(self._reap_loop())

    async def _reap_loop(self) -> None:
        timeout = float(self.session_timeout or 0)
        period = max(0.05, min(timeout / 4, 5.0))
        while True:
            await asyncio.sleep(period)
            cutoff = time.monotonic() - timeout
            idle = [s for s in self.sessions.values() if not s.busy and s.last_active < cutoff]
            for s in idle:
                await self.expire(s)

    async def expire(self, session: Session) -> None:
        """Free an idle session: tell its transport to close, then close the env."""
        self.reaped += 1
        log.info("reaping session %s idle for more than %ss", session.id, self.session_timeout)
        hook = session.on_expire
        await self.destroy(session)
        if hook is not None:
            try:
                await hook()
            except Exception:
                log.debug("closing reaped socket failed", exc_info=True)

    async def shutdown(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        for s in list(self.sessions.values()):
            await self.destroy(s)
