"""A tiny Llama, fresh or format-warmed, for the trainer tests (servers: ``shared_servers``)."""

from __future__ import annotations

import pytest


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
