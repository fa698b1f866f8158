"""The tiny BlackJack Llama the policy and vLLM tests share: prompts for it, its saved folder,
and reference logprobs from one plain forward pass.

Both venvs import this module (.venv and .venv-vllm, which has its own torch): torch is imported
inside the functions that need it, so importing the module costs nothing.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest


def bj_prompts(tok: Any, n: int, seed: int = 0) -> list[list[int]]:
    """``n`` BlackJack prompts of different lengths (so left padding matters), as token ids."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = f"player {rng.randint(4, 21)} soft dealer {rng.choice(['A', '7', '10'])} action:"
        for _ in range(i % 3):
            text += f" hit<eos> player {rng.randint(12, 21)} hard dealer 5 action:"
        out.append(tok.encode(text))
    return out


def reference_logprobs(
    model: Any, prompt: list[int], completion: list[int], temperature: float = 1.0, top_k: int = 0
) -> list[float]:
    """log p(token) of ``completion`` from one unpadded fp32 forward pass over prompt + completion:
    what a policy's own logprobs are checked against."""
    import torch

    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].float() / temperature
    if top_k:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    logp = torch.log_softmax(logits, dim=-1)
    return logp.gather(-1, torch.tensor(completion)[:, None]).squeeze(-1).tolist()


@pytest.fixture(scope="session")
def tiny_dir(tiny_pair: tuple[Any, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test directory's ``tiny_pair`` (model, tokenizer; its conftest says which) saved as a
    model folder, loadable by path as vLLM and TRL load one. Registered for every directory by
    ``pytest_plugins`` in the root conftest."""
    from openenv_train.policy.tiny import save_tiny_model

    model, tokenizer = tiny_pair
    return save_tiny_model(model, tokenizer, tmp_path_factory.mktemp("tiny_bj"))
