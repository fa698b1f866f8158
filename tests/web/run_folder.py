"""A run folder as a training run leaves it, for the viewer tests: metrics.jsonl, config.json,
baselines.json and trajectories recorded from real greedy BlackJack evals of a tiny model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openenv_train.rollout.episode import EpisodeRecorder
from openenv_train.training.periodic_evals import write_trajectories

HANDS, KEPT = 12, 6


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


class Env:
    app = "blackjack_env.server.app:app"


def make_run(path: Path, episodes: list[dict[str, Any]], steps: tuple[int, ...] = (0, 10)) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"recipe": "grpo_blackjack", "name": path.name}))
    (path / "baselines.json").write_text(json.dumps({"always stand": {"win": 0.38}}))
    rows = [{"kind": "warmup", "step": 0, "final_loss": 0.7}]
    for i, step in enumerate(steps):
        rows.append({"kind": "eval", "step": step, "win": 0.3 + 0.05 * i, "mean_return": -0.2})
        rows.append({"kind": "train", "step": step + 5, "reward": -0.2 + 0.01 * i, "entropy": 0.1})
        rows.append({"kind": "rollout", "step": step + 5, "staleness": 1, "reward_mean": -0.2})
        write_trajectories(path, step, episodes, Env())
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
