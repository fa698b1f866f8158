"""Process checks shared by the forge tests (imported by test modules of this folder)."""

from __future__ import annotations

import psutil
from processes import exited


def alive(pids: set[int], grace: float = 15.0) -> list[int]:
    """The pids of ``pids`` still running after up to ``grace`` seconds (zombies count as gone).

    A process that is already exiting when the graph returns gets its few seconds (a loaded CI
    machine tears processes down slowly); a leaked one is still there when the grace ends.
    """
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    _, running = psutil.wait_procs(procs, timeout=grace)
    return [p.pid for p in running if not exited(p.pid)]
