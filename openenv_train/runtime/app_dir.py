"""An env package folder on the import path, as uvicorn's ``--app-dir`` does, so a package that is
not installed can be served (here and in the server processes started from here) or checked."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def add_app_dir(folder: str | Path) -> str:
    """Put ``folder`` first on this process's import path and on ``PYTHONPATH`` for children."""
    path = str(Path(folder).resolve())
    if path not in sys.path:
        sys.path.insert(0, path)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (path, os.environ.get("PYTHONPATH", "")) if p
    )
    return path


@contextmanager
def on_import_path(folder: str | Path) -> Iterator[str]:
    """``folder`` first on the import path for the ``with`` block only."""
    path = str(Path(folder).resolve())
    sys.path.insert(0, path)
    try:
        yield path
    finally:
        sys.path.remove(path)
