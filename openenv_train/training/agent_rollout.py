"""TRL's ``rollout_func`` for agents that live inside envs (RFC 005): ``AgentRunner`` played
like any other runner (``rollout_builders.build_rollout_func``: its own loop, groups, validated
TRL rows)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agents.agent_runner import AGENT_LIMITS, AgentRunner
from ..policy.interface import Policy
from ..rollout.episode import RolloutConfig
from ..rollout.records import RolloutBatch
from .rollout_builders import PolicyFactory, build_rollout_func
from .rollout_func import RolloutFunc, RolloutStrategy, RunnerStrategy
from .trainer_policy import config_for, policy_for_trainer


@dataclass(frozen=True)
class AgentPlays:
    """One agent episode per prompt (prompts are seeds) on the env servers at ``base_urls``;
    ``proxy_options`` go to the capture proxy. The default limits are ``AGENT_LIMITS``. The
    runner's ``last_traces`` hold the captured calls of the last batch."""

    base_urls: Sequence[str]
    proxy_options: dict[str, Any] | None = None
    default_config: RolloutConfig = field(default_factory=lambda: AGENT_LIMITS)

    def __post_init__(self) -> None:
        if not self.base_urls:
            raise ValueError("base_urls: empty; start env servers first")

    def strategy(
        self, base: RolloutConfig, policy_factory: PolicyFactory | None
    ) -> RolloutStrategy:
        policy_of = policy_factory or policy_for_trainer
        urls, proxy_options = self.base_urls, self.proxy_options

        def make(trainer: Any) -> AgentRunner:
            return AgentRunner(
                policy_of(trainer),
                urls,
                config=config_for(trainer, base),
                proxy_options=proxy_options,
            )

        return RunnerStrategy(make, thread_name="openenv-train-agents")


def make_agent_rollout_func(
    base_urls: Sequence[str],
    policy_factory: Callable[[Any], Policy] | None = None,
    *,
    config: RolloutConfig | None = None,
    proxy_options: dict[str, Any] | None = None,
    group_size: int | None = None,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
) -> RolloutFunc:
    """``build_rollout_func(AgentPlays(base_urls, proxy_options), ...)``: a TRL
    ``rollout_func(prompts, trainer)``, one agent episode per prompt (see :class:`AgentPlays`).
    ``policy_factory(trainer)`` builds the policy once (default: the trainer's); it is closed
    with the function (``.runner.last_traces``: the last batch's captured calls)."""
    return build_rollout_func(
        AgentPlays(base_urls, proxy_options),
        config=config,
        policy_factory=policy_factory,
        group_size=group_size,
        reward_key=reward_key,
        on_batch=on_batch,
    )
