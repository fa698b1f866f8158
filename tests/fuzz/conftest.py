"""Fuzzing against real env servers on loopback. ``ci`` profile by default; ``make fuzz`` runs
the long one (``--hypothesis-profile=long``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).parent))

from fuzz_strategies import FuzzServer  # noqa: E402
from hypothesis_profiles import register_profiles  # noqa: E402

register_profiles()

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


@pytest.fixture(scope="module")
def session(fuzz_server: FuzzServer) -> Iterator[Any]:
    """An honest standard ``/ws`` session, open for the whole module beside what is fuzzed."""
    # no keepalive pings: they draw from `random` mid-example, which Hypothesis flags
    with connect(fuzz_server.ws_url, max_size=2**24, compression=None, ping_interval=None) as ws:
        ws.send('{"type": "reset"}')
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"
        yield ws
