"""Our episodes in torchforge's shapes, checked against MIRRORS of forge's field names and shapes.

torchforge cannot be installed here (not on PyPI; it needs GPUs), so the names below mirror its
source: ``forge/data_models/completion.py`` (``Completion``) and its GRPO app (``Episode``,
``collate``, ``ComputeAdvantages``, ``simple_grpo_loss``'s keyword arguments).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from openenv_train.rollout.records import EpisodeRecord
from openenv_train.training.forge import (
    Completion,
    Episode,
    collate,
    episode_from_record,
    group_advantages,
    groups_from_records,
)

# MIRROR of forge.data_models.completion.Completion's fields, in order
FORGE_COMPLETION_FIELDS = [
    "prompt",
    "text",
    "prompt_ids",
    "token_ids",
    "logprobs",
    "stop_reason",
    "generator_version",
    "metadata",
]
# MIRROR of the fields of forge's GRPO Episode (apps/grpo/main.py) and its properties
FORGE_EPISODE_FIELDS = [
    "episode_id",
    "pad_id",
    "request_len",
    "response_len",
    "target",
    "completion",
    "ref_logprobs",
    "reward",
    "advantage",
]
FORGE_EPISODE_PROPERTIES = ["policy_version", "request_tensor", "response_tensor"]
# MIRROR of forge's collate: inputs / targets keys (targets are simple_grpo_loss's keyword args)
FORGE_INPUT_KEYS = {"tokens"}
FORGE_TARGET_KEYS = {"response", "ref_logprobs", "advantages", "padding_mask"}


def record(row: int, group: int, reward: float, env_turn: bool = True) -> EpisodeRecord:
    # prompt "player 15 hard dealer 7 action:" (6 ids), answer hit<eos>, env turn (6 ids), stand<eos>
    completion = [9, 1] + ([5, 20, 7, 6, 16, 8] + [10, 1] if env_turn else [])
    mask = [1, 1] + ([0] * 6 + [1, 1] if env_turn else [])
    return EpisodeRecord(
        row=row,
        group=group,
        prompt="blackjack",
        prompt_ids=[3, 17, 6, 4, 13, 7],
        completion_ids=completion,
        logprobs=[-0.1 * (i + 1) * m for i, m in enumerate(mask)],
        env_mask=mask,
        reward=reward,
        num_turns=2 if env_turn else 1,
        metrics={"turns": 2},
    )


SHAPE = {"pad_id": 0, "request_len": 8, "response_len": 12}


def test_completion_and_episode_mirror_forge_field_names() -> None:
    assert [f.name for f in dataclasses.fields(Completion)] == FORGE_COMPLETION_FIELDS
    names = [f.name for f in dataclasses.fields(Episode)]
    assert names[: len(FORGE_EPISODE_FIELDS)] == FORGE_EPISODE_FIELDS
    for prop in FORGE_EPISODE_PROPERTIES:
        assert isinstance(getattr(Episode, prop), property)


def test_episode_tensors_pad_like_forge_and_mask_env_tokens() -> None:
    ep = episode_from_record(record(0, 0, 1.0), policy_version=3, **SHAPE)
    assert ep.policy_version == 3 and ep.reward == 1.0
    assert ep.request_tensor.tolist() == [0, 0, 3, 17, 6, 4, 13, 7]  # left-padded
    assert ep.response_tensor.tolist() == [9, 1, 5, 20, 7, 6, 16, 8, 10, 1, 0, 0]  # right-padded
    assert ep.response_mask_tensor.tolist() == [1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0]
    lp = ep.logprobs_tensor
    assert lp.shape == (12,) and lp[2:8].abs().sum() == 0 and lp[8] < 0
    assert ep.request_tensor.dtype == ep.response_tensor.dtype == torch.long


def test_group_advantage_is_forges_formula() -> None:
    rewards = [1.0, -1.0, 0.0, 1.0]
    r = torch.tensor([rewards])
    expected = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).squeeze(0)
    assert group_advantages(rewards) == pytest.approx(expected.tolist(), rel=1e-6)
    assert group_advantages([1.0, 1.0]) == [0.0, 0.0]  # identical rewards: no signal, no NaN
    with pytest.raises(ValueError, match=">= 2 episodes"):
        group_advantages([1.0])


def test_collate_gives_forges_keys_and_shapes() -> None:
    records = [record(i, i // 4, float(i % 3 - 1), env_turn=i % 2 == 0) for i in range(8)]
    groups = groups_from_records(records, 4, policy_version=0, **SHAPE)
    assert [len(g) for g in groups] == [4, 4]
    inputs, targets = collate(groups)  # one (input, target) per data-parallel rank, as forge
    assert len(inputs) == len(targets) == 2
    for inp, tgt in zip(inputs, targets, strict=True):
        assert set(inp) == FORGE_INPUT_KEYS and set(tgt) == FORGE_TARGET_KEYS
        assert inp["tokens"].shape == (4, 8 + 12)
        assert tgt["response"].shape == tgt["ref_logprobs"].shape == (4, 12)
        assert tgt["advantages"].shape == (4, 1)
        assert tgt["padding_mask"].shape == (4, 12) and tgt["padding_mask"].dtype == torch.bool
        # the loss mask is the response mask: env tokens and padding are out of the loss
        assert tgt["padding_mask"].sum(1).tolist() == [4 if i % 2 == 0 else 2 for i in range(4)]
        assert torch.equal(inp["tokens"][:, 8:], tgt["response"])
    _, extra = collate(groups, generator_logprobs=True)
    assert set(extra[0]) == FORGE_TARGET_KEYS | {"generator_logprobs"}


def test_bad_shapes_are_named() -> None:
    with pytest.raises(ValueError, match="max_res_tokens"):
        episode_from_record(
            record(0, 0, 1.0), policy_version=0, pad_id=0, request_len=8, response_len=4
        )
    with pytest.raises(ValueError, match="max_req_tokens"):
        episode_from_record(
            record(0, 0, 1.0), policy_version=0, pad_id=0, request_len=2, response_len=12
        )
    with pytest.raises(ValueError, match="group_size=4"):
        groups_from_records([record(0, 0, 1.0)] * 3, 4, policy_version=0, **SHAPE)
    ep = episode_from_record(record(0, 0, 1.0), policy_version=0, **SHAPE)
    with pytest.raises(ValueError, match="advantage"):
        collate([[ep]])
