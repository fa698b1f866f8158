"""Random-initialised real chat architectures (Qwen3, Llama 3) with BPE tokenizers trained here and
the real chat templates, tool calling included: the models users train, with no hub download.

A model is small (a few layers, narrow) but everything around it is the real thing: the
``Qwen3ForCausalLM`` / ``LlamaForCausalLM`` classes, a byte-level BPE tokenizer carrying the
family's special tokens, and the family's chat template verbatim, so TRL recognises it
(``environment_factory`` parses tool calls by the template's identity) and multi-turn rollouts
meet the same token boundaries (``<|im_end|>``, ``<|eot_id|>``, ``<tool_call>``) as with a
downloaded checkpoint.

The templates in ``chat_templates/`` are copied byte for byte from the model repositories as
TRL 1.16 ships them for identity checks: ``qwen3.jinja`` from Qwen/Qwen3 (Apache License 2.0,
Copyright Alibaba Cloud), ``llama3_2.jinja`` from meta-llama/Llama-3.2 (Llama 3.2 Community
License, Copyright Meta Platforms, Inc.; Llama 3.2 is licensed under it). Both licences allow
redistributing them with that notice; a test keeps them identical to TRL's copies.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

TEMPLATES = Path(__file__).parent / "chat_templates"

Family = Literal["qwen3", "llama3"]


@dataclass(frozen=True)
class ChatFamily:
    """What a family's tokenizer must carry for its template: special tokens, EOS, pad, BOS."""

    template_file: str
    special_tokens: tuple[str, ...]
    eos: str
    pad: str
    bos: str | None = None


FAMILIES: dict[str, ChatFamily] = {
    "qwen3": ChatFamily(
        "qwen3.jinja",
        (
            "<|endoftext|>",
            "<|im_start|>",
            "<|im_end|>",
            "<tool_call>",
            "</tool_call>",
            "<tool_response>",
            "</tool_response>",
            "<think>",
            "</think>",
        ),
        eos="<|im_end|>",
        pad="<|endoftext|>",
    ),
    "llama3": ChatFamily(
        "llama3_2.jinja",
        (
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eot_id|>",
            "<|eom_id|>",
            "<|python_tag|>",
            "<|finetune_right_pad_id|>",
        ),
        eos="<|eot_id|>",
        pad="<|finetune_right_pad_id|>",
        bos="<|begin_of_text|>",
    ),
}

#: Text every tokenizer learns merges from beside the caller's corpus: chat and tool-call syntax.
BASE_CORPUS = (
    'system user assistant tool {"name": "guess", "arguments": {"number": 42}} '
    '{"name": "step", "parameters": {"action": "hit"}} '
    "You are a helpful assistant. Cutting Knowledge Date: December 2023 Today Date: "
    "Environment: ipython  function Given the following functions, please respond with a JSON. "
    "# Tools You may call one or more functions to assist with the user query. "
    "<tools></tools> For each function call, return a json object with function name and "
    "arguments within XML tags: higher lower correct hit stand 0 1 2 3 4 5 6 7 8 9 10 21"
)


def chat_template(family: Family) -> str:
    """The family's chat template, verbatim."""
    return (TEMPLATES / _family(family).template_file).read_text(encoding="utf-8")


def family_of(template: str | None) -> str | None:
    """The family whose real chat template ``template`` is, else None (a custom template)."""
    for name in FAMILIES:
        if template and template == chat_template(name):  # type: ignore[arg-type]
            return name
    return None


def _family(family: str) -> ChatFamily:
    if family not in FAMILIES:
        raise ValueError(f"family: {family!r} is not one of {sorted(FAMILIES)}")
    return FAMILIES[family]


def build_chat_tokenizer(
    family: Family, corpus: Iterable[str] = (), *, vocab_size: int = 600
) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``corpus`` (and chat syntax) with
    ``family``'s special tokens and chat template: any text round-trips exactly."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    f = _family(family)
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(f.special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    backend.train_from_iterator([BASE_CORPUS, *corpus] * 4, trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=f.eos,
        pad_token=f.pad,
        bos_token=f.bos,
        clean_up_tokenization_spaces=False,
    )
    tok.chat_template = chat_template(family)
    tok.padding_side = "left"
    return tok


def build_chat_model(
    family: Family,
    corpus: Iterable[str] = (),
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 2,
    num_kv_heads: int = 1,
    intermediate_size: int = 128,
    vocab_size: int = 600,
    initializer_range: float = 0.02,
    seed: int = 0,
) -> tuple[Any, Any]:
    """``(model, tokenizer)``: a random-initialised ``Qwen3ForCausalLM`` or ``LlamaForCausalLM``
    (grouped-query attention, head size ``hidden_size / num_heads``: keep it >= 32 for vLLM's CPU
    backend) and :func:`build_chat_tokenizer`."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen3Config

    tok = build_chat_tokenizer(family, corpus, vocab_size=vocab_size)
    common = dict(
        vocab_size=len(tok),
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        head_dim=hidden_size // num_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=4096,
        initializer_range=initializer_range,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        tie_word_embeddings=True,
    )
    config = Qwen3Config(**common) if family == "qwen3" else LlamaConfig(**common)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return model, tok


def save_chat_model(model: Any, tokenizer: Any, directory: str | Path) -> Path:
    """Save for ``model.path`` in any recipe (loaded with ``PreTrainedTokenizerFast``)."""
    directory = Path(directory)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
