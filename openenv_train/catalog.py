"""The env catalog: installed env packages register under the ``openenv_train.envs`` entry points.

An env package names itself in its ``pyproject.toml``::

    [project.entry-points."openenv_train.envs"]
    blackjack = "blackjack_env:CATALOG_ENTRY"

where ``CATALOG_ENTRY`` is an :class:`EnvEntry` (import paths as strings, so listing the catalog
imports only the packages asked about). A package that serves a whole collection (every
reasoning-gym dataset, every textarena game) registers one :class:`EnvFamily` instead::

    [project.entry-points."openenv_train.env_families"]
    reasoning_gym = "reasoning_gym_env.catalog:FAMILY"

and each of its members is an env named ``<prefix>/<member>`` (``reasoning_gym/leg_counting``).
``get_entry("blackjack")`` is then that env's :class:`EnvEntry`: ``.client()`` the client class,
``.app`` the server's ASGI import path, ``.action()`` the action model; an unknown name raises
:class:`UnknownEnvError` listing the installed ones, and ``env_names()`` lists them. Nothing
but the asked-for env package is imported (no server, client or torch). OpenEnv's
``AutoEnv`` / ``AutoAction`` over this catalog are in ``openenv_train.openenv``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

ENTRY_POINT_GROUP = "openenv_train.envs"
FAMILY_ENTRY_POINT_GROUP = "openenv_train.env_families"
DISTRIBUTION = "openenv-train"
ENVS_EXTRA = "envs"  # pip install 'openenv-train[envs]': the example env packages


class UnknownEnvError(LookupError, ValueError):
    """No installed env answers to that name; the message lists the ones that do (or, for a hub
    id, how to make it local). A ``ValueError`` too, as a bad argument is."""


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


#: what the last scans of the installed packages found, by what was scanned and ``sys.path``:
#: one scan reads every distribution's metadata (seconds of CPU with a few hundred packages), and
#: a run looks envs up many times. ``reset_discovery`` forgets them.
_SCANNED: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}


def _scanned(kind: str, scan: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``scan()``'s result, scanned once per ``kind`` and ``sys.path`` (a copy: callers may
    change it). A scan that raises is not kept."""
    key = (kind, tuple(sys.path))
    if key not in _SCANNED:
        _SCANNED[key] = scan()
    return dict(_SCANNED[key])


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return _scanned("envs", _scan_entry_points)


def _families() -> dict[str, EnvFamily]:
    return _scanned("families", _scan_families)


def _scan_entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)  # first wins, as importlib orders distributions
    return found


def _scan_families() -> dict[str, EnvFamily]:
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


def entries() -> dict[str, EnvEntry]:
    """Every installed env by name (the order of :func:`env_names`), each entry point read once."""
    found = {name: _loaded(ep) for name, ep in sorted(_entry_points().items())}
    for prefix, family in sorted(_families().items()):
        found.update({f"{prefix}/{m}": family.entry(m) for m in family.members()})
    return found


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


def installed_versions(*distributions: str) -> dict[str, str]:
    """``{name: version}`` of the named installed distributions (what an eval records as its
    library versions); a name that is not installed is left out."""
    out = {}
    for name in distributions:
        try:
            out[name] = metadata.version(name)  # looked up at call time: tests may patch it
        except metadata.PackageNotFoundError:
            continue
    return out


def installed_version(*distributions: str) -> str:
    """The version of the first of ``distributions`` that is installed (default: openenv-train
    itself), else ``"0.0.0"``: what a bug report or an env listing shows, read from the installed
    metadata rather than from source."""
    found = installed_versions(*(distributions or (DISTRIBUTION,)))
    return next(iter(found.values()), "0.0.0")


def reset_discovery() -> None:
    """Forget the import system's view of installed packages and our scans of them, so an env
    package installed since this process started (``pip install`` from a notebook) is found by
    the next lookup."""
    importlib.invalidate_caches()
    _SCANNED.clear()


def _package(path: str) -> str:
    """The top-level package of ``module.path:attribute``."""
    return path.partition(":")[0].partition(".")[0]


def name_of_app(app: str) -> str | None:
    """The name of the installed env whose ``app`` is ``app`` (``blackjack_env.server.app:app``
    -> ``blackjack``), else None. Only the entries registered by the app's own top-level package
    are loaded: a lookup does not import every env package."""
    package = _package(app)
    for name, ep in sorted(_entry_points().items()):
        if _package(ep.value) == package:
            try:
                if _loaded(ep).app == app:
                    return name
            except BrokenEnvEntryError:
                continue
    for prefix, family in sorted(_families().items()):
        if _package(family.entry_path) != package:
            continue
        for member in family.members():
            try:
                if family.entry(member).app == app:
                    return f"{prefix}/{member}"
            except BrokenEnvEntryError:
                continue
    return None


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
    return _loaded(ep)


def _loaded(ep: importlib.metadata.EntryPoint) -> EnvEntry:
    """The :class:`EnvEntry` an ``openenv_train.envs`` entry point names, checked."""
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


__all__ = [
    "ENTRY_POINT_GROUP",
    "BrokenEnvEntryError",
    "EnvEntry",
    "EnvFamily",
    "FAMILY_ENTRY_POINT_GROUP",
    "UnknownEnvError",
    "describe",
    "entries",
    "env_names",
    "family_names",
    "get_entry",
    "hub_repo_id",
    "installed_version",
    "installed_versions",
    "names_for_hub_id",
    "reset_discovery",
]
