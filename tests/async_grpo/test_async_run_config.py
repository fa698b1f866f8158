"""The async_grpo_blackjack recipe's config: the shipped GPU YAML loads and names the recipe; every
wrong key fails at load time naming the key. Needs trl (the train extra), not vLLM or a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    from recipes.async_grpo_blackjack.config import load_config

    cfg = load_config(ROOT / "configs" / "grpo_blackjack_async_vllm.yaml")
    assert cfg.recipe == "async_grpo_blackjack"
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
        ("trainer", {"report_to": ["wandb"]}, "trainer.report_to: set by the runner"),
        ("trainer", {"max_steps": 0}, "trainer.max_steps: set it > 0"),
        ("rollout", {"max_turn": 3}, "rollout.max_turn: not a RolloutConfig field"),
        ("rollout", {"max_turns": 0}, "max_turns must be >= 1"),
        ("worker", {"max_inflight_groups": 0}, "worker.max_inflight_groups"),
        ("env", {"num_server": 2}, "env.num_server"),
    ],
)
def test_wrong_keys_fail_naming_them(section: str, change: dict, named: str) -> None:
    from recipes.async_grpo_blackjack.config import ConfigError, load_config

    raw = _base()
    raw.setdefault(section, {}).update(change)
    with pytest.raises(ConfigError, match=named.replace(".", r"\.").replace(">", ".")):
        load_config(raw)
