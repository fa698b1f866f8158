"""Running ``openenv-train`` as users do (a console script in a subprocess, stdout a pipe)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli() -> list[str]:
    exe = shutil.which("openenv-train", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "openenv_train.cli.main"]


def cli_env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "200"}


def run_cli(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli() + args, cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=timeout
    )
