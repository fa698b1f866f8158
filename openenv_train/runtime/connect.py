"""A client whose server is started for it: ``connect_to(provider, BlackjackEnv)``.

The client never starts servers (it imports no runtime); this module starts one through any
provider (``LocalProcessProvider``, ``ContainerProvider``, ``DaytonaProvider``, an OpenEnv
container provider), connects a client of the class given, and hands the provider to it, so
``close()`` stops the server::

    env = await connect_to(LocalProcessProvider("blackjack_env.server.app:app"), BlackjackEnv)
    with connect_to_sync(provider, BlackjackEnv) as env:  # blocking code
        env.reset()

``connect_to_image(image, cls)`` serves an image in the hardened container first;
``connect_to_hub(repo_id, cls)`` serves a hub id, local first (``runtime.hub``).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from ..client.env_client import EnvClient, ServerProvider
from ..client.sync import SyncEnvClient, run_sync
from .container import ContainerProvider
from .hub import hub_image, provider_for_hub_id

ClientT = TypeVar("ClientT", bound=EnvClient[Any, Any, Any])


async def connect_to(
    provider: ServerProvider,
    client_cls: type[ClientT] = EnvClient,  # type: ignore[assignment]
    *,
    stop_on_close: bool = True,
    **client_kwargs: Any,
) -> ClientT:
    """Start ``provider`` (unless started), connect a ``client_cls``, and stop the server when
    the client closes (``stop_on_close``); a failed connect stops it at once."""
    base_url = provider.base_url or await asyncio.to_thread(provider.start)
    try:
        client = client_cls(base_url, provider=provider if stop_on_close else None, **client_kwargs)
        await client.connect()
    except BaseException:
        if stop_on_close:
            await asyncio.to_thread(provider.stop)
        raise
    return client


def connect_to_sync(
    provider: ServerProvider,
    client_cls: type[EnvClient[Any, Any, Any]] = EnvClient,
    **kwargs: Any,
) -> SyncEnvClient[Any, Any, Any]:
    """Blocking twin of :func:`connect_to`: ``with connect_to_sync(provider, Env) as env:``."""
    return SyncEnvClient(run_sync(connect_to(provider, client_cls, **kwargs)))


async def connect_to_image(
    image: str,
    client_cls: type[ClientT] = EnvClient,  # type: ignore[assignment]
    *,
    provider: Any = None,
    client_kwargs: dict[str, Any] | None = None,
    **provider_kwargs: Any,
) -> ClientT:
    """Serve ``image`` (in the hardened ``ContainerProvider``, ``provider_kwargs`` its arguments,
    unless ``provider`` is given) and connect a ``client_cls`` to it."""
    started = await asyncio.to_thread(container_provider, image, provider, provider_kwargs)
    return await connect_to(started, client_cls, **(client_kwargs or {}))


async def connect_to_hub(
    repo_id: str,
    client_cls: type[ClientT] = EnvClient,  # type: ignore[assignment]
    *,
    use_docker: bool = True,
    provider: Any = None,
    client_kwargs: dict[str, Any] | None = None,
    **provider_kwargs: Any,
) -> ClientT:
    """Serve the hub id ``repo_id`` (``"org/echo-env"``), local first (``runtime.hub``), and
    connect a ``client_cls`` to it."""
    started = await asyncio.to_thread(hub_provider, repo_id, use_docker, provider, provider_kwargs)
    return await connect_to(started, client_cls, **(client_kwargs or {}))


class _OpenEnvContainerProvider:
    """An OpenEnv container provider (``start_container``/``wait_for_ready``/``stop_container``)
    seen through our provider shape (``start``/``stop``/``base_url``)."""

    def __init__(
        self,
        provider: Any,
        image: str,
        kwargs: dict[str, Any],
        ready_timeout: float | None = None,
    ) -> None:
        self.provider, self.image, self.kwargs = provider, image, kwargs
        self.ready_timeout = ready_timeout
        self.base_url: str | None = None

    def start(self) -> str:
        url = self.provider.start_container(self.image, **self.kwargs)
        try:
            if self.ready_timeout is None:
                self.provider.wait_for_ready(url)
            else:
                self.provider.wait_for_ready(url, timeout_s=self.ready_timeout)
        except BaseException:
            self.provider.stop_container()
            raise
        self.base_url = url
        return url

    def stop(self) -> None:
        self.base_url = None
        self.provider.stop_container()


def container_provider(
    image: str, provider: Any, kwargs: dict[str, Any], ready_timeout: float | None = None
) -> ServerProvider:
    """The (not started) provider that serves ``image``: ours (hardened; ``kwargs`` its
    arguments) unless one is given. An OpenEnv container provider is adapted; ``ready_timeout``:
    seconds its ``wait_for_ready`` may take (its default when None)."""
    if provider is None:
        return ContainerProvider(image, **kwargs)
    if hasattr(provider, "start_container"):
        return _OpenEnvContainerProvider(provider, image, kwargs, ready_timeout)
    if kwargs:
        raise ValueError(
            f"provider=... takes no other arguments here (got {sorted(kwargs)}); "
            "configure the provider instead"
        )
    return provider  # type: ignore[no-any-return]


def hub_provider(
    repo_id: str, use_docker: bool, provider: Any, kwargs: dict[str, Any]
) -> ServerProvider:
    """The (not started) provider that serves ``repo_id`` (see ``runtime.hub``); an OpenEnv
    container provider is given the hub's image of it, as OpenEnv does."""
    if provider is not None and use_docker and hasattr(provider, "start_container"):
        kwargs = dict(kwargs)
        image = hub_image(repo_id, kwargs.pop("tag", "latest"))
        return _OpenEnvContainerProvider(provider, image, kwargs)
    if provider is not None:
        if kwargs:
            raise ValueError(
                f"provider=... takes no provider arguments here (got {sorted(kwargs)}); "
                "configure the provider instead"
            )
        return provider  # type: ignore[no-any-return]
    return provider_for_hub_id(repo_id, use_docker=use_docker, **kwargs)
