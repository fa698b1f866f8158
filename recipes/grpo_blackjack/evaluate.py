"""Greedy evaluation of a BlackJack policy on fresh seeded hands, beside the baselines.

The policy plays in-process on ``blackjack_env.game`` (the same rules module the env server runs,
dealt with the same seeds), so a 20k-hand eval takes seconds instead of minutes of round trips.
Token ids are built with the rollout engine's ``TokenCodec`` exactly as in training: the model
sees the same contexts. ``evaluate_via_servers`` plays the same hands through the real servers
and the rollout engine instead (slower; it proves the two agree).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from blackjack_env.game import HIT, STAND, BlackjackGame, basic_strategy, rank_label
from blackjack_env.text_spec import decision_text, game_view, parse_answer

from openenv_train.policy.base import SamplingSettings
from openenv_train.rollout.tokens import TokenCodec

EVAL_BATCH = 4096


def summarize(rewards: Sequence[float], invalid: int = 0) -> dict[str, float]:
    n = max(1, len(rewards))
    return {
        "win": sum(r > 0 for r in rewards) / n,
        "push": sum(r == 0 for r in rewards) / n,
        "loss": sum(r < 0 for r in rewards) / n,
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
) -> dict[str, float]:
    """Greedy play of ``policy`` (a ``TransformersPolicy``: ``generate_sync``) on seeded hands.

    An unparsable answer ends the hand with -1 (as in training) and counts as ``invalid``.
    """
    codec = TokenCodec(policy.tokenizer)
    eos = policy.tokenizer.eos_token_id
    sampling = SamplingSettings(
        max_new_tokens=max_new_tokens, temperature=0.0, stop_token_ids=(eos,)
    )
    rewards: list[float] = []
    invalid = 0
    for start in range(0, hands, EVAL_BATCH):
        games = [
            BlackjackGame.deal(seed=seed + k) for k in range(start, min(hands, start + EVAL_BATCH))
        ]
        system = [{"role": "system", "content": system_prompt}] if system_prompt else []
        contexts = [
            codec.prompt_ids([*system, {"role": "user", "content": decision_text(game_view(g))}])
            for g in games
        ]
        result = [0.0] * len(games)
        active = list(range(len(games)))
        for _turn in range(max_turns):
            if not active:
                break
            gens = policy.generate_sync([contexts[i] for i in active], sampling)
            still = []
            for i, gen in zip(active, gens, strict=True):
                action = parse_answer(gen.text)
                if action is None:
                    result[i] = -1.0
                    invalid += 1
                    continue
                game = games[i]
                game.apply(action)
                if game.done:
                    result[i] = game.reward
                    continue
                turn = codec.turn_ids(
                    [{"role": "user", "content": " " + decision_text(game_view(game))}]
                )
                contexts[i] = contexts[i] + list(gen.token_ids) + turn
                still.append(i)
            active = still
        for i in active:
            result[i] = -1.0  # ran out of turns (as the engine's truncation reward)
        rewards.extend(result)
    return summarize(rewards, invalid)


def evaluate_via_servers(
    policy: Any, servers: Sequence[Any], hands: int, seed: int, **rollout_kw: Any
) -> dict[str, float]:
    """The same greedy eval through the real env servers and the rollout engine."""
    import asyncio

    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.rollout.engine import RolloutConfig, RolloutEngine

    spec = BlackjackTextSpec(seed=seed)
    config = RolloutConfig(temperature=0.0, **rollout_kw)

    async def run() -> list[float]:
        async with RolloutEngine(spec, policy, servers, config) as engine:
            batch = await engine.run(["eval"] * hands, 1)
        return [r.reward for r in batch.records]

    rewards = asyncio.run(run())
    return summarize(rewards)
