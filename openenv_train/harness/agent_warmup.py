"""Warm-up on captured traces: next-token training on the exact ids the proxy recorded.

A random tiny model never emits a parsable tool call, so every GRPO group of agent episodes
starts with equal rewards and no signal. A few steps on demonstrations (e.g. a scripted policy
played through the same proxy, harness and env: evaluation mode) teach the call format on the
very token sequences the model will later be fed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from ..rollout.records import EpisodeRecord


def record_rows(records: Sequence[EpisodeRecord]) -> list[tuple[list[int], list[int]]]:
    """``(ids, loss_mask)`` per record: the prompt and env tokens are context (mask 0)."""
    return [
        (r.prompt_ids + r.completion_ids, [0] * len(r.prompt_ids) + list(r.env_mask))
        for r in records
    ]


def trace_warmup(
    model: Any,
    tokenizer: Any,
    rows: Sequence[tuple[list[int], list[int]]],
    *,
    steps: int = 100,
    batch_size: int = 8,
    learning_rate: float = 3e-3,
    seed: int = 0,
) -> tuple[float, float]:
    """Train on model tokens of ``rows`` for ``steps`` batches; returns (first, last) loss."""
    import torch

    if not rows or steps < 1 or batch_size < 1:
        raise ValueError(f"trace_warmup: rows={len(rows)} steps={steps} batch_size={batch_size}")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rng = random.Random(seed)
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model.train()
    first = last = float("nan")
    for step in range(steps):
        batch = [rows[rng.randrange(len(rows))] for _ in range(batch_size)]
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((batch_size, width), pad, dtype=torch.long)
        labels = torch.full((batch_size, width), -100, dtype=torch.long)
        attention = torch.zeros((batch_size, width), dtype=torch.long)
        for r, (ids, mask) in enumerate(batch):
            input_ids[r, : len(ids)] = torch.tensor(ids)
            attention[r, : len(ids)] = 1
            labels[r, : len(ids)] = torch.tensor(
                [t if m else -100 for t, m in zip(ids, mask, strict=True)]
            )
        out = model(
            input_ids=input_ids.to(device),
            attention_mask=attention.to(device),
            labels=labels.to(device),
        )
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        optimizer.step()
        last = float(out.loss.detach())
        first = last if step == 0 else first
    model.eval()
    return first, last
