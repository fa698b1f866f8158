"""Runtimes that start env servers. The local subprocess provider is the embedded default."""

from .local import LocalProcessProvider, ServerGroup, start_local_servers

__all__ = ["LocalProcessProvider", "ServerGroup", "start_local_servers"]
