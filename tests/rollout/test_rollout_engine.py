"""The engine against real BlackJack servers: scripted policy and the real tiny model."""

from __future__ import annotations

import gc

import pytest
from bj_checks import check_blackjack_record, segments
from blackjack_env.text_spec import BlackjackTextSpec, basic_strategy_answer

from openenv_train.policy import SamplingSettings, TransformersPolicy
from openenv_train.rollout import RolloutConfig, RolloutEngine, ScriptedPolicy
from openenv_train.training.rollout_func import RolloutFunc, RunnerStrategy


async def test_scripted_64_episodes_are_trl_ready(servers, tokenizer, scripted):
    async with RolloutEngine(
        BlackjackTextSpec(seed=11), scripted, servers, RolloutConfig()
    ) as engine:
        batch = await engine.run(["play blackjack"] * 64, group_size=8)
    assert batch.complete and len(batch.records) == 64
    assert [r.row for r in batch.records] == list(range(64))
    assert [r.group for r in batch.records] == [i // 8 for i in range(64)]
    for rec in batch.records:
        check_blackjack_record(rec, tokenizer)
        assert rec.metrics["invalid_actions"] == 0
        assert rec.metrics["stop_reason"] == "done" and rec.metrics["truncated"] == 0
        assert rec.metrics["turns"] == rec.num_turns
        # the scripted policy plays basic strategy on exactly the text the model saw
        context = rec.prompt_ids
        for mask, ids in segments(rec):
            if mask == 1:
                assert tokenizer.decode(ids, skip_special_tokens=True) == basic_strategy_answer(
                    tokenizer.decode(context)
                )
            context = context + ids
    assert sum(r.num_turns > 1 for r in batch.records) > 5  # multi-turn episodes happened
    # sessions were spread over both servers and batched into few policy calls
    assert {r.metrics["server"] for r in batch.records} == set(servers.base_urls)
    assert batch.metrics["policy_calls"] < sum(r.num_turns for r in batch.records)
    assert batch.metrics["groups_dropped"] == 0 and batch.metrics["infra_errors"] == 0
    out = batch.to_trl()
    assert set(out) >= {"prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward"}
    assert out["env_reward"] == [r.reward for r in batch.records]
    assert gc.get_freeze_count() > 0  # the first run took the heap out of full collections


async def test_seeded_runs_reproduce_and_sessions_are_reused(servers, tokenizer):
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer)
    spec_a, spec_b = BlackjackTextSpec(seed=5), BlackjackTextSpec(seed=5)
    async with RolloutEngine(spec_a, policy, servers, RolloutConfig(max_concurrency=16)) as a:
        first = await a.run(["p"] * 32, 4)
        second = await a.run(["p"] * 32, 4)  # next batch: new deals, same pooled sessions
        assert a.pool.connects <= 16
    async with RolloutEngine(spec_b, policy, servers, RolloutConfig(max_concurrency=16)) as b:
        again = await b.run(["p"] * 32, 4)
    key = lambda batch: [(r.prompt_ids, r.completion_ids, r.reward) for r in batch.records]  # noqa: E731
    assert key(first) == key(again)
    assert key(first) != key(second)


async def test_same_deal_per_group(servers, tokenizer):
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer)
    async with RolloutEngine(
        BlackjackTextSpec(seed=3, same_deal_per_group=True), policy, servers
    ) as e:
        batch = await e.run(["p"] * 16, 4)
    for g in range(4):
        prompts = {tuple(r.prompt_ids) for r in batch.records if r.group == g}
        assert len(prompts) == 1


async def test_same_state_per_group_shares_the_state_not_the_deck(servers, tokenizer):
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer)
    spec = BlackjackTextSpec(seed=3, same_state_per_group=True, deal_pool_size=4000)
    async with RolloutEngine(spec, policy, servers) as e:
        batch = await e.run(["p"] * 32, 8)
    first_texts, varied = set(), 0
    for g in range(4):
        rows = [r for r in batch.records if r.group == g]
        firsts = {tokenizer.decode(r.prompt_ids) for r in rows}
        assert len(firsts) == 1  # the first prompt (the state) is the group's own
        first_texts |= firsts
        varied += len({r.reward for r in rows}) > 1  # other decks: the same play ends otherwise
    assert len(first_texts) > 1 and varied >= 2  # groups drew different states


