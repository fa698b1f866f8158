"""Fixtures: real env servers on loopback, started once per test session by our local runtime."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from client_servers import serve


@pytest.fixture(scope="session")
def ot_url() -> Iterator[str]:
    """Our create_app serving ``ot_apps.TEnv`` (256 sessions)."""
    with serve("ot_apps:app") as p:
        yield p.base_url


@pytest.fixture(scope="session")
def ot_cap_url() -> Iterator[str]:
    """Our create_app serving ``ot_apps.TEnv`` with max_sessions=1."""
    with serve("ot_apps:cap_app") as p:
        yield p.base_url
