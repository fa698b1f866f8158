"""Rollouts through forge's generator contract, on real servers with a real tiny model.

forge's vLLM ``Generator`` needs a GPU, so ``ForgeGeneratorStandIn`` (a stand-in, named as such)
answers its contract, ``generate(prompt: str) -> list[Completion]`` with token ids, logprobs and
the weight version, from our real transformers policy; ``ServiceStandIn`` adds the ``.route()``
call style of a forge service.
"""

from __future__ import annotations

import asyncio

import pytest
import torch
from blackjack_env.text_spec import BlackjackTextSpec

from openenv_train.policy.interface import SamplingSettings
from openenv_train.policy.transformers_policy import TransformersPolicy
from openenv_train.rollout.engine import RolloutConfig, RolloutEngine
from openenv_train.training.forge import (
    Completion,
    GeneratorPolicy,
    TokenMismatchError,
    collate,
    groups_from_records,
)


class ForgeGeneratorStandIn:
    """Stand-in for forge's vLLM Generator (GPU only): same call, same Completion fields."""

    def __init__(self, model, tokenizer, version: int = 0, corrupt: bool = False) -> None:
        self.policy = TransformersPolicy(model, tokenizer)
        self.tokenizer = tokenizer
        self.generator_version = version
        self.corrupt = corrupt
        self.prompts: list[str] = []

    async def generate(self, prompt: str) -> list[Completion]:
        self.prompts.append(prompt)
        ids = self.tokenizer.encode(prompt, add_special_tokens=False)
        (gen,) = await self.policy.generate([ids], SamplingSettings(max_new_tokens=4))
        return [
            Completion(
                prompt=prompt,
                text=gen.text,
                prompt_ids=torch.tensor(ids + ([5] if self.corrupt else [])),
                token_ids=torch.tensor(gen.token_ids),
                logprobs=torch.tensor(gen.logprobs),
                stop_reason="stop",
                generator_version=self.generator_version,
            )
        ]


class _Route:
    def __init__(self, fn) -> None:
        self.route = fn


class ServiceStandIn:
    """forge's service call style: ``await service.generate.route(prompt)``."""

    def __init__(self, inner: ForgeGeneratorStandIn) -> None:
        self.generate = _Route(inner.generate)


async def _play(policy, servers, n: int = 8, group: int = 4):
    config = RolloutConfig(max_new_tokens=4, max_turns=8, max_episode_tokens=48)
    async with RolloutEngine(BlackjackTextSpec(seed=1), policy, servers.base_urls, config) as eng:
        return await eng.run(["blackjack"] * n, group)


@pytest.mark.parametrize("wrap", [False, True], ids=["object", "service-route"])
def test_rollouts_through_forge_generator_contract(servers, model_and_tokenizer, wrap) -> None:
    model, tokenizer = model_and_tokenizer
    torch.manual_seed(0)  # 16 sampled games: some hit, so some episodes have env tokens
    inner = ForgeGeneratorStandIn(model, tokenizer, version=7)
    policy = GeneratorPolicy(ServiceStandIn(inner) if wrap else inner, tokenizer)
    policy.mark()
    batch = asyncio.run(_play(policy, servers, n=16))
    assert batch.complete, dict(batch.errors)
    assert len(batch.records) == 16
    assert inner.prompts and inner.prompts[0].startswith("player ")  # text prompts, as forge's
    assert policy.oldest_version() == 7
    groups = groups_from_records(
        batch.records, 4, pad_id=0, request_len=16, response_len=48, policy_version=7
    )
    for rec, ep in zip(batch.records, [e for g in groups for e in g], strict=True):
        n = len(rec.completion_ids)
        assert ep.response_mask_tensor[:n].tolist() == rec.env_mask
        assert ep.completion.logprobs.tolist() == pytest.approx(rec.logprobs)
    multi = [r for r in batch.records if 0 in r.env_mask]
    assert multi, "expected at least one multi-turn episode (env tokens in the response)"
    inputs, targets = collate(groups)
    assert len(inputs) == 4 and inputs[0]["tokens"].shape == (4, 64)
    assert sum(abs(e.advantage) for g in groups for e in g) > 0 or all(
        len({e.reward for e in g}) == 1 for g in groups
    )


def test_a_generator_that_retokenizes_differently_is_named(servers, model_and_tokenizer) -> None:
    model, tokenizer = model_and_tokenizer
    policy = GeneratorPolicy(ForgeGeneratorStandIn(model, tokenizer, corrupt=True), tokenizer)
    with pytest.raises(TokenMismatchError, match="re-tokenized"):
        asyncio.run(policy.generate([[3, 4, 5]], SamplingSettings(max_new_tokens=2)))


def test_generator_without_generate_is_refused(model_and_tokenizer) -> None:
    with pytest.raises(TypeError, match="no generate endpoint"):
        GeneratorPolicy(object(), model_and_tokenizer[1])
