"""A lean worker pool that runs sync env code off the event loop.

Why not ``loop.run_in_executor``: every call there builds a ``concurrent.futures.Future``, wraps it
in an asyncio future and wakes the loop through its self-pipe once per result. Here a worker hands
results straight to asyncio futures and wakes the loop once per *batch* of results, which keeps
the thread hop cheap when many sessions step at once. Sync env code still never runs on the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_STOP = object()


class _LoopMailbox:
    """Results for one event loop; the loop is woken once per non-empty batch."""

    __slots__ = ("loop", "items", "lock", "scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: deque[tuple[asyncio.Future[Any], bool, Any]] = deque()
        self.lock = threading.Lock()
        self.scheduled = False

    def post(self, fut: asyncio.Future[Any], ok: bool, value: Any) -> None:
        with self.lock:
            self.items.append((fut, ok, value))
            if self.scheduled:
                return
            self.scheduled = True
        try:
            self.loop.call_soon_threadsafe(self.drain)
        except RuntimeError:  # loop closed: nobody is waiting any more
            pass

    def drain(self) -> None:
        with self.lock:
            items, self.items = self.items, deque()
            self.scheduled = False
        for fut, ok, value in items:
            if fut.cancelled():
                continue
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)


class ThreadRunner:
    """A pool of daemon threads shared by every session, grown only when work is stuck.

    Few threads serve fast envs best (each extra thread woken per call costs context switches),
    but a slow env must never hold up another session's call. So one worker starts with the
    first job, and a loop-side watchdog adds workers whenever jobs wait while no worker has
    taken a job for ``stall_s`` (all of them are busy with slow calls). Workers idle for
    ``idle_exit_s`` exit, down to one.
    """

    def __init__(
        self,
        max_workers: int = 64,
        name: str = "openenv-env",
        stall_s: float = 0.002,
        idle_exit_s: float = 10.0,
    ) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.max_workers = max_workers
        self.stall_s = stall_s
        self.idle_exit_s = idle_exit_s
        self._name = name
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0
        self._spawned = 0
        self._submitted = 0
        self._taken = 0
        self._watching: dict[int, asyncio.AbstractEventLoop] = {}
        self._mailboxes: dict[int, _LoopMailbox] = {}
        self._closed = False

    @property
    def workers(self) -> int:
        return self._workers

    def _mailbox(self, loop: asyncio.AbstractEventLoop) -> _LoopMailbox:
        box = self._mailboxes.get(id(loop))
        if box is None or box.loop is not loop:
            box = self._mailboxes[id(loop)] = _LoopMailbox(loop)
        return box

    def _spawn(self, n: int = 1) -> None:
        with self._lock:
            n = min(n, self.max_workers - self._workers)
            self._workers += max(n, 0)
            first = self._spawned
            self._spawned += max(n, 0)
        for i in range(n):
            threading.Thread(
                target=self._work, name=f"{self._name}-{first + i}", daemon=True
            ).start()

    def _watch(self, loop: asyncio.AbstractEventLoop, mark: int) -> None:
        """Runs on the loop every ``stall_s`` while jobs are queued; recruits when stuck."""
        with self._lock:
            taken, backlog = self._taken, self._submitted - self._taken
        if backlog <= 0:
            self._watching.pop(id(loop), None)
            return
        if taken == mark:  # nothing was picked up for a whole period: every worker is busy
            self._spawn(backlog)
        loop.call_later(self.stall_s, self._watch, loop, taken)

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            try:
                job = jobs.get(timeout=self.idle_exit_s)
            except queue.Empty:
                with self._lock:
                    if self._workers > 1:
                        self._workers -= 1
                        return
                continue
            if job is _STOP:
                with self._lock:
                    self._workers -= 1
                return
            with self._lock:
                self._taken += 1
            box, fut, ctx, fn, args, kwargs = job
            try:
                value = ctx.run(fn, *args, **kwargs)
                ok = True
            except BaseException as exc:  # delivered to the awaiting coroutine
                value, ok = exc, False
            box.post(fut, ok, value)
            del job, fut, value

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` in a worker thread and await its result."""
        if self._closed:
            raise RuntimeError("ThreadRunner is shut down")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._submitted += 1
            taken = self._taken
            start = self._workers == 0
        if start:
            self._spawn()
        self._jobs.put((self._mailbox(loop), fut, contextvars.copy_context(), fn, args, kwargs))
        if self._watching.get(id(loop)) is not loop:
            self._watching[id(loop)] = loop
            loop.call_later(self.stall_s, self._watch, loop, taken)
        return await fut

    def shutdown(self) -> None:
        """Stop the workers after the queued jobs (used by tests and at process exit)."""
        self._closed = True
        for _ in range(self._workers):
            self._jobs.put(_STOP)


_default: ThreadRunner | None = None
_default_lock = threading.Lock()


def default_runner() -> ThreadRunner:
    """The process-wide pool (one env server per process is the normal case)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                size = os.environ.get("OPENENV_TRAIN_SERVER_THREADS", "64")
                try:
                    workers = int(size)
                except ValueError:
                    raise ValueError(
                        f"OPENENV_TRAIN_SERVER_THREADS={size!r} must be an integer >= 1"
                    ) from None
                _default = ThreadRunner(max_workers=workers)
    return _default


async def run_sync(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run sync code in the shared pool; the event loop never executes it."""
    return await default_runner().run(fn, *args, **kwargs)
