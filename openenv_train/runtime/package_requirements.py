"""What a package folder needs installed: its pyproject's dependencies, with ``openenv-train``
replaced by openenv-train's own requirements (the framework is linked or copied in, never
installed from an index). Read by the venv runtime and by the env image build."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

SELF = "openenv-train"


def pyproject(folder: Path) -> dict | None:
    path = folder / "pyproject.toml"
    if not path.is_file():
        return None
    return tomllib.loads(path.read_text())


def pyproject_project(folder: Path) -> dict | None:
    return (pyproject(folder) or {}).get("project")


def own_requirements(extras: Iterable[str] = ()) -> list[str]:
    """openenv-train's core requirements (and those of ``extras``), from the copy imported here:
    its source checkout's pyproject.toml, else its installed metadata."""
    import openenv_train

    root = Path(openenv_train.__file__).resolve().parent.parent
    project = pyproject_project(root)
    if project is not None and project.get("name") == SELF:
        out = list(project.get("dependencies", []))
        optional = project.get("optional-dependencies", {})
        for extra in extras:
            out += [r for r in optional.get(extra, []) if not r.startswith(SELF)]
        return out
    out = []
    for raw in importlib.metadata.requires(SELF) or []:
        req = Requirement(raw)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras):
            out.append(str(req).split(";")[0].strip())
    return out


def with_own_requirements(declared: Iterable[str]) -> list[str]:
    """``declared`` with ``openenv-train`` (and any extras it names) replaced by openenv-train's
    own requirements, which are added when it is not named: the framework is linked or copied
    in, not installed from an index."""
    declared = list(declared)
    requirements: list[str] = []
    for raw in declared:
        req = Requirement(raw)
        if canonicalize_name(req.name) == SELF:
            requirements += own_requirements(req.extras)
        else:
            requirements.append(raw)
    if not any(canonicalize_name(Requirement(r).name) == SELF for r in declared):
        requirements = own_requirements() + requirements
    return list(dict.fromkeys(requirements))


def folder_install_requirements(folder: Path) -> list[str] | None:
    """What installing the package in ``folder`` with ``--no-deps --no-build-isolation`` needs
    first: its build requirements and :func:`with_own_requirements` of its dependencies (None
    when its pyproject does not list them statically)."""
    data = pyproject(folder)
    project = (data or {}).get("project") or {}
    if "dependencies" in project.get("dynamic", []) or not isinstance(
        project.get("dependencies", []), list
    ):
        return None
    build = list(((data or {}).get("build-system") or {}).get("requires") or ["setuptools"])
    return list(dict.fromkeys(build + with_own_requirements(project.get("dependencies", []))))
