"""A Hugging Face hub id (``"org/echo-env"``) -> a provider that serves that env, local first.

``runtime.connect.connect_to_hub`` (and OpenEnv's ``EnvClient.from_env(repo_id)``) lands here. In order:

1. ``use_docker`` and a local image of it: the hub's registry name
   (``registry.hf.space/org-echo-env:TAG``) or the one ``openenv-train build`` tags
   (``openenv-train/echo_env:latest``): served in our hardened container.
2. An installed env package of that name (the env catalog: ``echo-env`` -> ``echo_env`` ->
   ``echo``): served as a local process.
3. The hub: with ``use_docker``, the engine pulls the Space's image, then 1. Nothing else
   is fetched from the network (OpenEnv would clone the Space and run it with ``uv``).

When the hub cannot be reached, :class:`HubUnreachableError` says how to make the env local.
"""

from __future__ import annotations

import re
from typing import Any

from ..catalog import UnknownEnvError, get_entry, hub_repo_id, names_for_hub_id
from . import container_engine as ce
from .container import ContainerProvider
from .errors import HubUnreachableError as HubUnreachableError
from .health import Provider
from .local import LocalProcessProvider

catalog_names = names_for_hub_id  # the name this module gave it first


def space_subdomain(repo_id: str) -> str:
    """``"Org/echo_env"`` -> ``"org-echo-env"``: the Space's registry name, as the hub spells it."""
    return re.sub(r"[^a-z0-9]", "-", repo_id.lower())


def hub_image(repo_id: str, tag: str = "latest") -> str:
    """The image the hub publishes for a Space: ``registry.hf.space/org-echo-env:latest``."""
    return f"registry.hf.space/{space_subdomain(repo_id)}:{tag}"


def _local_image(engine: str, images: list[str]) -> str | None:
    try:
        client = ce.connect(engine, timeout=10)
    except Exception:
        return None  # no engine here: only the installed package can serve it
    for image in images:
        try:
            client.images.get(image)
            return image
        except Exception:
            continue
    return None


def _installed(repo_id: str) -> Any:
    for name in catalog_names(repo_id):
        try:
            return get_entry(name)
        except UnknownEnvError:
            continue
    return None


def provider_for_hub_id(
    repo_id: str,
    *,
    use_docker: bool = True,
    tag: str = "latest",
    engine: str = "docker",
    **kwargs: Any,
) -> Provider:
    """A (not started) provider serving ``repo_id``; ``kwargs`` go to that provider."""
    if not isinstance(repo_id, str) or hub_repo_id(repo_id) != repo_id:
        raise ValueError(f"repo_id must be a hub id like 'org/echo-env', got {repo_id!r}")
    entry = _installed(repo_id)
    image_on_hub = hub_image(repo_id, tag)
    if use_docker:
        images = [image_on_hub] + [f"openenv-train/{n}:latest" for n in catalog_names(repo_id)]
        image = _local_image(engine, images)
        if image is not None:
            return ContainerProvider(image, engine=engine, **kwargs)
    if entry is not None:
        return LocalProcessProvider(entry.app, **kwargs)
    if use_docker:
        try:
            ce.connect(engine, timeout=10).images.pull(image_on_hub)
        except Exception as err:
            raise HubUnreachableError(
                _fix(repo_id, f"pulling {image_on_hub} failed: {err}")
            ) from err
        return ContainerProvider(image_on_hub, engine=engine, **kwargs)
    raise HubUnreachableError(
        _fix(repo_id, "use_docker=False runs only an installed env package here")
    )


def _fix(repo_id: str, why: str) -> str:
    names = " or ".join(repr(n) for n in catalog_names(repo_id))
    return (
        f"cannot serve {repo_id!r}: it is not installed here and the hub could not provide it "
        f"({why}). Fix: make it local: install its openenv-train env package (registered in the "
        f"env catalog as {names}; `openenv-train envs` lists what is installed), or put its image "
        f"in the local engine as registry.hf.space/{space_subdomain(repo_id)}:<tag> (docker load) "
        "or openenv-train/<package>:latest (`openenv-train build <env dir>`), or start its "
        "server yourself and pass base_url=... to the client"
    )
