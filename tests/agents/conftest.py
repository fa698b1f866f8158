"""Fixtures for the agents-in-envs tests: real uvicorn servers on loopback, stopped after use."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


def _share(name: str, path: Path) -> None:
    """Import another test folder's uniquely named helper module without putting that folder on
    sys.path (its ``conftest`` would shadow the one other tests import by name)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


_share("server_helpers", HERE.parent / "server" / "server_helpers.py")

from server_helpers import ServerThread  # noqa: E402


@pytest.fixture
def serve_app() -> Iterator[Callable[..., ServerThread]]:
    """Start apps on real uvicorn servers; all are stopped after the test."""
    started: list[ServerThread] = []

    def start(app: Any, **options: Any) -> ServerThread:
        s = ServerThread(app, **options).start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
