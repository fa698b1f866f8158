"""Env mixtures on TRL's ``environment_factory`` path: TRL routes each example to the factory
named by its ``environment`` column (``GRPOTrainer(environment_factory={name: factory})``), so a
mixture is a dataset whose ``environment`` column is drawn by weight, with the same seeded
sampler as the ``rollout_func`` path (``rollout.mixture.MixtureEngine``)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from ..rollout.mixture import sample_envs


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
