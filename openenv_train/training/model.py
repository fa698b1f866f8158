"""The policy model of a GRPO recipe: a tiny Llama over an env's words, a saved folder or a hub
model; then the format warm-up on the env's random-action episodes."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console

console = Console()


def load_model(
    cfg: Any,
    vocabulary: Sequence[str],
    sample_episode: Callable[..., Any] | None,
    log: Callable[[str, int, dict[str, Any]], None],
    *,
    warmup: bool = True,
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of the ``model`` section (``path: null`` builds the tiny Llama over
    ``vocabulary``), moved to CUDA unless ``grpo.use_cpu``, then warmed up on ``sample_episode``
    games (``model.warmup_steps``; skipped when ``warmup`` is false, e.g. on resume)."""
    from openenv_train.policy.tiny import load_tiny_model

    m = cfg.model
    if m.path is None:
        model, tokenizer = build_tiny(m.tiny, vocabulary)
    elif m.hub:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(m.path)
        model = AutoModelForCausalLM.from_pretrained(m.path)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
    else:
        model, tokenizer = load_tiny_model(m.path)
    if m.chat_template_kwargs:  # e.g. Qwen3's enable_thinking=False, for every templated prompt
        tokenizer.apply_chat_template = functools.partial(
            tokenizer.apply_chat_template, **m.chat_template_kwargs
        )
    if not cfg.grpo.use_cpu:
        import torch

        if torch.cuda.is_available():
            model.to("cuda")
    nparams = sum(p.numel() for p in model.parameters())
    console.print(f"model: {m.path or 'tiny Llama (built here)'}, {nparams:,} parameters")
    if warmup and sample_episode is not None:
        warm_up(model, tokenizer, m, cfg.seed, log, sample_episode)
    return model, tokenizer


def build_tiny(t: Any, vocabulary: Sequence[str]) -> tuple[Any, Any]:
    """``(model, tokenizer)``: the tiny Llama of a ``model.tiny`` section over ``vocabulary``."""
    from openenv_train.policy.tiny import build_tiny_model

    return build_tiny_model(
        vocabulary,
        hidden_size=t.hidden_size,
        num_layers=t.num_layers,
        num_heads=t.num_heads,
        intermediate_size=t.intermediate_size,
        initializer_range=t.init_std,
        seed=t.seed,
    )


def warm_up(
    model: Any,
    tokenizer: Any,
    m: Any,
    seed: int,
    log: Callable[[str, int, dict[str, Any]], None],
    sample_episode: Callable[..., Any],
) -> None:
    """The format warm-up of the ``model`` section (``warmup_steps`` batches of random-action
    games; nothing when 0), printed and logged as a ``warmup`` record."""
    from openenv_train.training import format_warmup

    if not m.warmup_steps:
        return
    t0 = time.perf_counter()
    res = format_warmup(
        model,
        tokenizer,
        sample_episode,
        steps=m.warmup_steps,
        batch_size=m.warmup_batch_size,
        learning_rate=m.warmup_learning_rate,
        seed=seed,
        loss_on=m.warmup_loss_on,
    )
    secs = time.perf_counter() - t0
    console.print(
        f"format warm-up: {res.steps} steps, loss {res.first_loss:.3f} -> {res.final_loss:.3f} ({secs:.1f}s)"
    )
    stats = {"steps": res.steps, "first_loss": res.first_loss, "final_loss": res.final_loss}
    log("warmup", 0, {**stats, "seconds": secs})
