"""Helpers of the CLI tests: the console script as users run it, started in a subprocess."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path


def cli() -> list[str]:
    """The ``openenv-train`` script of this environment (``python -m openenv_train`` if absent)."""
    exe = shutil.which("openenv-train", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "openenv_train"]


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    """``openenv-train ARGS`` in ``cwd``, in its own process group, output piped as text."""
    return subprocess.Popen(
        cli() + args,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def read_until(proc: subprocess.Popen[str], needle: str, timeout: float = 60) -> list[str]:
    """The output lines up to the first that contains ``needle`` (fails if the process ends)."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line.rstrip("\n"))
        if needle in line:
            return lines
    raise AssertionError(f"no {needle!r} in the output:\n" + "\n".join(lines))


def stop(proc: subprocess.Popen[str]) -> int:
    """Ctrl-C to the whole process group (the reloader's child too); its exit status."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    return proc.returncode
