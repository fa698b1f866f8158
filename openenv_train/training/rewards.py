"""Reward functions for TRL's ``GRPOTrainer`` that read what the rollout layer recorded.

The env owns the reward: the rollout function returns it as an extra field (``env_reward``) that
TRL forwards to every reward function as a keyword argument, one value per row. Nothing here
re-scores text, so the reward a row trains on is exactly the one the env server sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def _rows(name: str, values: Any, completions: Sequence[Any]) -> list[Any]:
    if values is None:
        raise KeyError(
            f"{name}: the reward function got no {name!r} column; use it with a rollout_func that "
            f"returns {name!r} (openenv_train.training.make_rollout_func does)"
        )
    if not isinstance(values, (list, tuple)):
        values = [values] * len(completions)
    if len(values) != len(completions):
        raise ValueError(
            f"{name}: {len(values)} values for {len(completions)} completions; need one per row"
        )
    return list(values)


def env_reward(
    completions: Sequence[Any], env_reward: Sequence[float] | None = None, **kwargs: Any
) -> list[float]:
    """The env's own episode reward for each row (the ``env_reward`` field of the rollout)."""
    return [float(r) for r in _rows("env_reward", env_reward, completions)]


def format_reward(
    completions: Sequence[Any],
    episode_metrics: Sequence[dict[str, Any]] | None = None,
    *,
    penalty: float = -1.0,
    **kwargs: Any,
) -> list[float]:
    """``penalty`` for a row whose episode ended on an invalid (unparsable) action, else 0.

    Reads ``episode_metrics[i]["invalid_actions"]`` recorded by the rollout engine.
    """
    metrics = _rows("episode_metrics", episode_metrics, completions)
    return [float(penalty) if int((m or {}).get("invalid_actions", 0)) else 0.0 for m in metrics]


def make_format_reward(
    parse_action: Callable[[str], Any], *, penalty: float = -1.0, name: str = "format_reward"
) -> Callable[..., list[float]]:
    """A format reward for single-turn completions: ``penalty`` when ``parse_action(text)`` is None.

    Use it where there is no engine metadata (plain TRL generation); the text is what TRL decoded.
    """

    def reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
        out = []
        for c in completions:
            text = c if isinstance(c, str) else (c[-1].get("content", "") if c else "")
            out.append(float(penalty) if parse_action(text) is None else 0.0)
        return out

    reward.__name__ = name
    return reward
