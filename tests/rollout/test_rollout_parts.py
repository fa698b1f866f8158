"""The engine's parts on their own: batcher, token codec, output validation, config errors."""

from __future__ import annotations

import asyncio

import pytest
from chatml import chatml_tokenizer
from server_helpers import until

from openenv_train.policy import Generation, Policy, SamplingSettings
from openenv_train.rollout import RolloutConfig, RolloutOutputError, ScriptedPolicy, TokenCodec
from openenv_train.rollout.batcher import GenerationBatcher
from openenv_train.rollout.records import validate_rollout_output

SAMPLING = SamplingSettings(max_new_tokens=4)


async def test_batcher_joins_every_waiting_episode_into_one_call(tokenizer):
    policy = ScriptedPolicy(tokenizer, lambda text: "stand")
    batcher = GenerationBatcher(policy, max_wait_s=10.0)  # only "everyone is waiting" can flush
    for _ in range(16):
        batcher.register()
    prompt = tokenizer.encode("player 12 hard dealer 5 action:")
    gens = await asyncio.gather(*(batcher.generate(prompt, SAMPLING) for _ in range(16)))
    assert policy.calls == 1 and batcher.stats.max_batch == 16
    assert all(tokenizer.decode(g.token_ids) == "stand <eos>" for g in gens)
    await batcher.aclose()


async def test_batcher_respects_max_batch_size_and_groups_by_sampling(tokenizer):
    policy = ScriptedPolicy(tokenizer, lambda text: "hit")
    batcher = GenerationBatcher(policy, max_batch_size=4, max_wait_s=0.0)
    prompt = tokenizer.encode("player 12 hard dealer 5 action:")
    short = SamplingSettings(max_new_tokens=1)
    gens = await asyncio.gather(
        *(batcher.generate(prompt, SAMPLING) for _ in range(6)), batcher.generate(prompt, short)
    )
    assert batcher.stats.max_batch <= 4 and policy.prompts_seen == 7
    assert tokenizer.decode(gens[-1].token_ids) == "hit" and gens[-1].finish_reason == "length"
    await batcher.aclose()


async def test_cancelled_request_never_reaches_the_policy(tokenizer):
    policy = ScriptedPolicy(tokenizer, lambda text: "hit")
    batcher = GenerationBatcher(policy, max_wait_s=10.0)
    batcher.register()
    batcher.register()  # two episodes registered, only one asks: the batch waits
    task = asyncio.ensure_future(batcher.generate([3], SAMPLING))
    await until(lambda: batcher._n_pending == 1, 10, "the request to wait in the batcher")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert batcher._n_pending == 0 and policy.calls == 0
    await batcher.aclose()


