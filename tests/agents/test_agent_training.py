"""An agent program inside an env, trained: evaluation mode (a scripted policy through the proxy,
pass rate) and a few GRPO steps through TRL with the tiny model on CPU (token-faithful rows,
changed weights; not that it learns)."""

from __future__ import annotations

import pytest
from notes_env import scripted_answer
from notes_env.tiny import notes_model, notes_tokenizer

from openenv_train.agents import AgentRunner, evaluate_agent
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
    good = await evaluate_agent(ScriptedPolicy(tokenizer, scripted_answer), notes_urls, range(6))
    assert good["pass_rate"] == 1.0 and good["mean_reward"] == 1.0
    assert good["model_calls"] == 6 * 5 and good["errors"] == {}
    lazy = ScriptedPolicy(tokenizer, lambda prompt: "It costs 42.")
    bad = await evaluate_agent(lazy, notes_urls, seeds=range(4))
    assert bad["pass_rate"] == 0.0 and bad["mean_reward"] == 0.0 and bad["model_calls"] == 4


async def test_agent_runner_is_an_episode_runner_with_groups(notes_urls, tokenizer):
    async with AgentRunner(ScriptedPolicy(tokenizer, scripted_answer), notes_urls) as runner:
        batch = await runner.run(["7", "7", "8", "8"], group_size=2)
    assert batch.complete and [r.group for r in batch.records] == [0, 0, 1, 1]
    assert [r.prompt for r in batch.records] == ["7", "7", "8", "8"]
    out = batch.to_trl()  # the one record-to-TRL conversion, validated
    assert out["env_reward"] == [1.0] * 4 and all(m == 5 for m in out["num_turns"])
    assert [t.calls[-1].index for t in runner.last_traces] == [4] * 4
    assert batch.metrics["policy_calls"] >= 5  # one batcher for every agent


async def test_a_dead_env_server_drops_the_group_never_a_reward(tokenizer):
    policy = ScriptedPolicy(tokenizer, scripted_answer)
    async with AgentRunner(policy, ["http://127.0.0.1:9"]) as runner:  # nothing listens
        batch = await runner.run(["1", "2"], group_size=1)
    assert batch.dropped_groups == [0, 1] and not batch.records
    assert batch.errors == {"ServerUnreachableError": 4}  # each row twice (max_episode_retries=1)


async def demonstrations(urls, tokenizer, n=16):
    async with AgentRunner(ScriptedPolicy(tokenizer, scripted_answer), urls) as runner:
        batch = await runner.run(range(100, 100 + n))
    return batch.records


def test_grpo_through_trl_trains_the_agent_on_its_captured_tokens(notes_urls, tokenizer, tmp_path):
    import asyncio

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from openenv_train.training import env_reward, make_agent_rollout_func, trace_warmup

    model = notes_model(tokenizer)
    demos = asyncio.run(demonstrations(notes_urls, tokenizer, n=4))
    warm = trace_warmup(model, tokenizer, demos, steps=10, batch_size=4)
    assert (
        warm.final_loss < warm.first_loss
    )  # a few steps on the recorded tokens (the notebook does more)
    rollout_func = make_agent_rollout_func(notes_urls, proxy_options={"max_new_tokens": 48})
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
        batch = rollout_func.last_batch
        traces = rollout_func.runner.last_traces
    finally:
        rollout_func.close()
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed, "GRPO did not move any weight"
    rewards = [r.reward for r in batch.records]
    assert len(rewards) == 8 and all(0.0 <= r <= 1.0 for r in rewards)
    for rec, trace in zip(batch.records, traces, strict=True):  # exactly what the policy saw
        last_call = trace.calls[-1]
        assert (
            rec.prompt_ids + rec.completion_ids == last_call.prompt_ids + last_call.completion_ids
        )
        model_lp = [lp for lp, m in zip(rec.logprobs, rec.env_mask, strict=True) if m]
        assert len(model_lp) == sum(len(c.completion_ids) for c in trace.calls)
        assert any(lp < 0 for lp in model_lp)  # real sampling logprobs, not placeholders
