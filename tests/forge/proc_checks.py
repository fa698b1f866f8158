"""Process checks shared by the forge tests (imported by test modules of this folder)."""

from __future__ import annotations

import psutil


def alive(pids: set[int]) -> list[int]:
    """The pids of ``pids`` still running (zombies count as gone)."""
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out
