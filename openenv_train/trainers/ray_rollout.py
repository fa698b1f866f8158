"""TRL ``rollout_func`` over a Ray env fleet: the engine on the driver, or M rollout workers on Ray.

Before every generation batch the fleet is healed (dead servers or nodes replaced), and the
fleet's counts join the batch metrics. Episodes that were running on a server when it died are
retried by the engine's rules (fresh session elsewhere, then the group again); nothing is scored.

- ``num_workers=0``: ``make_rollout_func`` on the driver against the fleet's URLs (rebuilt when a
  heal changed them, so replacement servers are used).
- ``num_workers=M``: ``RayRolloutWorkers``; the trainer's policy is served on the driver by a
  loopback ``PolicyEndpoint`` and every worker calls it with ``OpenAICompatiblePolicy``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..policy.openai_policy import OpenAICompatiblePolicy
from ..rollout.engine import RolloutConfig
from ..rollout.policy_endpoint import PolicyEndpoint
from ..rollout.ray_workers import RayRolloutWorkers
from ..rollout.records import RolloutBatch
from ..rollout.spec import TextEnvSpec
from ..rollout.sync import LoopThread
from .rollout import RolloutFunc, _config_for, _text, _tokenizer_of, _unwrap, make_rollout_func
from .rollout import policy_for_trainer as _policy_for_trainer


def make_ray_rollout_func(
    spec: TextEnvSpec,
    fleet: Any,
    *,
    config: RolloutConfig | None = None,
    num_workers: int = 0,
    cpus_per_worker: float = 0.0,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
) -> RolloutFunc:
    """A TRL ``rollout_func(prompts, trainer)`` over ``fleet`` (a ``RayServerGroup``).

    Has ``.close()`` (sessions, workers, endpoint; the fleet stays with its owner) and
    ``.last_batch``.
    """
    base = config or RolloutConfig()
    state: dict[str, Any] = {}

    def with_fleet_metrics(batch: RolloutBatch) -> None:
        batch.metrics.update({f"fleet_{k}": v for k, v in fleet.stats.items()})
        batch.metrics["fleet_servers"] = len(fleet)
        rollout_func.last_batch = batch  # type: ignore[attr-defined]
        if on_batch is not None:
            on_batch(batch)

    def on_driver(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        fleet.heal()
        urls = fleet.base_urls
        if urls != state.get("urls"):
            if "fn" in state:
                state.pop("fn").close()
            state["fn"] = make_rollout_func(
                spec, urls, config=base, reward_key=reward_key, on_batch=with_fleet_metrics
            )
            state["urls"] = urls
        return state["fn"](prompts, trainer)

    def on_workers(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        if "workers" not in state:
            endpoint = PolicyEndpoint(_policy_for_trainer(trainer), "trainer-policy")
            state["endpoint"] = endpoint
            endpoint.start()
            factory = functools.partial(
                OpenAICompatiblePolicy,
                endpoint.base_url,
                "trainer-policy",
                tokenizer=_tokenizer_of(trainer),
            )
            state["runner"] = LoopThread(name="openenv-train-ray-rollout")
            state["workers"] = RayRolloutWorkers(
                spec,
                factory,
                fleet,
                num_workers=num_workers,
                config=_config_for(trainer, base),
                cpus_per_worker=cpus_per_worker,
            )
        group_size = int(getattr(trainer.args, "num_generations", 1) or 1)
        model = _unwrap(trainer)
        was_training = bool(getattr(model, "training", False))
        model.eval()
        try:
            batch = state["runner"].run(
                state["workers"].run([_text(p) for p in prompts], group_size)
            )
        finally:
            if was_training:
                model.train()
        with_fleet_metrics(batch)
        return batch.to_trl(reward_key)  # raises GroupsDroppedError rather than invent rows

    rollout_func = on_workers if num_workers > 0 else on_driver

    def close() -> None:
        if "fn" in state:
            state.pop("fn").close()
        if "workers" in state:
            state.pop("workers").close()
        if "runner" in state:
            state.pop("runner").close()
        if "endpoint" in state:
            state.pop("endpoint").stop()

    rollout_func.close = close  # type: ignore[attr-defined]
    rollout_func.last_batch = None  # type: ignore[attr-defined]
    return rollout_func
