"""An env server in a virtual environment of its own (``runtime="venv"``, ``serve --venv``).

An env whose dependencies conflict with the trainer's (verifiers 0.4 pins ``mcp==2.0.0`` and
``openai<3``) runs from a venv built from the env package's own requirements plus
openenv-train's core ones, while the trainer keeps its interpreter. The venv is cached by the
hash of those requirements and the Python version (``<cache>/venvs/<hash>``): the first start
builds it (pip, through the index pip is configured for), every later one reuses it. Building
is locked per hash, so parallel starts build once.

The venv holds third-party packages only. openenv-train and the env package are the trainer's
own copies, reached through a folder of links put on the server's ``PYTHONPATH``: the same code
(and wire version) on both sides, and nothing else of the trainer's site-packages leaks in.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement

from ..core.errors import ServerStartError
from .package_requirements import own_requirements, pyproject_project, with_own_requirements

if TYPE_CHECKING:
    from .local import ServerGroup

#: where venvs are cached unless ``cache_dir`` says otherwise
CACHE_ENV = "OPENENV_TRAIN_CACHE"
#: the most seconds one venv build may take (pip through a cold cache)
BUILD_TIMEOUT_S = 1800.0


def default_cache_dir() -> Path:
    """``$OPENENV_TRAIN_CACHE``, else ``$XDG_CACHE_HOME/openenv-train``, else ``~/.cache/...``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "openenv-train"


@dataclass(frozen=True)
class EnvPackage:
    """What an env server needs besides an interpreter: the requirements to install and the
    folders (packages, or single modules) to link onto its path."""

    requirements: tuple[str, ...]
    links: tuple[Path, ...]


def _module_path(module: str) -> Path:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not (spec.submodule_search_locations or spec.origin):
        raise LookupError(
            f"no module {module!r} here: the env package must be importable by the trainer "
            "(pip install it, or put its folder on PYTHONPATH); its dependencies need not be"
        )
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return Path(spec.origin or "").resolve()


def env_package(app: str) -> EnvPackage:
    """The requirements and linked folders of the env package that holds ``app``.

    A source folder (``pyproject.toml`` beside the package) gives its ``dependencies`` and
    every package in it; an installed distribution its metadata. ``openenv-train`` (with any
    extras it names) becomes openenv-train's own requirements: it is linked, not installed.
    """
    top = app.split(":", 1)[0].split(".", 1)[0]
    where = _module_path(top)
    folder = where.parent
    project = pyproject_project(folder)
    if project is not None:
        declared = list(project.get("dependencies", []))
        links = sorted(
            p.resolve()
            for p in folder.iterdir()
            if p.is_dir() and (p / "__init__.py").is_file() and p.name != "tests"
        )
    else:
        dists = importlib.metadata.packages_distributions().get(top, [])
        declared, links = [], [where]
        if dists:
            declared = [
                r
                for r in importlib.metadata.requires(dists[0]) or []
                if "extra ==" not in r.replace("'", '"').replace("extra==", "extra ==")
            ]
    return EnvPackage(tuple(with_own_requirements(declared)), tuple(links or [where]))


