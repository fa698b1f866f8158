"""A task's container: built from ``environment/Dockerfile``, started hardened by our runtime's
``ContainerProvider`` (no server inside: driven by exec), one per episode.

Hardening kept from the runtime: all capabilities dropped, no-new-privileges, memory / pids / CPU
limits from ``task.toml``, every command run as the task's user (non-root unless the task or
its image names one; the container's own idle process is root without capabilities), no network
unless the task asks for it, owner labels (orphans reaped), verified removal. Relaxed: the
read-only root, since a terminal task edits files anywhere its user may; the container is thrown
away after the episode.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv_train.runtime import container_engine as ce
from openenv_train.runtime.container import ContainerProvider

from .errors import ImageBuildError, TaskInfraError
from .task import HarborTask

#: Exit status of coreutils' ``timeout`` when the command ran past its time (137: killed after).
TIMEOUT_CODES = (124, 137)


class TaskContainer(ContainerProvider):
    """A hardened container that sleeps until exec'd into; ``probe()`` is the pool's health."""

    def __init__(self, image: str, task: HarborTask, *, engine: str, run_id: str) -> None:
        super().__init__(
            image,
            command=["sleep", "infinity"],
            engine=engine,
            run_id=run_id,
            env=task.env,
            # the sleeper is root's (no capabilities), so the agent's user can neither kill it nor
            # be mistaken for it; every command runs as the task's user by exec
            user="0:0",
            mem_limit=f"{task.memory_mb}m",
            cpus=task.cpus,
            pids_limit=512,
            network=None if task.network else "none",
            relax={"read_only"},
            container_port=None,
            startup_timeout=30,
        )

    def use_own_token(self) -> None:
        """No server inside, so no token (it would only show up in the task's environment)."""

    def probe(self) -> dict[str, Any] | None:
        return {"active_sessions": 0} if self.running else None


@dataclass
class ExecResult:
    exit_code: int
    output: str
    truncated: bool
    timed_out: bool
    seconds: float


def run_in(
    client: Any,
    name: str,
    command: str,
    *,
    user: str,
    timeout_s: float,
    max_bytes: int,
    workdir: str | None = None,
    env: dict[str, str] | None = None,
) -> ExecResult:
    """Run ``command`` with bash in the container, at most ``timeout_s`` (coreutils ``timeout``
    inside, TERM then KILL 2 s later) and keeping the first ``max_bytes`` of its output
    (stdout and stderr together; the rest is read and dropped). Engine failures raise
    ``TaskInfraError``."""
    if not user:  # the engine would run it as the container's root
        raise ValueError("run_in: user must be named (the task's users are settled by its image)")
    argv = ["timeout", "-k", "2", f"{timeout_s:g}", "bash", "-c", command]
    start = time.monotonic()
    try:
        ex = client.api.exec_create(name, argv, user=user, workdir=workdir, environment=env or None)
        buf = bytearray()
        total = 0
        for chunk in client.api.exec_start(ex["Id"], stream=True):
            total += len(chunk)
            if len(buf) < max_bytes:
                buf += chunk[: max_bytes - len(buf)]
        code = client.api.exec_inspect(ex["Id"]).get("ExitCode")
    except Exception as err:
        raise TaskInfraError(f"exec in task container {name} failed: {err}") from err
    if code is None:
        raise TaskInfraError(f"exec in task container {name} never finished (container gone?)")
    seconds = time.monotonic() - start
    return ExecResult(
        exit_code=int(code),
        output=bytes(buf).decode(errors="replace"),
        truncated=total > max_bytes,
        timed_out=int(code) in TIMEOUT_CODES and seconds >= timeout_s - 0.5,
        seconds=seconds,
    )


def put_dir(client: Any, name: str, src: Path, dest: str, *, mode_dirs: int = 0o755) -> None:
    """Copy folder ``src`` to ``dest`` (an absolute path, created) in the container, owned by
    root and readable by everyone (Harbor uploads ``tests/`` the same way)."""
    data = io.BytesIO()
    top = dest.strip("/")
    with tarfile.open(fileobj=data, mode="w") as tar:
        parts = top.split("/")
        for i in range(1, len(parts) + 1):
            tar.addfile(_dir_info("/".join(parts[:i]), mode_dirs))
        if src is not None:
            for p in sorted(src.rglob("*")):
                arc = f"{top}/{p.relative_to(src).as_posix()}"
                if p.is_dir():
                    tar.addfile(_dir_info(arc, mode_dirs))
                elif p.is_file():
                    info = tarfile.TarInfo(arc)
                    blob = p.read_bytes()
                    info.size, info.mtime = len(blob), int(time.time())
                    info.mode = (p.stat().st_mode & 0o777) | 0o444
                    if p.suffix == ".sh":
                        info.mode |= 0o555
                    tar.addfile(info, io.BytesIO(blob))
    try:
        client.api.put_archive(name, "/", data.getvalue())
    except Exception as err:
        raise TaskInfraError(f"copying {src} into task container {name} failed: {err}") from err


def make_dir(client: Any, name: str, dest: str, mode: int) -> None:
    """Create ``dest`` (and its parents) in the container with ``mode`` on the last part."""
    data = io.BytesIO()
    parts = dest.strip("/").split("/")
    with tarfile.open(fileobj=data, mode="w") as tar:
        for i in range(1, len(parts) + 1):
            tar.addfile(_dir_info("/".join(parts[:i]), mode if i == len(parts) else 0o755))
    try:
        client.api.put_archive(name, "/", data.getvalue())
    except Exception as err:
        raise TaskInfraError(f"creating {dest} in task container {name} failed: {err}") from err


def _dir_info(arc: str, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(arc)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, int(time.time())
    return info


def get_file(client: Any, name: str, path: str, max_bytes: int) -> bytes | None:
    """The bytes of one file in the container (None when it does not exist); more than
    ``max_bytes`` raises ``TaskInfraError``."""
    try:
        stream, stat = client.api.get_archive(name, path)
    except Exception as err:
        if ce.status_code(err) == 404:
            return None
        raise TaskInfraError(f"reading {path} from task container {name} failed: {err}") from err
    if int(stat.get("size") or 0) > max_bytes:
        raise TaskInfraError(f"{path} in {name} is {stat.get('size')} bytes (limit {max_bytes})")
    blob = b"".join(stream)
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        member = next((m for m in tar.getmembers() if m.isfile()), None)
        if member is None:
            return None
        f = tar.extractfile(member)
        return f.read() if f is not None else None


def image_tag(task: HarborTask, base_image: str | None) -> str:
    """The image tag of a task: its name and a hash of its ``environment/`` (and base image)."""
    key = task.image_key
    if base_image is not None:
        key += "-" + hashlib.sha256(base_image.encode()).hexdigest()[:8]
    slug = "".join(c if c.isalnum() or c in "_.-" else "-" for c in task.name.lower())
    return f"openenv-train-harbor/{slug}:{key}"


def build_task_image(
    client: Any, task: HarborTask, *, base_image: str | None = None, force: bool = False
) -> str:
    """Build the task's ``environment/Dockerfile`` (context: ``environment/``) unless an image of
    the same contents exists; ``base_image`` goes in as the ``BASE_IMAGE`` build argument.
    A failed build raises ``ImageBuildError`` with the log's tail."""
    tag = image_tag(task, base_image)
    if not force:
        try:
            client.api.inspect_image(tag)
            return tag
        except Exception as err:
            if ce.status_code(err) != 404:
                raise TaskInfraError(f"inspecting image {tag} failed: {err}") from err
    log: list[str] = []
    args = {"BASE_IMAGE": base_image} if base_image else {}
    deadline = time.monotonic() + task.build_timeout_s
    try:
        stream = client.api.build(
            path=str(task.environment_dir),
            tag=tag,
            buildargs=args,
            rm=True,
            forcerm=True,
            decode=True,
            timeout=task.build_timeout_s,
        )
        for chunk in stream:
            if "error" in chunk or "errorDetail" in chunk:
                detail = chunk.get("error") or (chunk.get("errorDetail") or {}).get("message")
                raise ImageBuildError(
                    f"task {task.name}: building {tag} failed: {detail}\n" + "\n".join(log[-20:])
                )
            text = str(chunk.get("stream") or "").rstrip()
            if text:
                log.append(text)
            if time.monotonic() > deadline:
                raise ImageBuildError(
                    f"task {task.name}: the build ran past build_timeout_sec "
                    f"({task.build_timeout_s:g} s)"
                )
    except ImageBuildError:
        raise
    except Exception as err:
        raise ImageBuildError(f"task {task.name}: building {tag} failed: {err}") from err
    return tag
