"""The format warm-up feeds exactly the engine's token layout and teaches the answer format."""

from __future__ import annotations

import asyncio
import random

from openenv_train.rollout.engine import RolloutConfig, RolloutEngine
from openenv_train.rollout.scripted import ScriptedPolicy
from openenv_train.rollout.tokens import TokenCodec
from openenv_train.training import format_warmup
from openenv_train.training.warmup import episode_ids


def test_episode_ids_match_what_the_engine_records(
    blackjack_servers: list[str], tiny_model
) -> None:
    from blackjack_env.text_spec import BlackjackTextSpec

    _model, tok = tiny_model
    policy = ScriptedPolicy(
        tok, lambda text: "hit" if int(text.split("player")[-1].split()[0]) < 15 else "stand"
    )

    async def run():
        async with RolloutEngine(
            BlackjackTextSpec(seed=5), policy, blackjack_servers[:1], RolloutConfig()
        ) as e:
            return await e.run(["x"] * 16, 1)

    batch = asyncio.run(run())
    codec = TokenCodec(tok)
    multi = 0
    for rec in batch.records:
        text = tok.decode(rec.prompt_ids + rec.completion_ids)
        # rebuild the turns from the decoded episode, then tokenize them as the warm-up does
        turns, parts = [], text.replace("<eos>", " <eos> ").split("<eos>")
        for i, part in enumerate(p.strip() for p in parts if p.strip()):
            words = part.split()
            state, answer = " ".join(words[:-1]), words[-1]
            turns += [("user", state if i == 0 else " " + state), ("assistant", answer)]
        ids, mask = episode_ids(codec, turns)
        assert ids == rec.prompt_ids + rec.completion_ids
        assert mask[len(rec.prompt_ids) :] == rec.env_mask
        multi += rec.num_turns > 1
    assert multi > 0  # some episodes had env text between model turns


def test_warmup_teaches_the_format_without_a_policy(tiny_model) -> None:
    from blackjack_env.evaluation import evaluate_policy
    from blackjack_env.text_spec import random_episode

    from openenv_train.policy.transformers_policy import TransformersPolicy

    model, tok = tiny_model
    policy = TransformersPolicy(model, tok)
    before = evaluate_policy(policy, 300, seed=123)
    result = format_warmup(
        model, tok, random_episode, steps=60, batch_size=32, seed=0, loss_on="answers"
    )
    after = evaluate_policy(policy, 300, seed=123)
    assert result.final_loss < result.first_loss / 3
    assert before["invalid"] > 0.5  # a random model rarely answers in format
    assert after["invalid"] == 0.0
    assert not model.training


def test_random_episodes_are_well_formed() -> None:
    from blackjack_env.text_spec import random_episode

    ep = random_episode(random.Random(0))
    assert ep[0][0] == "user" and ep[-1][0] == "assistant"
    assert all(a in ("hit", "stand") for role, a in ep if role == "assistant")


def _next_token_prob(model, tok, text: str, word: str) -> float:
    import torch

    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        probs = torch.softmax(model(input_ids=ids).logits[0, -1], -1)
    return float(probs[tok.convert_tokens_to_ids(word)])


def test_loss_on_all_also_learns_the_env_text_and_answers_only_does_not() -> None:
    from blackjack_env.text_spec import VOCABULARY, random_episode

    from openenv_train.policy.tiny import build_tiny_model

    probs = {}
    for loss_on in ("all", "answers"):
        model, tok = build_tiny_model(VOCABULARY, seed=3)
        format_warmup(model, tok, random_episode, steps=60, batch_size=32, seed=0, loss_on=loss_on)
        # "dealer" always follows "player N hard|soft": only env text in the loss can teach that
        probs[loss_on] = _next_token_prob(model, tok, "player 14 hard", "dealer")
        # both still answer in format after "action:"
        answer = _next_token_prob(model, tok, "player 14 hard dealer 9 action:", "hit")
        answer += _next_token_prob(model, tok, "player 14 hard dealer 9 action:", "stand")
        assert answer > 0.9, (loss_on, answer)
    assert probs["all"] > 0.9 > 0.2 > probs["answers"], probs


def test_warmup_rejects_an_unknown_loss_on(tiny_model) -> None:
    import pytest

    model, tok = tiny_model
    with pytest.raises(ValueError, match="loss_on"):
        format_warmup(model, tok, lambda rng: [], steps=1, loss_on="prompts")  # type: ignore[arg-type]
