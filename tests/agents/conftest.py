"""Fixtures for the agents-in-envs tests: real uvicorn servers on loopback, stopped after use."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "server"))
sys.path.insert(0, str(Path(__file__).parent.parent / "rollout"))

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