async def test_invalid_answer_ends_game_with_its_own_reward(servers, tokenizer):
    policy = ScriptedPolicy(tokenizer, lambda text: "dealer soft")
    spec = BlackjackTextSpec(seed=1, invalid_action_reward=-2.0)
    async with RolloutEngine(spec, policy, servers) as engine:
        batch = await engine.run(["p"] * 8, 4)
    assert batch.complete
    for rec in batch.records:
        check_blackjack_record(rec, tokenizer, invalid_reward=-2.0)
        assert rec.reward == -2.0 and rec.num_turns == 1 and rec.metrics["invalid_actions"] == 1
        assert tokenizer.decode(rec.completion_ids) == "dealer soft <eos>"
    assert batch.metrics["invalid_rate"] == 1.0


async def test_turn_and_token_limits_truncate(servers, tokenizer):
    always_hit = ScriptedPolicy(tokenizer, lambda text: "hit")
    cfg = RolloutConfig(max_turns=1)
    async with RolloutEngine(BlackjackTextSpec(seed=2), always_hit, servers, cfg) as engine:
        batch = await engine.run(["p"] * 16, 4)
    for rec in batch.records:
        assert rec.num_turns == 1
        if rec.metrics["truncated"]:  # still alive after one hit: cut, scored truncation_reward
            assert rec.reward == -1.0 and rec.env_mask == [1, 1]
    assert any(r.metrics["truncated"] for r in batch.records)
    cfg = RolloutConfig(max_episode_tokens=9)  # hit<eos> (2) + decision (6) + 1 left for the model
    async with RolloutEngine(BlackjackTextSpec(seed=2), always_hit, servers, cfg) as engine:
        batch = await engine.run(["p"] * 16, 4)
    for rec in batch.records:
        assert len(rec.completion_ids) <= 9 and rec.env_mask[-1] == 1
        if rec.num_turns == 2:  # the second answer was cut to the one token left
            assert rec.completion_ids[-1] == tokenizer.convert_tokens_to_ids("hit")


def test_rollout_func_for_trl(servers, tokenizer):
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer)
    func = RolloutFunc(
        RunnerStrategy(lambda _trainer: RolloutEngine(BlackjackTextSpec(seed=9), policy, servers)),
        group_size=4,
    )
    try:
        out = func(["play"] * 12, None)
        assert len(out["completion_ids"]) == 12 and all(out["completion_ids"])
        out2 = func(["play"] * 8, None)  # same loop, same pooled sessions
        assert len(out2["env_reward"]) == 8
        assert func.last_batch.metrics["connects"] == 0  # the second call reused every session
        with pytest.raises(ValueError, match="not a multiple of group_size=4"):
            func(["play"] * 6, None)
    finally:
        func.close()
    seen = []
    engine = RolloutEngine(BlackjackTextSpec(seed=9), policy, servers)  # built outside any loop
    func = RolloutFunc(
        RunnerStrategy(lambda _trainer: engine),
        group_size=2,
        reward_key="bj_reward",
        on_batch=seen.append,
    )
    try:
        out = func(["play"] * 4, None)
        assert set(out["bj_reward"]) <= {-1.0, 0.0, 1.0} and len(seen) == 1
    finally:
        func.close()


@pytest.fixture(scope="module")
def tiny_policy(format_model, tokenizer):
    return TransformersPolicy(format_model, tokenizer)


async def test_tiny_model_64_episodes_tokens_and_logprobs(servers, tokenizer, tiny_policy):
    cfg = RolloutConfig(max_new_tokens=4, temperature=1.0, seed=0)
    async with RolloutEngine(BlackjackTextSpec(seed=21), tiny_policy, servers, cfg) as engine:
        batch = await engine.run(["play"] * 64, group_size=16)
    assert batch.complete and len(batch.records) == 64
    for rec in batch.records:
        check_blackjack_record(rec, tokenizer)
        model_lps = [lp for lp, m in zip(rec.logprobs, rec.env_mask, strict=True) if m == 1]
        assert all(lp <= 0.0 for lp in model_lps) and any(lp < 0.0 for lp in model_lps)
    # the format warm-up worked: mostly valid games, some of them multi-turn
    assert batch.metrics["invalid_rate"] < 0.5
    assert any(r.num_turns > 1 for r in batch.records)
    assert batch.metrics["mean_batch_size"] > 4  # model calls were batched across sessions


