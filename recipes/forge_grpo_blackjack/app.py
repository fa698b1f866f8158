"""forge's GRPO loop over an actor graph: continuous rollouts -> replay buffer -> train -> push.

The same two loops as forge's GRPO app (``continuous_rollouts`` beside ``continuous_training``):
rollout actors play whole groups (advantages set) into the replay buffer; the training loop
samples a batch at the current policy version (the buffer drops rows older than ``off_by_n``
versions), runs a train step, and pushes the new weights to the generator, every step. A rollout
actor waits while the buffer already holds a full batch (woken by the next sample, not by
polling), so two CPU cores are not spent on rows that would only go stale.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .config import ForgeRecipeConfig


@dataclass
class Actors:
    """Handles of the spawned actors (``generator`` may be a forge service)."""

    generator: Any
    trainer: Any
    replay_buffer: Any
    rollouts: list[Any]
    push: Callable[[int], Any]  # push the trainer's weights for a version to the generator(s)


@dataclass
class LoopState:
    step: int = 0
    episodes: int = 0
    rollouts: int = 0
    dropped_groups: int = 0
    last_rollout: dict[str, Any] = field(default_factory=dict)
    #: the trainer's current weights (for evals in the controller)
    fetch_weights: Callable[[], Awaitable[dict[str, Any]]] | None = None


async def _wait(event: asyncio.Event, timeout_s: float = 1.0) -> None:
    """Wait for ``event`` at most ``timeout_s`` (a missed wake-up costs a second, never a hang)."""
    try:
        await asyncio.wait_for(event.wait(), timeout_s)
    except asyncio.TimeoutError:
        pass


async def monarch_push(actors: Actors, version: int) -> None:
    """Our CPU path: the trainer hands its weights over, the generator loads them."""
    state = await actors.trainer.push_weights.call_one(version)
    await actors.generator.update_weights.call_one(version, state)


async def run_loop(
    cfg: ForgeRecipeConfig,
    actors: Actors,
    *,
    on_step: Callable[[int, dict[str, Any], LoopState], Any],
    log: Callable[[str, int, dict[str, Any]], None],
    state: LoopState | None = None,
    stop_requested: Callable[[], bool] = lambda: False,
) -> LoopState:
    """Train up to ``cfg.steps`` steps (from ``state.step`` on a resumed run); ``on_step(step,
    train_metrics, state)`` after each weight push; ``stop_requested()`` ends it after a step."""
    state = state or LoopState()
    sampled, added = asyncio.Event(), asyncio.Event()  # wake-ups instead of polling the buffer
    state.fetch_weights = lambda: actors.trainer.push_weights.call_one(state.step)
    stop = asyncio.Event()
    groups = cfg.rollout.groups_per_rollout

    async def continuous_rollouts(rollout: Any) -> None:
        while not stop.is_set():
            sampled.clear()  # cleared before the check, so a sample in between still wakes us
            stats = await actors.replay_buffer.stats.call_one()
            if stats["size"] >= cfg.local_batch_size:
                await _wait(sampled)
                continue
            batch, metrics = await rollout.rollout.call_one(groups, cfg.group_size)
            episodes = [e for g in batch for e in g]
            if episodes:
                await actors.replay_buffer.add.call_one(episodes)
                added.set()
            state.episodes += len(episodes)
            state.rollouts += 1
            state.dropped_groups += metrics.get("dropped_groups", 0)
            state.last_rollout = metrics
            if state.rollouts % 10 == 0:
                log("rollout", state.step, {**metrics, "episodes": state.episodes})

    async def continuous_training() -> None:
        while state.step < cfg.steps and not stop_requested():
            added.clear()
            batch = await actors.replay_buffer.sample.call_one(curr_policy_version=state.step)
            sampled.set()
            if batch is None:
                await _wait(added)
                continue
            t0 = time.perf_counter()
            inputs, targets = batch
            metrics = await actors.trainer.train_step.call_one(inputs, targets)
            if not isinstance(metrics, dict):  # forge's TitanTrainer returns the loss alone
                metrics = {"loss": float(metrics)}
            state.step += 1
            await actors.push(state.step)
            metrics["step_s"] = time.perf_counter() - t0
            await on_step(state.step, metrics, state)

    tasks = [asyncio.create_task(continuous_rollouts(r)) for r in actors.rollouts]
    training = asyncio.create_task(continuous_training())
    try:
        while not training.done():  # a failing rollout actor must not leave training waiting
            done, _ = await asyncio.wait([training, *tasks], return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                if t is not training and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        training.result()
    finally:
        stop.set()
        for t in [training, *tasks]:
            t.cancel()
        await asyncio.gather(training, *tasks, return_exceptions=True)
    return state


def spawn_monarch(cfg: ForgeRecipeConfig, graph: Any, model_dir: str, urls: list[str]) -> Actors:
    """Our CPU actor graph: generator, trainer, replay buffer and rollout actor(s), one process each."""
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training.forge.actors import (
        GeneratorActor,
        ReplayBufferActor,
        RolloutActor,
        TrainerActor,
    )

    r, t = cfg.rollout, cfg.trainer
    generator = graph.spawn("generator", GeneratorActor, model_dir, threads=1)
    trainer = graph.spawn(
        "trainer",
        TrainerActor,
        model_dir,
        learning_rate=t.learning_rate,
        lr_schedule=t.lr_schedule,
        steps=cfg.steps,
        max_norm=t.max_norm,
        loss={**t.loss.model_dump(), "temperature": r.temperature},
        entropy={"target": t.entropy.target, "delta": t.entropy.delta}
        if t.entropy.enabled
        else None,
        threads=t.threads,
        seed=cfg.seed,
        lora=cfg.lora.model_dump() if cfg.lora.enabled else None,  # pushed merged
    )
    buffer = graph.spawn(
        "replay_buffer",
        ReplayBufferActor,
        cfg.local_batch_size,
        max_policy_age=cfg.off_by_n,
        max_buffer_size=cfg.replay_buffer.max_buffer_size,
        max_resample_count=cfg.replay_buffer.max_resample_count,
        seed=cfg.seed,
    )
    rollout_kw = {
        "max_turns": r.max_turns,
        "max_new_tokens": r.max_new_tokens,
        "max_concurrency": r.max_concurrency,
        "max_batch_size": r.max_batch_size,
        "temperature": r.temperature,
    }
    rollouts = [
        graph.spawn(
            f"rollout{i}",
            RolloutActor,
            BlackjackTextSpec(
                seed=cfg.seed + 7_919 * i,
                same_deal_per_group=r.same_deal_per_group,
                invalid_action_reward=r.invalid_action_reward,
            ),
            urls,
            generator,
            model_dir,
            rollout=rollout_kw,
            request_len=cfg.max_req_tokens,
            response_len=cfg.max_res_tokens,
        )
        for i in range(cfg.actors.rollout.num_replicas)
    ]
    actors = Actors(generator, trainer, buffer, rollouts, push=lambda v: None)
    actors.push = lambda v: monarch_push(actors, v)
    return actors
