"""Format warm-up for tiny, randomly initialised models: teach the answer format, not a policy.

A random model almost never emits a parsable answer, so every GRPO group starts with identical
rewards and no signal. A few hundred next-token steps on well-formed episodes whose actions are
RANDOM teach the format (``hit<eos>`` / ``stand<eos>`` after ``action:``) without any preference.
Episodes are tokenized with the rollout engine's own ``TokenCodec``, so the warm-up sees exactly
the ids the engine will later feed the model.

What the loss covers matters more than it looks. On answers only (``loss_on="answers"``) the
random actions teach the model that the state does not matter: its answer distribution comes out
identical in every state, and GRPO must then break that symmetry from a near-deterministic policy,
which is slow and seed-dependent. With the env's text in the loss too (``loss_on="all"``, the
default) the model has to read the state to predict the next observation (the total after a hit,
the dealer's card again). Measured on BlackJack, that shortened GRPO's "always stand" lag (seed 0:
~700 -> 175 steps) without removing it; the README's performance section has the whole table.
``loss_on="answers"`` learns the format alone faster (:func:`quick_format_warmup`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..rollout.records import EpisodeRecord
from ..rollout.tokens import TokenCodec

#: One episode as chat turns: ("user", env text) and ("assistant", answer text) in order.
Turns = Sequence[tuple[str, str]]


def episode_ids(
    codec: TokenCodec, turns: Turns, *, env_role: str = "user"
) -> tuple[list[int], list[int]]:
    """``(ids, loss_mask)`` of one episode, built as the rollout engine builds it.

    The first turn is the prompt, each assistant answer gets EOS appended (the model ends its turn
    itself) and mask 1, and each later env turn is the codec's delta after the answer (mask 0).
    """
    if not turns or turns[0][0] == "assistant":
        raise ValueError(
            "turns: an episode starts with the env's (user) text, then alternates with answers"
        )
    eos = codec.tokenizer.eos_token_id
    if not isinstance(eos, int):
        raise ValueError("tokenizer: needs an eos_token_id (the model ends each answer with it)")
    ids = codec.prompt_ids([{"role": "user", "content": turns[0][1]}])
    mask = [0] * len(ids)
    for role, text in turns[1:]:
        if role == "assistant":
            piece = codec.encode_text(text) + [eos]
            ids += piece
            mask += [1] * len(piece)
        else:
            piece = codec.turn_ids([{"role": env_role, "content": text}])
            ids += piece
            mask += [0] * len(piece)
    return ids, mask


@dataclass
class WarmupResult:
    steps: int
    first_loss: float
    final_loss: float


def format_warmup(
    model: Any,
    tokenizer: Any,
    sample_episode: Callable[[random.Random], Turns],
    *,
    steps: int = 300,
    batch_size: int = 64,
    learning_rate: float = 3e-3,
    seed: int = 0,
    loss_on: Literal["all", "answers"] = "all",
    on_step: Callable[[int, float], None] | None = None,
) -> WarmupResult:
    """Next-token training on ``steps`` batches of fresh episodes from ``sample_episode(rng)``.

    ``loss_on``: ``"all"`` tokens after the first (env text and answers) or ``"answers"`` only (see
    the module docstring). The model is left in eval mode. Returns the losses.
    """
    if steps < 0 or batch_size < 1:
        raise ValueError(f"warmup: steps={steps} must be >= 0 and batch_size={batch_size} >= 1")
    if loss_on not in ("all", "answers"):
        raise ValueError(f"warmup: loss_on={loss_on!r}; use 'all' or 'answers'")
    codec = TokenCodec(tokenizer)
    return next_token_training(
        model,
        tokenizer,
        lambda rng: [episode_ids(codec, sample_episode(rng)) for _ in range(batch_size)],
        steps=steps,
        learning_rate=learning_rate,
        seed=seed,
        loss_on=loss_on,
        on_step=on_step,
    )


def record_rows(records: Sequence[EpisodeRecord]) -> list[tuple[list[int], list[int]]]:
    """``(ids, loss_mask)`` per recorded episode: the prompt and env tokens are context (mask 0)."""
    return [
        (r.prompt_ids + r.completion_ids, [0] * len(r.prompt_ids) + list(r.env_mask))
        for r in records
    ]


def trace_warmup(
    model: Any,
    tokenizer: Any,
    records: Sequence[EpisodeRecord],
    *,
    steps: int = 100,
    batch_size: int = 8,
    learning_rate: float = 3e-3,
    seed: int = 0,
) -> WarmupResult:
    """Warm-up on captured traces (e.g. a scripted policy played through the harness's capture
    proxy): next-token training on the model tokens of the exact ids the proxy recorded.

    A random tiny model never emits a parsable tool call, so every GRPO group of agent episodes
    starts with equal rewards; a few steps on demonstrations teach the call format on the very
    token sequences the model will later be fed.
    """
    rows = record_rows(records)
    if not rows or steps < 1 or batch_size < 1:
        raise ValueError(f"trace_warmup: records={len(rows)} steps={steps} batch_size={batch_size}")
    return next_token_training(
        model,
        tokenizer,
        lambda rng: [rows[rng.randrange(len(rows))] for _ in range(batch_size)],
        steps=steps,
        learning_rate=learning_rate,
        seed=seed,
        loss_on="answers",
    )


def chat_warmup(
    model: Any,
    tokenizer: Any,
    sample_conversation: Callable[[random.Random], list[dict[str, Any]]],
    *,
    steps: int = 200,
    batch_size: int = 32,
    learning_rate: float = 3e-3,
    seed: int = 0,
    tools: list[dict[str, Any]] | None = None,
) -> WarmupResult:
    """Next-token training on conversations rendered by the tokenizer's chat template (for
    ``environment_factory`` recipes, whose model turns are tool calls TRL parses back): teaches
    the call format and the env's text, every token in the loss. ``sample_conversation(rng)``
    gives one episode's messages with random actions (no strategy). ``tools`` (JSON schemas)
    are rendered as TRL renders them in training (a real chat template lists them up front)."""
    if steps < 0 or batch_size < 1:
        raise ValueError(f"warmup: steps={steps} must be >= 0 and batch_size={batch_size} >= 1")

    def draw(rng: random.Random) -> list[tuple[list[int], list[int]]]:
        rows = [
            tokenizer.apply_chat_template(
                sample_conversation(rng),
                tokenize=True,
                return_dict=False,
                **({"tools": tools} if tools else {}),
            )
            for _ in range(batch_size)
        ]
        return [(ids, [1] * len(ids)) for ids in rows]

    return next_token_training(
        model,
        tokenizer,
        draw,
        steps=steps,
        learning_rate=learning_rate,
        seed=seed,
        loss_on="all",
    )


def next_token_training(
    model: Any,
    tokenizer: Any,
    draw_batch: Callable[[random.Random], list[tuple[list[int], list[int]]]],
    *,
    steps: int,
    learning_rate: float,
    seed: int,
    loss_on: Literal["all", "answers"],
    on_step: Callable[[int, float], None] | None = None,
) -> WarmupResult:
    """The one supervised loop of every warm-up: ``steps`` AdamW steps on ``(ids, loss_mask)``
    batches from ``draw_batch(rng)``, right-padded; the loss covers every token (``"all"``) or the
    mask-1 tokens (``"answers"``). Leaves the model in eval mode."""
    import torch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rng = random.Random(seed)
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model.train()
    first = last = float("nan")
    for step in range(steps):
        rows = draw_batch(rng)
        width = max(len(ids) for ids, _ in rows)
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
        labels = torch.full((len(rows), width), -100, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for r, (ids, mask) in enumerate(rows):
            input_ids[r, : len(ids)] = torch.tensor(ids)
            attention[r, : len(ids)] = 1
            labels[r, : len(ids)] = torch.tensor(
                ids
                if loss_on == "all"
                else [t if m else -100 for t, m in zip(ids, mask, strict=True)]
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
        if step == 0:
            first = last
        if on_step is not None:
            on_step(step, last)
    model.eval()
    return WarmupResult(steps=steps, first_loss=first, final_loss=last)


def quick_format_warmup(
    model: Any, tokenizer: Any, sample_episode: Callable[[random.Random], Turns]
) -> WarmupResult:
    """80 fast steps on answers only: a model that answers in format within ~2 s, for tests and
    benchmarks that need multi-turn episodes (not a start for training; see ``loss_on``)."""
    return format_warmup(
        model,
        tokenizer,
        sample_episode,
        steps=80,
        batch_size=16,
        learning_rate=1e-2,
        loss_on="answers",
    )
