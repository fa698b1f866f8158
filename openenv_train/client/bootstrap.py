"""``from_docker_image`` / ``from_env``: a client whose server is started for it.

OpenEnv returns a handle that is resolved later: ``await`` it for a connected async client, or
call ``.sync()`` for a connected blocking one; the server starts then, and stops when the client
closes. :class:`ClientBootstrap` is that handle.

The client never imports a runtime: the providers come from the ``openenv_train.providers``
entry points (``container``: the hardened container provider; ``hub``: the hub-id resolver),
so the light client stays light and another package can supply its own.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import re
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from .base import EnvClient, ServerProvider
    from .sync import SyncEnvClient

ClientT = TypeVar("ClientT", bound="EnvClient[Any, Any, Any]")
PROVIDER_GROUP = "openenv_train.providers"


class ClientBootstrap(Generic[ClientT]):
    """A client not started yet: ``await handle`` -> connected client; ``handle.sync()`` -> blocking one.

    Resolve it once; the provider it starts is stopped by the client's ``close()``.
    """

    def __init__(self, cls: type[ClientT], make_provider: Callable[[], ServerProvider]) -> None:
        self._cls = cls
        self._make_provider: Callable[[], ServerProvider] | None = make_provider

    def _provider(self) -> ServerProvider:
        make, self._make_provider = self._make_provider, None
        if make is None:
            raise RuntimeError(
                f"this {self._cls.__name__} handle was already resolved; call "
                "from_docker_image()/from_env() again for another server"
            )
        return make()

    async def _resolve(self) -> ClientT:
        provider = await asyncio.to_thread(self._provider)
        return await self._cls.from_provider(provider)

    def __await__(self) -> Generator[Any, None, ClientT]:
        return self._resolve().__await__()

    def sync(self) -> SyncEnvClient:
        """The connected blocking client (for code that cannot ``await``, e.g. a TRL rollout loop)."""
        return self._cls.from_provider_sync(self._provider())

    def __repr__(self) -> str:
        state = "resolved" if self._make_provider is None else "not started"
        return f"<ClientBootstrap {self._cls.__name__} ({state})>"


def load_provider(name: str) -> Callable[..., Any]:
    """The ``openenv_train.providers`` entry point ``name`` (``container`` or ``hub``)."""
    for ep in importlib.metadata.entry_points(group=PROVIDER_GROUP):
        if ep.name == name:
            return ep.load()
    raise RuntimeError(
        f"no {name!r} provider is installed (entry point group {PROVIDER_GROUP!r}); "
        "reinstall openenv-train (pip install 'openenv-train[docker]')"
    )


def space_subdomain(repo_id: str) -> str:
    """``"Org/echo_env"`` -> ``"org-echo-env"``: the Space's registry name, as the hub spells it."""
    return re.sub(r"[^a-z0-9]", "-", repo_id.lower())


def hub_image(repo_id: str, tag: str = "latest") -> str:
    """The image the hub publishes for a Space: ``registry.hf.space/org-echo-env:latest``."""
    return f"registry.hf.space/{space_subdomain(repo_id)}:{tag}"


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
    """The provider ``from_docker_image`` starts: ours (hardened) unless one is given.
    ``ready_timeout``: seconds an OpenEnv provider's ``wait_for_ready`` may take (its default
    when None)."""
    if provider is None:
        return load_provider("container")(image, **kwargs)  # type: ignore[no-any-return]
    if hasattr(provider, "start_container"):
        return _OpenEnvContainerProvider(provider, image, kwargs, ready_timeout)  # type: ignore[return-value]
    if kwargs:
        raise ValueError(
            f"from_docker_image(provider=...) takes no other arguments (got {sorted(kwargs)}); "
            "configure the provider instead"
        )
    return provider  # type: ignore[no-any-return]


def hub_provider(
    repo_id: str, use_docker: bool, provider: Any, kwargs: dict[str, Any]
) -> ServerProvider:
    """The provider ``from_env`` starts for ``repo_id`` (see ``openenv_train.runtime.hub``); an
    OpenEnv container provider is given the hub's image of it, as OpenEnv does."""
    if provider is not None and use_docker and hasattr(provider, "start_container"):
        kwargs = dict(kwargs)
        image = hub_image(repo_id, kwargs.pop("tag", "latest"))
        return _OpenEnvContainerProvider(provider, image, kwargs)  # type: ignore[return-value]
    if provider is not None:
        if kwargs:
            raise ValueError("from_env(provider=...) takes no provider arguments; configure it")
        return provider  # type: ignore[no-any-return]
    return load_provider("hub")(repo_id, use_docker=use_docker, **kwargs)  # type: ignore[no-any-return]
