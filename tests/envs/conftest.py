"""Real echo and BlackJack servers on loopback, one per module, started by our local runtime."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openenv_train.runtime import LocalProcessProvider


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    with LocalProcessProvider("echo_env.server.app:app", startup_timeout=120) as p:
        yield p.base_url


@pytest.fixture(scope="module")
def blackjack_url() -> Iterator[str]:
    with LocalProcessProvider("blackjack_env.server.app:app", startup_timeout=120) as p:
        yield p.base_url
