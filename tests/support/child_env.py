"""Environment for child processes (env servers, the CLI) that import test modules by name."""

from __future__ import annotations

import os
from pathlib import Path


def with_pythonpath(*dirs: str | Path) -> dict[str, str]:
    """``{"PYTHONPATH": ...}`` with ``dirs`` in front of the current one."""
    parts = [str(d) for d in dirs] + [os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in parts if p)}
