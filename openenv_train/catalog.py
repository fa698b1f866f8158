"""The env catalog: installed env packages register under the ``openenv_train.envs`` entry points.

An env package names itself in its ``pyproject.toml``::

    [project.entry-points."openenv_train.envs"]
    blackjack = "blackjack_env:CATALOG_ENTRY"

where ``CATALOG_ENTRY`` is an :class:`EnvEntry` (import paths as strings, so listing the catalog
imports only the packages asked about). A package that serves a whole collection (every
reasoning-gym dataset, every textarena game) registers one :class:`EnvFamily` instead::

    [project.entry-points."openenv_train.env_families"]
    reasoning_gym = "reasoning_gym_env.catalog:FAMILY"

and each of its members is an env named ``<prefix>/<member>`` (``reasoning_gym/leg_counting``). ``AutoEnv.from_name("blackjack")`` is then the client
class, ``AutoEnv.app("blackjack")`` the server's ASGI import path and
``AutoAction.from_name("blackjack")`` the action model; an unknown name raises
:class:`UnknownEnvError` listing the installed ones. OpenEnv's calls work too:
``AutoEnv.from_env(name_or_hub_id)`` gives a client whose server is up (see
``openenv_train.runtime.auto``) and ``AutoAction.from_env`` the action class; a hub id
(``"org/echo-env"``) names the installed env package it was published from. No server, client or
torch is imported here until one of those is called.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client.base import EnvClient

ENTRY_POINT_GROUP = "openenv_train.envs"
FAMILY_ENTRY_POINT_GROUP = "openenv_train.env_families"
DISTRIBUTION = "openenv-train"
ENVS_EXTRA = "envs"  # pip install 'openenv-train[envs]': the example env packages


class UnknownEnvError(LookupError, ValueError):
    """No installed env answers to that name; the message lists the ones that do (or, for a hub
    id, how to make it local). A ``ValueError`` too: what OpenEnv's ``AutoEnv`` raises."""


class BrokenEnvEntryError(RuntimeError):
    """An installed env registered an entry point that cannot be loaded or is not an EnvEntry."""


@dataclass(frozen=True)
class EnvEntry:
    """One env in the catalog. Every ``*_path`` is ``"module:attribute"``.

    ``description`` is one line for ``openenv-train envs``; ``app`` is what ``uvicorn``,
    ``openenv-train serve`` and ``start_local_servers`` take.
    """

    name: str
    description: str
    app: str
    client_path: str
    action_path: str
    observation_path: str
    state_path: str = "openenv_train.core.models:State"
    #: the env's ``TextEnvSpec`` class (``module:Class``) for token-level policies: env mixtures
    #: and ``openenv-train eval`` find it by the env's name; None where the env has none
    text_spec_path: str | None = None

    def client(self) -> type:
        return _load(self.client_path, f"{self.name}: client_path")

    def action(self) -> type:
        return _load(self.action_path, f"{self.name}: action_path")

    def observation(self) -> type:
        return _load(self.observation_path, f"{self.name}: observation_path")

    def state(self) -> type:
        return _load(self.state_path, f"{self.name}: state_path")

    def text_spec(self) -> type | None:
        """The env's ``TextEnvSpec`` class, or None when the entry names none."""
        if self.text_spec_path is None:
            return None
        return _load(self.text_spec_path, f"{self.name}: text_spec_path")


@dataclass(frozen=True)
class EnvFamily:
    """Many envs from one package, named ``<prefix>/<member>``.

    ``members_path`` names a zero-argument callable returning the member names; ``entry_path``
    names a callable ``(member) -> EnvEntry`` (``UnknownEnvError`` for a name it does not serve).
    Both are loaded only when the catalog is listed or one of the members is asked for.
    """

    prefix: str
    description: str
    members_path: str
    entry_path: str

    def members(self) -> list[str]:
        return sorted(_load(self.members_path, f"{self.prefix}: members_path")())

    def entry(self, member: str) -> EnvEntry:
        entry = _load(self.entry_path, f"{self.prefix}: entry_path")(member)
        if not isinstance(entry, EnvEntry):
            raise BrokenEnvEntryError(
                f"env family {self.prefix!r}: {self.entry_path!r} gave a {type(entry).__name__}, "
                "not an openenv_train.catalog.EnvEntry"
            )
        return entry


def _load(path: str, what: str) -> Any:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise BrokenEnvEntryError(f"{what}: {path!r} is not 'module:attribute'")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise BrokenEnvEntryError(
            f"{what}: cannot load {path!r} ({type(err).__name__}: {err}); reinstall the env package"
        ) from err


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)  # first wins, as importlib orders distributions
    return found


def _families() -> dict[str, EnvFamily]:
    found: dict[str, EnvFamily] = {}
    for ep in importlib.metadata.entry_points(group=FAMILY_ENTRY_POINT_GROUP):
        if ep.name in found:
            continue
        try:
            family = ep.load()
        except Exception as err:
            raise BrokenEnvEntryError(
                f"env family {ep.name!r}: entry point {ep.value!r} failed to load "
                f"({type(err).__name__}: {err})"
            ) from err
        if not isinstance(family, EnvFamily):
            raise BrokenEnvEntryError(
                f"env family {ep.name!r}: entry point {ep.value!r} gives a "
                f"{type(family).__name__}, not an openenv_train.catalog.EnvFamily"
            )
        found[family.prefix] = family
    return found


def family_names() -> list[str]:
    """Prefixes of the installed env families (``reasoning_gym``, ``textarena``, ...), sorted."""
    return sorted(_families())


