"""Real BlackJack/echo servers on loopback and a tiny Llama, shared by the trainer tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def blackjack_servers() -> Iterator[list[str]]:
    from openenv_train.runtime import start_local_servers

    group = start_local_servers("blackjack_env.server.app:app", 2, startup_timeout=120)
    try:
        yield group.base_urls
    finally:
        group.stop()


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    from openenv_train.runtime import LocalProcessProvider

    with LocalProcessProvider("echo_env.server.app:app", startup_timeout=120) as p:
        yield p.base_url


@pytest.fixture()
def tiny_model():
    import torch

    torch.set_num_threads(1)
    from blackjack_env.text_spec import VOCABULARY

    from openenv_train.policy.tiny import build_tiny_model

    return build_tiny_model(VOCABULARY)


@pytest.fixture()
def warmed(tiny_model):
    """The tiny Llama after a quick format warm-up (answers ``hit<eos>`` / ``stand<eos>``)."""
    from blackjack_env.text_spec import random_episode

    from openenv_train.training import quick_format_warmup

    model, tok = tiny_model
    quick_format_warmup(model, tok, random_episode)
    return model, tok
