"""A byte-level ChatML tokenizer for the harness tests (servers: ``shared_servers``)."""

from __future__ import annotations

import pytest
from chatml import chatml_tokenizer


@pytest.fixture(scope="session")
def chat_tokenizer():
    return chatml_tokenizer()
