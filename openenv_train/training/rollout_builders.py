"""Building TRL's ``rollout_func``: :func:`build_rollout_func`, the one builder of a
``rollout_func.RolloutFunc`` from what it plays and a ``RolloutConfig``, and
:func:`rollout_func_from_config`, the same from a recipe's config (what the recipes call).

What a rollout function plays is a small value with one method, ``strategy(base, policy_of)``
(:class:`Plays`): :class:`EnvPlays` (one ``TextEnvSpec`` env on its servers, optionally
overlapped), :class:`MixturePlays` (several envs, groups dealt by weight), :class:`HarnessPlays`
(the harness runner), ``agent_rollout.AgentPlays`` (agents inside envs) and
``ray_rollout.FleetPlays`` (a Ray env fleet). ``make_rollout_func``, ``make_mixture_rollout_func``
and ``make_harness_rollout_func`` are the keyword spellings of :func:`build_rollout_func` for
each. The policy and sampling settings come from the trainer at the first call
(``trainer_policy``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..harness.adapters import HarnessAdapter, ModelStep
from ..harness.harness_runner import TOOL_CALLING, HarnessRunner
from ..policy.interface import Policy
from ..rollout.engine import RolloutEngine, base_urls_of
from ..rollout.episode import RolloutConfig
from ..rollout.records import RolloutBatch
from ..rollout.spec import TextEnvSpec
from .config import EnvSection, GRPORun
from .rollout_func import RolloutFunc, RolloutStrategy, RunnerStrategy
from .trainer_policy import config_for, policy_for_trainer

if TYPE_CHECKING:
    from ..rollout.mixture_engine import MixtureMember

__all__ = [
    "EnvPlays",
    "HarnessPlays",
    "MixturePlays",
    "Plays",
    "PolicyFactory",
    "build_rollout_func",
    "engine_builder",
    "make_harness_rollout_func",
    "make_mixture_rollout_func",
    "make_rollout_func",
    "rollout_func_from_config",
]

#: ``policy_factory(trainer)``: the policy a rollout function samples (default: the trainer's)
PolicyFactory = Callable[[Any], Policy]


class Plays(Protocol):
    """What a rollout function plays: it makes the strategy that plays it."""

    #: the default limits when the builder is given no ``config``
    default_config: RolloutConfig

    def strategy(
        self, base: RolloutConfig, policy_factory: PolicyFactory | None
    ) -> RolloutStrategy:
        """The strategy over ``base``'s limits (aligned with the trainer's sampling at start);
        ``policy_factory(trainer)`` overrides the trainer's own policy where it is supported."""
        ...


def build_rollout_func(
    plays: Plays,
    *,
    config: RolloutConfig | None = None,
    policy_factory: PolicyFactory | None = None,
    group_size: int | None = None,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
) -> RolloutFunc:
    """TRL's ``rollout_func(prompts, trainer)`` playing ``plays`` under ``config`` (default: the
    plays' own limits). ``policy_factory(trainer)`` overrides the backend choice (default
    ``trainer_policy.policy_for_trainer``); the policy it makes is closed with the function.
    The result holds ``prompt_ids``, ``completion_ids``, ``logprobs``, ``env_mask`` and
    ``reward_key`` (plus ``num_turns`` and ``episode_metrics``). See :class:`RolloutFunc` for
    the rest (``close()``, ``last_batch``, ``stats``, ``runner``)."""
    strategy = plays.strategy(config or plays.default_config, policy_factory)
    return RolloutFunc(strategy, group_size=group_size, reward_key=reward_key, on_batch=on_batch)


def engine_builder(
    spec: TextEnvSpec,
    servers: Sequence[Any],
    base: RolloutConfig,
    policy_factory: PolicyFactory | None = None,
) -> Callable[[Any], RolloutEngine]:
    """``make_runner(trainer)``: a ``RolloutEngine`` on ``servers`` with the trainer's policy
    (or ``policy_factory(trainer)``'s) and sampling settings."""
    policy_of = policy_factory or policy_for_trainer
    return lambda trainer: RolloutEngine(
        spec, policy_of(trainer), servers, config_for(trainer, base)
    )


