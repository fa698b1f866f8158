"""Runtimes that start env servers: local processes (the embedded default), hardened Docker or
Podman containers, Daytona cloud sandboxes, and warm pools. ``start_servers`` is the one entry
point; ``connect_to(provider, client_cls)`` starts one server and gives a client that stops it.

The names load lazily: every env server is started as ``python -m
openenv_train.runtime.launch``, which must not pay for the clients, containers and pools here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

_EXPORTS: dict[str, tuple[str, ...]] = {
    "connect": ("connect_to", "connect_to_hub", "connect_to_image", "connect_to_sync"),
    "container": ("ContainerProvider",),
    "daytona": ("DaytonaProvider",),  # imports the Daytona SDK only when one is made
    "env_pool": ("EnvPool", "Lease"),
    "local": ("LocalProcessProvider", "ServerGroup", "start_local_servers"),
    "ray_fleet": ("RayServerGroup", "start_ray_servers"),  # imports Ray only when used
    "servers": ("start_container_servers", "start_servers"),
}
__all__ = sorted(name for names in _EXPORTS.values() for name in names)
__getattr__, __dir__, _HOME = lazy_names(__name__, _EXPORTS)

if TYPE_CHECKING:  # what editors and type checkers see
    from .connect import connect_to, connect_to_hub, connect_to_image, connect_to_sync  # noqa: F401
    from .container import ContainerProvider  # noqa: F401
    from .daytona import DaytonaProvider  # noqa: F401
    from .env_pool import EnvPool, Lease  # noqa: F401
    from .local import LocalProcessProvider, ServerGroup, start_local_servers  # noqa: F401
    from .ray_fleet import RayServerGroup, start_ray_servers  # noqa: F401
    from .servers import start_container_servers, start_servers  # noqa: F401
