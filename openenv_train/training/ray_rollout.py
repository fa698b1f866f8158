"""TRL ``rollout_func`` over a Ray env fleet: the engine on the driver, or M rollout workers on Ray.

Before every generation batch the fleet is healed (dead servers or nodes replaced), and the
fleet's counts join the batch metrics. Episodes that were running on a server when it died are
retried by the engine's rules (fresh session elsewhere, then the group again); nothing is scored.

- ``num_workers=0``: the engine on the driver against the fleet's URLs (rebuilt when a heal
  changed them, so replacement servers are used).
- ``num_workers=M``: ``RayRolloutWorkers`` (they heal the fleet themselves); the trainer's policy
  is served on the driver by a loopback ``PolicyEndpoint`` and every worker calls it with
  ``OpenAICompatiblePolicy``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..policy.openai_policy import OpenAICompatiblePolicy
from ..rollout.episode import RolloutConfig
from ..rollout.episode_runner import EpisodeRunner
from ..rollout.policy_endpoint import PolicyEndpoint
from ..rollout.ray_workers import RayRolloutWorkers
from ..rollout.records import RolloutBatch
from ..rollout.spec import TextEnvSpec
from .rollout_builders import PolicyFactory, build_rollout_func, engine_builder
from .rollout_func import RolloutFunc, RolloutStats, RunnerStrategy
from .trainer_policy import config_for, policy_for_trainer, tokenizer_of


class _WorkersRunner:
    """``RayRolloutWorkers`` plus the trainer's policy endpoint, behind the runner interface that
    ``RunnerStrategy`` drives (``run``, ``aclose``, ``policy``)."""

    policy = None  # the endpoint owns the trainer's policy; nothing else to close

    def __init__(self, workers: RayRolloutWorkers, endpoint: PolicyEndpoint) -> None:
        self.workers, self.endpoint = workers, endpoint

    async def run(self, prompts: list[Any], group_size: int) -> RolloutBatch:
        return await self.workers.run(prompts, group_size)  # GroupsDroppedError, never fake rows

    async def aclose(self) -> None:
        await self.workers.aclose()
        self.endpoint.stop()


class FleetStrategy:
    """``RolloutFunc``'s strategy over a Ray env fleet: ``inner`` plays each batch and the fleet's
    counts join its metrics. ``follow_urls`` (the engine on the driver): the fleet is healed
    before each batch and the runner rebuilt on the fleet's URLs when a heal changed them."""

    def __init__(self, inner: RunnerStrategy, fleet: Any, *, follow_urls: bool) -> None:
        self.inner, self.fleet, self.follow_urls = inner, fleet, follow_urls
        self._urls: list[str] | None = None  # the URLs the runner was built on

    @property
    def runner(self) -> EpisodeRunner | None:
        return self.inner.runner

    def publish(self, trainer: Any, prompts: list[Any]) -> None:
        pass  # the trainer's policy is sampled live (on the driver or through the endpoint)

    def start(self, trainer: Any, group_size: int, stats: RolloutStats) -> None:
        self._urls = self.fleet.base_urls
        self.inner.start(trainer, group_size, stats)

    def produce(self, prompts: list[Any], trainer: Any, group_size: int) -> RolloutBatch:
        if self.follow_urls:
            self.fleet.heal()
            urls = self.fleet.base_urls
            if urls != self._urls:
                self._urls = urls
                self.inner.restart(trainer)
        batch = self.inner.produce(prompts, trainer, group_size)
        batch.metrics.update({f"fleet_{k}": v for k, v in self.fleet.stats.items()})
        batch.metrics["fleet_servers"] = len(self.fleet)
        return batch

    def close(self) -> None:
        self.inner.close()  # sessions, workers, endpoint; the fleet stays with its owner


@dataclass(frozen=True)
class FleetPlays:
    """One ``spec`` episode per prompt over ``fleet`` (a ``RayServerGroup``): the engine on the
    driver (``num_workers=0``) or ``num_workers`` rollout workers on Ray that call the trainer's
    policy through a loopback endpoint. ``close()`` releases sessions, workers and endpoint (the
    fleet stays with its owner). A rollout function over it always samples the trainer's policy."""

    spec: TextEnvSpec
    fleet: Any
    num_workers: int = 0
    cpus_per_worker: float = 0.0
    default_config: RolloutConfig = field(default_factory=RolloutConfig)

    def strategy(self, base: RolloutConfig, policy_factory: PolicyFactory | None) -> FleetStrategy:
        if policy_factory is not None:
            raise ValueError("policy_factory: a Ray fleet rollout samples the trainer's policy")
        spec, fleet, num_workers = self.spec, self.fleet, self.num_workers

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
                cpus_per_worker=self.cpus_per_worker,
            )
            return _WorkersRunner(workers, endpoint)

        name = "openenv-train-ray-rollout"
        if num_workers > 0:
            inner = RunnerStrategy(workers_runner, close_policy=False, thread_name=name)
        else:
            inner = RunnerStrategy(engine_builder(spec, fleet, base), thread_name=name)
        return FleetStrategy(inner, fleet, follow_urls=num_workers == 0)


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
    """``build_rollout_func(FleetPlays(spec, fleet, num_workers, cpus_per_worker), ...)``: a
    TRL ``rollout_func(prompts, trainer)`` over ``fleet`` (see :class:`FleetPlays`)."""
    return build_rollout_func(
        FleetPlays(spec, fleet, num_workers, cpus_per_worker),
        config=config,
        reward_key=reward_key,
        on_batch=on_batch,
    )
