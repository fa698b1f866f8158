"""``AutoEnv.from_env(name)`` (OpenEnv's call): a name or hub id -> a client whose server answers.

Which server, first that applies:

1. ``base_url`` when its ``GET /health`` answers; a loopback one that does not (and no
   ``skip_install``) is replaced by a server started here, as OpenEnv does; a remote one is a
   ``ConnectionError``.
2. ``docker_image``: started in our hardened container (or by the ``container_provider`` given).
3. With ``skip_install=True`` (no env package needed, a ``GenericEnvClient``): a hub id's
   running Space, else its image (local, else pulled); a plain name needs 1. or 2.
4. Otherwise the installed env package (the env catalog; a hub id names the package it was
   published from): a local image of a hub id, else the package as a local process.

Every wait is bounded: probes by their timeout (name lookup included), starts by
``wait_timeout``. With no hub in reach the error says how to make the env local.
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..catalog import EnvEntry, UnknownEnvError, find_entry, get_entry, hub_repo_id
from ..client.base import EnvClient, ServerProvider
from ..client.generic import GenericEnvClient
from .connect import container_provider as image_provider
from .connect import hub_provider
from .health import healthy
from .hub import space_subdomain
from .local import LocalProcessProvider

#: seconds a ``base_url`` (``SERVER_PROBE_S``) or a hub Space (``SPACE_PROBE_S``) may take to answer
SERVER_PROBE_S = 2.0
SPACE_PROBE_S = 5.0
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


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
    kwargs = dict(client_kwargs or {})
    entry = None if skip_install else find_entry(name)
    cls: type[EnvClient[Any, Any, Any]] = GenericEnvClient if entry is None else entry.client()
    if base_url is not None:
        if reachable(base_url, token=kwargs.get("token")):
            return cls(base_url, **kwargs)
        if skip_install or urlsplit(base_url).hostname not in _LOOPBACK:
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
