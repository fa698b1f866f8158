"""With ``seed`` set and ``max_staleness: 0`` two recipe runs log the same metrics.

Each episode turn samples from its own seeded stream, so the batcher grouping model calls by
timing (which differs run to run) cannot change what is sampled."""

from __future__ import annotations

import json
from pathlib import Path


def _run(tmp_path: Path, name: str) -> list[dict]:
    from openenv_train.recipes.grpo_blackjack.config import parse_config
    from openenv_train.recipes.grpo_blackjack.train import run

    cfg = parse_config(
        {
            "recipe": "grpo_blackjack",
            "name": name,
            "output_dir": str(tmp_path),
            "seed": 3,
            "model": {"warmup_steps": 20, "warmup_batch_size": 16},
            "env": {"num_servers": 2},
            "rollout": {"max_concurrency": 24, "max_batch_size": 16},
            "grpo": {
                "max_steps": 3,
                "per_device_train_batch_size": 32,
                "num_generations": 4,
                "logging_steps": 1,
            },
            "eval": {"hands": 200, "every": 1, "periodic_hands": 50},
        },
    )
    run(cfg)
    lines = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_two_seeded_runs_log_identical_rewards(tmp_path: Path) -> None:
    a, b = _run(tmp_path, "a"), _run(tmp_path, "b")

    def picked(records: list[dict], kind: str, keys: tuple[str, ...]) -> list[tuple]:
        return [tuple(r.get(k) for k in keys) for r in records if r.get("kind") == kind]

    rollout_keys = ("step", "reward_mean", "turns_mean", "model_tokens_mean")
    ra, rb = picked(a, "rollout", rollout_keys), picked(b, "rollout", rollout_keys)
    assert len(ra) == 3 and ra == rb
    train_keys = ("step", "reward", "loss")
    ta, tb = picked(a, "train", train_keys), picked(b, "train", train_keys)
    assert ta and ta == tb
    assert picked(a, "eval_after", ("win", "mean_return")) == picked(
        b, "eval_after", ("win", "mean_return")
    )

    # the two runs side by side (``openenv-train curve``): one PNG, both runs' last points
    from openenv_train.cli.main import main

    png = tmp_path / "compare.png"
    assert main(["curve", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_curve_names_a_folder_without_a_curve(tmp_path: Path) -> None:
    import pytest

    from openenv_train.training.compare import compare_runs, read_curve

    with pytest.raises(ValueError, match="no learning curve"):
        read_curve(tmp_path)
    with pytest.raises(ValueError, match="at least two"):
        compare_runs([tmp_path], tmp_path / "x.png")


def test_same_state_keys_reach_the_blackjack_spec(tmp_path: Path, monkeypatch) -> None:
    """The recipe's ``rollout.same_state_per_group`` keys build the spec the engine plays."""
    import pytest

    from openenv_train.recipes.grpo_blackjack import train
    from openenv_train.recipes.grpo_blackjack.config import parse_config

    class Captured(Exception):
        pass

    def capture(cfg, spec, *args, **kwargs):
        raise Captured(spec)

    monkeypatch.setattr(train, "rollout_func_from_config", capture)
    cfg = parse_config(
        {
            "recipe": "grpo_blackjack",
            "name": "same_state",
            "output_dir": str(tmp_path),
            "seed": 5,
            "model": {"warmup_steps": 2, "warmup_batch_size": 8},
            "env": {"num_servers": 1},
            "rollout": {
                "same_state_per_group": True,
                "state_weight_power": 0.5,
                "deal_pool_size": 2000,
            },
            "grpo": {"max_steps": 1, "per_device_train_batch_size": 8, "num_generations": 4},
            "eval": {"hands": 20, "every": 1, "periodic_hands": 20},
        },
    )
    with pytest.raises(Captured) as caught:
        train.run(cfg)
    spec = caught.value.args[0]
    assert spec.state_deals is not None and spec.seed == 5
    assert spec.state_deals.power == 0.5 and spec.state_deals.size == 2000
