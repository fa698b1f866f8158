"""Fixtures for the server tests; helpers (and ``serve_app``) live in ``tests/support/server_helpers.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from server_envs import REG
from server_helpers import serve_app  # noqa: F401  (the fixture, offered to these tests)


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    REG.reset()
    yield
    REG.release.set()  # never leave a blocked worker behind
