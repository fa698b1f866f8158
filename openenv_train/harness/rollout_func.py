"""``build_harness_rollout_func``: a TRL ``rollout_func`` from sessions + a harness + a policy.

Unlike OpenEnv 0.10 (one prompt after another), every prompt's episode runs at once on one event
loop and every model call of every session joins one batched ``policy.generate`` call. Failures
follow the engine's rules (``rollout.groups``): infrastructure errors are retried on fresh
sessions, then the whole GRPO group is retried, then a typed ``GroupsDroppedError`` reaches the
trainer. The output is validated before TRL sees it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ..core.errors import InfrastructureError
from ..policy.base import Policy
from ..rollout.batcher import GenerationBatcher
from ..rollout.groups import Attempt, run_groups
from ..rollout.records import (
    EpisodeRecord,
    EpisodeTimeoutError,
    MissingRewardError,
    RolloutBatch,
)
from ..rollout.sync import engine_rollout_func
from ..rollout.tokens import TokenCodec
from .adapters import HarnessAdapter, HarnessRolloutResult, HarnessRunLimits, ModelStep
from .session import ResourceSession

SessionFactory = Callable[[str], Any]  # prompt -> ResourceSession (or an awaitable of one)


async def _make_session(factory: Any, prompt: Any) -> ResourceSession:
    create = getattr(factory, "create", None)
    session = create(task=prompt) if callable(create) else factory(prompt)
    if inspect.isawaitable(session):
        session = await session
    if not isinstance(session, ResourceSession):
        raise TypeError(f"session_factory returned {type(session).__name__}, not a ResourceSession")
    return session


class HarnessRunner:
    """Runs harness episodes concurrently on the current loop (what the rollout_func wraps)."""

    def __init__(
        self,
        *,
        session_factory: Any,
        harness_adapter: HarnessAdapter,
        policy: Policy | None = None,
        model_step: ModelStep | None = None,
        limits: HarnessRunLimits | None = None,
        chat_template: bool | None = None,
        max_concurrency: int = 256,
        max_batch_size: int = 256,
        max_wait_s: float = 0.005,
        max_episode_retries: int = 2,
        group_retries: int = 1,
        white_box: bool = True,
    ) -> None:
        if white_box and (policy is None) == (model_step is None):
            raise ValueError(
                "pass exactly one of policy= (batched) or model_step= (your own sampler)"
            )
        self.session_factory = session_factory
        self.adapter = harness_adapter
        self.limits = limits or HarnessRunLimits()
        self.white_box = white_box
        self.max_concurrency = max_concurrency
        self.max_episode_retries = max_episode_retries
        self.group_retries = group_retries
        self.batcher: GenerationBatcher | None = None
        if policy is not None:
            tokenizer = getattr(policy, "tokenizer", None)
            if tokenizer is None:
                raise ValueError(f"policy: {type(policy).__name__} has no .tokenizer")
            self.batcher = GenerationBatcher(
                policy, max_batch_size=max_batch_size, max_wait_s=max_wait_s
            )
            model_step = ModelStep(
                self.batcher.generate, TokenCodec(tokenizer, chat_template=chat_template)
            )
        self.model_step = model_step

    async def run(self, prompts: Sequence[str], group_size: int = 1) -> RolloutBatch:
        batch = await run_groups(
            list(prompts),
            group_size,
            self._episode,
            max_concurrency=self.max_concurrency,
            max_episode_retries=self.max_episode_retries,
            group_retries=self.group_retries,
        )
        if self.batcher is not None:
            batch.metrics.update(
                policy_calls=self.batcher.stats.calls, mean_batch_size=self.batcher.stats.mean_batch
            )
        return batch

    async def _episode(self, attempt: Attempt) -> EpisodeRecord:
        session: ResourceSession | None = None
        registered = False
        try:
            session = await _make_session(self.session_factory, attempt.prompt)
            if self.batcher is not None:  # only now can it wait on the model: batches wait for it
                self.batcher.register()
                registered = True
            try:
                result = await asyncio.wait_for(self._drive(session), self.limits.episode_timeout_s)
            except asyncio.TimeoutError:
                raise EpisodeTimeoutError(
                    f"harness episode (row {attempt.row}) ran past episode_timeout_s={self.limits.episode_timeout_s}"
                ) from None
            verify = await session.verify(
                result.messages, {"done": result.done, "metrics": dict(result.metrics)}
            )
        finally:
            if registered:
                self.batcher.unregister()  # type: ignore[union-attr]
            if session is not None:
                try:
                    await session.close()
                except (InfrastructureError, OSError):
                    pass
        if verify.env_reward is None:
            raise MissingRewardError(
                f"session.verify() gave no env_reward for row {attempt.row}; the env must score the "
                "episode (a missing reward is never turned into 0)"
            )
        return EpisodeRecord.of(
            attempt,
            result,
            reward=float(verify.env_reward),
            num_turns=result.num_turns,
            metrics={**result.metrics, **verify.metrics, "attempts": attempt.attempt + 1},
        )

    async def _drive(self, session: ResourceSession) -> HarnessRolloutResult:
        if self.white_box:
            assert self.model_step is not None
            return await self.adapter.run_white_box(self.model_step, session, self.limits)
        return await self.adapter.run_black_box(session, self.limits)

    async def aclose(self) -> None:
        if self.batcher is not None:
            await self.batcher.aclose()


def build_harness_rollout_func(
    *,
    session_factory: Any,
    harness_adapter: HarnessAdapter,
    policy: Policy | None = None,
    model_step: ModelStep | None = None,
    limits: HarnessRunLimits | None = None,
    reward_key: str = "env_reward",
    group_size: int | None = None,
    **runner_kwargs: Any,
) -> Callable[[list[str], Any], dict[str, Any]]:
    """A TRL ``rollout_func(prompts, trainer) -> dict`` running every prompt's episode at once.

    ``session_factory(prompt)`` (or ``.create(task=prompt)``) returns a ``ResourceSession`` (may be
    async). Give ``policy=`` to batch every model call across sessions, or ``model_step=`` to sample
    yourself. ``group_size`` defaults to ``trainer.num_generations``. Output keys: ``prompt_ids``,
    ``completion_ids``, ``logprobs``, ``env_mask``, ``reward_key``, ``num_turns``,
    ``episode_metrics``; validated (row count, keys, mask lengths, non-empty completions) with
    ``RolloutOutputError``. The function has ``.close()`` and ``.last_batch``.
    """
    if (policy is None) == (model_step is None):
        raise ValueError("pass exactly one of policy= (batched) or model_step= (your own sampler)")

    def make_runner() -> HarnessRunner:
        return HarnessRunner(
            session_factory=session_factory,
            harness_adapter=harness_adapter,
            policy=policy,
            model_step=model_step,
            limits=limits,
            **runner_kwargs,
        )

    return engine_rollout_func(
        make_runner,
        group_size=group_size,
        reward_key=reward_key,
        thread_name="openenv-train-harness",
    )
