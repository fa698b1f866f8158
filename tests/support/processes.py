"""Child processes in tests: stopping one the way a user does (Ctrl-C, a bounded wait, then a
kill), and waiting for one to end."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil


def default_stop_signals() -> None:
    """``preexec_fn`` for a child that stands for a program started from a terminal: SIGINT,
    SIGTERM and SIGHUP at their defaults. A test run started in the background (``nohup``, or
    ``cmd &`` in a shell without job control) hands its children SIGINT and SIGHUP ignored, and
    our programs deliberately leave an ignored signal alone, so a Ctrl-C test would hang."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def interrupt(proc: subprocess.Popen, grace_s: float = 15) -> int | None:
    """SIGINT ``proc`` and wait ``grace_s`` for it; kill it if it is still there. Returns its
    exit code (the one after SIGINT, or the kill's)."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(5)


def exited(pid: int) -> bool:
    """Whether ``pid`` no longer runs: gone, or a zombie waiting for its reaper none of whose
    threads still runs. A SIGKILLed server's main thread can be a zombie while its other
    threads, which still hold its sockets, have yet to exit (a loaded machine runs them late)."""
    try:
        if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            return False
        return len(os.listdir(f"/proc/{pid}/task")) <= 1
    except (psutil.NoSuchProcess, FileNotFoundError):
        return True


def gone(pid: int | None, within: float = 10.0) -> bool:
    """True once ``pid`` no longer runs (see :func:`exited`; no pid, nothing ran); False if it
    still runs after ``within`` seconds."""
    deadline = time.monotonic() + within
    while pid is not None and time.monotonic() < deadline:
        if exited(pid):
            return True
        time.sleep(0.05)
    return pid is None


def is_zygote(p: psutil.Process) -> bool:
    """Whether ``p`` is a zygote local servers are forked from (``openenv_train.runtime.zygote``),
    or a server forked from one (it keeps the zygote's command line)."""
    try:
        return "openenv_train.runtime.zygote" in p.cmdline()
    except psutil.Error:
        return False


def excluding_zygotes(processes: list[psutil.Process]) -> list[psutil.Process]:
    """``processes`` without the zygotes themselves (they live as long as their owner, by
    design); what a zygote forked (a server, an agent, a CLI run) stays."""
    return [p for p in processes if is_forked_server(p) or not is_zygote(p)]


def is_forked_server(p: psutil.Process) -> bool:
    """Whether ``p`` was forked from a zygote (a server, an agent, a CLI run), not a zygote
    itself: a copy keeps its zygote's command line, whose ``--parent-pid`` names the zygote's
    owner, while a zygote's names its own parent."""
    try:
        cmdline = p.cmdline()
        if "openenv_train.runtime.zygote" not in cmdline:
            return False
        return int(cmdline[cmdline.index("--parent-pid") + 1]) != p.ppid()
    except (psutil.Error, ValueError, IndexError):
        return False
