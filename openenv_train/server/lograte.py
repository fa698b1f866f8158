"""Warnings a client can trigger at will, rate-limited so that a flood cannot flood the log.

An env that raises on every bad frame would otherwise write one WARNING per frame (tens of
thousands a second). Each call site logs at most one line per ``every_s``; the lines it held
back are counted and the count rides on its next line.
"""

from __future__ import annotations

import logging
import time
from typing import Any


class LimitedWarning:
    """``warn(...)`` logs like ``logger.warning`` at most once per ``every_s`` seconds."""

    __slots__ = ("logger", "every_s", "_next", "_held")

    def __init__(self, logger: logging.Logger, every_s: float = 10.0) -> None:
        self.logger, self.every_s = logger, every_s
        self._next = 0.0
        self._held = 0

    def warn(self, msg: str, *args: Any, **kwargs: Any) -> bool:
        """Log now, or count it for the next line; True if it was written."""
        now = time.monotonic()
        if now < self._next:
            self._held += 1
            return False
        self._next = now + self.every_s
        if self._held:
            msg += f" (and {self._held} more like it in the last {self.every_s:g}s, not shown)"
            self._held = 0
        self.logger.warning(msg, *args, **kwargs)
        return True
