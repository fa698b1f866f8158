"""The replay buffer's off-policy bound (forge's ``max_policy_age``) and the GRPO loss."""

from __future__ import annotations

import pytest
import torch

from openenv_train.training.forge import AdaptiveEntropy, ReplayBuffer, forge_loss, grpo_loss
from openenv_train.training.forge.actors import crop_batch
from openenv_train.training.forge.shapes import Completion, Episode


def episode(version: int, reward: float = 1.0, advantage: float = 0.5) -> Episode:
    completion = Completion(
        prompt="p",
        text="hit",
        prompt_ids=torch.tensor([3, 4]),
        token_ids=torch.tensor([9, 1]),
        logprobs=torch.tensor([-0.5, -0.1]),
        generator_version=version,
    )
    return Episode("e", 0, 4, 6, completion=completion, reward=reward, advantage=advantage)


def test_buffer_drops_rows_older_than_max_policy_age() -> None:
    buf = ReplayBuffer(2, max_policy_age=1, seed=0)
    buf.add([episode(0), episode(0), episode(1)])
    assert buf.sample(curr_policy_version=2) is None  # the two version-0 rows are 2 versions old
    assert buf.stats["evicted_stale"] == 2 and len(buf) == 1
    buf.add(episode(2))
    inputs, targets = buf.sample(curr_policy_version=2)
    assert inputs[0]["tokens"].shape == (2, 10) and targets[0]["advantages"].shape == (2, 1)
    assert sorted(buf.last_sample_ages) == [0, 1]
    assert len(buf) == 0 and buf.stats["evicted_used"] == 2  # max_resample_count=0: used once


def test_buffer_bounds_and_errors() -> None:
    buf = ReplayBuffer(2, max_buffer_size=3)
    buf.add([episode(0) for _ in range(5)])
    assert len(buf) == 3
    with pytest.raises(ValueError, match="max_buffer_size"):
        ReplayBuffer(4, max_buffer_size=3)
    with pytest.raises(ValueError, match="policy version"):
        buf.add(Episode("x", 0, 4, 6))


def _batch(adv: float):
    torch.manual_seed(0)
    logits = torch.randn(2, 7, 11, requires_grad=True)  # request 3 + response 4
    response = torch.tensor([[5, 1, 2, 0], [6, 1, 0, 0]])
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 0, 0]], dtype=torch.bool)
    targets = {
        "response": response,
        "ref_logprobs": torch.zeros(2, 4),
        "advantages": torch.full((2, 1), adv),
        "padding_mask": mask,
    }
    return logits, targets


def test_loss_raises_the_logprob_of_positive_advantage_tokens_only_on_model_tokens() -> None:
    logits, targets = _batch(1.0)
    loss, stats = grpo_loss(logits, **targets)
    loss.backward()
    grad = logits.grad
    # logit of token 5 at the position that predicts response[0,0] (= position 2) must go up
    assert grad[0, 2, 5] < 0
    # positions predicting env/pad tokens (response[:, 2:] -> positions 4, 5) get no gradient
    assert grad[:, 4:6].abs().sum() == 0 and grad[:, 6].abs().sum() == 0
    assert stats["model_tokens"] == 4 and stats["entropy"] > 0
    assert forge_loss()(logits.detach(), **targets).shape == ()


def test_ratio_is_clipped_against_generator_logprobs() -> None:
    logits, targets = _batch(1.0)
    far = torch.full((2, 4), -20.0)  # the generator found these tokens very unlikely
    _, stats = grpo_loss(logits, **targets, generator_logprobs=far)
    assert stats["clip_fraction"] == 1.0


def test_adaptive_entropy_follows_trl() -> None:
    ctl = AdaptiveEntropy(target=0.15, delta=0.005)
    assert ctl.applied == 0.0  # no measurement yet
    ctl.update(0.1)
    assert ctl.coef == pytest.approx(0.005) and ctl.applied == pytest.approx(0.005)
    ctl.update(0.3)
    assert ctl.coef == 0.0 and ctl.applied == 0.0


def test_crop_batch_keeps_the_loss() -> None:
    logits_fn = torch.nn.Embedding(11, 11)
    tokens = torch.tensor([[0, 3, 4, 5, 1, 0, 0], [0, 0, 4, 6, 1, 0, 0]])
    _, targets = _batch(1.0)
    targets["response"] = tokens[:, 3:]
    cropped, ct = crop_batch(tokens, targets, pad_id=0)
    assert cropped.tolist() == [[3, 4, 5, 1], [0, 4, 6, 1]]
    assert ct["response"].shape == (2, 2) and ct["advantages"].shape == (2, 1)
    full = grpo_loss(logits_fn(tokens), **targets)[0]
    short = grpo_loss(logits_fn(cropped), **ct)[0]
    assert torch.allclose(full, short)
