"""Reward functions for TRL's ``GRPOTrainer`` that read what the rollout layer recorded.

The env owns the reward: the rollout function returns it as an extra field (``env_reward``) that
TRL forwards to every reward function as a keyword argument, one value per row. Nothing here
re-scores text, so the reward a row trains on is exactly the one the env server sent.
``make_rubric_reward`` is the exception by design: it scores rows with a ``Rubric``, the same
object an env can apply in ``step``.
"""

from __future__ import annotations

import asyncio
import inspect
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


class RubricRow:
    """The observation a trainer-side rubric sees for one TRL row: the completion text, the
    row's other columns as attributes (``env_reward``, ``episode_metrics``, dataset fields),
    ``done=True`` (a completion is a finished episode) and ``metadata`` (the columns as a dict).
    """

    def __init__(self, completion: str, columns: dict[str, Any]) -> None:
        self.__dict__.update(columns)
        self.completion = completion
        self.done = True
        self.reward = columns.get("env_reward")
        self.metadata = dict(columns)

    def __repr__(self) -> str:
        return f"RubricRow(completion={self.completion!r})"


def _text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    return completion[-1].get("content", "") if completion else ""


def make_rubric_reward(
    rubric: Any,
    *,
    to_action: Callable[[str, dict[str, Any]], Any] | None = None,
    to_observation: Callable[[str, dict[str, Any]], Any] | None = None,
    name: str | None = None,
) -> Callable[..., list[float]]:
    """A TRL reward function that scores each row with ``rubric(action, observation)``.

    The same ``Rubric`` an env applies in ``step`` (``Environment(rubric=...)``) can score rows
    here, so env-side and trainer-side rewards are one object. By default the action is the
    completion text and the observation a :class:`RubricRow`; ``to_action(text, columns)`` and
    ``to_observation(text, columns)`` build your env's own types instead. Async rubrics (an
    ``LLMJudge``) are awaited concurrently across the batch. The rubric is ``reset()`` before
    each row, so trajectory rubrics score one row at a time.
    """
    from openenv_train.server._threads import run_coro_sync

    def reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
        n = len(completions)
        scores: list[Any] = []
        for i, completion in enumerate(completions):
            text = _text(completion)
            columns = {
                k: v[i] if isinstance(v, (list, tuple)) and len(v) == n else v
                for k, v in kwargs.items()
            }
            action = to_action(text, columns) if to_action else text
            obs = to_observation(text, columns) if to_observation else RubricRow(text, columns)
            rubric.reset()
            scores.append(rubric(action, obs))
        pending = [i for i, s in enumerate(scores) if inspect.isawaitable(s)]
        if pending:

            async def gather() -> list[Any]:
                return list(await asyncio.gather(*(scores[i] for i in pending)))

            for i, value in zip(pending, run_coro_sync(gather()), strict=True):
                scores[i] = value
        return [float(s) for s in scores]

    reward.__name__ = name or f"rubric_{type(rubric).__name__}"
    return reward
