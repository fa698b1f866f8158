"""Free ports, for what must name its port before it listens (a banner, a child's command line)."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on at ``host`` right now (IPv4 or IPv6). Another process may still
    take it before the caller binds: pass a bound socket instead where the listener allows it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
