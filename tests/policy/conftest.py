"""Shared tiny model fixtures: built once per session, saved to a temp folder."""

from __future__ import annotations

import pytest
from blackjack_env.text_spec import VOCABULARY

from openenv_train.policy.tiny import build_tiny_model


@pytest.fixture(scope="session")
def tiny_pair():
    """A random 85k-parameter BlackJack Llama and its 41-token tokenizer."""
    return build_tiny_model(VOCABULARY, seed=1234)
