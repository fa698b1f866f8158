"""The async_grpo_blackjack recipe's config: the shipped GPU YAML loads and names the recipe; every
wrong key fails at load time naming the key. Needs trl (the train extra), not vLLM or a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytest.importorskip("trl.experimental.async_grpo")

ROOT = Path(__file__).resolve().parents[2]


def _base() -> dict:
    return {
        "name": "t",
        "model": {"path": "m"},
        "env": {"app": "a:app", "spec": "m:Spec"},
        "trainer": {"max_steps": 2},
    }


def test_shipped_gpu_config_loads() -> None:
    from openenv_train.cli.recipes import get_recipe
    from openenv_train.recipes.async_grpo_blackjack.config import AsyncRunConfig

    recipe = get_recipe("async_grpo_blackjack")
    cfg = recipe.load_config(ROOT / "configs" / "grpo_blackjack_async_vllm.yaml")
    assert recipe.config_class is AsyncRunConfig and cfg.recipe == "async_grpo_blackjack"
    assert cfg.model.hub and cfg.vllm.base_url == "http://127.0.0.1:8000"
    assert cfg.trainer["max_staleness"] == 2 and cfg.trainer["bf16"] is True
    assert cfg.env.spec == "blackjack_env.text_spec:BlackjackTextSpec"
    assert cfg.rollout_config().max_new_tokens == 16


@pytest.mark.parametrize(
    ("section", "change", "named"),
    [
        ("trainer", {"max_stalenes": 2}, "trainer.max_stalenes: not an AsyncGRPOConfig field"),
        ("trainer", {"output_dir": "x"}, "trainer.output_dir: set by the runner"),
        ("trainer", {"vllm_server_base_url": "x"}, "use vllm.base_url"),
        ("trainer", {"max_steps": 0}, "trainer.max_steps: set it > 0"),
        ("rollout", {"max_turn": 3}, "rollout.max_turn: not a RolloutConfig field"),
        ("rollout", {"max_turns": 0}, "max_turns must be >= 1"),
        ("worker", {"max_inflight_groups": 0}, "worker.max_inflight_groups"),
        ("env", {"num_server": 2}, "env.num_server"),
    ],
)
def test_wrong_keys_fail_naming_them(section: str, change: dict, named: str) -> None:
    from openenv_train.recipes.async_grpo_blackjack.config import ConfigError, load_config

    raw = _base()
    raw.setdefault(section, {}).update(change)
    with pytest.raises(ConfigError, match=named.replace(".", r"\.").replace(">", ".")):
        load_config(raw)


def test_cli_overrides_reach_the_async_recipe(monkeypatch, tmp_path) -> None:
    """``openenv-train train`` runs the recipe; --max-steps sets trainer.max_steps; --resume
    needs a checkpoint in the run folder's trainer/."""
    import openenv_train.recipes.async_grpo_blackjack.train as train
    from openenv_train.cli.main import main

    seen = []
    monkeypatch.setattr(train, "run", seen.append)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"recipe": "async_grpo_blackjack", **_base()}))
    assert main(["train", str(config), "--max-steps", "5", "--name", "n"]) == 0
    assert seen[0].trainer["max_steps"] == 5 and seen[0].name == "n" and not seen[0].resume
    run_dir = tmp_path / "runs" / "r"
    assert main(["train", str(config), "--resume", str(run_dir)]) == 2  # no checkpoint yet
    (run_dir / "trainer" / "checkpoint-3").mkdir(parents=True)
    assert main(["train", str(config), "--resume", str(run_dir)]) == 0
    assert seen[1].resume and seen[1].output_dir == str(run_dir.parent) and seen[1].name == "r"


def test_a_gpu_machine_needs_its_own_vllm_server(monkeypatch, tmp_path) -> None:
    import torch

    from openenv_train.recipes.async_grpo_blackjack.config import ConfigError, load_config
    from openenv_train.recipes.async_grpo_blackjack.train import run

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    cfg = load_config({**_base(), "output_dir": str(tmp_path)})
    with pytest.raises(ConfigError, match="vllm.base_url: on a GPU machine"):
        run(cfg)
    assert not (tmp_path / "t").exists()  # nothing started, no run folder
