"""Real BlackJack servers on loopback, the real 41-token tokenizer, a tiny Llama taught the format."""

from __future__ import annotations

import random

import pytest
from bj_checks import APP
from blackjack_env.text_spec import basic_strategy_answer, random_episode_text

from openenv_train.policy.tiny import blackjack_tokenizer, build_tiny_llama
from openenv_train.rollout import ScriptedPolicy
from openenv_train.runtime import start_local_servers


@pytest.fixture(scope="module")
def servers():
    """Two BlackJack servers (module scope: failure tests kill their own)."""
    with start_local_servers(APP, 2) as group:
        yield group


@pytest.fixture(scope="session")
def tokenizer():
    return blackjack_tokenizer()


@pytest.fixture
def scripted(tokenizer):
    return ScriptedPolicy(tokenizer, basic_strategy_answer, tail_tokens=12)


@pytest.fixture(scope="session")
def format_model(tokenizer):
    """The default tiny Llama after 80 next-token steps on random-action episodes: it answers
    ``hit<eos>``/``stand<eos>`` almost always, so multi-turn episodes happen (~2 s on one thread;
    more threads only fight the servers for the 2 cores)."""
    import torch

    model = build_tiny_llama(tokenizer, seed=7)
    rng = random.Random(0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for _ in range(80):
            rows = [tokenizer.encode(random_episode_text(rng)) for _ in range(16)]
            width = max(map(len, rows))
            ids = torch.full((len(rows), width), tokenizer.pad_token_id)
            labels = torch.full((len(rows), width), -100)
            for i, r in enumerate(rows):
                ids[i, : len(r)] = torch.tensor(r)
                labels[i, : len(r)] = torch.tensor(r)
            loss = model(input_ids=ids, attention_mask=(labels != -100).long(), labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    torch.set_num_threads(threads)
    return model.eval()
