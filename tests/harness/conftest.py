"""Real echo and BlackJack servers on loopback and a byte-level ChatML tokenizer."""

from __future__ import annotations

import pytest
from chatml import chatml_tokenizer

from openenv_train.runtime import LocalProcessProvider


@pytest.fixture(scope="module")
def echo_url():
    with LocalProcessProvider("echo_env.server.app:app") as server:
        yield server.base_url


@pytest.fixture(scope="module")
def blackjack_url():
    with LocalProcessProvider("blackjack_env.server.app:app") as server:
        yield server.base_url


@pytest.fixture(scope="session")
def chat_tokenizer():
    return chatml_tokenizer()
