"""Fixtures: OpenEnv 0.10's own server (its classes, installed) on loopback; our echo server: ``shared_servers``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "client"))  # client_servers, oe_apps (OpenEnv 0.10's server)

from client_servers import serve  # noqa: E402
from server_helpers import serve_app  # noqa: E402, F401  (the fixture, offered to these tests)


@pytest.fixture(scope="session")
def oe_tools_url() -> Iterator[str]:
    """OpenEnv 0.10's server (its create_app and FastMCP MCPEnvironment): tools ``echo``, ``add``, ``boom``."""
    with serve("oe_apps:app") as p:
        yield p.base_url + "/tools"
