"""Runtimes that start env servers. The local subprocess provider is the embedded default."""

from .local import LocalProcessProvider, ServerGroup, start_local_servers
from .ray_fleet import RayServerGroup, start_ray_servers  # imports Ray only when used

__all__ = [
    "LocalProcessProvider",
    "RayServerGroup",
    "ServerGroup",
    "start_local_servers",
    "start_ray_servers",
]