def requirements_hash(requirements: Sequence[str], python: str | None = None) -> str:
    """The cache key: the sorted requirements and the interpreter's version."""
    version = subprocess.run(
        [python or sys.executable, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    key = json.dumps({"python": version, "requirements": sorted(set(requirements))})
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _base_python() -> str:
    """The interpreter a new venv is made from: the base one under the trainer's venv."""
    return getattr(sys, "_base_executable", None) or sys.executable


def _tail(path: Path, n: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def ensure_venv(
    requirements: Sequence[str],
    *,
    cache_dir: str | Path | None = None,
    timeout: float = BUILD_TIMEOUT_S,
) -> Path:
    """The interpreter of a venv holding ``requirements``, built once per hash and cached.

    Raises ``ServerStartError`` with pip's last lines when the requirements do not install.
    """
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    venvs = cache / "venvs"
    venvs.mkdir(parents=True, exist_ok=True)
    digest = requirements_hash(requirements, _base_python())
    final = venvs / digest
    python = final / "bin" / "python"
    with open(venvs / f"{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per hash; the others wait, then reuse it
        if (final / ".complete").is_file():
            return python
        shutil.rmtree(final, ignore_errors=True)  # a build that died half-way
        log = venvs / f"{digest}.log"
        building = Path(tempfile.mkdtemp(prefix=f"{digest}.building-", dir=venvs))
        try:
            _build(building, requirements, log, timeout)
            (building / "requirements.txt").write_text("\n".join(requirements) + "\n")
            os.rename(building, final)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        (final / ".complete").write_text(digest + "\n")
    return python


def _build(where: Path, requirements: Sequence[str], log: Path, timeout: float) -> None:
    venv_python = where / "bin" / "python"
    if importlib.util.find_spec("pip") is not None:
        # the trainer's pip installs into the venv: no pip inside it, faster to make
        steps = [[_base_python(), "-m", "venv", "--without-pip", str(where)]]
        install = [sys.executable, "-m", "pip", "--python", str(venv_python), "install"]
    else:
        steps = [[_base_python(), "-m", "venv", str(where)]]
        install = [str(venv_python), "-m", "pip", "install"]
    steps.append([*install, "--disable-pip-version-check", "--no-input", *requirements])
    with open(log, "w") as out:
        for cmd in steps:
            out.write("$ " + " ".join(cmd) + "\n")
            out.flush()
            try:
                done = subprocess.run(
                    cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False
                )
            except subprocess.TimeoutExpired:
                raise ServerStartError(
                    f"building the env venv took over {timeout:.0f} s ({' '.join(cmd[:6])} ...); "
                    f"its log: {log}"
                ) from None
            if done.returncode:
                raise ServerStartError(
                    f"building the env venv failed (exit {done.returncode}); fix the env "
                    f"package's requirements or the index settings. pip's last lines "
                    f"({log}):\n{_tail(log)}"
                )


def link_dir(links: Sequence[Path], *, cache_dir: str | Path | None = None) -> Path:
    """A folder holding only links to ``links`` (openenv-train and the env's packages): the
    server's ``PYTHONPATH``. Cached by the set of targets; made atomically."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    targets = sorted({p.resolve() for p in links})
    names = [p.name for p in targets]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"two different folders are named {dupes}: one import name each")
    digest = hashlib.sha256("\n".join(map(str, targets)).encode()).hexdigest()[:16]
    final = cache / "paths" / digest
    if final.is_dir():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=final.parent))
    for target in targets:
        (building / target.name).symlink_to(target)
    try:
        os.rename(building, final)
    except OSError:  # another process made it first: same content
        shutil.rmtree(building, ignore_errors=True)
    return final


@dataclass(frozen=True)
class EnvVenv:
    """A ready venv for one env app: its interpreter and the environment its server runs with."""

    python: Path
    path_dir: Path

    def environ(self) -> dict[str, str]:
        """What the server process adds to the inherited environment: only the linked folder
        on the path (not the trainer's), and no user site-packages."""
        return {"PYTHONPATH": str(self.path_dir), "PYTHONNOUSERSITE": "1"}


def prepare_env_venv(
    app: str,
    *,
    requirements: Sequence[str] | None = None,
    cache_dir: str | Path | None = None,
) -> EnvVenv:
    """The venv ``app`` runs in: built (or reused) from the env package's requirements, or from
    ``requirements`` when given (they replace the env package's own; openenv-train's core
    ones are always added)."""
    import openenv_train

    package = env_package(app)
    if requirements is not None:
        reqs = tuple(dict.fromkeys([*own_requirements(), *requirements]))
    else:
        reqs = package.requirements
    for raw in reqs:  # a requirement, never a pip option (--index-url ...)
        try:
            Requirement(raw)
        except InvalidRequirement:
            raise ValueError(
                f"requirement {raw!r}: each must be a requirement such as 'name>=1.0'"
            ) from None
    python = ensure_venv(reqs, cache_dir=cache_dir)
    self_dir = Path(openenv_train.__file__).resolve().parent
    return EnvVenv(python, link_dir([self_dir, *package.links], cache_dir=cache_dir))


def start_venv_servers(
    app: str,
    n: int,
    *,
    requirements: Sequence[str] | None = None,
    cache_dir: str | Path | None = None,
    env: dict[str, str] | None = None,
    **options: object,
) -> ServerGroup:
    """``n`` local servers of ``app`` run by its env venv's interpreter (built on first use);
    ``options`` go to each ``LocalProcessProvider``."""
    from .local import start_local_servers

    venv = prepare_env_venv(app, requirements=requirements, cache_dir=cache_dir)
    environ = {**venv.environ(), **(env or {})}
    return start_local_servers(app, n, python=str(venv.python), env=environ, **options)
