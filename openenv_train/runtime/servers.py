"""``start_servers(app, n, runtime=...)``: the one entry point recipes and the CLI use.

Every runtime returns a ``ServerGroup``-like object: ``.base_urls``, an idempotent verified
``.stop()``, and context-manager use. ``ray`` is a fleet on a Ray cluster (``ray_fleet``),
``daytona`` one Daytona cloud sandbox per server (``daytona``).
"""

from __future__ import annotations

import uuid
from typing import Any

from .container import ContainerProvider
from .daytona import DaytonaProvider
from .local import ServerGroup, start_group, start_local_servers

RUNTIMES = ("local", "venv", "docker", "podman", "ray", "daytona")


def start_container_servers(app: str | None, n: int, *, image: str, **options: Any) -> ServerGroup:
    """Start ``n`` containers of ``image`` in parallel (one run id); stops all on any failure.

    With n > 1 each container requires a token of its own (unless ``token=`` or
    ``env={"OPENENV_TRAIN_TOKEN": ...}`` chose one for all), so containers sharing a network
    cannot open sessions on each other's servers; this process's clients use it by URL."""
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    run_id = options.pop("run_id", None) or uuid.uuid4().hex[:12]
    group = ServerGroup(
        ContainerProvider(image, app=app, run_id=run_id, **options) for _ in range(n)
    )
    if n > 1:
        for provider in group:
            provider.use_own_token()
    return start_group(group, parallel_spawn=True)


def start_daytona_servers(app: str | None, n: int, *, image: str, **options: Any) -> ServerGroup:
    """Start ``n`` Daytona sandboxes of ``image`` in parallel (``options`` go to each
    ``DaytonaProvider``); stops all on any failure."""
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    group = ServerGroup(DaytonaProvider(image, app=app, **options) for _ in range(n))
    return start_group(group, parallel_spawn=True)


def start_servers(app: str, n: int, runtime: str = "local", **options: Any) -> ServerGroup:
    """Start ``n`` servers of ``app`` on ``runtime`` (``local``, ``venv``, ``docker``, ``podman``,
    ``ray`` or ``daytona``).

    ``venv`` runs local processes under a venv built from the env package's own requirements
    (``requirements=`` replaces them, ``cache_dir=`` is where venvs are cached:
    ``runtime.env_venv``).

    Container and sandbox runtimes need ``image=`` (an image that contains ``app``; build one
    with ``openenv-train build``); other options go to the provider (``relax=``,
    ``mem_limit=``...; for ``daytona``: ``api_key=``, ``resources=``...).
    """
    if runtime == "local":
        return start_local_servers(app, n, **options)
    if runtime == "venv":  # a local process in a venv of the env's own requirements
        from .env_venv import start_venv_servers

        return start_venv_servers(app, n, **options)
    if runtime in ("docker", "podman", "daytona"):
        if not options.get("image"):
            raise ValueError(
                f"runtime={runtime!r} needs image=...: an image with {app!r} in it "
                "(build one: openenv-train build envs/<env> --tag NAME)"
            )
        if runtime == "daytona":
            return start_daytona_servers(app, n, **options)
        options.setdefault("engine", runtime)
        return start_container_servers(app, n, **options)
    if runtime == "ray":
        from .ray_fleet import start_ray_servers

        return start_ray_servers(app, n, **options)
    raise ValueError(f"runtime={runtime!r}: choose one of {RUNTIMES}")
