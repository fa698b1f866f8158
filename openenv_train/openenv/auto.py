"""OpenEnv's ``openenv.auto``: ``AutoEnv`` / ``AutoAction`` over openenv-train's env catalog.

``AutoEnv.from_env(name_or_hub_id)`` gives a client whose server answers, and
``AutoAction.from_env`` the env's action class; every spelling OpenEnv takes works
(``"echo"``, ``"echo-env"``, ``"echo_env"``, a hub id or URL whose package is installed). The
catalog itself (``EnvEntry``, ``get_entry``, ``env_names``) is native: ``openenv_train.catalog``.

Which server ``from_env`` gives, first that applies:

1. ``base_url`` when its ``GET /health`` answers; a loopback one that does not (and no
   ``skip_install``) is replaced by a server started here, as OpenEnv does; a remote one is a
   ``ConnectionError``.
2. ``docker_image``: started in our hardened container (or by the ``container_provider`` given).
3. With ``skip_install=True`` (no env package needed, a ``GenericEnvClient``): a hub id's
   running Space, else its image (local, else pulled); a plain name needs 1. or 2.
4. Otherwise the installed env package (the env catalog; a hub id names the package it was
   published from): a local image of a hub id, else the package as a local process.

Every wait is bounded: probes by their timeout (name lookup included), starts by
``wait_timeout``. With no hub in reach, :class:`HubUnreachableError` says how to make the env
local.
"""

from __future__ import annotations

import threading
from importlib import metadata
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..catalog import (
    EnvEntry,
    UnknownEnvError,
    entries,
    env_names,
    get_entry,
    hub_repo_id,
    installed_version,
    names_for_hub_id,
)
from ..client.env_client import EnvClient, ServerProvider
from ..client.generic import GenericAction
from ..core.loopback import is_loopback
from ..runtime.connect import container_provider as image_provider
from ..runtime.connect import hub_provider
from ..runtime.health import healthy
from ..runtime.hub import HubUnreachableError, space_subdomain
from ..runtime.local import LocalProcessProvider
from .client import GenericEnvClient
from .client import client_kwargs as native_client_kwargs

__all__ = [
    "AutoAction",
    "AutoEnv",
    "HubUnreachableError",
    "find_entry",
    "open_env",
    "reachable",
    "space_url",
]


def find_entry(name: str) -> EnvEntry:
    """The installed env ``name`` means, in any of OpenEnv's spellings: ``"echo"``, ``"echo_env"``,
    ``"echo-env"``, a family member (``"reasoning_gym/leg_counting"``), or a hub id or URL whose
    env package is installed (``"openenv/echo-env"``). A hub id that is not installed is an
    :class:`UnknownEnvError` naming the fix: nothing is installed from the hub."""
    try:
        return get_entry(name)
    except UnknownEnvError as err:
        first = err
    repo_id = hub_repo_id(name) if isinstance(name, str) else None
    candidates = [name.replace("-", "_")] if isinstance(name, str) else []
    candidates += names_for_hub_id(repo_id) if repo_id else []
    for candidate in dict.fromkeys(candidates):
        try:
            return get_entry(candidate)
        except UnknownEnvError:
            continue
    if repo_id is None:
        raise first
    names = " or ".join(repr(n) for n in names_for_hub_id(repo_id))
    raise UnknownEnvError(
        f"{name!r} is a hub id whose env package is not installed here (it would be in the env "
        f"catalog as {names}); openenv-train does not install code from the hub. Fix: pip install "
        "the env's package (`openenv-train envs` lists what is installed), or pass "
        "skip_install=True to drive its server with GenericEnvClient and GenericAction"
    ) from None


