"""Spawn actors on local Monarch processes and take every one of them down again, quietly.

``ActorGraph`` remembers each process mesh it spawns and stops them all (newest first) on
``stop()``, on leaving its ``async with`` block, and on Ctrl-C. Monarch's own shutdown has printed
SIGTERM backtraces for forge users; here the stop is awaited with a bound and Monarch's chatter
on the way down goes to its log file, not the terminal.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from monarch.actor import this_host

log = logging.getLogger(__name__)


class ActorGraph:
    """The process meshes of one app; each actor gets its own local process (``procs: 1``)."""

    def __init__(self, stop_timeout_s: float = 30.0) -> None:
        self.meshes: list[tuple[str, Any]] = []
        self.stop_timeout_s = stop_timeout_s
        self.stopped = False

    def spawn(self, name: str, cls: type, *args: Any, procs: int = 1, **kwargs: Any) -> Any:
        """``cls(*args, **kwargs)`` as an actor on ``procs`` new local processes."""
        if self.stopped:
            raise RuntimeError("ActorGraph: already stopped; make a new one")
        mesh = this_host().spawn_procs(per_host={"procs": procs})
        self.meshes.append((name, mesh))
        return mesh.spawn(name, cls, *args, **kwargs)

    async def stop(self) -> None:
        """Stop every process mesh (idempotent); a mesh that does not stop in time is logged."""
        if self.stopped:
            return
        self.stopped = True
        while self.meshes:
            name, mesh = self.meshes.pop()
            try:
                await asyncio.wait_for(mesh.stop(), self.stop_timeout_s)
            except (Exception, asyncio.CancelledError) as err:  # keep stopping the others
                log.warning("stopping the %s processes failed: %r", name, err)

    async def __aenter__(self) -> ActorGraph:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
