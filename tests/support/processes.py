"""Stopping a child process the way a user does: Ctrl-C, then a bounded wait, then a kill."""

from __future__ import annotations

import signal
import subprocess


def interrupt(proc: subprocess.Popen, grace_s: float = 15) -> int | None:
    """SIGINT ``proc`` and wait ``grace_s`` for it; kill it if it is still there. Returns its
    exit code (the one after SIGINT, or the kill's)."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(5)
