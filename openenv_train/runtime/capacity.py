"""How many sessions a server in a container can hold, from the limits on the way to it.

A client past a server's ``max_sessions`` must get the typed ``CAPACITY_REACHED`` refusal. In a
container the first limit met used to be another one, and the client got a dropped handshake
instead (issue 35): Docker publishes a port through ``docker-proxy``, which spends six file
descriptors per proxied connection (the two sockets and a splice pipe pair each way) under the
engine daemon's ``RLIMIT_NOFILE`` (20,000 here: about 3,300 connections, then the proxy stops
listening), and the container itself has its own descriptor and memory limits. ``ContainerProvider``
passes ``session_bound(...)`` to the server as ``OPENENV_TRAIN_MAX_SESSIONS`` and gives the
container a descriptor limit that holds it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: the server's own default (``Limits.max_sessions``)
DEFAULT_SESSIONS = 4096
#: descriptors Docker's userland proxy holds per proxied connection
PROXY_FDS_PER_SESSION = 6
#: descriptors a server process keeps for itself (listeners, logs, pipes, sandbox runs)
RESERVED_FDS = 256
#: memory a session may take in the server, and what the server takes before any session
SESSION_BYTES = 128 * 1024
BASE_BYTES = 128 * 2**20
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_bytes(size: str | int) -> int:
    """``"1g"``, ``"512m"``, ``"65536"`` (the engines' memory syntax) as bytes."""
    if isinstance(size, int):
        return size
    found = re.fullmatch(r"\s*(\d+)\s*([bkmgt]?)b?\s*", str(size).lower())
    if not found:
        raise ValueError(f"mem_limit: give bytes or a size such as '1g' or '512m', got {size!r}")
    return int(found.group(1)) * _UNITS[found.group(2)]


def daemon_nofile(name: str = "dockerd", proc: str = "/proc") -> int | None:
    """The soft ``RLIMIT_NOFILE`` of a local engine daemon (its port proxies inherit it), or
    None where no such process is visible (a remote engine, another pid namespace)."""
    try:
        entries = os.listdir(proc)
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            if Path(proc, entry, "comm").read_text().strip() != name:
                continue
            limits = Path(proc, entry, "limits").read_text()
        except OSError:
            continue
        for line in limits.splitlines():
            if line.startswith("Max open files"):
                soft = line.split()[3]
                return int(soft) if soft.isdigit() else None
    return None


def session_bound(
    requested: int = DEFAULT_SESSIONS,
    *,
    mem_limit_bytes: int | None = None,
    proxy_nofile: int | None = None,
) -> int:
    """The sessions a containerised server can hold: ``requested``, lowered to what the memory
    limit holds at ``SESSION_BYTES`` each and to what a port proxy's descriptor limit carries
    (at least 1)."""
    bound = requested
    if mem_limit_bytes:
        bound = min(bound, (mem_limit_bytes - BASE_BYTES) // SESSION_BYTES)
    if proxy_nofile:
        spare = max(RESERVED_FDS, proxy_nofile // 10)  # handshakes in flight, the proxy's own
        bound = min(bound, (proxy_nofile - spare) // PROXY_FDS_PER_SESSION)
    return max(1, bound)


#: the smallest descriptor limit a container gets (sandboxed runs, logs, pipes beside sessions)
MIN_CONTAINER_NOFILE = 16384


def container_nofile(sessions: int) -> int:
    """The descriptor limit a container gets for ``sessions`` (one socket each, plus the
    server's own), never below ``MIN_CONTAINER_NOFILE``."""
    return max(MIN_CONTAINER_NOFILE, sessions + RESERVED_FDS * 4)
