"""Reference logprobs from transformers in fp32, and BlackJack prompts."""

from __future__ import annotations

import random

import torch

#: The tiny_dir model is trained to answer this with ``stand<eos>``.
EOS_PROMPT = "player 20 hard dealer 6 action:"


def bj_prompts(tok, n: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = f"player {rng.randint(4, 21)} soft dealer {rng.choice(['A', '7', '10'])} action:"
        for _ in range(i % 3):
            text += f" hit<eos> player {rng.randint(12, 21)} hard dealer 5 action:"
        out.append(tok.encode(text))
    return out


def hf_logprobs(
    model, prompt: list[int], completion: list[int], temperature: float = 1.0
) -> list[float]:
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].float() / temperature
    logp = torch.log_softmax(logits, dim=-1)
    return logp.gather(-1, torch.tensor(completion)[:, None]).squeeze(-1).tolist()
