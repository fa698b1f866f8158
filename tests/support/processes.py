"""Waiting for a test's child process to end."""

from __future__ import annotations

import time

import psutil


def gone(pid: int | None, within: float = 10.0) -> bool:
    """True once ``pid`` no longer runs (a zombie waiting for a reaper counts as gone; no pid,
    nothing ran); False if it still runs after ``within`` seconds."""
    deadline = time.monotonic() + within
    while pid is not None and time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return pid is None
