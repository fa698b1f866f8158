"""A tiny ChatML model for the notes task, built locally (no hub): a byte-level BPE tokenizer
trained on the task's own text (so any text, JSON tool calls included, round-trips) and a small
random Llama. For CPU tests, the notebook and the benchmark; not a model that solves the task."""

from __future__ import annotations

import json
from typing import Any

from openenv_train.agents.react_agent import SYSTEM

from .server.environment import NotesEnv, notes_task
from .solver import scripted_answer


def _corpus() -> list[str]:
    tools = [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in (spec.tool for spec in NotesEnv.tool_specs().values())
    ]
    texts = [SYSTEM, json.dumps(tools)]
    for seed in range(64):
        task = notes_task(seed)
        texts += [
            task.question,
            *task.notes.values(),
            "submitted",
            f"The order costs {float(task.answer)}.",
        ]
        transcript = f"<|im_start|>tool\n{task.notes['order']}<|im_end|>"
        texts.append(scripted_answer(""))
        texts.append(scripted_answer(transcript))
        texts.append(
            scripted_answer(transcript + f"<|im_start|>tool\n{task.notes[task.item]}<|im_end|>")
        )
    return texts


def notes_tokenizer(vocab_size: int = 512) -> Any:
    """Byte-level BPE with ChatML special tokens and chat template; EOS is ``<|im_end|>``."""
    from openenv_train.policy.tiny import build_chatml_tokenizer

    return build_chatml_tokenizer(_corpus(), vocab_size=vocab_size)


def notes_model(tokenizer: Any, seed: int = 0) -> Any:
    """A ~100k-parameter random Llama sized for ``tokenizer`` (contexts up to 2048 tokens)."""
    from openenv_train.policy.tiny import build_tiny_llama

    return build_tiny_llama(tokenizer, max_position_embeddings=2048, seed=seed)
