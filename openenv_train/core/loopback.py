"""The one answer to "is this host this machine?": servers bind loopback by default, need a token
beyond it, and clients and quotas treat loopback peers as local."""

from __future__ import annotations

#: the names of this machine's loopback interface (``[::1]`` as it appears in a URL's netloc)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def is_loopback(host: str | None) -> bool:
    """True for ``localhost``, ``::1`` and every address of ``127.0.0.0/8``."""
    if not host:
        return False
    return host in LOOPBACK_HOSTS or host.startswith("127.")
