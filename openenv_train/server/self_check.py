"""Why this server process cannot complete calls now, asked by ``GET /health`` before the env's
own ``check_ready()``: the answer must be "unhealthy" whenever steps would fail or hang, so an
engine's health check, a pool or ``validate`` replaces the server instead of feeding it work.

Three causes a healthy-looking event loop used to hide (issue 35):

- a resource limit of this process was lowered after start (``prlimit`` from another process
  of the same uid: ``RLIMIT_NPROC`` 1 makes every subprocess and thread start fail,
  ``RLIMIT_CPU`` kills the process with SIGXCPU soon);
- the worker pool is wedged: calls wait while no worker has taken one for ``stall_limit_s``
  (every worker stuck, or no thread can start);
- a self-test call through the pool (a no-op) does not come back within ``probe_timeout_s``
  (asked only while no call waits, so a busy pool is never called unhealthy).
"""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Callable

from ._threads import ThreadRunner, default_runner

#: the limits whose lowering makes calls fail (threads/processes, descriptors, memory, CPU time)
WATCHED = ("RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_CPU")


def _limits() -> dict[str, int]:
    found = {}
    for name in WATCHED:
        if hasattr(resource, name):
            soft = resource.getrlimit(getattr(resource, name))[0]
            found[name] = soft if soft != resource.RLIM_INFINITY else -1
    return found


def _lower(now: int, before: int) -> bool:
    """-1 is unlimited: anything finite is lower than it."""
    return now != before and (before == -1 or (now != -1 and now < before))


class SelfCheck:
    """One per app; ``reason()`` is None when calls can complete, else why not (in words)."""

    def __init__(
        self,
        runner: Callable[[], ThreadRunner] = default_runner,
        stall_limit_s: float = 30.0,
        probe_timeout_s: float = 5.0,
    ) -> None:
        self._runner = runner
        self.stall_limit_s = stall_limit_s
        self.probe_timeout_s = probe_timeout_s
        self._start_limits = _limits()

    def limits_reason(self) -> str | None:
        now = _limits()
        lowered = [
            f"{name} {self._start_limits[name]} -> {value}"
            for name, value in now.items()
            if name in self._start_limits and _lower(value, self._start_limits[name])
        ]
        if not lowered:
            return None
        return (
            "this process's resource limits were lowered after start (-1: unlimited): "
            + ", ".join(lowered)
            + "; calls that start threads or processes or allocate will fail: restart the server"
        )

    def pool_reason(self) -> str | None:
        pool = self._runner()
        stalled = pool.stalled_s()
        if stalled <= self.stall_limit_s:
            return None
        return (
            f"the worker pool has taken no call for {stalled:.0f}s while calls wait "
            f"({pool.workers} workers, {pool.start_failures} thread starts refused)"
        )

    async def reason(self) -> str | None:
        why = self.limits_reason() or self.pool_reason()
        if why is not None or self._runner().stalled_s() > 0:
            return why  # calls wait but are being taken: busy, not wedged; no probe behind them
        try:
            await asyncio.wait_for(self._runner().run(bool), self.probe_timeout_s)
        except asyncio.TimeoutError:
            return f"a no-op call through the worker pool took over {self.probe_timeout_s:g}s"
        except Exception as exc:  # noqa: BLE001 - e.g. the pool is shut down
            return f"a no-op call through the worker pool failed: {type(exc).__name__}: {exc}"
        return None
