"""Sessions: one env instance each, bounded by ``max_sessions``, reaped when idle.

A session is owned by a WebSocket connection (``kind="ws"``) or created over HTTP ``/mcp``
(``kind="http"``, closed by ``openenv/session/close`` or the reaper). Capacity counts sessions
whose env is still being built, so a burst of connections can never overshoot it. One client
address may hold at most ``max_sessions_per_client`` of them, and a session nobody has used yet
is reaped after ``unused_session_timeout_s`` (much sooner than a used one), so a client that
only creates sessions cannot lock the others out.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from ..core.loopback import is_loopback
from .calls import EnvCalls, build_env, calls_for
from .errors import CapacityError as CapacityError
from .errors import FactoryError as FactoryError
from .errors import QuotaError as QuotaError
from .errors import SessionRefused as SessionRefused
from .limits import Limits

log = logging.getLogger("openenv_train.server")


def client_quota(max_sessions: int, per_client: int) -> int:
    """Sessions one client address may hold: its limit, and never more than half the capacity
    (rounded up), so one address can never take every session of a small env."""
    return max(1, min(per_client, (max_sessions + 1) // 2))


class Session:
    """One env instance plus the bookkeeping the reaper and the transports need."""

    __slots__ = (
        "id",
        "env",
        "calls",
        "kind",
        "lock",
        "last_active_ns",
        "busy",
        "busy_since_ns",
        "took_ns",
        "closed",
        "attached",
        "pending_close",
        "on_expire",
        "created_at",
        "client",
        "used",
    )

    def __init__(
        self,
        sid: str,
        env: Any,
        kind: str,
        client: str | None = None,
        calls: EnvCalls | None = None,
    ) -> None:
        self.id = sid
        self.env = env
        self.calls: EnvCalls = calls if calls is not None else calls_for(env)
        self.kind = kind
        self.lock = asyncio.Lock()
        # clocks in integer nanoseconds (``time.monotonic_ns``): the frame counters read
        # ``took_ns`` and bucket it with integer arithmetic, where a float costs a conversion
        self.last_active_ns = time.monotonic_ns()
        self.busy = 0
        self.busy_since_ns = 0  # when the call now running started (``busy`` > 0)
        self.took_ns = 0  # how long the last call took (``leave``)
        self.closed = False
        self.attached = False
        self.pending_close = False
        self.on_expire: Callable[[], Awaitable[None]] | None = None
        self.created_at = time.time()
        self.client = client
        self.used = False

    def enter(self) -> int:
        """A call starts on this session (``/health`` reads how long the oldest has run);
        returns its start, for ``leave``."""
        now = time.monotonic_ns()
        if not self.busy:
            self.busy_since_ns = now
        self.busy += 1
        return now

    def leave(self, start: int) -> None:
        """The call that ``enter`` returned ``start`` for ended: ``took_ns`` is its length,
        read by the caller before it awaits anything (the frame counters reuse these two clock
        reads, where their own would cost a tenth of a trivial step)."""
        self.busy -= 1
        self.last_active_ns = now = time.monotonic_ns()
        self.used = True
        self.took_ns = now - start

    def touch(self) -> None:
        self.last_active_ns = time.monotonic_ns()
        self.used = True


def factory_name(factory: Callable[..., Any]) -> str:
    return getattr(factory, "__qualname__", None) or getattr(factory, "__name__", repr(factory))


class SessionManager:
    """Creates, finds, reaps and destroys sessions."""

    def __init__(
        self,
        env_factory: Callable[[], Any],
        max_sessions: int,
        session_timeout: float | None,
        limits: Limits | None = None,
    ) -> None:
        self.env_factory = env_factory
        self.max_sessions = max_sessions
        self.session_timeout = session_timeout
        self.limits = limits or Limits()
        self.sessions: dict[str, Session] = {}
        self.per_client: dict[str, int] = {}
        self._reserved = 0
        self._exempt = frozenset(default_gateways()) if self.limits.quota_exempt_gateway else ()
        self._reaper: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()  # envs built for requesters who left
        self.reaped = 0
        #: this server's call plan per env class: its sessions' calls are counted on it
        #: (``/metrics``), apart from any other server's in the process
        self.plans: dict[type, EnvCalls] = {}

    @property
    def active(self) -> int:
        return len(self.sessions) + self._reserved

    def _quota_key(self, client: str | None) -> str | None:
        if client is None or (self.limits.quota_exempt_loopback and is_loopback(client)):
            return None
        if client in self._exempt:
            return None
        return client

    async def create(self, kind: str, client: str | None = None) -> Session:
        """Reserve a slot, build the env (off the loop if sync), register the session.

        ``client``: the peer address, counted against ``max_sessions_per_client``.
        """
        if self.active >= self.max_sessions:
            raise CapacityError(self.active, self.max_sessions)
        key = self._quota_key(client)
        if key is not None:
            held = self.per_client.get(key, 0)
            limit = client_quota(self.max_sessions, self.limits.max_sessions_per_client)
            if held >= limit:
                raise QuotaError(key, held, limit)
            self.per_client[key] = held + 1
        self._reserved += 1
        build = asyncio.ensure_future(build_env(self.env_factory))
        try:
            try:
                env = await asyncio.shield(build)
            except asyncio.CancelledError:
                # the requester left mid-build (a client that hung up): the build runs on (a
                # sync factory can't be stopped in its thread), then its env is closed and
                # its slot freed, never leaked
                build.add_done_callback(functools.partial(self._abandoned, kind, key))
                raise
            except Exception as exc:
                log.exception("env factory failed")
                raise FactoryError(factory_name(self.env_factory), exc) from exc
            plan = self.plans.get(type(env))
            if plan is None:
                plan = self.plans[type(env)] = EnvCalls(type(env))
            session = Session(uuid.uuid4().hex, env, kind, key, plan)
        except asyncio.CancelledError:
            raise  # the slot and the quota are freed by ``_abandoned``
        except BaseException:
            self._reserved -= 1
            if key is not None:
                self._release(key)
            raise
        self._reserved -= 1
        self.sessions[session.id] = session
        self._ensure_reaper()
        return session

    def _abandoned(self, kind: str, key: str | None, build: asyncio.Future[Any]) -> None:
        """A build nobody waits for any more finished: close its env, free its slot."""
        self._reserved -= 1
        if build.cancelled() or build.exception() is not None:
            if key is not None:
                self._release(key)
            return
        try:
            session = Session("", build.result(), kind, key)  # destroy() releases ``key``
        except Exception:
            log.exception("abandoned env is not an environment")
            if key is not None:
                self._release(key)
            return
        task = asyncio.get_running_loop().create_task(self.destroy(session))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def all_stuck(self, after_s: float) -> bool:
        """At capacity, and every session has been inside one call for over ``after_s``: no new
        session can start and no running one is finishing, so no step can complete."""
        if not self.sessions or self.active < self.max_sessions:
            return False
        cutoff = time.monotonic_ns() - int(after_s * 1e9)
        return all(s.busy and s.busy_since_ns < cutoff for s in self.sessions.values())

    def get(self, sid: str) -> Session | None:
        return self.sessions.get(sid)

    async def destroy(self, session: Session) -> None:
        """Forget the session and call ``env.close()``; idempotent."""
        if session.closed:
            return
        session.closed = True
        self.sessions.pop(session.id, None)
        if session.client is not None:
            self._release(session.client)
        try:
            await session.calls.close(session.env)
        except Exception:
            log.exception("env.close() raised for a %s session", session.kind)

    def _release(self, key: str) -> None:
        left = self.per_client.get(key, 0) - 1
        if left > 0:
            self.per_client[key] = left
        else:
            self.per_client.pop(key, None)

    # ---- idle reaper ---------------------------------------------------------------------

    def _ensure_reaper(self) -> None:
        if self._reaper is not None and not self._reaper.done():
            return
        self._reaper = asyncio.get_running_loop().create_task(self._reap_loop())

    async def _reap_loop(self) -> None:
        unused = self.limits.unused_session_timeout_s
        timeout = float(self.session_timeout) if self.session_timeout else None
        if timeout is not None:
            unused = min(unused, timeout)
        shortest = min(unused, timeout) if timeout is not None else unused
        period = max(0.05, min(shortest / 4, 5.0))
        while True:
            await asyncio.sleep(period)
            now = time.monotonic_ns()
            fresh_cutoff = now - int(unused * 1e9)
            used_cutoff = now - int(timeout * 1e9) if timeout is not None else -1
            idle = [
                s
                for s in self.sessions.values()
                if not s.busy and s.last_active_ns < (used_cutoff if s.used else fresh_cutoff)
            ]
            for s in idle:
                await self.expire(s)

    async def expire(self, session: Session) -> None:
        """Free an idle session: tell its transport to close, then close the env."""
        self.reaped += 1
        log.info(
            "reaping idle session (%s, %s)", session.kind, "used" if session.used else "never used"
        )
        hook = session.on_expire
        if hook is not None:  # first: the close frame (its reason) goes out before the session
            try:  # leaves /health; a client stepping then read a close with no reason
                await hook()
            except Exception:
                log.debug("closing reaped socket failed", exc_info=True)
        await self.destroy(session)

    async def shutdown(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        for s in list(self.sessions.values()):
            await self.destroy(s)


def default_gateways(route_table: str = "/proc/net/route") -> list[str]:
    """The IPv4 default gateways of this machine (Linux), e.g. a container's host bridge."""
    import socket
    import struct

    try:
        with open(route_table) as f:
            rows = [line.split() for line in f.readlines()[1:]]
    except OSError:
        return []
    return [
        socket.inet_ntoa(struct.pack("<L", int(row[2], 16)))
        for row in rows
        if len(row) > 3 and row[1] == "00000000" and int(row[3], 16) & 2
    ]
