"""Reward functions read what the rollout recorded; a missing column is a clear error, not 0."""

from __future__ import annotations

import pytest

from openenv_train.training import env_reward, format_reward, make_format_reward


def test_env_reward_returns_the_recorded_rewards() -> None:
    assert env_reward(["a", "b", "c"], env_reward=[1, 0.0, -1]) == [1.0, 0.0, -1.0]


def test_env_reward_without_the_column_names_it() -> None:
    with pytest.raises(KeyError, match="env_reward"):
        env_reward(["a"], prompts=["p"])


def test_env_reward_row_count_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="2 values for 3 completions"):
        env_reward(["a", "b", "c"], env_reward=[1.0, 0.0])


def test_format_reward_penalises_invalid_episodes_only() -> None:
    metrics = [{"invalid_actions": 1}, {"invalid_actions": 0}, {}]
    assert format_reward(["x", "hit", "stand"], episode_metrics=metrics) == [-1.0, 0.0, 0.0]
    assert format_reward(["x"], episode_metrics=[{"invalid_actions": 1}], penalty=-0.5) == [-0.5]


def test_text_format_reward_uses_the_parser() -> None:
    from blackjack_env.text_spec import parse_answer

    reward = make_format_reward(parse_answer)
    assert reward(["hit", "stand", "fold", [{"role": "assistant", "content": "hit"}]]) == [
        0.0,
        0.0,
        -1.0,
        0.0,
    ]
    assert reward.__name__ == "format_reward"
