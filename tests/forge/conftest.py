"""Real BlackJack servers on loopback and a real tiny Llama (format warm-up) saved to a folder."""

from __future__ import annotations

import pytest
from blackjack_env.text_spec import VOCABULARY, random_episode

from openenv_train.policy.tiny import build_tiny_model, load_tiny_model, save_tiny_model
from openenv_train.runtime import start_local_servers

APP = "blackjack_env.server.app:app"


@pytest.fixture(scope="module")
def servers():
    with start_local_servers(APP, 1) as group:
        yield group


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    """The tiny BlackJack Llama after a short format warm-up (it answers hit/stand), on disk."""
    import torch

    from openenv_train.training import quick_format_warmup

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model, tokenizer = build_tiny_model(VOCABULARY, seed=3)
        quick_format_warmup(model, tokenizer, random_episode)
    torch.set_num_threads(threads)
    return str(save_tiny_model(model, tokenizer, tmp_path_factory.mktemp("forge") / "model"))


@pytest.fixture
def model_and_tokenizer(model_dir):
    return load_tiny_model(model_dir)
