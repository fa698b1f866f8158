"""The recipe's actor graph on real Monarch processes: a few steps of forge's loop end to end.

Real parts: Monarch 0.7.0 actors on local processes, a real BlackJack server, the tiny Llama.
Checked: the trainer's weights change and reach the generator, versions advance one per step,
the replay buffer drops rows older than ``off_by_n``, and no process outlives the graph.
"""

from __future__ import annotations

import asyncio

import psutil
import pytest
import torch
from proc_checks import alive

from openenv_train.policy.tiny import load_tiny_model
from openenv_train.recipes.forge_grpo_blackjack.app import run_loop, spawn_monarch
from openenv_train.recipes.forge_grpo_blackjack.config import parse_config
from openenv_train.training.forge import GeneratorPolicy
from openenv_train.training.forge.mesh import ActorGraph

pytestmark = pytest.mark.timeout(240)


def _descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_forge_loop_on_monarch(servers, model_dir) -> None:
    # off_by_n 0 and rollouts of two batches: the second half is one version old by the time
    # the trainer asks again, so the buffer must drop it
    cfg = parse_config(
        {
            "recipe": "forge_grpo_blackjack",
            "steps": 3,
            "group_size": 4,
            "local_batch_size": 16,
            "off_by_n": 0,
            "max_res_tokens": 48,
            "rollout": {"groups_per_rollout": 8},
            "trainer": {"learning_rate": 1e-2, "lr_schedule": "constant"},
        }
    )
    before_pids = _descendants()
    initial = {k: v.clone() for k, v in load_tiny_model(model_dir)[0].state_dict().items()}
    seen: list[tuple[int, float]] = []

    async def main():
        async with ActorGraph() as graph:
            actors = spawn_monarch(cfg, graph, model_dir, servers.base_urls)

            async def on_step(step, metrics, state):
                seen.append((step, metrics["loss"]))

            state = await run_loop(cfg, actors, on_step=on_step, log=lambda *a: None)
            pushed = await actors.trainer.push_weights.call_one(state.step)
            version = await actors.generator.get_version.call_one()
            stats = await actors.replay_buffer.stats.call_one()
            # forge's one-prompt generate(prompt) through Monarch (call_one), not generate_ids
            tokenizer = load_tiny_model(model_dir)[1]
            one = GeneratorPolicy(actors.generator, tokenizer, batched=False)
            completions = await actors.generator.generate.call_one(
                "player 15 hard dealer 10 action:"
            )
            from openenv_train.policy.interface import SamplingSettings

            gens = await one.generate(
                [tokenizer.encode("player 12 soft dealer A action:")], SamplingSettings()
            )
            spawned = _descendants() - before_pids
            await actors.rollouts[0].close.call_one()
        return state, pushed, version, stats, completions, gens, spawned

    state, pushed, version, stats, completions, gens, spawned = asyncio.run(main())
    assert state.step == 3 and [s for s, _ in seen] == [1, 2, 3]
    assert version == 3  # one weight push per step reached the generator
    assert completions[0].generator_version == 3 and len(completions[0].token_ids) >= 1
    assert gens[0].extra["generator_version"] == 3
    changed = [k for k in initial if not torch.equal(initial[k], pushed[k])]
    assert changed, "training changed no weight"
    assert stats["evicted_stale"] > 0, stats  # rows older than off_by_n=0 were dropped
    assert stats["max_sampled_age"] == 0
    assert len(spawned) >= 4, "expected one process per actor"
    assert not alive(spawned), "actor processes outlived the graph"
