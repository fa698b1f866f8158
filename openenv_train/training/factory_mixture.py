"""Env mixtures on TRL's ``environment_factory`` path: TRL routes each example to the factory
named by its ``environment`` column (``GRPOTrainer(environment_factory={name: factory})``), so a
mixture is a dataset whose ``environment`` column is drawn by weight, with the same seeded
sampler as the ``rollout_func`` path (``rollout.mixture.MixtureEngine``)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from ..rollout.mixture_engine import env_metric, sample_envs


def mixture_dataset(
    weights: Mapping[str, float],
    rows: int,
    *,
    seed: int = 0,
    prompt: Any = None,
    columns: Mapping[str, Any] | None = None,
) -> Any:
    """A ``datasets.Dataset`` of ``rows`` examples whose ``environment`` column names an env of
    ``weights`` (drawn by weight from ``Random(seed)``), beside a ``prompt`` column (default: an
    empty user message, the env's ``reset`` text is appended by TRL) and constant ``columns``
    (passed to every env's ``reset``). Pass it with ``environment_factory={name: factory}``."""
    from datasets import Dataset

    if rows < 1:
        raise ValueError(f"rows={rows}: a mixture dataset needs at least one row")
    envs = sample_envs(list(weights), list(weights.values()), rows, random.Random(seed))
    first = prompt if prompt is not None else [{"role": "user", "content": ""}]
    data: dict[str, list[Any]] = {"prompt": [first] * rows, "environment": envs}
    for key, value in (columns or {}).items():
        data[key] = [value] * rows
    return Dataset.from_dict(data)


def make_mixture_environment_factory(classes: Mapping[str, type]) -> dict[str, type]:
    """``{env name: environment class}`` -> the ``environment_factory`` dict for TRL, one
    subclass per name, named after the env. TRL logs one reward column per env class that owns
    its reward (``rewards/<class name>/mean``, scored only on that env's rows) and merges a class
    given under two names; distinct classes named after the envs keep every env's reward apart,
    and :func:`env_reward_metrics` renames them ``env/<name>/reward_mean``."""
    if len(classes) < 2:
        raise ValueError(
            f"environment_factory mixture: {len(classes)} env(s) given; a mixture needs two or "
            "more {name: environment class} entries (pass a single class to TRL directly)"
        )
    out: dict[str, type] = {}
    for name, cls in classes.items():
        if not isinstance(cls, type) or not callable(getattr(cls, "get_reward", None)):
            raise ValueError(
                f"environment_factory mixture: {name!r} must be a class with reset() and "
                "get_reward() (build one with make_environment_class(url))"
            )
        out[name] = type(name, (cls,), {"__doc__": cls.__doc__, "__module__": cls.__module__})
    return out


def env_reward_metrics(names: Sequence[str]) -> Any:
    """A ``TrainerCallback`` that copies TRL's per-env-class reward means and stds into the
    mixture keys ``env/<name>/reward_mean`` / ``reward_std`` of each log (and the trainer's log
    history); a step that dealt no row of an env logs NaN there and is left out."""
    import math

    from transformers import TrainerCallback

    keys = {
        f"rewards/{name}/{stat}": env_metric(name, f"reward_{stat}")
        for name in names
        for stat in ("mean", "std")
    }

    class EnvRewardMetrics(TrainerCallback):
        def on_log(
            self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
        ) -> None:
            if not logs:
                return
            found = {
                new: logs[old]
                for old, new in keys.items()
                if isinstance(logs.get(old), (int, float)) and not math.isnan(logs[old])
            }
            logs.update(found)
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(found)

    return EnvRewardMetrics()
