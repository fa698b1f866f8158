"""Sandbox slots shared fairly between sessions: round-robin across sessions, FIFO within one.

A plain semaphore hands a freed slot to whichever thread gets there first, so a session with many
submissions queued (or one that resubmits at once) can keep the slots while another session
waits. Here every waiting submission queues under its session's key and a freed slot goes to the
next session in turn, never to a newcomer while anyone waits. Bound: a submission that starts
waiting behind the in-flight runs is granted a slot after at most one grant per other session
waiting at that moment, however many submissions those sessions queue.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable, Iterator
from contextlib import contextmanager


class FairSlots:
    """``capacity`` slots; ``with slots.hold(session_key):`` runs with one of them."""

    def __init__(self, capacity: int) -> None:
        if not (isinstance(capacity, int) and capacity >= 1):
            raise ValueError(f"capacity must be an int >= 1, got {capacity!r}")
        self.capacity = capacity
        self._free = capacity
        self._lock = threading.Lock()
        self._queues: dict[Hashable, deque[threading.Event]] = {}
        self._turns: deque[Hashable] = deque()  # sessions with waiters, in serving order

    @contextmanager
    def hold(self, key: Hashable) -> Iterator[None]:
        self.acquire(key)
        try:
            yield
        finally:
            self.release()

    def acquire(self, key: Hashable) -> None:
        with self._lock:
            if self._free and not self._turns:
                self._free -= 1
                return
            granted = threading.Event()
            if key not in self._queues:
                self._queues[key] = deque()
                self._turns.append(key)
            self._queues[key].append(granted)
        granted.wait()  # release() hands this slot over directly: no one can take it meanwhile

    def release(self) -> None:
        with self._lock:
            if not self._turns:
                self._free += 1
                return
            key = self._turns.popleft()
            queue = self._queues[key]
            granted = queue.popleft()
            if queue:
                self._turns.append(key)  # its next submission waits for everyone else's turn
            else:
                del self._queues[key]
        granted.set()

    def waiting(self) -> int:
        """Submissions waiting for a slot now (for ``/health`` and tests)."""
        with self._lock:
            return sum(len(q) for q in self._queues.values())
