"""A run folder as a training run leaves it, for the viewer tests: metrics.jsonl, config.json,
baselines.json and trajectories recorded from real greedy BlackJack evals of a tiny model, or
from greedy self-play Kuhn poker games (both seats the tiny model) on a real env server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openenv_train.rollout.episode import EpisodeRecorder
from openenv_train.training.periodic_evals import write_trajectories

HANDS, KEPT = 12, 6
#: self-play games played, and the first ones kept (the recorder's bound)
GAMES, GAMES_KEPT = 6, 4


def tiny_policy() -> Any:
    import torch
    from blackjack_env.text_spec import VOCABULARY

    from openenv_train.policy.tiny import build_tiny_model
    from openenv_train.policy.transformers_policy import TransformersPolicy

    torch.set_num_threads(1)
    model, tok = build_tiny_model(VOCABULARY)
    return TransformersPolicy(model, tok)


def recorded_eval(policy: Any, seed: int = 3) -> list[dict[str, Any]]:
    from blackjack_env.evaluation import evaluate_policy

    recorder = EpisodeRecorder(KEPT)
    evaluate_policy(policy, HANDS, seed, recorder=recorder)
    return recorder.episodes


async def selfplay_games(url: str, seed: int, recorder: EpisodeRecorder | None) -> Any:
    from openspiel_games_env import OpenSpielEnv
    from openspiel_games_env.text_spec import KUHN_VOCAB, SeatTextSpec

    from openenv_train.policy.tiny import build_tiny_model
    from openenv_train.policy.transformers_policy import TransformersPolicy
    from openenv_train.rollout.episode import RolloutConfig
    from openenv_train.rollout.selfplay import SelfPlayRunner

    model, tok = build_tiny_model(KUHN_VOCAB, seed=1)
    clients = [OpenSpielEnv(url) for _ in range(3)]
    for c in clients:
        await c.connect()
    runner = SelfPlayRunner(
        TransformersPolicy(model, tok),
        SeatTextSpec("kuhn_poker"),
        clients,
        config=RolloutConfig(max_turns=4, max_new_tokens=2, temperature=0.0),
        seed=seed,
        recorder=recorder,
    )
    try:
        return await runner.play(GAMES)
    finally:
        await runner.aclose()
        await runner.policy.aclose()


def recorded_selfplay(url: str, seed: int = 11) -> tuple[list[dict[str, Any]], list[Any]]:
    """``(the recorded episodes, every game played)``: ``GAMES`` greedy self-play games of Kuhn
    poker on the server at ``url``, the first ``GAMES_KEPT`` recorded seat by seat."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import torch

    torch.set_num_threads(1)
    recorder = EpisodeRecorder(GAMES_KEPT)
    with ThreadPoolExecutor(1) as thread:  # its own loop: a browser test's Playwright runs one
        games = thread.submit(asyncio.run, selfplay_games(url, seed, recorder)).result()
    return recorder.episodes, games


class Env:
    app = "blackjack_env.server.app:app"


class SelfPlayEnv:
    app = "openspiel_games_env.server.apps:kuhn_poker"


def make_run(
    path: Path,
    episodes: list[dict[str, Any]],
    steps: tuple[int, ...] = (0, 10),
    env: Any = None,
) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"recipe": "grpo_blackjack", "name": path.name}))
    (path / "baselines.json").write_text(json.dumps({"always stand": {"win": 0.38}}))
    rows = [{"kind": "warmup", "step": 0, "final_loss": 0.7}]
    for i, step in enumerate(steps):
        rows.append({"kind": "eval", "step": step, "win": 0.3 + 0.05 * i, "mean_return": -0.2})
        rows.append({"kind": "train", "step": step + 5, "reward": -0.2 + 0.01 * i, "entropy": 0.1})
        rows.append({"kind": "rollout", "step": step + 5, "staleness": 1, "reward_mean": -0.2})
        write_trajectories(path, step, episodes, env or Env())
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
