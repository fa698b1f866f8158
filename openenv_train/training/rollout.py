"""The one-line constructors of TRL's ``rollout_func``: ``make_rollout_func`` (the rollout engine on
env servers) and ``make_harness_rollout_func`` (the harness runner), both returning a
``rollout_func.RolloutFunc``, plus how a trainer implies the policy and sampling settings.

The policy is chosen from the trainer at the first call: ``trainer.args.use_vllm`` -> the
trainer's own vLLM (TRL syncs the weights before every call); otherwise the trainer's live model
through ``TransformersPolicy`` (no copy: each call samples the current weights, in eval mode with
no grad, and the train mode is restored afterwards).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..harness.adapters import HarnessAdapter, ModelStep
from ..harness.runner import TOOL_CALLING, HarnessRunner
from ..policy.base import Policy
from ..rollout.engine import RolloutEngine, base_urls_of
from ..rollout.episode import RolloutConfig
from ..rollout.records import RolloutBatch
from ..rollout.spec import TextEnvSpec
from .rollout_func import LoopThread, RolloutFunc, RolloutStrategy, RunnerStrategy, unwrap_model

__all__ = [  # LoopThread: re-exported for async_grpo.worker, which imports it from here
    "LoopThread",
    "RolloutFunc",
    "RolloutStrategy",
    "RunnerStrategy",
    "config_for",
    "engine_builder",
    "make_harness_rollout_func",
    "make_mixture_rollout_func",
    "make_rollout_func",
    "policy_for_trainer",
    "tokenizer_of",
]


def policy_for_trainer(trainer: Any) -> Policy:
    """The generation backend a trainer implies: its vLLM when ``args.use_vllm``, else its model."""
    if getattr(getattr(trainer, "args", None), "use_vllm", False):
        from ..policy.vllm_policy import TRLVLLMPolicy

        return TRLVLLMPolicy(trainer)
    from ..policy.transformers_policy import TransformersPolicy

    tokenizer = tokenizer_of(trainer)  # first: its error names what is missing
    return TransformersPolicy(unwrap_model(trainer), tokenizer, device=None)  # stays where it is


def tokenizer_of(trainer: Any) -> Any:
    """The trainer's tokenizer (``processing_class``; a processor's inner tokenizer)."""
    tokenizer = getattr(trainer, "processing_class", None)
    tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a processor wraps its tokenizer
    if tokenizer is None:
        raise ValueError(
            "trainer: has no processing_class; pass processing_class=<tokenizer> to GRPOTrainer"
        )
    return tokenizer


def config_for(trainer: Any, config: RolloutConfig) -> RolloutConfig:
    """Align the rollout's sampling with what the trainer's loss assumes."""
    args = getattr(trainer, "args", None)
    changes: dict[str, Any] = {}
    temperature = getattr(args, "temperature", None)
    if isinstance(temperature, (int, float)) and temperature > 0:
        changes["temperature"] = float(temperature)
    top_p, top_k = getattr(args, "top_p", None), getattr(args, "top_k", None)
    if isinstance(top_p, (int, float)) and not isinstance(top_p, bool):
        changes["top_p"] = float(top_p)
    if isinstance(top_k, (int, float)) and not isinstance(top_k, bool):
        changes["top_k"] = int(top_k or 0)
    limit = getattr(args, "max_completion_length", None)
    if isinstance(limit, int) and 0 < limit < config.max_episode_tokens:
        changes["max_episode_tokens"] = limit
    return replace(config, **changes)


def make_rollout_func(
    spec: TextEnvSpec,
    servers: Sequence[Any],
    *,
    config: RolloutConfig | None = None,
    policy_factory: Callable[[Any], Policy] | None = None,
    group_size: int | None = None,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
    max_staleness: int = 0,
    overlap: str = "process",
) -> RolloutFunc:
    """A TRL ``rollout_func(prompts, trainer)`` that plays one ``spec`` episode per prompt on
    ``servers`` (base URLs or started providers) with the batched ``RolloutEngine``.

    ``policy_factory(trainer)`` overrides the backend choice (default :func:`policy_for_trainer`);
    the policy it makes is closed with the function. The result holds ``prompt_ids``,
    ``completion_ids``, ``logprobs``, ``env_mask`` and ``reward_key`` (plus ``num_turns`` and
    ``episode_metrics``). See :class:`RolloutFunc` for the rest (``close()``, ``last_batch``,
    ``stats``, ``runner``).

    ``max_staleness`` > 0 plays batches ahead of the trainer on a copy of its weights
    (``overlap.OverlapStrategy``; rows also carry ``policy_version``); train with
    ``OffPolicyGRPOTrainer`` so the loss corrects for the older weights. 0: synchronous.
    ``overlap``: where the producer runs, ``"process"`` (a child process with its own GIL; the
    in-process ``TransformersPolicy`` only) or ``"thread"`` (this process's rollout loop; any
    ``policy_factory``).
    """
    if not servers:
        raise ValueError(
            "servers: empty; start env servers first (openenv_train.runtime.start_local_servers)"
        )
    if max_staleness < 0:
        raise ValueError(f"max_staleness={max_staleness}: must be >= 0 (0 = no overlap)")
    base = config or RolloutConfig()
    strategy: RolloutStrategy
    if max_staleness:
        strategy = _overlap_strategy(spec, servers, base, policy_factory, max_staleness, overlap)
    else:
        strategy = RunnerStrategy(engine_builder(spec, servers, base, policy_factory))
    return RolloutFunc(strategy, group_size=group_size, reward_key=reward_key, on_batch=on_batch)


def engine_builder(
    spec: TextEnvSpec,
    servers: Sequence[Any],
    base: RolloutConfig,
    policy_factory: Callable[[Any], Policy] | None = None,
) -> Callable[[Any], RolloutEngine]:
    """``make_runner(trainer)``: a ``RolloutEngine`` on ``servers`` with the trainer's policy
    (or ``policy_factory(trainer)``'s) and sampling settings."""
    policy_of = policy_factory or policy_for_trainer
    return lambda trainer: RolloutEngine(
        spec, policy_of(trainer), servers, config_for(trainer, base)
    )


def _overlap_strategy(
    spec: TextEnvSpec,
    servers: Sequence[Any],
    base: RolloutConfig,
    policy_factory: Callable[[Any], Policy] | None,
    max_staleness: int,
    overlap: str,
) -> RolloutStrategy:
    from .overlap import OverlapStrategy, Producer, ThreadProducer, copy_policy_for

    producer: Producer
    if overlap == "thread":
        producer = ThreadProducer(
            engine_builder(spec, servers, base, policy_factory or copy_policy_for), max_staleness
        )
    elif overlap == "process":
        if policy_factory is not None:
            raise ValueError(
                "policy_factory: the process producer samples a copy of the trainer's model; "
                'pass overlap="thread" to use your own policy'
            )
        from .overlap_process import ProcessProducer

        producer = ProcessProducer(spec, base_urls_of(servers), max_staleness, base)
    else:
        raise ValueError(f'overlap={overlap!r}: use "process" or "thread"')
    return OverlapStrategy(producer, max_staleness)


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
    """A TRL ``rollout_func`` running every prompt's harness episode at once (``HarnessRunner``).

    ``session_factory(prompt)`` (or ``.create(task=prompt)``) returns a ``ResourceSession``. The
    model turns come from ``policy=`` (batched; yours, not closed), ``model_step=`` (your own
    sampler) or, with neither, the trainer's model (:func:`policy_for_trainer`, closed with the
    function). ``config`` defaults to tool-calling limits (256 tokens a turn, 4096 an episode).
    Any other runner goes the same way: ``RolloutFunc(RunnerStrategy(make_runner))``.
    """
    if policy is not None and model_step is not None:
        raise ValueError("pass policy= (batched) or model_step= (your own sampler), not both")
    base = config or TOOL_CALLING

    def make(trainer: Any) -> HarnessRunner:
        own = policy is None and model_step is None
        return HarnessRunner(
            session_factory=session_factory,
            harness_adapter=harness_adapter,
            policy=policy_for_trainer(trainer) if own else policy,
            model_step=model_step,
            config=config_for(trainer, base),
        )

    strategy = RunnerStrategy(
        make,
        close_policy=policy is None and model_step is None,
        thread_name="openenv-train-harness",
    )
    return RolloutFunc(strategy, group_size=group_size, reward_key=reward_key, on_batch=on_batch)


def make_mixture_rollout_func(
    members: Sequence[Any],
    *,
    config: RolloutConfig | None = None,
    seed: int = 0,
    policy_factory: Callable[[Any], Policy] | None = None,
    group_size: int | None = None,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
) -> RolloutFunc:
    """A TRL ``rollout_func`` over several envs (``rollout.mixture.MixtureMember``: name, spec,
    servers, weight): every GRPO group plays one env drawn by weight (seeded by ``seed`` and the
    batch), all envs batched into the same model calls. Rows keep their env's reward; the batch
    metrics carry ``env/<name>/reward_mean`` and ``env/<name>/episodes``."""
    from ..rollout.mixture import MixtureEngine

    base = config or RolloutConfig()
    policy_of = policy_factory or policy_for_trainer

    def make(trainer: Any) -> MixtureEngine:
        return MixtureEngine(members, policy_of(trainer), config_for(trainer, base), seed=seed)

    return RolloutFunc(
        RunnerStrategy(make), group_size=group_size, reward_key=reward_key, on_batch=on_batch
    )