@dataclass(frozen=True)
class EnvPlays:
    """One ``spec`` episode per prompt on ``servers`` (base URLs or started providers) with the
    batched ``RolloutEngine``.

    ``max_staleness`` > 0 plays batches ahead of the trainer on a copy of its weights
    (``overlap.OverlapStrategy``; rows also carry ``policy_version``); train with
    ``OffPolicyGRPOTrainer`` so the loss corrects for the older weights. 0: synchronous.
    ``overlap``: where the producer runs, ``"process"`` (a child process with its own GIL; the
    in-process ``TransformersPolicy`` only) or ``"thread"`` (this process's rollout loop; any
    ``policy_factory``).
    """

    spec: TextEnvSpec
    servers: Sequence[Any]
    max_staleness: int = 0
    overlap: str = "process"
    default_config: RolloutConfig = field(default_factory=RolloutConfig)

    def __post_init__(self) -> None:
        if not self.servers:
            raise ValueError(
                "servers: empty; start env servers first (openenv_train.runtime.start_local_servers)"
            )
        if self.max_staleness < 0:
            raise ValueError(f"max_staleness={self.max_staleness}: must be >= 0 (0 = no overlap)")
        if self.overlap not in ("process", "thread"):
            raise ValueError(f'overlap={self.overlap!r}: use "process" or "thread"')

    def strategy(
        self, base: RolloutConfig, policy_factory: PolicyFactory | None
    ) -> RolloutStrategy:
        if not self.max_staleness:
            return RunnerStrategy(engine_builder(self.spec, self.servers, base, policy_factory))
        from .overlap import OverlapStrategy, Producer, ThreadProducer, copy_policy_for

        producer: Producer
        if self.overlap == "thread":
            make = engine_builder(self.spec, self.servers, base, policy_factory or copy_policy_for)
            producer = ThreadProducer(make, self.max_staleness)
        else:
            if policy_factory is not None:
                raise ValueError(
                    "policy_factory: the process producer samples a copy of the trainer's model; "
                    'pass overlap="thread" to use your own policy'
                )
            from .overlap_process import ProcessProducer

            urls = base_urls_of(self.servers)
            producer = ProcessProducer(self.spec, urls, self.max_staleness, base)
        return OverlapStrategy(producer, self.max_staleness)


@dataclass(frozen=True)
class MixturePlays:
    """Several envs (``rollout.mixture.MixtureMember``: name, spec, servers, weight): every GRPO
    group plays one env drawn by weight (seeded by ``seed`` and the batch), all envs batched into
    the same model calls. Rows keep their env's reward; the batch metrics carry
    ``env/<name>/reward_mean`` and ``env/<name>/episodes``."""

    members: Sequence[MixtureMember]
    seed: int = 0
    default_config: RolloutConfig = field(default_factory=RolloutConfig)

    def strategy(
        self, base: RolloutConfig, policy_factory: PolicyFactory | None
    ) -> RolloutStrategy:
        from ..rollout.mixture_engine import MixtureEngine

        policy_of = policy_factory or policy_for_trainer
        members, seed = self.members, self.seed
        return RunnerStrategy(
            lambda trainer: MixtureEngine(
                members, policy_of(trainer), config_for(trainer, base), seed=seed
            )
        )


@dataclass(frozen=True)
class HarnessPlays:
    """Every prompt's harness episode at once (``HarnessRunner``).

    ``session_factory(prompt)`` (or ``.create(task=prompt)``) returns a ``ResourceSession``. The
    model turns come from ``policy=`` (batched; yours, not closed), ``model_step=`` (your own
    sampler) or, with neither, the trainer's model (or the builder's ``policy_factory``), closed
    with the function. The default limits are tool calling's (256 tokens a turn, 4096 an
    episode).
    """

    session_factory: Any
    harness_adapter: HarnessAdapter
    policy: Policy | None = None
    model_step: ModelStep | None = None
    default_config: RolloutConfig = field(default_factory=lambda: TOOL_CALLING)

    def __post_init__(self) -> None:
        if self.policy is not None and self.model_step is not None:
            raise ValueError("pass policy= (batched) or model_step= (your own sampler), not both")

    def strategy(
        self, base: RolloutConfig, policy_factory: PolicyFactory | None
    ) -> RolloutStrategy:
        own = self.policy is None and self.model_step is None
        policy_of = policy_factory or policy_for_trainer

        def make(trainer: Any) -> HarnessRunner:
            return HarnessRunner(
                session_factory=self.session_factory,
                harness_adapter=self.harness_adapter,
                policy=policy_of(trainer) if own else self.policy,
                model_step=self.model_step,
                config=config_for(trainer, base),
            )

        return RunnerStrategy(make, close_policy=own, thread_name="openenv-train-harness")