class WrongCountPolicy(Policy):
    """A (buggy) real policy that drops a generation: the batcher must say so, not hang."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    async def generate(self, prompts, sampling):
        return [Generation([1], [0.0], "")] * (len(prompts) - 1)


async def test_policy_returning_wrong_count_fails_loudly(tokenizer):
    batcher = GenerationBatcher(WrongCountPolicy(tokenizer), max_wait_s=0.0)
    with pytest.raises(RuntimeError, match="returned 0 generations for 1 prompts"):
        await batcher.generate([3], SAMPLING)
    await batcher.aclose()


class SeedRecordingPolicy(ScriptedPolicy):
    """A real scripted policy that also records the sampling settings of each call."""

    def __init__(self, tokenizer):
        super().__init__(tokenizer, lambda text: "stand")
        self.seen: list[SamplingSettings] = []

    async def generate(self, prompts, sampling):
        self.seen.append(sampling)
        return await super().generate(prompts, sampling)


async def test_seeded_batches_get_a_fresh_seed_per_call(tokenizer):
    """One seed reused for every call would replay the same random draws each training step."""
    policy = SeedRecordingPolicy(tokenizer)
    batcher = GenerationBatcher(policy, max_wait_s=0.0)
    seeded = SamplingSettings(max_new_tokens=4, seed=7)
    for _ in range(3):
        await batcher.generate([3], seeded)
    await batcher.generate([3], SAMPLING)
    assert [s.seed for s in policy.seen] == [7, 8, 9, None]
    await batcher.aclose()


def test_codec_chat_template_deltas_rebuild_the_rendered_conversation():
    tok = chatml_tokenizer()
    codec = TokenCodec(tok)
    assert codec.use_template
    messages = [
        {"role": "system", "content": "play"},
        {"role": "user", "content": "player 15 soft dealer A action:"},
    ]
    ids = codec.prompt_ids(messages)
    for answer, env_text in [("hit", "player 18 soft dealer A action:"), ("stand", None)]:
        ids += tok.encode(answer, add_special_tokens=False) + [
            tok.eos_token_id
        ]  # what a model emits
        messages.append({"role": "assistant", "content": answer})
        if env_text:
            ids += codec.turn_ids([{"role": "user", "content": env_text}])
            messages.append({"role": "user", "content": env_text})
    rendered = tok.apply_chat_template(messages, tokenize=False)
    assert (
        tok.decode(ids) + "\n" == rendered
    )  # the template's trailing newline follows the last EOS
    assert tok.encode(tok.decode(ids), add_special_tokens=False) == ids


def test_codec_without_template_joins_turns_with_the_separator():
    # a byte-level tokenizer with no template: the separator is part of the token (" player")
    tok = chatml_tokenizer()
    tok.chat_template = None
    codec = TokenCodec(tok)
    assert not codec.use_template
    prompt = codec.prompt_ids(
        [{"role": "system", "content": "play"}, {"role": "user", "content": "player 12"}]
    )
    turn = codec.turn_ids([{"role": "user", "content": "player 15 hard dealer 5 action:"}])
    assert tok.decode(prompt) == "play player 12"
    assert tok.decode(turn) == " player 15 hard dealer 5 action:"
    assert turn == tok.encode(" player 15 hard dealer 5 action:", add_special_tokens=False)
    with pytest.raises(ValueError, match="messages: empty"):
        codec.prompt_ids([])


def test_codec_rejects_forced_template_without_one(tokenizer):
    tokenizer = chatml_tokenizer()
    tokenizer.chat_template = None
    with pytest.raises(ValueError, match="tokenizer has no chat_template"):
        TokenCodec(tokenizer, chat_template=True)


GOOD = {
    "prompt_ids": [[1, 2], [3]],
    "completion_ids": [[4, 5, 6], [7]],
    "logprobs": [[-0.1, 0.0, -0.2], [-0.3]],
    "env_mask": [[1, 0, 1], [1]],
    "env_reward": [1.0, -1.0],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"completion_ids": [[4, 5, 6]]},
            r"output\['completion_ids'\] has 1 rows but there are 2 prompts",
        ),
        (
            {"logprobs": [[-0.1], [-0.3]]},
            r"output\['logprobs'\]\[0\] has 1 entries but completion_ids\[0\] has 3",
        ),
        ({"env_mask": [[1, 0], [1]]}, r"output\['env_mask'\]\[0\] has 2 entries"),
        ({"env_mask": [[1, 2, 1], [1]]}, "values other than 0/1"),
        ({"env_mask": [[0, 0, 0], [1]]}, "all 0: the row has no model token"),
        (
            {"completion_ids": [[4, 5, 6], []], "logprobs": None, "env_mask": None},
            r"completion_ids'\]\[1\] is empty",
        ),
        ({"env_reward": None}, None),
    ],
)
def test_validate_rollout_output_messages(change, message):
    out = {**GOOD, **change}
    if change == {"env_reward": None}:
        del out["env_reward"]
        message = r"missing key\(s\) \['env_reward'\]"
    with pytest.raises(RolloutOutputError, match=message):
        validate_rollout_output(out, 2, reward_key="env_reward")
    validate_rollout_output(GOOD, 2, reward_key="env_reward")


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="RolloutConfig.max_turns must be >= 1"):
        RolloutConfig(max_turns=0)
    with pytest.raises(ValueError, match="RolloutConfig.episode_timeout_s must be > 0"):
        RolloutConfig(episode_timeout_s=0)
