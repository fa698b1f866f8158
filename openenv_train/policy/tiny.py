"""Tiny, locally built tokenizers and Llama models, for tests, CI and CPU recipes.

Nothing here touches a model hub or knows a game: the tokenizer is a word-level ``tokenizers``
model over a vocabulary the env package provides (``TextEnvSpec.vocabulary``, e.g.
``blackjack_env.text_spec.VOCABULARY``) or read from its text, wrapped as a
``PreTrainedTokenizerFast``; the model is a randomly initialised ``LlamaForCausalLM``. Llama (not Qwen2) on purpose: for a ``qwen2`` folder
``AutoTokenizer`` (and so vLLM and TRL given only a path) rebuilds a Qwen2Tokenizer that silently
mis-tokenizes a local vocabulary; for a ``llama`` folder saved from here it loads the same
tokenizer back (the tests check both). Heads are sized so that ``head_dim >= 32``, the smallest
head size vLLM's CPU attention backend accepts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, EOS, UNK)

#: Joins message contents with single spaces; an assistant turn ends with the EOS token, the
#: format the policy is trained to emit (``hit<eos>``). ``add_generation_prompt`` adds nothing:
#: the model answers right after the last message.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if not loop.first %} {% endif -%}"
    "{{- message['content'] | trim -}}"
    "{%- if message['role'] == 'assistant' %}{{ eos_token }}{% endif -%}"
    "{%- endfor -%}"
)


def _vocabulary_from(words: Iterable[str] | None, corpus: Iterable[str] | None) -> list[str]:
    vocab: list[str] = list(SPECIAL_TOKENS)
    seen = set(vocab)

    def add(word: str) -> None:
        if word and word not in seen:
            seen.add(word)
            vocab.append(word)

    for word in words or ():
        if not isinstance(word, str) or not word or re.search(r"\s", word):
            raise ValueError(
                f"words: {word!r} is not a single whitespace-free string; "
                "pass one word per entry (or give running text as corpus=)"
            )
        add(word)
    for text in corpus or ():
        for special in SPECIAL_TOKENS:
            text = text.replace(special, f" {special} ")
        for word in text.split():
            add(word)
    return vocab


def missing_words(vocabulary: Iterable[str], texts: Iterable[str]) -> list[str]:
    """The words of ``texts`` (split as the word tokenizer splits them) that ``vocabulary`` lacks,
    in first-seen order: each would silently become ``<unk>``."""
    known = set(vocabulary) | set(SPECIAL_TOKENS)
    return [w for w in _vocabulary_from(None, texts) if w not in known]


def build_word_tokenizer(
    words: Iterable[str] | None = None,
    *,
    corpus: Iterable[str] | None = None,
    model_max_length: int = 512,
) -> Any:
    """Build a word-level ``PreTrainedTokenizerFast`` (ids in first-seen order, specials first).

    ``words`` lists the vocabulary directly; ``corpus`` adds every whitespace-separated word of
    each text. Ids are ``<pad>=0, <eos>=1, <unk>=2``, then the words. Text is split on
    whitespace only (``"action:"`` stays one token), special tokens are recognised even when
    glued to a word (``"hit<eos>"`` -> ``hit``, ``<eos>``), no BOS is added, and decoding joins
    tokens with single spaces. Unknown words map to ``<unk>``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = _vocabulary_from(words, corpus)
    if len(vocab) == len(SPECIAL_TOKENS):
        raise ValueError("words/corpus: the vocabulary is empty; pass at least one word")
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token=UNK))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=PAD,
        eos_token=EOS,
        unk_token=UNK,
        model_max_length=model_max_length,
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_tiny_llama(
    tokenizer: Any,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 2,
    intermediate_size: int | None = None,
    max_position_embeddings: int = 512,
    tie_word_embeddings: bool = True,
    seed: int = 0,
    **config_overrides: Any,
) -> Any:
    """A randomly initialised ``LlamaForCausalLM`` (fp32, eval mode) sized for ``tokenizer``.

    Defaults give ~85k parameters with a 41-word vocabulary (hidden 64, 2 layers, 2 heads of 32,
    MLP 128, tied embeddings), the size that learns BlackJack's basic strategy on a CPU in minutes. ``seed``
    makes the weights reproducible without touching the global torch RNG.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    if hidden_size % num_heads:
        raise ValueError(
            f"hidden_size={hidden_size} is not divisible by num_heads={num_heads}; "
            "choose num_heads so that hidden_size / num_heads is an integer >= 32"
        )
    head_dim = hidden_size // num_heads
    if head_dim < 32:
        raise ValueError(
            f"head_dim = hidden_size / num_heads = {head_dim} < 32: vLLM's CPU attention rejects it; "
            f"use num_heads <= {max(1, hidden_size // 32)} or a larger hidden_size"
        )
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or 2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        head_dim=head_dim,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=tie_word_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        **config_overrides,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = None
    return model.float().eval()


def save_tiny_model(model: Any, tokenizer: Any, directory: str | Path) -> Path:
    """Save model and tokenizer into one folder that transformers, TRL and vLLM can load."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def load_tiny_tokenizer(directory: str | Path) -> Any:
    """Load the tokenizer with ``PreTrainedTokenizerFast``, never a model-type specific class:
    ``AutoTokenizer`` on a ``qwen2`` folder rebuilds a ``Qwen2Tokenizer`` that splits a locally
    trained vocabulary differently ("player" -> "play", "er"), so rewards stay flat."""
    from transformers import PreTrainedTokenizerFast

    path = Path(directory)
    if not (path / "tokenizer.json").is_file():
        raise FileNotFoundError(
            f"directory: {path} has no tokenizer.json; save one with save_tiny_model(model, tokenizer, dir)"
        )
    tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
    tokenizer.padding_side = "left"
    return tokenizer


