"""A wall-clock deadline that does not count time the server itself was not running.

A run's wall-clock limit guards against code that waits forever. But the clock also moves while
the whole container is frozen (``docker pause``, a cgroup freeze, a host that stops scheduling
the server): the submission was frozen too, yet at the thaw its deadline had passed and it was
scored as a timeout, an infrastructure failure scored as reward 0. The watcher polls in short
ticks, so a gap between two ticks far longer than the wait it asked for means the watcher was
not running; that gap is added back to the deadline, up to a bound per run, so a submission that
starves the server on purpose gains at most that bound."""

from __future__ import annotations

import time

#: the longest the watcher waits in one go (a longer wait could hide a freeze inside it)
TICK_S = 0.25
#: a gap this much longer than the asked-for wait counts as a freeze, not scheduling noise
STALL_S = 1.0


class RunDeadline:
    """``seconds`` of running time from now; ``forgive_s`` bounds the frozen time given back."""

    def __init__(self, seconds: float, forgive_s: float) -> None:
        now = time.monotonic()
        self._end, self._last, self._asked = now + seconds, now, 0.0
        self._forgive = forgive_s
        self.forgiven = 0.0  # frozen seconds given back so far

    def next_wait(self, most: float = TICK_S) -> float:
        """How long the next wait may last: at most ``most``, 0 once the deadline has passed."""
        now = time.monotonic()
        gap = now - self._last - self._asked
        if gap > STALL_S and self.forgiven < self._forgive:
            back = min(gap, self._forgive - self.forgiven)
            self._end += back
            self.forgiven += back
        self._last = now
        self._asked = max(0.0, min(self._end - now, most))
        return self._asked

    def left(self) -> float:
        """Seconds left, without counting a freeze (for a last bounded wait)."""
        return max(0.0, self._end - time.monotonic())