class AutoEnv:
    """Find an installed env by name: ``AutoEnv.from_name("blackjack")`` is ``BlackjackEnv``;
    ``AutoEnv.from_env("blackjack")`` (OpenEnv's call) is a ``BlackjackEnv`` whose server runs."""

    def __init__(self) -> None:
        raise TypeError(
            "AutoEnv is a factory class, not instantiated: call AutoEnv.from_env() (alias "
            "AutoEnv.from_hub()) for a client, or AutoEnv.from_name() for the client class"
        )

    @staticmethod
    def from_name(name: str) -> type:
        """The env's client class (``async with cls(base_url=...)``); the catalog's
        ``get_entry(name).client()``."""
        return get_entry(name).client()

    @staticmethod
    def app(name: str) -> str:
        """The env server's ASGI import path, e.g. ``"blackjack_env.server.app:app"``
        (``get_entry(name).app``)."""
        return get_entry(name).app

    @staticmethod
    def names() -> list[str]:
        return env_names()

    @staticmethod
    def from_env(
        name: str,
        base_url: str | None = None,
        docker_image: str | None = None,
        container_provider: Any = None,
        wait_timeout: float = 30.0,
        env_vars: dict[str, str] | None = None,
        trust_remote_code: bool = False,
        skip_install: bool = False,
        **kwargs: Any,
    ) -> EnvClient[Any, Any, Any]:
        """OpenEnv's ``AutoEnv.from_env``: a client for ``name`` (an env name or a hub id) whose
        server answers: ``base_url`` if it does, else one started here (``docker_image``, a local
        image of the hub id, or the installed env package), stopped when the client closes.
        ``skip_install=True`` gives a ``GenericEnvClient`` and needs no env package.
        ``trust_remote_code`` changes nothing: no code is ever installed from the hub. ``kwargs``
        go to the client. The session opens on first use (``async with``, ``.sync()``, ``reset()``).
        """
        del trust_remote_code  # accepted for OpenEnv's callers; nothing is installed
        return open_env(
            name,
            base_url=base_url,
            docker_image=docker_image,
            container_provider=container_provider,
            wait_timeout=wait_timeout,
            env_vars=env_vars,
            skip_install=skip_install,
            client_kwargs=kwargs,
        )

    from_hub = from_env  # OpenEnv's older name of the same call

    @staticmethod
    def get_env_class(name: str) -> type:
        """OpenEnv's name for :meth:`from_name`; takes every spelling :func:`find_entry` does."""
        return find_entry(name).client()

    @staticmethod
    def get_env_info(name: str) -> dict[str, Any]:
        """OpenEnv's ``get_env_info``: the env's package, version, classes and image name."""
        entry = find_entry(name)
        package = entry.app.split(".", 1)[0]
        client_module, _, client_class = entry.client_path.partition(":")
        return {
            "env_key": entry.name,
            "name": package,
            "package": _distribution_of(package),
            "version": installed_version(_distribution_of(package)),
            "description": entry.description,
            "env_class": client_class,
            "action_class": entry.action_path.partition(":")[2],
            "observation_class": entry.observation_path.partition(":")[2],
            "module": client_module,
            "default_image": f"openenv-train/{package}:latest",  # what `openenv-train build` tags
        }

    @staticmethod
    def list_environments() -> None:
        """Print the installed envs (``openenv-train envs`` shows them as a table)."""
        names = env_names()
        print("Available environments:")
        for name in names:
            print(f"  {name}")
        print(f"Total: {len(names)} environments")


class AutoAction:
    """``AutoAction.from_name("blackjack")`` is ``BlackjackAction`` (the env's step action model)."""

    def __init__(self) -> None:
        raise TypeError(
            "AutoAction is a factory class, not instantiated: call AutoAction.from_env() "
            "(alias AutoAction.from_hub()) for the action class"
        )

    @staticmethod
    def from_name(name: str) -> type:
        return get_entry(name).action()

    @staticmethod
    def from_env(name: str, skip_install: bool = False) -> type:
        """OpenEnv's ``AutoAction.from_env``: the action class of ``name`` (any spelling
        :func:`find_entry` takes, hub ids included); ``GenericAction`` with ``skip_install=True``."""
        if skip_install:
            return GenericAction
        return find_entry(name).action()

    @staticmethod
    def from_hub(env_name: str, skip_install: bool = False) -> type:
        """OpenEnv's older name of :meth:`from_env`."""
        return AutoAction.from_env(env_name, skip_install=skip_install)

    @staticmethod
    def get_action_info(name: str) -> dict[str, Any]:
        """OpenEnv's ``get_action_info``: where the env's action and observation classes live."""
        info = AutoEnv.get_env_info(name)
        keys = ("env_key", "package", "action_class", "observation_class", "module")
        return {"env_name": info["name"], **{k: info[k] for k in keys}}

    @staticmethod
    def list_actions() -> None:
        """Print each installed env's action class."""
        found = entries()  # entry points read once, not once per env as get_entry would
        print("Available action classes:")
        for name, entry in found.items():
            print(f"  {name}: {entry.action_path}")
        print(f"Total: {len(found)} action classes")


#: seconds a ``base_url`` (``SERVER_PROBE_S``) or a hub Space (``SPACE_PROBE_S``) may take to answer
SERVER_PROBE_S = 2.0
SPACE_PROBE_S = 5.0


