"""``EnvPool``: warm env servers (any provider) handed out by lease.

``acquire()`` hands out a server that answers ``/health`` with no open session, in the time of one
loopback request when one is warm; ``release()`` gives it back. A background thread replaces dead
servers, keeps ``min_size`` warm, grows up to ``max_size`` while callers wait, shrinks idle ones
back to ``min_size`` after ``idle_timeout``, and reclaims leases whose holder crashed: its thread
died, the lease object was dropped without ``release()``, or it outlived ``lease_ttl``.
A server still holding sessions when it comes back is only reused once they drain (else it is
replaced). A server whose process has exited is replaced at its first failed check; one whose
process still runs only after ``unhealthy_after`` failed checks in a row (a loaded machine can
delay one answer past the probe's timeout, and a pool that replaced a slow healthy server on it
would cut its capacity just when it is short). ``close()`` stops everything, verified by each
provider; a server whose stop failed (the engine unreachable) is stopped again on each check and
at ``close()``.

``single_use=True``: each server serves one lease, then is stopped, and a spare is started as one
is handed out (a fresh container per episode, warm). A provider with a ``probe()`` method (a
dict like ``/health``'s, or None when dead) is checked by it instead of ``/health``.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
import weakref
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from .errors import PoolClosedError as PoolClosedError
from .health import health
from .signals import raise_on_stop_signals

log = logging.getLogger(__name__)


class _Slot:
    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.state = "starting"  # starting | idle | leased | draining | stopping
        self.since = time.monotonic()
        self.holder: threading.Thread | None = None
        self.failed_checks = 0  # in a row; a check answered resets it

    @property
    def base_url(self) -> str:
        return self.provider.base_url


class Lease:
    """One server handed out by ``EnvPool.acquire()``; ``release()`` or ``with`` gives it back."""

    def __init__(self, pool: EnvPool, slot: _Slot) -> None:
        self.base_url: str = slot.base_url
        self.provider = slot.provider
        self._slot = slot
        self._released = False
        self._finalizer = weakref.finalize(self, pool._give_back, slot)

    def release(self) -> None:
        """Return the server to the pool (idempotent)."""
        if not self._released:
            self._released = True
            self._finalizer()

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class EnvPool:
    """Warm servers made by ``factory()`` (an unstarted provider, e.g. ``LocalProcessProvider``)."""

    def __init__(
        self,
        factory: Callable[[], Any],
        *,
        min_size: int = 1,
        max_size: int | None = None,
        lease_ttl: float | None = None,
        idle_timeout: float = 60.0,
        drain_timeout: float = 5.0,
        check_interval: float = 0.5,
        unhealthy_after: int = 3,
        single_use: bool = False,
    ) -> None:
        max_size = min_size if max_size is None else max_size
        if not (isinstance(min_size, int) and min_size >= 0):
            raise ValueError(f"min_size must be an int >= 0, got {min_size!r}")
        if not (isinstance(max_size, int) and max_size >= max(1, min_size)):
            raise ValueError(f"max_size must be an int >= max(1, min_size), got {max_size!r}")
        if lease_ttl is not None and lease_ttl <= 0:
            raise ValueError(f"lease_ttl must be > 0 seconds or None, got {lease_ttl!r}")
        if not (isinstance(unhealthy_after, int) and unhealthy_after >= 1):
            raise ValueError(f"unhealthy_after must be an int >= 1, got {unhealthy_after!r}")
        self.factory, self.min_size, self.max_size = factory, min_size, max_size
        self.lease_ttl, self.idle_timeout = lease_ttl, idle_timeout
        self.drain_timeout, self.check_interval = drain_timeout, check_interval
        self.unhealthy_after, self.single_use = unhealthy_after, single_use
        self.replaced = 0  # servers found dead and replaced
        self.reclaimed = 0  # leases taken back from crashed holders
        self._slots: list[_Slot] = []
        #: servers whose stop failed (the engine unreachable: restarting, say): stopped again on
        #: every check and at close, so a container the engine kept is never left behind
        self._unstopped: list[Any] = []
        self._cond = threading.Condition()
        self._waiting = 0
        self._closed = False
        self._starter = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_size, thread_name_prefix="envpool-start"
        )
        self._monitor: threading.Thread | None = None

    # ---- public ------------------------------------------------------------------------------

    def start(self) -> EnvPool:
        """Start ``min_size`` servers (in parallel) and the background monitor."""
        raise_on_stop_signals()
        futs = [self._grow() for _ in range(self.min_size)]
        try:
            for f in futs:
                f.result()
        except BaseException:
            self.close()
            raise
        self._monitor = threading.Thread(target=self._run, name="envpool-monitor", daemon=True)
        self._monitor.start()
        return self

    def acquire(self, timeout: float = 60.0) -> Lease:
        """A healthy server with no open session; waits (and grows the pool) up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._waiting += 1
            try:
                while True:
                    if self._closed:
                        raise PoolClosedError("the pool is closed")
                    slot = next((s for s in self._slots if s.state == "idle"), None)
                    if slot is not None:
                        slot.state, slot.since = "leased", time.monotonic()
                        slot.holder = threading.current_thread()
                        self._cond.release()
                        try:
                            ok = self._clean(slot)
                        finally:
                            self._cond.acquire()
                        if ok:
                            spare = sum(s.state in ("starting", "idle") for s in self._slots)
                            if self.single_use and spare < self.min_size:
                                if len(self._slots) < self.max_size:
                                    self._grow()  # the next episode's server, warm
                            return Lease(self, slot)
                        slot.state, slot.since, slot.holder = "draining", time.monotonic(), None
                        continue
                    if len(self._slots) < self.max_size:
                        self._grow()
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError(
                            f"no env server free within {timeout}s (max_size={self.max_size}, "
                            f"{self.stats()}); raise max_size or release leases"
                        )
                    self._cond.wait(min(left, self.check_interval))
            finally:
                self._waiting -= 1

    @property
    def base_urls(self) -> list[str]:
        """URLs of every running server (for callers that spread sessions themselves)."""
        with self._cond:
            return [s.base_url for s in self._slots if s.state not in ("starting", "stopping")]

    def stats(self) -> dict[str, int]:
        with self._cond:
            out = {
                st: sum(s.state == st for s in self._slots)
                for st in ("starting", "idle", "leased", "draining")
            }
        return {
            **out,
            "replaced": self.replaced,
            "reclaimed": self.reclaimed,
            "unstopped": len(self._unstopped),
        }

    def close(self) -> None:
        """Stop the monitor and every server (verified by each provider). Idempotent."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._monitor is not None and self._monitor is not threading.current_thread():
            self._monitor.join(timeout=10)
        self._starter.shutdown(wait=True)
        with self._cond:
            slots, self._slots = self._slots, []
        errors = []
        for s in slots:
            try:
                s.provider.stop()
            except Exception as e:
                errors.append(e)
        errors += self._stop_unstopped()
        if errors:
            raise errors[0]

    stop = close

    def __enter__(self) -> EnvPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- internals ---------------------------------------------------------------------------

    def _health(self, slot: _Slot, timeout: float = 2.0) -> dict[str, Any] | None:
        probe = getattr(slot.provider, "probe", None)
        return probe() if probe is not None else health(slot.base_url, timeout=timeout)

    def _dead(self, slot: _Slot) -> bool:
        """After a failed check: dead when its process has exited, or after ``unhealthy_after``
        failed checks in a row while it still runs (unresponsive: hung, or cut off)."""
        slot.failed_checks += 1
        exited = not getattr(slot.provider, "running", True)
        return exited or slot.failed_checks >= self.unhealthy_after

    def _clean(self, slot: _Slot) -> bool:
        h = self._health(slot)
        return h is not None and not h.get("active_sessions")

    def _grow(self) -> concurrent.futures.Future[None]:
        provider = self.factory()
        if self.max_size > 1 and hasattr(provider, "use_own_token"):
            provider.use_own_token()  # containers of one pool cannot open sessions on each other
        slot = _Slot(provider)
        self._slots.append(slot)

        def start() -> None:
            try:
                slot.provider.start()
            except BaseException:
                with self._cond:
                    if slot in self._slots:
                        self._slots.remove(slot)
                    self._cond.notify_all()
                raise
            with self._cond:
                if self._closed:
                    return  # close() stops it
                slot.state, slot.since = "idle", time.monotonic()
                self._cond.notify_all()

        return self._starter.submit(start)

    def _give_back(self, slot: _Slot) -> None:
        with self._cond:
            if slot.state == "leased":
                slot.state, slot.since, slot.holder = "draining", time.monotonic(), None
                self._cond.notify_all()
                if self.single_use and not self._closed:
                    slot.state = "used"  # never handed out again; stopped off this thread
                    with suppress(RuntimeError):  # the pool is closing: close() stops it
                        self._starter.submit(self._retire, slot, False)

    def _retire(self, slot: _Slot, replace: bool) -> None:
        """Stop ``slot`` outside the lock; start a new one if the pool is below ``min_size``."""
        with self._cond:
            if slot.state == "leased":
                return  # handed out meanwhile: its holder finds out
            slot.state = "stopping"
        try:
            slot.provider.stop()
        except Exception as e:  # noqa: BLE001 - whatever the engine says, try again later
            log.warning("stopping a pool server failed (%s); trying again on the next check", e)
            with self._cond:
                self._unstopped.append(slot.provider)
        with self._cond:
            if slot in self._slots:
                self._slots.remove(slot)
            if replace and not self._closed:
                self.replaced += 1
            if not self._closed and len(self._slots) < self.min_size:
                self._grow()
            self._cond.notify_all()

    def _stop_unstopped(self) -> list[Exception]:
        """Stop again each server whose stop failed; those that fail again stay listed."""
        with self._cond:
            todo, self._unstopped = self._unstopped, []
        errors: list[Exception] = []
        for provider in todo:
            try:
                provider.stop()
            except Exception as e:  # noqa: BLE001
                errors.append(e)
                with self._cond:
                    self._unstopped.append(provider)
        return errors

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                self._cond.wait(self.check_interval)
                if self._closed:
                    return
                slots = list(self._slots)
                retry = bool(self._unstopped)
                now = time.monotonic()
                for s in slots:  # reclaim leases of crashed holders
                    dead = s.holder is not None and not s.holder.is_alive()
                    expired = self.lease_ttl is not None and now - s.since > self.lease_ttl
                    if s.state == "leased" and (dead or expired):
                        s.state, s.since, s.holder = "draining", now, None
                        self.reclaimed += 1
                idle = [s for s in slots if s.state == "idle"]
                surplus = len(slots) - self.min_size
            if retry:
                self._stop_unstopped()
            for s in slots:
                if s.state not in ("idle", "draining"):
                    continue
                h = self._health(s, timeout=1.0)
                if h is None:
                    if self._dead(s):
                        self._retire(s, replace=True)  # replaced if below min_size
                    continue
                s.failed_checks = 0
                if s.state == "draining":
                    if not h.get("active_sessions"):
                        with self._cond:
                            s.state, s.since = "idle", time.monotonic()
                            self._cond.notify_all()
                    elif time.monotonic() - s.since > self.drain_timeout:
                        self._retire(s, replace=True)
            for s in idle:
                if (
                    surplus > 0
                    and s.state == "idle"
                    and time.monotonic() - s.since > self.idle_timeout
                ):
                    surplus -= 1
                    self._retire(s, replace=False)