async def test_tiny_model_greedy_replay_reproduces_completions(servers, tokenizer, tiny_policy):
    cfg = RolloutConfig(max_new_tokens=4, temperature=0.0)
    async with RolloutEngine(BlackjackTextSpec(seed=33), tiny_policy, servers, cfg) as engine:
        batch = await engine.run(["play"] * 32, group_size=8)
    contexts, expected = [], []
    for rec in batch.records:
        context = list(rec.prompt_ids)
        for mask, ids in segments(rec):
            if mask == 1:
                contexts.append(context)
                expected.append(ids)
            context = context + ids
    # replay each model turn alone, unbatched: greedy decoding must give the recorded ids
    for context, ids in zip(contexts, expected, strict=True):
        sampling = SamplingSettings(
            max_new_tokens=len(ids), temperature=0.0, stop_token_ids=(tokenizer.eos_token_id,)
        )
        (gen,) = tiny_policy.generate_sync([context], sampling)
        assert gen.token_ids == ids


async def test_tiny_model_teacher_forced_logprobs_match_multi_turn_records(
    servers, tokenizer, tiny_policy, format_model
):
    """Feed each sampled record through the model in one forward pass: the logprob of every model
    token given everything before it equals the recorded sampling logprob (so the recorded
    context, env tokens included, is exactly what the model saw)."""
    import torch

    cfg = RolloutConfig(max_new_tokens=4, temperature=1.0, seed=1)
    async with RolloutEngine(BlackjackTextSpec(seed=44), tiny_policy, servers, cfg) as engine:
        batch = await engine.run(["play"] * 32, group_size=8)
    multi = [r for r in batch.records if r.num_turns > 1]
    assert multi, "expected some multi-turn episodes from the format-trained model"
    for rec in multi:
        ids = torch.tensor([rec.prompt_ids + rec.completion_ids])
        with torch.inference_mode():
            logp = torch.log_softmax(format_model(input_ids=ids).logits[0].float(), dim=-1)
        start = len(rec.prompt_ids)
        for i, (tok, mask, recorded) in enumerate(
            zip(rec.completion_ids, rec.env_mask, rec.logprobs, strict=True)
        ):
            if mask == 1:
                assert logp[start + i - 1, tok].item() == pytest.approx(recorded, abs=2e-4)


async def test_dataset_prompt_as_leading_messages(servers, tokenizer):
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer)
    cfg = RolloutConfig(use_dataset_prompt=True)
    conversational = [
        {"role": "system", "content": "dealer"},
        {"role": "user", "content": "player"},
    ]
    async with RolloutEngine(BlackjackTextSpec(seed=4), policy, servers, cfg) as engine:
        batch = await engine.run([conversational, conversational, "soft hard", "soft hard"], 2)
    first, third = batch.records[0], batch.records[2]
    assert tokenizer.decode(first.prompt_ids).startswith("dealer player player ")
    assert tokenizer.decode(third.prompt_ids).startswith("soft hard player ")
    with pytest.raises(ValueError, match="neither a string nor a list of chat messages"):
        async with RolloutEngine(BlackjackTextSpec(), policy, servers, cfg) as engine:
            await engine.run([42], 1)


async def test_chat_template_episodes_are_the_rendered_conversation(servers):
    """With a ChatML tokenizer, each episode's ids are exactly the template's rendering of the
    conversation (system, user decisions, assistant answers): env turns are template deltas."""
    import re

    from chatml import chatml_tokenizer

    tok = chatml_tokenizer()
    policy = ScriptedPolicy(tok, basic_strategy_answer)
    cfg = RolloutConfig(system_prompt="play blackjack")
    async with RolloutEngine(BlackjackTextSpec(seed=6), policy, servers, cfg) as engine:
        assert engine.codec.use_template
        batch = await engine.run(["p"] * 32, 4)
    assert any(r.num_turns > 1 for r in batch.records)
    for rec in batch.records:
        text = tok.decode(rec.prompt_ids + rec.completion_ids)
        decisions = re.findall(r"player \d+ (?:soft|hard) dealer \S+ action:", text)
        answers = [tok.decode(ids, skip_special_tokens=True) for m, ids in segments(rec) if m == 1]
        assert len(decisions) == len(answers) == rec.num_turns
        convo = [{"role": "system", "content": "play blackjack"}]
        for decision, answer in zip(decisions, answers, strict=True):
            convo += [
                {"role": "user", "content": decision},
                {"role": "assistant", "content": answer},
            ]
        rendered = tok.apply_chat_template(convo, tokenize=False)
        assert text + "\n" == rendered  # the template's newline after the last EOS is not generated
        assert tok.encode(text, add_special_tokens=False) == rec.prompt_ids + rec.completion_ids
