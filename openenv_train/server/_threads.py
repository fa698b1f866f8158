"""A lean worker pool that runs sync env code off the event loop.

Why not ``loop.run_in_executor``: every call there builds a ``concurrent.futures.Future``, wraps it
in an asyncio future and wakes the loop through its self-pipe once per result. Here a worker hands
results straight to asyncio futures and wakes the loop once per *batch* of results, which keeps
the thread hop cheap when many sessions step at once. Sync env code still never runs on the loop.

The pool holds at most ``OPENENV_TRAIN_SERVER_THREADS`` threads (default 64); that many slow
sync calls can run at once, further calls queue.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_STOP = object()


class _LoopState:
    """Per event loop: jobs waiting for the next flush, and results waiting for the loop."""

    __slots__ = ("loop", "pending", "flush_scheduled", "results", "lock", "scheduled", "watching")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending: list[Any] = []
        self.flush_scheduled = False
        self.results: deque[tuple[asyncio.Future[Any], bool, Any]] = deque()
        self.lock = threading.Lock()
        self.scheduled = False
        self.watching = False

    def post(self, items: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
        """From a worker: hand results over, waking the loop once per batch."""
        with self.lock:
            self.results.extend(items)
            if self.scheduled:
                return
            self.scheduled = True
        try:
            self.loop.call_soon_threadsafe(self.drain)
        except RuntimeError:  # loop closed: nobody is waiting any more
            pass

    def drain(self) -> None:
        with self.lock:
            items, self.results = self.results, deque()
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

    Jobs submitted during one event-loop iteration are handed over together (one wake-up for the
    batch) and their results come back together, so the GIL changes hands about once per batch
    rather than twice per call. Few threads serve fast envs best, but a slow env must never hold
    up another session's call: a loop-side watchdog adds workers whenever jobs wait while no
    worker has taken a job for ``stall_s`` (all of them are busy with slow calls; the period is
    longer than the interpreter's 5 ms GIL switch interval so a worker merely waiting for the
    GIL does not count). Workers idle for ``idle_exit_s`` exit, down to one.
    """

    def __init__(
        self,
        max_workers: int = 64,
        name: str = "openenv-env",
        stall_s: float = 0.02,
        idle_exit_s: float = 10.0,
        post_after_s: float = 0.001,
    ) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.max_workers = max_workers
        self.stall_s = stall_s
        self.idle_exit_s = idle_exit_s
        self.post_after_s = post_after_s
        self._name = name
        self._jobs: deque[Any] = deque()
        self._wake: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0
        self._idle = 0
        self._spawned = 0
        self._taken = 0
        self._loops: dict[int, _LoopState] = {}
        self._closed = False
        #: thread starts refused (e.g. the pids limit): the jobs wait for the next try
        self.start_failures = 0
        self._taken_at = self._queued_at = time.monotonic()

    @property
    def workers(self) -> int:
        return self._workers

    def _state(self, loop: asyncio.AbstractEventLoop) -> _LoopState:
        st = self._loops.get(id(loop))
        if st is None or st.loop is not loop:
            st = self._loops[id(loop)] = _LoopState(loop)
        return st

    def _recruit(self, n: int) -> None:
        """Wake idle workers or start new ones so ``n`` more can take jobs."""
        with self._lock:
            wake = min(n, self._idle)
            new = max(0, min(n - wake, self.max_workers - self._workers))
            self._workers += new
            first = self._spawned
            self._spawned += new
        for _ in range(wake):
            self._wake.put(None)
        for i in range(new):
            try:
                threading.Thread(
                    target=self._work, name=f"{self._name}-{first + i}", daemon=True
                ).start()
            except RuntimeError:  # "can't start new thread": count only the ones running
                with self._lock:
                    self._workers -= new - i
                    self.start_failures += 1
                return

    def _flush(self, st: _LoopState) -> None:
        jobs, st.pending = st.pending, []
        st.flush_scheduled = False
        if not self._jobs:
            self._queued_at = time.monotonic()
        self._jobs.extend(jobs)
        if self._workers == 0:
            self._recruit(1)
        else:
            self._wake.put(None)  # one token per batch; a busy worker drains new jobs anyway
        if not st.watching:
            st.watching = True
            st.loop.call_later(self.stall_s, self._watch, st, self._taken)

    def _watch(self, st: _LoopState, mark: int) -> None:
        """On the loop every ``stall_s`` while jobs wait; recruits when no job was taken. It
        always plans its next turn first: a failure here must not leave queued jobs unwatched."""
        backlog = len(self._jobs)
        taken = self._taken
        if backlog == 0:
            st.watching = False
            return
        st.loop.call_later(self.stall_s, self._watch, st, taken)
        if taken == mark:  # nothing was picked up for a whole period: every worker is busy
            self._recruit(min(backlog, max(self._workers, 1)))  # at most double per period

    def stalled_s(self) -> float:
        """Seconds jobs have waited while no worker took one (0.0 when none waits): a pool that
        cannot start threads, or whose every worker is stuck, grows this without bound."""
        if not self._jobs:
            return 0.0
        return time.monotonic() - max(self._taken_at, self._queued_at)

    def _work(self) -> None:
        while True:
            self._drain()
            with self._lock:
                self._idle += 1
            try:
                token = self._wake.get(timeout=self.idle_exit_s)
            except queue.Empty:
                with self._lock:
                    self._idle -= 1
                    if self._workers > 1 and not self._jobs:
                        self._workers -= 1
                        return
                continue
            with self._lock:
                self._idle -= 1
            if token is _STOP:
                with self._lock:
                    self._workers -= 1
                return

    def _drain(self) -> None:
        """Run queued jobs until none is left; post results in batches."""
        jobs = self._jobs
        done: dict[_LoopState, list[tuple[Any, bool, Any]]] = {}
        since = 0.0
        while True:
            try:
                st, fut, ctx, fn, args, kwargs = jobs.popleft()
            except IndexError:
                break
            with self._lock:
                self._taken += 1
            self._taken_at = time.monotonic()
            try:
                value = ctx.run(fn, *args, **kwargs)
                ok = True
            except Exception as exc:  # delivered to the awaiting coroutine
                value, ok = exc, False
            except BaseException as exc:  # SystemExit & co. must not reach the event loop
                value, ok = RuntimeError(f"env code raised {type(exc).__name__}: {exc}"), False
            if not done:
                since = time.perf_counter()
            done.setdefault(st, []).append((fut, ok, value))
            if time.perf_counter() - since > self.post_after_s:
                for box, items in done.items():  # don't hold finished results behind slow ones
                    box.post(items)
                done = {}
            del fut, value
        for box, items in done.items():
            box.post(items)

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` in a worker thread and await its result."""
        if self._closed:
            raise RuntimeError("ThreadRunner is shut down")
        loop = asyncio.get_running_loop()
        st = self._state(loop)
        fut: asyncio.Future[T] = loop.create_future()
        st.pending.append((st, fut, contextvars.copy_context(), fn, args, kwargs))
        if not st.flush_scheduled:
            st.flush_scheduled = True
            loop.call_soon(self._flush, st)
        return await fut

    def shutdown(self) -> None:
        """Stop the workers after the queued jobs (used by tests and at process exit)."""
        self._closed = True
        for _ in range(self._workers):
            self._wake.put(_STOP)


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


def run_coro_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, even when this thread runs an event loop
    (then in a short-lived thread with its own loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed back to the caller below
            box["error"] = exc

    thread = threading.Thread(target=target, name="openenv-train-sync-call", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