def env_names(family: str | None = None) -> list[str]:
    """Names of the installed envs, sorted: single envs, then ``<prefix>/<member>`` of every
    family (only that family's with ``family``)."""
    families = _families()
    if family is not None:
        if family not in families:
            known = ", ".join(sorted(families)) or "none"
            raise UnknownEnvError(f"no env family {family!r} is installed; installed: {known}")
        return [f"{family}/{m}" for m in families[family].members()]
    names = sorted(_entry_points())
    for prefix in sorted(families):
        names += [f"{prefix}/{m}" for m in families[prefix].members()]
    return names


def missing_env_packages() -> list[str]:
    """The env packages of the ``envs`` extra (the one list of them, in pyproject.toml) that are
    not installed, sorted; empty when openenv-train itself is not installed (a bare checkout)."""
    try:
        requires = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    in_extra = re.compile(rf"extra\s*==\s*[\"']{ENVS_EXTRA}[\"']")
    names = sorted(
        re.split(r"[\s;\[<>=!~]", req, maxsplit=1)[0] for req in requires if in_extra.search(req)
    )
    return [name for name in names if not _installed(name)]


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def installed_version(*distributions: str) -> str:
    """The version of the first of ``distributions`` that is installed (default: openenv-train
    itself), else ``"0.0.0"``: what a bug report or an env listing shows, read from the installed
    metadata rather than from source."""
    from .core.evals.results import installed_versions

    found = installed_versions(*(distributions or (DISTRIBUTION,)))
    return next(iter(found.values()), "0.0.0")


def _distribution_of(module: str) -> str:
    """The installed distribution that provides top-level ``module`` (the module's name if none
    says so, e.g. a source checkout on ``sys.path``)."""
    return (metadata.packages_distributions().get(module) or [module])[0]


def reset_discovery() -> None:
    """Forget the import system's view of installed packages, so an env package installed since
    this process started (``pip install`` from a notebook) is found by the next lookup."""
    importlib.invalidate_caches()


def get_entry(name: str) -> EnvEntry:
    """The :class:`EnvEntry` registered as ``name`` (``"blackjack"``; ``"blackjack_env"`` too;
    ``"reasoning_gym/leg_counting"`` for a member of a family)."""
    if not isinstance(name, str) or not name:
        raise UnknownEnvError(f"env name must be a non-empty string, got {name!r}")
    prefix, slash, member = name.partition("/")
    if slash:
        families = _families()
        if prefix not in families:
            known = ", ".join(sorted(families)) or "none"
            raise UnknownEnvError(
                f"no env family {prefix!r} is installed (from {name!r}); installed families: "
                f"{known}"
            )
        return families[prefix].entry(member)
    eps = _entry_points()
    ep = eps.get(name) or eps.get(name.removesuffix("_env"))
    if ep is None:
        known = ", ".join(sorted(eps)) or "none (pip install 'openenv-train[envs]')"
        raise UnknownEnvError(f"no env named {name!r} is installed; installed envs: {known}")
    try:
        entry = ep.load()
    except Exception as err:
        raise BrokenEnvEntryError(
            f"env {ep.name!r}: entry point {ep.value!r} failed to load ({type(err).__name__}: {err})"
        ) from err
    if not isinstance(entry, EnvEntry):
        raise BrokenEnvEntryError(
            f"env {ep.name!r}: entry point {ep.value!r} gives a {type(entry).__name__}, not an "
            "openenv_train.catalog.EnvEntry"
        )
    return entry


def describe(name: str) -> dict[str, Any]:
    """Name, description, app and the action/observation JSON schemas of one env."""
    entry = get_entry(name)
    return {
        "name": entry.name,
        "description": entry.description,
        "app": entry.app,
        "client": entry.client_path,
        "action": entry.action().model_json_schema(),
        "observation": entry.observation().model_json_schema(),
    }


_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_HUB_URL = re.compile(r"^https?://(?:www\.)?huggingface\.co/(?:spaces/)?", re.IGNORECASE)


def hub_repo_id(name: str) -> str | None:
    """``"org/echo-env"`` or ``"https://huggingface.co/spaces/org/echo-env"`` -> ``"org/echo-env"``;
    None for anything else (``"echo"``)."""
    repo = _HUB_URL.sub("", name.strip()).strip("/")
    return repo if _REPO_ID.match(repo) else None


def names_for_hub_id(repo_id: str) -> list[str]:
    """Catalog names a hub id may be installed under: ``org/echo-env`` -> ``echo_env``, ``echo``."""
    space = repo_id.split("/", 1)[1].lower().replace("-", "_").replace(".", "_")
    return list(dict.fromkeys([space, space.removesuffix("_env")]))


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
        """The env's client class (``async with cls(base_url=...)``; ``cls.from_provider(LocalProcessProvider(app))``)."""
        return get_entry(name).client()

    @staticmethod
    def app(name: str) -> str:
        """The env server's ASGI import path, e.g. ``"blackjack_env.server.app:app"``."""
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
        from .runtime.auto import open_env

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
            from .client.generic import GenericAction

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
        names, singles, families = env_names(), _entry_points(), _families()
        print("Available action classes:")
        for name in names:  # entry points read once, not once per env as get_entry would
            prefix, slash, member = name.partition("/")
            entry = families[prefix].entry(member) if slash else singles[name].load()
            print(f"  {name}: {entry.action_path}")
        print(f"Total: {len(names)} action classes")


__all__ = [
    "ENTRY_POINT_GROUP",
    "AutoAction",
    "AutoEnv",
    "BrokenEnvEntryError",
    "EnvEntry",
    "EnvFamily",
    "FAMILY_ENTRY_POINT_GROUP",
    "UnknownEnvError",
    "describe",
    "env_names",
    "family_names",
    "find_entry",
    "get_entry",
    "hub_repo_id",
    "installed_version",
    "names_for_hub_id",
    "reset_discovery",
]
