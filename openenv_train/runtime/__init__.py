"""Runtimes that start env servers: local processes (the embedded default), hardened Docker or
Podman containers, Daytona cloud sandboxes, and warm pools. ``start_servers`` is the one entry
point; ``connect_to(provider, client_cls)`` starts one server and gives a client that stops it."""

from .connect import connect_to, connect_to_hub, connect_to_image, connect_to_sync
from .container import ContainerProvider
from .daytona import DaytonaProvider  # imports the Daytona SDK only when one is made
from .env_pool import EnvPool, Lease
from .local import LocalProcessProvider, ServerGroup, start_local_servers
from .ray_fleet import RayServerGroup, start_ray_servers  # imports Ray only when used
from .servers import start_container_servers, start_servers

__all__ = [
    "ContainerProvider",
    "DaytonaProvider",
    "EnvPool",
    "Lease",
    "LocalProcessProvider",
    "RayServerGroup",
    "ServerGroup",
    "connect_to",
    "connect_to_hub",
    "connect_to_image",
    "connect_to_sync",
    "start_container_servers",
    "start_local_servers",
    "start_ray_servers",
    "start_servers",
]