def make_rollout_func(
    spec: TextEnvSpec,
    servers: Sequence[Any],
    *,
    config: RolloutConfig | None = None,
    policy_factory: PolicyFactory | None = None,
    group_size: int | None = None,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
    max_staleness: int = 0,
    overlap: str = "process",
) -> RolloutFunc:
    """``build_rollout_func(EnvPlays(spec, servers, max_staleness, overlap), ...)``: one
    ``spec`` episode per prompt on ``servers`` with the batched ``RolloutEngine`` (see
    :class:`EnvPlays`, :func:`build_rollout_func`)."""
    return build_rollout_func(
        EnvPlays(spec, servers, max_staleness, overlap),
        config=config,
        policy_factory=policy_factory,
        group_size=group_size,
        reward_key=reward_key,
        on_batch=on_batch,
    )


def make_mixture_rollout_func(
    members: Sequence[MixtureMember],
    *,
    config: RolloutConfig | None = None,
    seed: int = 0,
    policy_factory: PolicyFactory | None = None,
    group_size: int | None = None,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
) -> RolloutFunc:
    """``build_rollout_func(MixturePlays(members, seed), ...)``: several envs, every GRPO group
    one env drawn by weight (see :class:`MixturePlays`)."""
    return build_rollout_func(
        MixturePlays(members, seed),
        config=config,
        policy_factory=policy_factory,
        group_size=group_size,
        reward_key=reward_key,
        on_batch=on_batch,
    )


def make_harness_rollout_func(
    *,
    session_factory: Any,
    harness_adapter: HarnessAdapter,
    policy: Policy | None = None,
    model_step: ModelStep | None = None,
    config: RolloutConfig | None = None,
    group_size: int | None = None,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
) -> RolloutFunc:
    """``build_rollout_func(HarnessPlays(...), ...)``: every prompt's harness episode at once
    (see :class:`HarnessPlays`). Any other runner goes the same way:
    ``RolloutFunc(RunnerStrategy(make_runner))``."""
    return build_rollout_func(
        HarnessPlays(session_factory, harness_adapter, policy, model_step),
        config=config,
        group_size=group_size,
        reward_key=reward_key,
        on_batch=on_batch,
    )


def rollout_func_from_config(
    cfg: GRPORun,
    plays: TextEnvSpec | Sequence[MixtureMember],
    servers: Any,
    urls: Sequence[str],
    on_batch: Callable[[RolloutBatch], None] | None = None,
) -> RolloutFunc:
    """The rollout function a recipe's config asks for (``close()`` it at the end):

    - ``plays`` a list of mixture members: every group one env drawn by weight (synchronous);
    - ``env.runtime: ray`` with started servers: the fleet, healed before each batch (the engine
      on the driver, or ``env.ray.rollout_workers`` workers on Ray);
    - else the batched engine on ``urls``, ahead of the trainer by ``rollout.max_staleness``.
    """
    from .grpo import rollout_config

    config = rollout_config(cfg)
    target: Plays
    if not isinstance(plays, TextEnvSpec):
        target = MixturePlays(list(plays), cfg.seed)
    elif isinstance(cfg.env, EnvSection) and cfg.env.runtime == "ray" and servers is not None:
        from .ray_rollout import FleetPlays

        ray = cfg.env.ray
        target = FleetPlays(plays, servers, ray.rollout_workers, ray.cpus_per_worker)
    else:
        target = EnvPlays(plays, list(urls), getattr(cfg.rollout, "max_staleness", 0))
    return build_rollout_func(target, config=config, on_batch=on_batch)
