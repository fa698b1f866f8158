"""The env servers many test files only play against, started once per test worker.

Tests open their own sessions on these servers and close them; none stops, kills or reconfigures
one. A test that does needs a server of its own (a ``LocalProcessProvider`` in the test).
Starting a server costs about a second of CPU, and a dozen directories used to start their own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

ECHO_APP = "echo_env.server.app:app"
BLACKJACK_APP = "blackjack_env.server.app:app"


@pytest.fixture(scope="session")
def echo_url() -> Iterator[str]:
    """The echo env (MCP tool ``echo_message``)."""
    from openenv_train.runtime import LocalProcessProvider  # only where a test asks for it

    with LocalProcessProvider(ECHO_APP, startup_timeout=120) as server:
        yield server.base_url


@pytest.fixture(scope="session")
def blackjack_servers() -> Iterator[list[str]]:
    """Two BlackJack servers (what a rollout spreads its sessions over)."""
    from openenv_train.runtime import start_local_servers

    with start_local_servers(BLACKJACK_APP, 2, startup_timeout=120) as group:
        yield group.base_urls


@pytest.fixture(scope="session")
def blackjack_url(blackjack_servers: list[str]) -> str:
    return blackjack_servers[0]
