"""OpenEnv 0.10's client API on ours: the one place OpenEnv's client spellings meet the native ones.

``EnvClient``, ``GenericEnvClient`` and ``MCPToolClient`` here are the native clients
(``openenv_train.client``) plus what OpenEnv's callers expect of them:

- OpenEnv's argument names: ``connect_timeout_s``, ``message_timeout_s``,
  ``max_message_size_mb``, ``websocket_ping_interval_s``, ``websocket_ping_timeout_s`` (both
  spellings of one setting together are a ``ValueError`` that names them);
- ``mode=`` on every client, else the ``OPENENV_CLIENT_MODE`` variable, else the class's
  ``default_mode`` (only ``MCPToolClient`` acts on it: it picks the tool-call transport);
- ``provider=`` that is not started yet: started by ``connect()``, stopped by ``close()``;
- ``with Env(base_url=...) as env:`` is a connected blocking client (natively: ``.sync()``);
- ``Env.from_docker_image(image)`` / ``Env.from_env(repo_id)``: a handle to ``await`` (a
  connected async client) or to ``.sync()`` (a blocking one), on ``openenv_train.runtime.connect``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Generator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from ..client import env_client as _base
from ..client import generic as _generic
from ..client import mcp_client as _mcp
from ..client.env_client import ServerProvider
from ..client.generic import GenericAction, GenericObservation
from ..client.mcp_client import ToolCallError
from ..client.sync import SyncEnvClient
from ..client.transport import to_ws_url
from ..core.auth import client_token
from ..core.models import ActT, ObsT, StateT
from ..runtime.connect import connect_to, connect_to_sync, container_provider, hub_provider

if TYPE_CHECKING:
    _Base = _base.EnvClient[Any, Any, Any]
else:
    _Base = object

CLIENT_MODES = ("simulation", "production")
MODE_ENV_VAR = "OPENENV_CLIENT_MODE"

#: OpenEnv's name -> (ours, how an OpenEnv value becomes ours)
OPENENV_ARGS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "connect_timeout_s": ("connect_timeout", lambda v: v),
    "message_timeout_s": ("timeout", lambda v: v),
    "max_message_size_mb": ("max_message_size", lambda v: None if v is None else int(v * 2**20)),
    "websocket_ping_interval_s": ("ping_interval", lambda v: v),
    "websocket_ping_timeout_s": ("ping_timeout", lambda v: v),
}
#: the native client's keyword arguments (``EnvClient.__init__``)
NATIVE_ARGS = frozenset(
    {
        "timeout",
        "connect_timeout",
        "max_message_size",
        "ping_interval",
        "ping_timeout",
        "token",
        "headers",
    }
)
_NOT_STARTED = "http://127.0.0.1:0"  # the URL of a provider connect() has yet to start

ClientT = TypeVar("ClientT", bound="_base.EnvClient[Any, Any, Any]")


def client_kwargs(given: Mapping[str, Any]) -> dict[str, Any]:
    """The native keyword arguments for ``given`` (OpenEnv's names and ours, mixed); unknown
    names raise ``TypeError``, both spellings of one setting ``ValueError``."""
    unknown = sorted(set(given) - set(OPENENV_ARGS) - NATIVE_ARGS)
    if unknown:
        raise TypeError(
            f"unexpected keyword argument(s) {unknown}; OpenEnv's names that are accepted: "
            f"{sorted(OPENENV_ARGS)}; ours: {sorted(NATIVE_ARGS)}"
        )
    out: dict[str, Any] = {}
    for name, value in given.items():
        if name not in OPENENV_ARGS:
            out[name] = value
            continue
        target, convert = OPENENV_ARGS[name]
        if target in given:
            raise ValueError(
                f"{name}={value!r} and {target}={given[target]!r} name the same setting; give one"
            )
        out[target] = convert(value)
    return out


def client_mode(mode: str | None, default: str) -> str:
    """``mode=`` (any case), else ``OPENENV_CLIENT_MODE``, else ``default``; anything else is a ``ValueError``."""
    source = "mode"
    if mode is None:
        mode, source = os.environ.get(MODE_ENV_VAR), MODE_ENV_VAR
    if mode is None:
        return default
    if not isinstance(mode, str) or mode.lower() not in CLIENT_MODES:
        raise ValueError(
            f"Invalid mode {mode!r} (from {source}): must be 'simulation' or 'production'; "
            f"set it with mode=... or the {MODE_ENV_VAR} environment variable"
        )
    return mode.lower()


class ClientBootstrap(Generic[ClientT]):
    """OpenEnv's ``from_docker_image``/``from_env`` handle: ``await handle`` -> a connected
    client; ``handle.sync()`` -> a connected blocking one. The server starts then and stops
    when the client closes; resolve a handle once."""

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
        return await connect_to(provider, self._cls)

    def __await__(self) -> Generator[Any, None, ClientT]:
        return self._resolve().__await__()

    def sync(self) -> SyncEnvClient[Any, Any, Any]:
        """The connected blocking client (for code that cannot ``await``, e.g. a TRL rollout loop)."""
        return connect_to_sync(self._provider(), self._cls)

    def __repr__(self) -> str:
        state = "resolved" if self._make_provider is None else "not started"
        return f"<ClientBootstrap {self._cls.__name__} ({state})>"


class OpenEnvClientMixin(_Base):
    """OpenEnv's spellings over a native client class (put it first in the bases)."""

    #: the ``mode`` used when neither ``mode=`` nor ``OPENENV_CLIENT_MODE`` says one
    default_mode: ClassVar[str] = "simulation"
    #: whether the native class takes ``mode=`` itself (``MCPToolClient``)
    _native_mode: ClassVar[bool] = False

    def __init__(
        self,
        base_url: str | None = None,
        *,
        mode: str | None = None,
        provider: ServerProvider | None = None,
        **kwargs: Any,
    ) -> None:
        """``base_url``, ``provider``, ``headers``, ``token`` and the timeouts in OpenEnv's
        names or ours; ``mode``: ``'simulation'`` or ``'production'`` (any case; default:
        ``OPENENV_CLIENT_MODE``, else the class's ``default_mode``)."""
        native = client_kwargs(kwargs)
        resolved = client_mode(mode, type(self).default_mode)
        start_later = provider if provider is not None and provider.base_url is None else None
        if start_later is not None:
            provider = None
            base_url = base_url or _NOT_STARTED  # set when connect() starts it
        if self._native_mode:
            native["mode"] = resolved
        super().__init__(base_url, provider=provider, **native)
        self.mode = resolved
        self._mode = resolved  # where OpenEnv's clients keep it (its tests read it)
        self._start_on_connect = start_later
        self._token_given = native.get("token") is not None

    async def _open(self) -> None:
        provider, self._start_on_connect = self._start_on_connect, None
        if provider is not None and self._final is None:
            self._provider = provider  # stopped by close()
            url = (await asyncio.to_thread(provider.start)).rstrip("/")
            self.base_url, self.ws_url = url, to_ws_url(url)
            if not self._token_given:  # a server this process started remembers its token
                self._token = client_token(url)
        await super()._open()

    def __enter__(self) -> SyncEnvClient[Any, Any, Any]:
        """``with Env(base_url=...) as env:`` (OpenEnv's blocking idiom): ``env`` is ``self.sync()``, connected."""
        sync = self.sync()
        self._sync_view = sync
        return sync.__enter__()

    def __exit__(self, *exc: object) -> None:
        sync = self.__dict__.pop("_sync_view", None) or self.sync()
        sync.__exit__(*exc)

    @classmethod
    def from_docker_image(
        cls: type[ClientT], image: str, provider: Any = None, **kwargs: Any
    ) -> ClientBootstrap[ClientT]:
        """OpenEnv's ``from_docker_image``: serve ``image`` in our hardened container
        (``kwargs`` go to ``openenv_train.runtime.ContainerProvider``: ``engine=``, ``env=``,
        ``relax=``...), or with ``provider`` (ours, or OpenEnv's ``start_container`` shape)."""
        return ClientBootstrap(cls, lambda: container_provider(image, provider, kwargs))

    @classmethod
    def from_env(
        cls: type[ClientT],
        repo_id: str,
        *,
        use_docker: bool = True,
        provider: Any = None,
        **provider_kwargs: Any,
    ) -> ClientBootstrap[ClientT]:
        """OpenEnv's ``from_env``: a hub id (``"org/echo-env"``) served from a local image or an
        installed env package when there is one, else fetched from the hub (an error naming
        the fix when the hub cannot be reached)."""
        return ClientBootstrap(
            cls, lambda: hub_provider(repo_id, use_docker, provider, provider_kwargs)
        )


class EnvClient(OpenEnvClientMixin, _base.EnvClient[ActT, ObsT, StateT]):
    """OpenEnv's ``EnvClient``: subclass it as OpenEnv's envs do (``_step_payload``,
    ``_parse_result``, ``_parse_state``)."""


class GenericEnvClient(OpenEnvClientMixin, _generic.GenericEnvClient):
    """OpenEnv's ``GenericEnvClient``: dict actions, dict observations, dict state."""


class MCPToolClient(OpenEnvClientMixin, _mcp.MCPToolClient):
    """OpenEnv's ``MCPToolClient`` (production mode by default, as in OpenEnv; simulation mode,
    which OpenEnv refuses, sends tool calls as steps)."""

    default_mode: ClassVar[str] = "production"
    _native_mode: ClassVar[bool] = True


MCPClientBase = MCPToolClient  # OpenEnv's base class of its MCP clients
convert_to_ws_url = to_ws_url  # OpenEnv's name

__all__ = [
    "CLIENT_MODES",
    "MODE_ENV_VAR",
    "OPENENV_ARGS",
    "ClientBootstrap",
    "EnvClient",
    "GenericAction",
    "GenericEnvClient",
    "GenericObservation",
    "MCPClientBase",
    "MCPToolClient",
    "OpenEnvClientMixin",
    "SyncEnvClient",
    "ToolCallError",
    "client_kwargs",
    "client_mode",
    "convert_to_ws_url",
]
