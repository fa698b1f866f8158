"""FAKE Daytona SDK: a stand-in for the ``daytona`` package, because the Daytona cloud cannot be
reached from tests. Only the cloud is faked: a "sandbox" is a folder on this machine whose
``/app`` and ``/tmp`` are that folder's ``app/`` and ``tmp/``, its ``process.exec`` runs the
command in a real shell here, and its port 8000 is a free loopback port, which the "signed
preview URL" points at. So the env server a provider starts in it is a real server, and a real
client resets and steps through the provider.

``FakeDaytona.images`` maps an image name to the files the sandbox starts with (e.g. an OpenEnv
image's ``app/env/openenv.yaml``); ``FakeDaytona.refuse`` makes ``create`` fail.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ports import free_port

_SANDBOX_PATH = re.compile(r"(?<![\w./-])/(app|tmp)(?=/|\s|$|;|&|\))")


class FakeDaytonaError(Exception):
    """What the fake SDK raises, like the real SDK's ``DaytonaError``."""


@dataclass
class ExecuteResponse:
    exit_code: int
    result: str


@dataclass
class SignedPreviewUrl:
    url: str
    token: str


class _Params:
    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)


class CreateSandboxFromImageParams(_Params):
    pass


class CreateSandboxFromSnapshotParams(_Params):
    pass


class Resources(_Params):
    pass


class Image:
    def __init__(self, dockerfile: str) -> None:
        self.dockerfile = dockerfile

    @staticmethod
    def from_dockerfile(path: str) -> Image:
        return Image(Path(path).read_text())


class DaytonaConfig(_Params):
    pass


class FakeProcess:
    def __init__(self, sandbox: FakeSandbox) -> None:
        self.sandbox = sandbox

    def exec(self, command: str, timeout: int | None = None, **_: Any) -> ExecuteResponse:
        return self.sandbox.run(command, timeout)


@dataclass
class FakeSandbox:
    id: str
    root: Path
    port: int
    env: dict[str, str]
    params: Any
    groups: list[int] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    deleted: bool = False

    def __post_init__(self) -> None:
        self.process = FakeProcess(self)

    def here(self, command: str) -> str:
        """The sandbox's command as it runs on this machine (paths, port, loopback only)."""
        command = _SANDBOX_PATH.sub(lambda m: f"{self.root}/{m.group(1)}", command)
        command = command.replace("--port 8000", f"--port {self.port}")
        return command.replace("0.0.0.0", "127.0.0.1")

    def run(self, command: str, timeout: int | None) -> ExecuteResponse:
        if self.deleted:
            raise FakeDaytonaError(f"sandbox {self.id} was deleted")
        self.commands.append(command)
        proc = subprocess.Popen(
            ["bash", "-c", self.here(command)],
            cwd=self.root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # what it leaves running stays in this group: killed on delete
            text=True,
        )
        self.groups.append(proc.pid)
        out, _ = proc.communicate(timeout=timeout)
        return ExecuteResponse(proc.returncode, out.replace(str(self.root), ""))

    def create_signed_preview_url(
        self, port: int, expires_in_seconds: int | None = None
    ) -> SignedPreviewUrl:
        assert port == 8000, port
        return SignedPreviewUrl(f"http://127.0.0.1:{self.port}", f"signed-{self.id}")

    def kill(self) -> None:
        for group in self.groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def server_pid(self) -> int | None:
        pid = self.root / "tmp" / "openenv-server.pid"
        return int(pid.read_text()) if pid.exists() else None


_CREATE_LOCK = threading.Lock()


class FakeDaytona:
    """The fake client: ``create`` makes a FakeSandbox, ``delete`` kills what it ran."""

    images: dict[str, dict[str, str]] = {}
    refuse: str | None = None
    sandboxes: list[FakeSandbox] = []

    def __init__(self, config: DaytonaConfig | None = None) -> None:
        self.config = config

    def create(self, params: Any = None, *, timeout: float = 60, **kwargs: Any) -> FakeSandbox:
        if self.refuse:
            raise FakeDaytonaError(self.refuse)
        root = Path(tempfile.mkdtemp(prefix="fake-daytona-"))
        for sub in ("app", "tmp"):
            (root / sub).mkdir()
        image = getattr(params, "image", None)
        for rel, text in self.images.get(image if isinstance(image, str) else "", {}).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        bindir = os.path.dirname(sys.executable)  # python / python3 in the sandbox: this venv's
        env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
        env.update(getattr(params, "env_vars", None) or {})
        with _CREATE_LOCK:  # sandboxes are created from several threads at once
            taken = {s.port for s in self.sandboxes}
            port = free_port()
            while port in taken:  # the OS may hand out a released port again: never twice here
                port = free_port()
            sandbox = FakeSandbox(f"fake-{len(self.sandboxes)}", root, port, env, params)
            self.sandboxes.append(sandbox)
        return sandbox

    def delete(self, sandbox: FakeSandbox) -> None:
        sandbox.kill()
        sandbox.deleted = True
        shutil.rmtree(sandbox.root, ignore_errors=True)  # a deleted sandbox leaves no files


def module() -> types.ModuleType:
    """A fresh ``daytona`` module made of the fakes (tests put it in ``sys.modules``)."""
    mod = types.ModuleType("daytona")
    for obj in (
        FakeDaytona,
        DaytonaConfig,
        CreateSandboxFromImageParams,
        CreateSandboxFromSnapshotParams,
        Resources,
        Image,
    ):
        setattr(mod, obj.__name__, obj)
    mod.Daytona = FakeDaytona
    FakeDaytona.images, FakeDaytona.refuse, FakeDaytona.sandboxes = {}, None, []
    return mod
