"""Self-play training with the tiny CPU model through TRL's GRPOTrainer: every seat's reward
reaches TRL's reward function row by row, and Kuhn poker's exact NashConv falls in a few steps;
the recipe runs end to end (curve, per-seat rollout metrics, summary)."""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

import pytest
from openspiel_games_env import OpenSpielEnv
from openspiel_games_env.evaluation import model_policy, nash_conv
from openspiel_games_env.games import load
from openspiel_games_env.text_spec import KUHN_VOCAB, SeatTextSpec, random_turns

from openenv_train.training.errors import ConfigError

pytestmark = pytest.mark.timeout(600)


class Batched(OpenSpielEnv):
    batch_frames = True


def test_per_seat_rewards_reach_trl_and_nash_conv_falls(kuhn, tmp_path: Path) -> None:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from openenv_train.policy.tiny import build_tiny_model
    from openenv_train.policy.transformers_policy import TransformersPolicy
    from openenv_train.rollout.episode import RolloutConfig
    from openenv_train.rollout.selfplay import SelfPlayRunner
    from openenv_train.training.rollout_func import RolloutFunc, RunnerStrategy
    from openenv_train.training.warmup import format_warmup

    torch.manual_seed(0)
    model, tok = build_tiny_model(KUHN_VOCAB, init_std=0.1, seed=0)
    game = load("kuhn_poker")
    format_warmup(model, tok, lambda rng: random_turns(game, "kuhn_poker", rng), steps=150, seed=0)
    before = nash_conv("kuhn_poker", model_policy(model, tok, "kuhn_poker").policy)

    def make(trainer):
        return SelfPlayRunner(
            TransformersPolicy(model, tok),
            SeatTextSpec("kuhn_poker"),
            [Batched(kuhn.url) for _ in range(64)],
            config=RolloutConfig(max_turns=4, max_new_tokens=2),
            seed=1,
        )

    batches, seen = [], []

    def reward(completions, env_reward, **kw):
        seen.append(list(env_reward))
        return env_reward

    rollout = RolloutFunc(RunnerStrategy(make), on_batch=batches.append)
    args = GRPOConfig(
        output_dir=str(tmp_path / "trainer"),
        per_device_train_batch_size=128,
        num_generations=8,
        max_steps=24,
        learning_rate=5e-4,
        beta=0.0,
        loss_type="dapo",
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        max_completion_length=32,
        disable_tqdm=True,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["kuhn"] * 512}),
        processing_class=tok,
        rollout_func=rollout,
    )
    try:
        trainer.train()
    finally:
        rollout.close()
    # TRL's reward function got each batch's rows: seat 0's group, then seat 1's, per deal
    assert len(seen) == len(batches) >= 24
    for rewards, batch in zip(seen, batches, strict=True):
        assert rewards == [r.reward for r in batch.records]
        seats = [r.metrics["seat"] for r in batch.records]
        assert seats == ([0] * 8 + [1] * 8) * 8
    after = nash_conv("kuhn_poker", model_policy(model, tok, "kuhn_poker").policy)
    assert after < before - 0.1, (before, after)