def reachable(base_url: str, timeout: float = SERVER_PROBE_S, token: str | None = None) -> bool:
    """``GET /health`` answers 200 within ``timeout`` seconds (``token``: the server's bearer
    token). The probe runs in a daemon thread so that a name lookup that hangs (no DNS server)
    cannot hold the caller longer."""
    parts = urlsplit(base_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    url = urlunsplit(parts._replace(scheme=scheme))
    answer: list[bool] = []
    probe = threading.Thread(
        target=lambda: answer.append(healthy(url, timeout, token)), name="reachable", daemon=True
    )
    probe.start()
    probe.join(timeout + 1.0)
    return bool(answer and answer[0])


def space_url(repo_id: str) -> str:
    """Where the hub serves a running Space: ``org/echo-env`` -> ``https://org-echo-env.hf.space``."""
    return f"https://{space_subdomain(repo_id)}.hf.space"


def open_env(
    name: str,
    *,
    base_url: str | None = None,
    docker_image: str | None = None,
    container_provider: Any = None,
    wait_timeout: float = 30.0,
    env_vars: dict[str, str] | None = None,
    skip_install: bool = False,
    client_kwargs: dict[str, Any] | None = None,
) -> EnvClient[Any, Any, Any]:
    """The client ``AutoEnv.from_env`` returns (see the module's docstring for the order)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be an env name or a hub id like 'org/echo-env', got {name!r}")
    if not (isinstance(wait_timeout, (int, float)) and wait_timeout > 0):
        raise ValueError(f"wait_timeout must be a positive number of seconds, got {wait_timeout!r}")
    kwargs = native_client_kwargs(client_kwargs or {})  # OpenEnv's names read into ours
    entry = None if skip_install else find_entry(name)
    cls: type[EnvClient[Any, Any, Any]] = GenericEnvClient if entry is None else entry.client()
    if base_url is not None:
        if reachable(base_url, token=kwargs.get("token")):
            return cls(base_url, **kwargs)
        if skip_install or not is_loopback(urlsplit(base_url).hostname):
            raise ConnectionError(
                f"Server not available at {base_url}: GET /health did not answer 200 within "
                f"{SERVER_PROBE_S:g} s. Start the env server there, or leave out base_url= "
                "to have one started here"
            )
    repo_id = None if _catalog_name(name) else hub_repo_id(name)
    if entry is None and docker_image is None and repo_id is not None:
        url = space_url(repo_id)
        if reachable(url, SPACE_PROBE_S):
            return cls(url, **kwargs)
    provider = _provider(
        name, entry, repo_id, docker_image, container_provider, wait_timeout, env_vars
    )
    return _started(cls, provider, kwargs)


def _catalog_name(name: str) -> bool:
    """``name`` is an env catalog name (``echo``, ``echo-env``, ``reasoning_gym/leg_counting``),
    not a hub id."""
    for candidate in dict.fromkeys([name, name.replace("-", "_")]):
        try:
            get_entry(candidate)
            return True
        except UnknownEnvError:
            continue
    return False


def _provider(
    name: str,
    entry: EnvEntry | None,
    repo_id: str | None,
    docker_image: str | None,
    given: Any,
    wait_timeout: float,
    env_vars: dict[str, str] | None,
) -> ServerProvider:
    if given is None:  # ours: the hardened container or a local process
        kwargs: dict[str, Any] = {"startup_timeout": wait_timeout}
        kwargs.update({"env": dict(env_vars)} if env_vars else {})
    elif hasattr(given, "start_container"):  # OpenEnv's: start_container(image, env_vars=...)
        kwargs = {"env_vars": dict(env_vars or {})}
    else:  # ours, configured by the caller
        kwargs = {}
    if docker_image is not None:
        return image_provider(docker_image, given, kwargs, ready_timeout=wait_timeout)
    if repo_id is not None:  # a local image of it, else its installed package, else the hub's
        return hub_provider(repo_id, True, given, kwargs)
    if entry is None:
        raise ValueError(
            f"Cannot use skip_install=True for local environment {name!r} without base_url "
            "or docker_image: give base_url= (a running server) or docker_image= (an image to "
            "start), or drop skip_install=True to serve the installed env package"
        )
    if given is None:
        return LocalProcessProvider(entry.app, **kwargs)
    if hasattr(given, "start_container"):  # the image `openenv-train build` tags for the package
        image = f"openenv-train/{entry.app.split('.', 1)[0]}:latest"
        return image_provider(image, given, kwargs, ready_timeout=wait_timeout)
    return given  # type: ignore[no-any-return]


def _started(
    cls: type[EnvClient[Any, Any, Any]], provider: ServerProvider, kwargs: dict[str, Any]
) -> EnvClient[Any, Any, Any]:
    """Start ``provider`` (blocks until healthy, bounded by its startup timeout) and hand it to a
    client of ``cls``, which stops it on ``close()``."""
    url = provider.start()
    try:
        return cls(url, provider=provider, **kwargs)
    except BaseException:
        provider.stop()
        raise


def _distribution_of(module: str) -> str:
    """The installed distribution that provides top-level ``module`` (the module's name if none
    says so, e.g. a source checkout on ``sys.path``)."""
    return (metadata.packages_distributions().get(module) or [module])[0]
