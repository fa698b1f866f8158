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
from ..rollout.episode import RolloutConfig
from ..rollout.policy_endpoint import PolicyEndpoint
from ..rollout.ray_workers import RayRolloutWorkers
from ..rollout.records import RolloutBatch
from ..rollout.spec import TextEnvSpec
from .rollout import (
    RolloutFunc,
    config_for,
    make_rollout_func,
    policy_for_trainer,
    runner_rollout_func,
    tokenizer_of,
)


class _WorkersRunner:
    """``RayRolloutWorkers`` plus the trainer's policy endpoint, behind the runner interface that
    ``runner_rollout_func`` drives (``run``, ``aclose``, ``policy``)."""

    policy = None  # the endpoint owns the trainer's policy; nothing else to close

    def __init__(self, workers: RayRolloutWorkers, endpoint: PolicyEndpoint) -> None:
        self.workers, self.endpoint = workers, endpoint

    async def run(self, prompts: list[Any], group_size: int) -> RolloutBatch:
        return await self.workers.run(prompts, group_size)  # GroupsDroppedError, never fake rows

    async def aclose(self) -> None:
        await self.workers.aclose()
        self.endpoint.stop()


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

    def workers_runner(trainer: Any) -> _WorkersRunner:
        endpoint = PolicyEndpoint(policy_for_trainer(trainer), "trainer-policy")
        endpoint.start()
        factory = functools.partial(
            OpenAICompatiblePolicy,
            endpoint.base_url,
            "trainer-policy",
            tokenizer=tokenizer_of(trainer),
        )
        workers = RayRolloutWorkers(
            spec,
            factory,
            fleet,
            num_workers=num_workers,
            config=config_for(trainer, base),
            cpus_per_worker=cpus_per_worker,
        )
        return _WorkersRunner(workers, endpoint)

    if num_workers > 0:
        on_workers = runner_rollout_func(
            workers_runner,
            reward_key=reward_key,
            on_batch=with_fleet_metrics,
            close_policy=False,
            thread_name="openenv-train-ray-rollout",
        )
        rollout_func = on_workers
        return rollout_func

    def close() -> None:
        if "fn" in state:
            state.pop("fn").close()

    rollout_func = on_driver
    rollout_func.close = close  # type: ignore[attr-defined]
    rollout_func.last_batch = None  # type: ignore[attr-defined]
    return rollout_func
