"""The policy model of a GRPO recipe: a tiny Llama over an env's words (or the words of a text
corpus), a saved folder or a hub model; then a warm-up (``warmup.py``) of the ``model`` section."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from .config import GRPORun

console = Console()


def load_model(
    cfg: GRPORun,
    vocabulary: Iterable[str] = (),
    *,
    corpus: Iterable[str] = (),
    tokenizer_attrs: Mapping[str, Any] | None = None,
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of the ``model`` section: ``path: null`` builds the tiny Llama over
    ``vocabulary`` and every word of ``corpus``; ``tokenizer_attrs`` are set on the tokenizer
    (e.g. a tool recipe's ``chat_template``). Moved to CUDA unless ``grpo.use_cpu``."""
    from openenv_train.policy.tiny import load_tiny_model

    m = cfg.model
    if m.path is None:
        model, tokenizer = build_tiny(m.tiny, vocabulary, corpus=corpus)
    elif getattr(m, "hub", False):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from .checks import check_hub_model
        from .config import ConfigError

        try:  # offline: one line now, not a traceback after the download's retries
            check_hub_model(m.path)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        tokenizer = AutoTokenizer.from_pretrained(m.path)
        model = AutoModelForCausalLM.from_pretrained(m.path)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
    else:
        model, tokenizer = load_tiny_model(m.path)
    for name, value in (tokenizer_attrs or {}).items():
        setattr(tokenizer, name, value)
    if getattr(m, "chat_template_kwargs", None):  # e.g. Qwen3's enable_thinking=False
        tokenizer.apply_chat_template = functools.partial(
            tokenizer.apply_chat_template, **m.chat_template_kwargs
        )
    if not cfg.grpo.use_cpu:
        import torch

        if torch.cuda.is_available():
            model.to("cuda")
    nparams = sum(p.numel() for p in model.parameters())
    console.print(f"model: {m.path or 'tiny Llama (built here)'}, {nparams:,} parameters")
    return model, tokenizer


def apply_lora(
    model: Any, tokenizer: Any, cfg: GRPORun, run_dir: Path, *, resume: bool = False
) -> Any:
    """``model`` with the ``lora`` section's adapters (as is when ``lora.r`` is 0), called after
    the warm-up: the base it trains on (warm-up included) is saved to ``run_dir/base`` first, so
    ``model/`` can hold only the adapter. Resuming, the base comes back from there (the trainer
    checkpoint holds only the adapter)."""
    from pathlib import Path

    from openenv_train.policy import lora

    section = getattr(cfg, "lora", None)
    if section is None or not section.enabled:
        return model
    base = Path(run_dir) / "base"
    if resume and (base / "config.json").is_file():
        from transformers import AutoModelForCausalLM

        saved = AutoModelForCausalLM.from_pretrained(base, dtype=model.dtype)
        model.load_state_dict(saved.state_dict())
    else:
        model.save_pretrained(base)
        tokenizer.save_pretrained(base)
    wrapped = lora.wrap(
        model,
        lora.lora_config(section.r, section.alpha, section.dropout, section.target_modules),
    )
    trainable, total = wrapped.get_nb_trainable_parameters()
    console.print(
        f"LoRA r={section.r} on {section.target_modules}: {trainable:,} of {total:,} parameters "
        f"train ({trainable / total:.1%}); base saved in {base}"
    )
    return wrapped


def build_tiny(
    t: Any, vocabulary: Iterable[str] = (), *, corpus: Iterable[str] = ()
) -> tuple[Any, Any]:
    """``(model, tokenizer)``: the tiny Llama of a ``model.tiny`` section over ``vocabulary``
    and the words of ``corpus``."""
    from openenv_train.policy.tiny import build_tiny_llama, build_word_tokenizer

    tokenizer = build_word_tokenizer(list(vocabulary) or None, corpus=list(corpus) or None)
    model = build_tiny_llama(
        tokenizer,
        hidden_size=t.hidden_size,
        num_layers=t.num_layers,
        num_heads=t.num_heads,
        intermediate_size=t.intermediate_size,
        initializer_range=t.init_std,
        seed=t.seed,
    )
    return model, tokenizer


def warm_up(
    model: Any,
    tokenizer: Any,
    m: Any,
    seed: int,
    log: Callable[[str, int, dict[str, Any]], None],
    sample_episode: Callable[..., Any],
    *,
    chat: bool = False,
    tools: list[dict[str, Any]] | None = None,
) -> None:
    """The warm-up of the ``model`` section (``warmup_steps`` batches; nothing when 0), printed
    and logged as a ``warmup`` record: the format warm-up on ``sample_episode(rng)`` turns, or
    with ``chat`` the chat-template warm-up on ``sample_episode(rng)`` conversations (tools)."""
    from openenv_train.training.warmup import chat_warmup, format_warmup

    if not m.warmup_steps:
        return
    t0 = time.perf_counter()
    sizes = dict(
        steps=m.warmup_steps,
        batch_size=m.warmup_batch_size,
        learning_rate=m.warmup_learning_rate,
        seed=seed,
    )
    if chat:
        res = chat_warmup(model, tokenizer, sample_episode, tools=tools, **sizes)
    else:
        res = format_warmup(model, tokenizer, sample_episode, loss_on=m.warmup_loss_on, **sizes)
    secs = time.perf_counter() - t0
    console.print(
        f"{'chat-' if chat else ''}format warm-up: {res.steps} steps, loss {res.first_loss:.3f} -> {res.final_loss:.3f} ({secs:.1f}s)"
    )
    stats = {"steps": res.steps, "first_loss": res.first_loss, "final_loss": res.final_loss}
    log("warmup", 0, {**stats, "seconds": secs})


def load_tokenizer(m: Any) -> Any:
    """The tokenizer of a ``model`` section's saved folder or hub id: a folder with
    ``tokenizer.json`` loads as our word-level tokenizer (never a model-type specific class, see
    ``load_tiny_tokenizer``); anything else through transformers. A missing folder names
    ``model.path`` and the fix."""
    from .config import ConfigError

    path = Path(m.path)
    if not m.hub and not path.is_dir():
        raise ConfigError(f"model.path: {path} is not a folder (set model.hub: true for a hub id)")
    if not m.hub and (path / "tokenizer.json").is_file():
        from openenv_train.policy.tiny import load_tiny_tokenizer

        return load_tiny_tokenizer(path)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(m.path)
