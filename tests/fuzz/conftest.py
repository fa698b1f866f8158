"""Fuzzing against real env servers on loopback. ``ci`` profile by default; ``make fuzz`` runs
the long one (``--hypothesis-profile=long``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

from fuzz_strategies import FuzzServer  # noqa: E402

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
    print_blob=True,
)
settings.register_profile("ci", max_examples=60, **_COMMON)
settings.register_profile("long", max_examples=1000, **_COMMON)
settings.load_profile("ci")

APPS = {
    "echo": "echo_env.server.app:app",  # MCP tool actions (CallToolAction)
    "blackjack": "blackjack_env.server.app:app",  # a typed action with a validator
}


@pytest.fixture(scope="module", params=sorted(APPS))
def fuzz_server(request: pytest.FixtureRequest) -> Iterator[FuzzServer]:
    """A real server subprocess per app; the test module fails if it dies or leaks sessions."""
    server = FuzzServer(APPS[request.param]).start()
    try:
        yield server
        server.assert_healthy_and_empty()
    finally:
        server.stop()
