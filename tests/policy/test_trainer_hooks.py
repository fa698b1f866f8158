"""Policies bound to a real TRL GRPOTrainer (CPU, no vLLM): live model, clear errors."""

from __future__ import annotations

import os

import pytest
import torch
from blackjack_env.text_spec import VOCABULARY

from openenv_train.policy import SamplingSettings, TRLVLLMPolicy
from openenv_train.policy.tiny import build_tiny_model


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model, tok = build_tiny_model(VOCABULARY, seed=3)
    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("grpo")), use_cpu=True, bf16=False,
        gradient_checkpointing=False, per_device_train_batch_size=4, num_generations=2,
        max_completion_length=2, report_to=[], max_steps=1,
    )  # fmt: skip
    data = Dataset.from_list([{"prompt": "player 15 soft dealer A action:"}] * 8)
    return GRPOTrainer(
        model=model, processing_class=tok, args=args, train_dataset=data,
        reward_funcs=lambda completions, **_: [0.0] * len(completions),
    )  # fmt: skip


async def test_policy_for_trainer_follows_in_place_updates(trainer):
    from openenv_train.training import policy_for_trainer

    policy = policy_for_trainer(trainer)
    assert policy.model is trainer.model and policy.tokenizer is trainer.processing_class
    tok = policy.tokenizer
    prompt = tok.encode("player 15 soft dealer A action:")
    ids = torch.tensor([tok.encode("player 15 soft dealer A action: stand<eos>")])
    optim = torch.optim.Adam(trainer.model.parameters(), lr=2e-2)
    for _ in range(40):  # in-place updates of the trainer's own parameters
        loss = trainer.model(input_ids=ids, labels=ids).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
    [gen] = await policy.generate([prompt], SamplingSettings(max_new_tokens=4, temperature=0))
    assert gen.token_ids == tok.encode("stand<eos>")


def test_trl_vllm_policy_needs_use_vllm(trainer):
    with pytest.raises(ValueError, match="use_vllm=True"):
        TRLVLLMPolicy(trainer)
