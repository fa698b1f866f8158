"""``python -m openenv_train.runtime.ray_reaper DRIVER_PID PID...``: stop a local Ray cluster's
processes when the driver that started it dies without shutting it down (SIGKILL, OOM kill).

Ray fate-shares its raylet, GCS and workers with the driver, but its per-node agent processes
(dashboard agent, runtime-env agent) can outlive a killed driver. The driver starts this watcher
with the pids of the cluster's processes; once the driver is gone (and after a grace period for
Ray's own cleanup) it SIGKILLs those still running. A pid is matched with its start time, so a
reused pid is never touched. Linux only (reads /proc); elsewhere it exits at once.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def start_time(pid: int) -> str | None:
    """Field 22 of ``/proc/PID/stat`` (start time in clock ticks), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc; empty where there is no /proc)."""
    children: dict[int, list[int]] = {}
    try:
        entries = [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    for p in entries:
        try:
            with open(f"/proc/{p}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(p)
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def main(argv: list[str]) -> int:
    if not sys.platform.startswith("linux") or len(argv) < 1:
        return 0
    driver, pids = int(argv[0]), [int(p) for p in argv[1:]]
    watched = {p: t for p in pids if (t := start_time(p)) is not None}
    driver_start = start_time(driver)
    while start_time(driver) == driver_start and driver_start is not None:
        time.sleep(0.5)
    time.sleep(5.0)  # Ray stops most of its processes itself when the driver dies
    for pid, t in watched.items():
        if start_time(pid) == t:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
