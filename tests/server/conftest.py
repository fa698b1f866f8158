"""Fixtures for the server tests; helpers live in ``server_helpers`` (importable by name)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from server_envs import REG
from server_helpers import ServerThread


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


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    REG.reset()
    yield
    REG.release.set()  # never leave a blocked worker behind
