"""Shared tiny model fixtures: built once per session, saved to a temp folder."""

from __future__ import annotations

import pytest
from blackjack_env.text_spec import VOCABULARY

from openenv_train.policy.tiny import build_tiny_model, save_tiny_model


@pytest.fixture(scope="session")
def tiny_pair():
    """A random 85k-parameter BlackJack Llama and its 41-token tokenizer."""
    return build_tiny_model(VOCABULARY, seed=1234)


@pytest.fixture(scope="session")
def tiny_dir(tiny_pair, tmp_path_factory):
    model, tokenizer = tiny_pair
    return save_tiny_model(model, tokenizer, tmp_path_factory.mktemp("tiny_bj"))
