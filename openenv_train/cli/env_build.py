"""Building an env image: stage the build context, stream the engine's build, report the result.

The context is the env folder plus ``.openenv_train/``: the framework this command runs with
(its package and a minimal ``pyproject.toml``), so images build without it on a package index.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openenv_train

from ..runtime import container_engine as ce
from ..runtime.package_requirements import folder_install_requirements, own_requirements
from .errors import BuildError as BuildError

IGNORE = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.egg-info", ".venv", ".git", ".pytest_cache", "build", "dist"
)


#: the build backend of the framework's staged pyproject
FRAMEWORK_BUILD = "setuptools>=68"

#: The base image ``make engines`` builds on this machine (scripts/container_engines.sh).
LOCAL_BASE_IMAGE = "openenv-train-base:py3.11-bookworm"
BASE_IMAGE_HINT = (
    "if the engine cannot pull the Dockerfile's base image (no registry here), pass "
    f"--base-image with one it has: `make engines` builds {LOCAL_BASE_IMAGE}"
)


def local_base_image(engine: str = "docker") -> str | None:
    """:data:`LOCAL_BASE_IMAGE` when ``engine`` has it (so a build need not pull), else None."""
    try:
        client = ce.connect(engine, timeout=30)
        client.api.inspect_image(LOCAL_BASE_IMAGE)
    except Exception:  # no engine, or no such image: nothing local to fall back on
        return None
    return LOCAL_BASE_IMAGE


def env_package(path: Path) -> str:
    """The import name of the env package in folder ``path`` (``<name>/server/app.py``)."""
    found = sorted(p.parent.parent.name for p in path.glob("*/server/app.py"))
    if len(found) != 1:
        raise ValueError(
            f"{path}: expected one env package (a folder NAME/server/app.py), found {found or 'none'}; "
            "create one with `openenv-train init NAME`"
        )
    return found[0]


def _framework_pyproject() -> str:
    deps = ", ".join(json.dumps(r) for r in own_requirements())  # a marker's quotes escaped
    version = importlib.metadata.version("openenv-train")
    return (
        f'[build-system]\nrequires = ["{FRAMEWORK_BUILD}"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "openenv-train"\nversion = "{version}"\nrequires-python = ">=3.10"\n'
        f"dependencies = [{deps}]\n\n"
        '[tool.setuptools.packages.find]\ninclude = ["openenv_train*"]\n'
    )


def stage_context(env_dir: Path, dest: Path) -> Path:
    """Copy ``env_dir`` and the framework into ``dest``; returns ``dest``.

    ``.openenv_train/requirements.txt`` lists every third-party package the two need (the env's
    dependencies, openenv-train's with the extras the env names, both build backends): the
    Dockerfile installs it in a layer of its own, so a build after a change to the code alone
    reuses that layer instead of downloading and compiling every dependency again."""
    shutil.copytree(env_dir, dest, ignore=IGNORE, dirs_exist_ok=True)
    vendor = dest / ".openenv_train"
    shutil.copytree(Path(openenv_train.__file__).parent, vendor / "openenv_train", ignore=IGNORE)
    (vendor / "pyproject.toml").write_text(_framework_pyproject())
    needs = folder_install_requirements(Path(env_dir))
    if needs is not None:
        (vendor / "requirements.txt").write_text("\n".join([FRAMEWORK_BUILD, *needs]) + "\n")
    return dest


@dataclass
class ImageFacts:
    tag: str
    size: int
    layers: int
    history: list[str]


def image_facts(client: Any, tag: str) -> ImageFacts:
    """Size, layer count (history entries that add bytes) and layer commands of ``tag``."""
    info = client.api.inspect_image(tag)
    hist = client.api.history(tag)
    return ImageFacts(
        tag=tag,
        size=int(info.get("Size") or 0),
        layers=sum(1 for h in hist if int(h.get("Size") or 0) > 0),
        history=[str(h.get("CreatedBy") or "") for h in hist],
    )


def build_image(
    env_dir: Path,
    tag: str,
    *,
    base_image: str | None = None,
    engine: str = "docker",
    on_line: Callable[[str], None] = lambda line: None,
) -> ImageFacts:
    """Build ``env_dir``'s Dockerfile as ``tag`` on ``engine``; ``BuildError`` with the log on failure."""
    env_dir = Path(env_dir)
    if not (env_dir / "Dockerfile").is_file():
        raise ValueError(f"{env_dir}: no Dockerfile; `openenv-train init` writes one")
    client = ce.connect(engine, timeout=600)
    log: list[str] = []
    with tempfile.TemporaryDirectory(prefix="openenv-train-build-") as tmp:
        ctx = stage_context(env_dir, Path(tmp) / "ctx")
        args = {"BASE_IMAGE": base_image} if base_image else {}
        stream = client.api.build(
            path=str(ctx), tag=tag, buildargs=args, rm=True, forcerm=True, decode=True
        )
        for chunk in stream:
            if "error" in chunk or "errorDetail" in chunk:
                detail = chunk.get("error") or (chunk.get("errorDetail") or {}).get("message")
                tail = "\n".join(log[-30:])
                raise BuildError(f"building {tag} failed: {detail}\n{tail}")
            text = str(chunk.get("stream") or "").rstrip()
            if text:
                log.append(text)
                on_line(text)
    try:
        return image_facts(client, tag)
    except Exception as e:
        raise BuildError(f"the build of {tag} ended but the image is missing: {e}") from e


def default_tag(env_dir: Path) -> str:
    name = re.sub(r"[^a-z0-9_.-]", "-", env_package(Path(env_dir)).lower())
    return f"openenv-train/{name}:latest"
