"""Loopback ports for tests: one free for a server to take, or one held so that nothing answers.

Standard library only: the main venv and .venv-vllm both import it.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A port the OS just handed out and released, for a server started next to take.

    Another process may take it first (rare on a test machine); where a test needs nothing to
    answer on the port, :func:`held_port` is the safe choice.
    """
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@contextmanager
def held_port(*, listen: bool = False, host: str = LOOPBACK) -> Iterator[int]:
    """A port this process holds for the block: connections to it are refused, or, with
    ``listen=True``, queue unanswered (a port "in use" for a server that wants it)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        if listen:
            sock.listen()
        yield sock.getsockname()[1]