def load_tiny_model(directory: str | Path, *, dtype: Any = None) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` saved by :func:`save_tiny_model` (fp32 unless ``dtype``); a
    LoRA adapter folder of a run (``policy/lora.py``) loads merged into its base."""
    import torch
    from transformers import AutoModelForCausalLM

    from .lora import is_adapter_dir, load_adapter_model

    tokenizer = load_tiny_tokenizer(directory)
    if is_adapter_dir(directory):
        return load_adapter_model(directory, dtype=dtype).eval(), tokenizer
    model = AutoModelForCausalLM.from_pretrained(Path(directory), dtype=dtype or torch.float32)
    return model.eval(), tokenizer


#: ChatML, as real chat models format turns (tools listed in a system turn, an optional ``name``
#: per message); the assistant's turn ends with ``<|im_end|>``, the EOS token.
CHATML_TEMPLATE = (
    "{%- if tools %}<|im_start|>system{{ '\\n' }}Tools: {{ tools | tojson }}<|im_end|>{{ '\\n' }}{% endif -%}"
    "{%- for m in messages -%}"
    "<|im_start|>{{ m['role'] }}{% if m.get('name') %} {{ m['name'] }}{% endif %}{{ '\\n' }}"
    "{{ m['content'] }}<|im_end|>{{ '\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif -%}"
)


def build_chatml_tokenizer(corpus: Iterable[str], *, vocab_size: int = 400) -> Any:
    """A byte-level BPE tokenizer trained on ``corpus`` with ChatML special tokens and template,
    for agent and tool-calling tests: byte-level, so any text (JSON tool calls included) encodes
    and decodes losslessly, as with real chat models. EOS is ``<|im_end|>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|pad|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    backend.train_from_iterator(list(corpus) * 4, trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<|pad|>",
        eos_token="<|im_end|>",
        clean_up_tokenization_spaces=False,
    )
    tok.chat_template = CHATML_TEMPLATE
    return tok


def build_tiny_model(
    vocabulary: Iterable[str], directory: str | Path | None = None, **model_kwargs: Any
) -> tuple[Any, Any]:
    """``(model, tokenizer)``: :func:`build_word_tokenizer` over ``vocabulary`` (an env's
    ``TextEnvSpec.vocabulary``) and :func:`build_tiny_llama` for it; saved to ``directory`` when
    given."""
    tokenizer = build_word_tokenizer(vocabulary)
    model = build_tiny_llama(tokenizer, **model_kwargs)
    if directory is not None:
        save_tiny_model(model, tokenizer, directory)
    return model, tokenizer
