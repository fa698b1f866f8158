"""Checks shared by the BlackJack rollout tests (imported by test modules of this folder)."""

from __future__ import annotations

import re

from blackjack_env.text_spec import parse_answer

APP = "blackjack_env.server.app:app"
DECISION = re.compile(r"^player \d+ (soft|hard) dealer (A|[2-9]|10) action:$")


def segments(record):
    """Split a record's completion into (mask, ids) runs."""
    runs, start = [], 0
    mask = record.env_mask
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            runs.append((mask[start], record.completion_ids[start:i]))
            start = i
    return runs


def check_blackjack_record(record, tokenizer, *, invalid_reward=-1.0):
    """Every structural promise of a BlackJack episode record."""
    n = len(record.completion_ids)
    assert n > 0
    assert len(record.logprobs) == n and len(record.env_mask) == n
    assert set(record.env_mask) <= {0, 1} and record.env_mask[0] == 1 and record.env_mask[-1] == 1
    assert record.reward in (-1.0, 0.0, 1.0, invalid_reward)
    # the prompt is one decision
    assert DECISION.match(tokenizer.decode(record.prompt_ids)), tokenizer.decode(record.prompt_ids)
    runs = segments(record)
    model_runs = [ids for m, ids in runs if m == 1]
    env_runs = [ids for m, ids in runs if m == 0]
    assert len(model_runs) == record.num_turns == len(env_runs) + 1
    for ids in env_runs:  # env turns are exactly the next decision, no special tokens
        assert DECISION.match(tokenizer.decode(ids)), tokenizer.decode(ids)
    for ids in model_runs[:-1]:  # every model turn that led to another was a valid hit
        assert tokenizer.decode(ids) in ("hit <eos>", "hit")
    last = tokenizer.decode(model_runs[-1], skip_special_tokens=True)
    if record.metrics["invalid_actions"]:
        assert parse_answer(last) is None and record.reward == invalid_reward
    else:
        assert parse_answer(last) is not None
        assert model_runs[-1][-1] == tokenizer.eos_token_id  # the EOS the model made stays in
    # env tokens carry no logprob; the record is exactly what the model saw: decode -> encode
    assert all(lp == 0.0 for lp, m in zip(record.logprobs, record.env_mask, strict=True) if m == 0)
    full = record.prompt_ids + record.completion_ids
    assert tokenizer.encode(tokenizer.decode(full), add_special_tokens=False) == full
