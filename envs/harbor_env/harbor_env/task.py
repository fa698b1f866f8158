"""One Harbor task folder, read and checked: ``task.toml``, ``instruction.md``, ``environment/``,
``tests/test.sh`` and the optional ``solution/solve.sh`` (the oracle).

Only the fields this env acts on are read (Harbor's schema has more; unknown fields are kept in
``config`` and ignored): ``[agent] timeout_sec, user``, ``[verifier] timeout_sec, user, env``,
``[environment] build_timeout_sec, cpus, memory_mb, workdir, env, network_mode`` (or the older
``allow_internet``), ``[solution] env``. A bad value raises ``TaskFormatError`` naming the file,
the field and the fix.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomllib

#: Defaults where ``task.toml`` says nothing (Harbor's for the timeouts).
AGENT_TIMEOUT_S = 600.0
VERIFIER_TIMEOUT_S = 600.0
BUILD_TIMEOUT_S = 600.0
CPUS = 1.0
MEMORY_MB = 1024
#: The user a task runs as when ``task.toml`` names none: non-root, as our containers are.
DEFAULT_USER = "10001:10001"


class TaskFormatError(ValueError):
    """A task folder does not follow Harbor's format; the message names the file and field."""


@dataclass(frozen=True)
class HarborTask:
    """A task folder, read once. ``image_key`` changes whenever ``environment/`` changes."""

    name: str
    path: Path
    instruction: str
    agent_timeout_s: float
    verifier_timeout_s: float
    build_timeout_s: float
    cpus: float
    memory_mb: int
    #: None until resolved: ``[agent] user``, else the image's USER, else ``DEFAULT_USER``
    agent_user: str | None
    verifier_user: str | None
    workdir: str | None
    network: bool
    env: dict[str, str] = field(default_factory=dict)
    verifier_env: dict[str, str] = field(default_factory=dict)
    solution_env: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path | None:
        d = self.path / "solution"
        return d if (d / "solve.sh").is_file() else None

    @property
    def image_key(self) -> str:
        """A hash of every file under ``environment/`` (names and bytes)."""
        h = hashlib.sha256()
        for p in sorted(self.environment_dir.rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(self.environment_dir)).encode() + b"\0")
                h.update(p.read_bytes() + b"\0")
        return h.hexdigest()[:16]


def _section(cfg: dict[str, Any], name: str, where: Path) -> dict[str, Any]:
    sec = cfg.get(name, {})
    if not isinstance(sec, dict):
        raise TaskFormatError(f"{where}: [{name}] must be a table, got {type(sec).__name__}")
    return sec


def _positive(sec: dict[str, Any], key: str, default: float, where: str) -> float:
    value = sec.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise TaskFormatError(f"{where}.{key}: must be a number > 0, got {value!r}")
    if not math.isfinite(value):
        raise TaskFormatError(f"{where}.{key}: must be finite, got {value!r}")
    return float(value)


def _user(sec: dict[str, Any], where: str, default: str | None) -> str | None:
    value = sec.get("user")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        raise TaskFormatError(f"{where}.user: a user name or uid, got {value!r}")
    return str(value)


def _env(sec: dict[str, Any], where: str) -> dict[str, str]:
    value = sec.get("env", {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise TaskFormatError(f"{where}.env: a table of strings, got {value!r}")
    return {str(k): v for k, v in value.items()}


def _network(sec: dict[str, Any], where: Path) -> bool:
    mode = sec.get("network_mode")
    if mode is not None:
        if mode not in ("no-network", "public", "allowlist"):
            raise TaskFormatError(
                f"{where}: [environment].network_mode must be 'no-network', 'public' or "
                f"'allowlist', got {mode!r}"
            )
        return mode != "no-network"
    return bool(sec.get("allow_internet", False))


def with_users(task: HarborTask, image_user: str | None) -> HarborTask:
    """``task`` with its users settled: ``[agent] user``, else the image's USER, else
    :data:`DEFAULT_USER` (non-root; Harbor would use root); the verifier's defaults to the agent's."""
    agent = task.agent_user or image_user or DEFAULT_USER
    return replace(task, agent_user=agent, verifier_user=task.verifier_user or agent)


def load_task(path: str | Path) -> HarborTask:
    """Read and check one Harbor task folder."""
    path = Path(path).resolve()
    toml_path = path / "task.toml"
    if not toml_path.is_file():
        raise TaskFormatError(f"{path}: no task.toml; a Harbor task folder has one")
    try:
        cfg = tomllib.loads(toml_path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise TaskFormatError(f"{toml_path}: not valid TOML ({err})") from err
    for need in ("instruction.md", "environment/Dockerfile", "tests/test.sh"):
        if not (path / need).is_file():
            raise TaskFormatError(f"{path}: no {need}; a Harbor task folder has one")
    agent = _section(cfg, "agent", toml_path)
    verifier = _section(cfg, "verifier", toml_path)
    environment = _section(cfg, "environment", toml_path)
    solution = _section(cfg, "solution", toml_path)
    memory = environment.get("memory_mb", MEMORY_MB)
    if isinstance(memory, bool) or not isinstance(memory, int) or memory < 16:
        raise TaskFormatError(
            f"{toml_path}: environment.memory_mb must be an int >= 16, got {memory!r}"
        )
    workdir = environment.get("workdir")
    if workdir is not None and not (isinstance(workdir, str) and workdir.startswith("/")):
        raise TaskFormatError(
            f"{toml_path}: environment.workdir must be an absolute path, got {workdir!r}"
        )
    agent_user = _user(agent, f"{toml_path}: agent", None)
    return HarborTask(
        name=path.name,
        path=path,
        instruction=(path / "instruction.md").read_text(),
        agent_timeout_s=_positive(agent, "timeout_sec", AGENT_TIMEOUT_S, f"{toml_path}: agent"),
        verifier_timeout_s=_positive(
            verifier, "timeout_sec", VERIFIER_TIMEOUT_S, f"{toml_path}: verifier"
        ),
        build_timeout_s=_positive(
            environment, "build_timeout_sec", BUILD_TIMEOUT_S, f"{toml_path}: environment"
        ),
        cpus=_positive(environment, "cpus", CPUS, f"{toml_path}: environment"),
        memory_mb=memory,
        agent_user=agent_user,
        verifier_user=_user(verifier, f"{toml_path}: verifier", None),
        workdir=workdir,
        network=_network(environment, toml_path),
        env=_env(environment, f"{toml_path}: environment"),
        verifier_env=_env(verifier, f"{toml_path}: verifier"),
        solution_env=_env(solution, f"{toml_path}: solution"),
        config=cfg,
    )


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def load_tasks(folder: str | Path) -> dict[str, HarborTask]:
    """Every task in ``folder`` (each subfolder with a ``task.toml``), by folder name; a folder
    that is itself a task gives that one task."""
    folder = Path(folder)
    if (folder / "task.toml").is_file():
        task = load_task(folder)
        return {task.name: task}
    if not folder.is_dir():
        raise TaskFormatError(f"{folder}: not a folder of Harbor tasks")
    tasks = {}
    for sub in sorted(folder.iterdir()):
        if (sub / "task.toml").is_file():
            if not _NAME.match(sub.name):
                raise TaskFormatError(f"{sub}: a task folder name of letters, digits, _ . -")
            tasks[sub.name] = load_task(sub)
    if not tasks:
        raise TaskFormatError(f"{folder}: no task folders (a subfolder with task.toml) in it")
    return tasks
