"""Greedy evaluation of a BlackJack policy on fresh seeded hands, beside the baselines.

The policy plays in-process on ``blackjack_env.game`` (the same rules module the env server runs,
dealt with the same seeds), so a 20k-hand eval takes seconds instead of minutes of round trips.
Hands run through the same episode loop and ``TokenCodec`` as training: the model sees the same
contexts. :func:`evaluate_via_servers` plays the same hands through the real servers and the
rollout engine instead (slower; it proves the two agree). Every trainer of BlackJack (the TRL
recipe, the forge app) evaluates with these; nothing here imports torch.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from typing import Any

from openenv_train.client.sync import run_blocking
from openenv_train.policy.interface import Generation
from openenv_train.rollout.batcher import GenerationBatcher
from openenv_train.rollout.episode import EpisodeRecorder, Reply, RolloutConfig, play_episode
from openenv_train.rollout.tokens import TokenCodec

from .game import HIT, STAND, BlackjackGame, basic_strategy, rank_label
from .text_spec import BlackjackTextSpec, decision_text, game_view, parse_answer

#: The eval table's columns: (header, key, format).
COLUMNS = (
    ("win", "win", ".1%"),
    ("push", "push", ".1%"),
    ("lose rate", "lose_rate", ".1%"),
    ("mean return", "mean_return", "+.3f"),
    ("invalid", "invalid", ".1%"),
)

EVAL_BATCH = 4096
#: Periodic (validation) evals deal from seed + this, apart from the final eval's hands.
VALIDATION_OFFSET = 10_000_000


def summarize(rewards: Sequence[float], invalid: int = 0) -> dict[str, float]:
    """Win / push / lose rate (the share of hands lost: not a training loss), mean return."""
    n = max(1, len(rewards))
    return {
        "win": sum(r > 0 for r in rewards) / n,
        "push": sum(r == 0 for r in rewards) / n,
        "lose_rate": sum(r < 0 for r in rewards) / n,
        "mean_return": sum(rewards) / n,
        "invalid": invalid / n,
        "hands": len(rewards),
    }


def play_scripted(
    choose: Callable[[BlackjackGame, random.Random], int], hands: int, seed: int
) -> dict[str, float]:
    """Play ``hands`` seeded hands with a Python policy (the baselines)."""
    rng = random.Random(seed ^ 0x5EED)
    rewards = []
    for k in range(hands):
        game = BlackjackGame.deal(seed=seed + k)
        while not game.done:
            game.apply(choose(game, rng))
        rewards.append(game.reward)
    return summarize(rewards)


BASELINES: dict[str, Callable[[BlackjackGame, random.Random], int]] = {
    "random": lambda g, rng: rng.choice((HIT, STAND)),
    "always stand": lambda g, rng: STAND,
    "basic strategy": lambda g, rng: basic_strategy(
        g.player_total, g.player_soft, rank_label(g.dealer_upcard)
    ),
}


def baselines(hands: int, seed: int) -> dict[str, dict[str, float]]:
    """Random, always-stand and basic-strategy results on the same seeded hands."""
    return {name: play_scripted(fn, hands, seed) for name, fn in BASELINES.items()}


def evaluate_policy(
    policy: Any,
    hands: int,
    seed: int,
    *,
    max_turns: int = 8,
    max_new_tokens: int = 4,
    system_prompt: str | None = None,
    recorder: EpisodeRecorder | None = None,
) -> dict[str, float]:
    """Greedy play of ``policy`` on seeded hands, through the same episode loop as training.

    Hands are played ``EVAL_BATCH`` at a time; every turn of the hands still in play is one
    batched policy call. An unparsable answer ends the hand with -1 (as in training) and counts
    as ``invalid``; running out of turns is -1 too (the engine's truncation reward).
    ``recorder`` keeps the first hands turn by turn (the run viewer's samples).
    """
    config = RolloutConfig(
        max_turns=max_turns,
        max_new_tokens=max_new_tokens,
        temperature=0.0,
        max_batch_size=EVAL_BATCH,
        system_prompt=system_prompt,
    )
    system = [{"role": "system", "content": system_prompt}] if system_prompt else []

    async def play(hand: int, batcher: GenerationBatcher, codec: TokenCodec) -> tuple[float, str]:
        game = BlackjackGame.deal(seed=seed + hand)

        async def respond(gen: Generation) -> Reply:
            action = parse_answer(gen.text)
            if action is None:
                return Reply(stop="invalid", reward=-1.0)
            game.apply(action)
            if game.done:  # the end, as the run viewer shows it
                end = f"player {' '.join(game.player)}, dealer {' '.join(game.dealer)}"
                return Reply([{"role": "user", "content": end}], "done", float(game.reward))
            return Reply([{"role": "user", "content": decision_text(game_view(game))}])

        batcher.register()
        try:
            episode = await play_episode(
                [*system, {"role": "user", "content": decision_text(game_view(game))}],
                generate=batcher.generate,
                codec=codec,
                config=config,
                respond=respond,
                recorder=recorder,
            )
        finally:
            batcher.unregister()
        return (float(game.reward) if episode.stop == "done" else -1.0), episode.stop

    async def play_all() -> list[tuple[float, str]]:
        codec = TokenCodec(policy.tokenizer)
        batcher = GenerationBatcher(policy, max_batch_size=EVAL_BATCH, max_wait_s=60.0)
        results: list[tuple[float, str]] = []
        try:
            for start in range(0, hands, EVAL_BATCH):
                chunk = range(start, min(hands, start + EVAL_BATCH))
                results += await asyncio.gather(*(play(k, batcher, codec) for k in chunk))
        finally:
            await batcher.aclose()
        return results

    results = run_blocking(play_all())  # also from a notebook's running loop
    return summarize([r for r, _ in results], sum(stop == "invalid" for _, stop in results))


def evaluate_via_servers(
    policy: Any, servers: Sequence[Any], hands: int, seed: int, **rollout_kw: Any
) -> dict[str, float]:
    """The same greedy eval through the real env servers and the rollout engine."""
    from openenv_train.rollout.engine import RolloutConfig, RolloutEngine

    spec = BlackjackTextSpec(seed=seed)
    config = RolloutConfig(temperature=0.0, **rollout_kw)

    async def run() -> list[float]:
        async with RolloutEngine(spec, policy, servers, config) as engine:
            batch = await engine.run(["eval"] * hands, 1)
        return [r.reward for r in batch.records]

    return summarize(run_blocking(run()))
