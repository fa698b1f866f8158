"""TRL's ``rollout_func`` for agents that live inside envs (RFC 005): ``AgentRunner`` wrapped like
any other runner (``RolloutFunc(RunnerStrategy(...))``: its own loop, groups, validated TRL rows)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..agents.runner import AGENT_LIMITS, AgentRunner
from ..policy.base import Policy
from ..rollout.episode import RolloutConfig
from ..rollout.records import RolloutBatch
from .rollout import config_for, policy_for_trainer
from .rollout_func import RolloutFunc, RunnerStrategy


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
    """A TRL ``rollout_func(prompts, trainer)``: one agent episode per prompt (prompts are seeds).

    ``policy_factory(trainer)`` builds the policy once (default :func:`policy_for_trainer`); it
    is closed with the function. ``config`` defaults to ``AGENT_LIMITS`` (its sampling aligned
    with the trainer's); ``proxy_options`` go to the capture proxy. The runner's
    ``last_traces`` hold the captured calls of the last batch (``.runner.last_traces``).
    """
    if not base_urls:
        raise ValueError("base_urls: empty; start env servers first")
    base = config or AGENT_LIMITS
    policy_of = policy_factory or policy_for_trainer

    def make(trainer: Any) -> AgentRunner:
        return AgentRunner(
            policy_of(trainer),
            base_urls,
            config=config_for(trainer, base),
            proxy_options=proxy_options,
        )

    return RolloutFunc(
        RunnerStrategy(make, thread_name="openenv-train-agents"),
        group_size=group_size,
        reward_key=reward_key,
        on_batch=on_batch,
    )
