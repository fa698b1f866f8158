"""Tokenizer and tiny model builder: round trips through save/load and AutoTokenizer."""

from __future__ import annotations

import pytest
import torch
from blackjack_env.text_spec import VOCABULARY
from transformers import AutoModelForCausalLM, AutoTokenizer

from openenv_train.policy.tiny import (
    build_tiny_llama,
    build_word_tokenizer,
    load_tiny_model,
)


def blackjack_tokenizer():
    return build_word_tokenizer(VOCABULARY)  # the vocabulary comes from the env package


TEXTS = [
    "player 15 soft dealer A action:",
    "player 15 soft dealer A action: hit<eos> player 21 hard dealer 10 action: stand<eos>",
    "player 31 dealer 2 action: hit stand <pad> bogus",
]


def test_blackjack_vocabulary_layout():
    tok = blackjack_tokenizer()
    assert len(tok) == 41
    assert (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2)
    assert tok.convert_ids_to_tokens(list(range(3, 11))) == list(VOCABULARY[:8])
    assert tok.convert_tokens_to_ids("31") == 40
    ids = tok.encode("player 15 soft dealer A action: hit<eos>")
    assert tok.convert_ids_to_tokens(ids) == [
        "player", "15", "soft", "dealer", "A", "action:", "hit", "<eos>"
    ]  # fmt: skip
    assert tok.encode("bogus") == [tok.unk_token_id]
    assert tok.decode(ids, skip_special_tokens=True) == "player 15 soft dealer A action: hit"


def test_chat_template_joins_contents_and_ends_assistant_turns_with_eos():
    tok = blackjack_tokenizer()
    messages = [
        {"role": "user", "content": "player 15 soft dealer A action:"},
        {"role": "assistant", "content": "hit"},
        {"role": "user", "content": "player 18 hard dealer A action:"},
    ]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == "player 15 soft dealer A action: hit<eos> player 18 hard dealer A action:"
    ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    ids = ids["input_ids"] if not isinstance(ids, list) else ids
    assert ids == tok.encode(text)


def test_corpus_and_word_errors():
    tok = build_word_tokenizer(["go"], corpus=["go left<eos>", "right  go"])
    assert tok.convert_ids_to_tokens(list(range(len(tok)))) == [
        "<pad>", "<eos>", "<unk>", "go", "left", "right"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="words"):
        build_word_tokenizer(["two words"])
    with pytest.raises(ValueError, match="empty"):
        build_word_tokenizer([])


def test_tiny_llama_shape_and_head_dim_guard():
    tok = blackjack_tokenizer()
    model = build_tiny_llama(tok)
    assert model.config.head_dim == 32 and model.config.tie_word_embeddings
    assert 80_000 < sum(p.numel() for p in model.parameters()) < 90_000
    with pytest.raises(ValueError, match="head_dim"):
        build_tiny_llama(tok, num_heads=4)
    same = build_tiny_llama(tok)
    assert all(
        torch.equal(a, b) for a, b in zip(model.parameters(), same.parameters(), strict=True)
    )


def test_save_load_round_trip(tiny_pair, tiny_dir):
    model, tok = tiny_pair
    loaded_model, loaded_tok = load_tiny_model(tiny_dir)
    auto_tok = AutoTokenizer.from_pretrained(tiny_dir)  # what vLLM and TRL do given a path
    for text in TEXTS:
        ids = tok.encode(text)
        assert loaded_tok.encode(text) == ids
        assert auto_tok.encode(text) == ids
        assert loaded_tok.decode(ids) == tok.decode(ids) == auto_tok.decode(ids)
    assert loaded_tok.padding_side == "left"
    assert loaded_tok.get_vocab() == tok.get_vocab() == auto_tok.get_vocab()
    x = torch.tensor([tok.encode(TEXTS[1])])
    with torch.no_grad():
        torch.testing.assert_close(loaded_model(x).logits, model(x).logits, rtol=0, atol=0)
        auto_model = AutoModelForCausalLM.from_pretrained(tiny_dir)
        torch.testing.assert_close(auto_model(x).logits, model(x).logits, rtol=0, atol=0)


def test_load_missing_dir_names_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="save_tiny_model"):
        load_tiny_model(tmp_path)
