"""TRLVLLMPolicy through a real GRPOTrainer(use_vllm=True, vllm_mode="colocate") on CPU."""

from __future__ import annotations

import math
import os

import pytest
from tiny_models import bj_prompts, reference_logprobs

from openenv_train.policy import SamplingSettings, TRLVLLMPolicy

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trainer(hf_pair, tmp_path_factory):
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model, tok = hf_pair
    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("trl")), use_vllm=True, vllm_mode="colocate",
        use_cpu=True, bf16=False, gradient_checkpointing=False, per_device_train_batch_size=4,
        num_generations=2, max_completion_length=3, vllm_max_model_length=128,
        vllm_gpu_memory_utilization=0.1, report_to=[], max_steps=1, temperature=1.0,
    )  # fmt: skip
    data = Dataset.from_list([{"prompt": "player 15 soft dealer A action:"}] * 8)
    return GRPOTrainer(
        model=model, processing_class=tok, args=args, train_dataset=data,
        reward_funcs=lambda completions, **_: [0.0] * len(completions),
    )  # fmt: skip


async def test_trl_vllm_generation_as_policy(trainer, hf_pair):
    model, tok = hf_pair
    policy = TRLVLLMPolicy(trainer)
    prompts = bj_prompts(tok, 6, seed=1)
    gens = await policy.generate(prompts, SamplingSettings(max_new_tokens=2))
    assert len(gens) == 6
    for prompt, gen in zip(prompts, gens, strict=True):
        assert 1 <= len(gen.token_ids) <= 2  # TRL made 3, our max_new_tokens cut to 2
        assert gen.extra["trl_temperature"] == 1.0
        assert all(math.isfinite(lp) and lp <= 0 for lp in gen.logprobs)
        # TRL colocate does not pass dtype: vLLM runs bf16 here, so only a loose match.
        assert gen.logprobs == pytest.approx(
            reference_logprobs(model, prompt, gen.token_ids), abs=0.1
        )