def test_the_recipe_trains_by_self_play(tmp_path: Path) -> None:
    from openenv_train.recipes.grpo_selfplay.config import parse_config
    from openenv_train.recipes.grpo_selfplay.train import run

    cfg = parse_config(
        {
            "recipe": "grpo_selfplay",
            "name": f"selfplay_{random.randrange(10**9)}",
            "output_dir": str(tmp_path),
            "progress": False,
            "model": {"warmup_steps": 60},
            "selfplay": {
                "advantages": "role",
                "pool_share": 0.5,
                "pool_every": 2,
                "concurrency": 32,
            },
            "grpo": {"max_steps": 4, "per_device_train_batch_size": 64, "logging_steps": 2},
            "eval": {
                "every": 2,
                "games": 10,
                "periodic_games": 5,
                "opponents": ["random"],
                "average_from": 0,
                "distill_average": True,
                "distill_steps": 5,
            },
        }
    )
    summary = run(cfg)
    run_dir = tmp_path / cfg.name
    assert (run_dir / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert [p["step"] for p in summary["curve"]] == [0, 2, 4]
    before = summary["before"]
    assert 0 < before["nash_conv"] < 3 and 0 <= before["seat1/random/win"] <= 1
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rollout = [r for r in rows if r["kind"] == "rollout"]
    assert rollout and all("seat0/mean_return" in r for r in rollout)
    assert any(r["pool_games"] > 0 for r in rollout)
    assert before["games"] == 10 and summary["after_last"]["games"] == 10
    assert {r["games"] for r in rows if r["kind"] == "eval"} == {5}  # the periodic ones
    distilled = [r for r in rows if r["kind"] == "distill"]
    assert len(distilled) == 1 and distilled[0]["policies"] == len(summary["curve"])
    assert 0 < summary["after_last"]["avg_nash_conv"] < 3


def test_the_tic_tac_toe_recipe_reports_exact_losses_against_random_play(tmp_path: Path) -> None:
    """Masked moves, the punisher as the only built-in opponent, replays, and the exact
    win/draw/loss against random play beside the sampled games it must agree with; keep_best
    keeps the eval that loses least."""
    from openenv_train.recipes.grpo_selfplay.config import parse_config
    from openenv_train.recipes.grpo_selfplay.train import run

    cfg = parse_config(
        {
            "recipe": "grpo_selfplay",
            "name": f"selfplay_ttt_{random.randrange(10**9)}",
            "output_dir": str(tmp_path),
            "progress": False,
            "game": {"name": "tic_tac_toe"},
            "env": {"app": "openspiel_games_env.server.apps:tic_tac_toe"},
            "model": {"warmup_steps": 20},
            "selfplay": {
                "advantages": "group",
                "mask_illegal": True,
                "builtin_share": 1.0,
                "builtin_opponents": ["punisher"],
                "replay_share": 0.5,
                "concurrency": 16,
            },
            "rollout": {"max_turns": 6},
            "grpo": {
                "max_steps": 2,
                "per_device_train_batch_size": 32,
                "num_generations": 8,
                "logging_steps": 1,
            },
            "eval": {
                "every": 1,
                "games": 300,
                "periodic_games": 4,
                "opponents": ["random"],
                "nash_conv": False,
                "exact_random": True,
                "keep_best": True,
            },
        }
    )
    summary = run(cfg)
    for ev in (summary["before"], summary["after_last"]):
        for seat in (0, 1):
            exact = {k: ev[f"seat{seat}/exact/{k}"] for k in ("win", "draw", "loss")}
            assert math.isclose(sum(exact.values()), 1.0) and 0 < exact["loss"] < 1
            # 300 sampled greedy games through the server land near the exact rate
            assert abs(ev[f"seat{seat}/random/loss"] - exact["loss"]) < 0.1, (seat, ev)
    rows = [json.loads(line) for line in (tmp_path / cfg.name / "metrics.jsonl").open()]
    evals = [r for r in rows if r["kind"] == "eval" and r["step"] > 0]
    assert [r["step"] for r in evals] == [1, 2]
    for r in evals:
        assert r["neg_exact_loss"] == -(r["seat0/exact/loss"] + r["seat1/exact/loss"])
    # best/: the periodic eval whose seats lose least, exactly (the first of equals)
    best = json.loads((tmp_path / cfg.name / "best" / "best.json").read_text())
    first = max(evals, key=lambda r: (r["neg_exact_loss"], -r["step"]))
    assert (best["step"], best["score"]) == (first["step"], first["neg_exact_loss"])
    rollout = [r for r in rows if r["kind"] == "rollout"]
    assert rollout[0]["builtin_games"] > 0
    no_mask = {"recipe": "grpo_selfplay", "eval": {"exact_random": True}}
    with pytest.raises(ConfigError, match="exact_random.*mask_illegal: true too"):
        parse_config(no_mask)


def test_group_advantages_scale_by_the_batch_unless_the_config_says() -> None:
    from openenv_train.recipes.grpo_selfplay.config import parse_config

    base = {"recipe": "grpo_selfplay"}
    group = {**base, "selfplay": {"advantages": "group"}}
    assert parse_config(group).grpo.scale_rewards == "batch"
    assert parse_config(base).grpo.scale_rewards == "group"  # role: one group per seat
    asked = {**group, "grpo": {"scale_rewards": "group"}}
    assert parse_config(asked).grpo.scale_rewards == "group"


def test_replay_explore_needs_replays_and_the_legal_moves() -> None:
    from openenv_train.recipes.grpo_selfplay.config import parse_config
    from openenv_train.training.errors import ConfigError

    replays = {"builtin_share": 1.0, "replay_share": 0.5, "replay_explore": True}
    cfg = {"recipe": "grpo_selfplay", "game": {"name": "tic_tac_toe"}}
    assert parse_config(
        {**cfg, "selfplay": {**replays, "mask_illegal": True}}
    ).selfplay.replay_explore
    for selfplay in (replays, {"replay_explore": True, "mask_illegal": True}):
        with pytest.raises(ConfigError, match="replay_explore.*mask_illegal: true too"):
            parse_config({**cfg, "selfplay": selfplay})


def test_the_recipe_records_self_play_episodes_seat_by_seat(tmp_path: Path) -> None:
    """Each periodic eval's sample (``eval.trajectories``) is greedy self-play games, every turn
    naming its seat and every seat's rewards, in the files ``openenv-train view`` reads."""
    from openenv_train.cli.viewer.viewer_app import run_episodes
    from openenv_train.recipes.grpo_selfplay.config import parse_config
    from openenv_train.recipes.grpo_selfplay.train import run

    cfg = parse_config(
        {
            "recipe": "grpo_selfplay",
            "name": f"selfplay_view_{random.randrange(10**9)}",
            "output_dir": str(tmp_path),
            "progress": False,
            "model": {"warmup_steps": 20},
            "selfplay": {"concurrency": 4},
            "grpo": {
                "max_steps": 2,
                "per_device_train_batch_size": 8,
                "num_generations": 4,
                "logging_steps": 1,
            },
            "eval": {
                "every": 2,
                "games": 2,
                "periodic_games": 2,
                "opponents": ["random"],
                "nash_conv": False,
                "trajectories": 3,
            },
        }
    )
    run(cfg)
    run_dir = tmp_path / cfg.name
    files = sorted((run_dir / "trajectories").glob("step_*.jsonl"))
    assert [f.name for f in files] == ["step_000000.jsonl", "step_000002.jsonl"]
    episodes = run_episodes(run_dir)  # what the viewer shows
    assert [(e["step"], e["task"]) for e in episodes] == [(s, t) for s in (0, 2) for t in range(3)]
    for e in episodes:
        assert e["env"] == cfg.env.app and e["reward"] is None
        assert len(e["rewards"]) == 2 and all(isinstance(r, float) for r in e["rewards"])
        model = [t for t in e["turns"] if t["role"] == "model"]
        assert len(model) == e["num_turns"] >= 2 and {t["seat"] for t in model} == {0, 1}
        for seat in (0, 1):  # each seat's first turn is what it was shown: its own prompt
            first = next(t for t in e["turns"] if t["seat"] == seat)
            assert first["role"] == "prompt" and f"kuhn seat {seat} card" in first["text"]
    # seeded: the same task is the same deal at every eval
    deal = {(e["step"], e["task"]): e["turns"][0]["text"] for e in episodes}
    assert all(deal[(0, t)] == deal[(2, t)] for t in range(3))
