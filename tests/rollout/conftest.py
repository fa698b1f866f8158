"""Real BlackJack servers on loopback, the 41-token tokenizer of the env's vocabulary, a tiny Llama
taught the format."""

from __future__ import annotations

import pytest
from bj_checks import APP
from blackjack_env.text_spec import VOCABULARY, basic_strategy_answer, random_episode

from openenv_train.policy.tiny import build_tiny_llama, build_word_tokenizer
from openenv_train.rollout import ScriptedPolicy
from openenv_train.runtime import start_local_servers


@pytest.fixture(scope="module")
def servers():
    """Two BlackJack servers (module scope: failure tests kill their own)."""
    with start_local_servers(APP, 2) as group:
        yield group


@pytest.fixture(scope="session")
def tokenizer():
    return build_word_tokenizer(VOCABULARY)


@pytest.fixture
def scripted(tokenizer):
    return ScriptedPolicy(tokenizer, basic_strategy_answer, tail_tokens=12)


@pytest.fixture(scope="session")
def format_model(tokenizer):
    """The default tiny Llama after 80 next-token steps on random-action episodes: it answers
    ``hit<eos>``/``stand<eos>`` almost always, so multi-turn episodes happen (~2 s on one thread;
    more threads only fight the servers for the 2 cores)."""
    import torch

    from openenv_train.training import quick_format_warmup

    model = build_tiny_llama(tokenizer, seed=7)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        quick_format_warmup(model, tokenizer, random_episode)
    torch.set_num_threads(threads)
    return model.eval()
