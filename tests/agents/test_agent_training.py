"""An agent program inside an env, trained: evaluation mode (a scripted policy through the proxy,
pass rate) and a few GRPO steps through TRL with the tiny model on CPU (token-faithful rows,
changed weights; not that it learns)."""

from __future__ import annotations

import pytest
from notes_env import scripted_answer
from notes_env.tiny import notes_model, notes_tokenizer

from openenv_train.harness.agent_rollout import (
    AgentRunner,
    evaluate_agent,
    make_agent_rollout_func,
    records_of,
)
from openenv_train.harness.capture_proxy import CaptureProxy
from openenv_train.rollout import ScriptedPolicy
from openenv_train.runtime import start_local_servers

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@pytest.fixture(scope="module")
def notes_urls():
    servers = start_local_servers("notes_env.server.app:app", 2)
    try:
        yield servers.base_urls
    finally:
        servers.stop()


@pytest.fixture(scope="module")
def tokenizer():
    return notes_tokenizer()


async def test_evaluation_mode_reports_the_pass_rate(notes_urls, tokenizer):
    async with CaptureProxy(ScriptedPolicy(tokenizer, scripted_answer)) as proxy:
        good = await evaluate_agent(proxy, notes_urls, seeds=range(6))
    assert good["pass_rate"] == 1.0 and good["mean_reward"] == 1.0
    assert good["model_calls"] == 6 * 5 and good["errors"] == {}
    lazy = ScriptedPolicy(tokenizer, lambda prompt: "It costs 42.")
    async with CaptureProxy(lazy) as proxy:
        bad = await evaluate_agent(proxy, notes_urls, seeds=range(4))
    assert bad["pass_rate"] == 0.0 and bad["mean_reward"] == 0.0 and bad["model_calls"] == 4


async def demonstrations(urls, tokenizer, n=16):
    async with CaptureProxy(ScriptedPolicy(tokenizer, scripted_answer)) as proxy:
        report = await AgentRunner(proxy, urls).run(range(100, 100 + n))
    return records_of(report)


def test_grpo_through_trl_trains_the_agent_on_its_captured_tokens(notes_urls, tokenizer, tmp_path):
    import asyncio

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from openenv_train.training import env_reward, policy_for_trainer, trace_warmup

    model = notes_model(tokenizer)
    demos = asyncio.run(demonstrations(notes_urls, tokenizer, n=4))
    warm = trace_warmup(model, tokenizer, demos, steps=10, batch_size=4)
    assert (
        warm.final_loss < warm.first_loss
    )  # a few steps on the recorded tokens (the notebook does more)
    rollout_func = make_agent_rollout_func(
        notes_urls,
        policy_for_trainer,
        proxy_options={"max_new_tokens": 48},
    )
    args = GRPOConfig(
        output_dir=str(tmp_path / "trainer"),
        max_steps=2,
        num_generations=4,
        per_device_train_batch_size=8,
        learning_rate=1e-2,
        beta=0.0,
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        max_completion_length=2048,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        # the entropy term moves the weights even when a group's rewards tie (a barely warmed-up
        # tiny model rarely completes a tool call); the rows and rewards are still the agent's
        entropy_coef=0.01,
    )
    dataset = Dataset.from_dict({"prompt": [str(s) for s in range(8)]})
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[env_reward],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=rollout_func,
    )
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    try:
        trainer.train()
        report = rollout_func.state["last_report"]
    finally:
        rollout_func.close()
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed, "GRPO did not move any weight"
    rewards = [e.reward for e in report.episodes]
    assert len(rewards) == 8 and all(0.0 <= r <= 1.0 for r in rewards)
    for episode in report.episodes:  # each row is exactly what the policy saw and sampled
        rec = episode.trace.to_episode_record(reward=episode.reward)
        last_call = episode.trace.calls[-1]
        assert (
            rec.prompt_ids + rec.completion_ids == last_call.prompt_ids + last_call.completion_ids
        )
        model_lp = [lp for lp, m in zip(rec.logprobs, rec.env_mask, strict=True) if m]
        assert len(model_lp) == sum(len(c.completion_ids) for c in episode.trace.calls)
        assert any(lp < 0 for lp in model_lp)  # real sampling logprobs, not placeholders
