"""``HarnessRunner``: every prompt's harness episode at once, on the engine's rules.

Unlike OpenEnv 0.10 (one prompt after another), every episode runs concurrently on one event loop
and, white-box, every model call of every session joins one batched ``policy.generate`` call.
Failures follow the engine's rules (``rollout.groups``): infrastructure errors are retried on
fresh sessions, then the whole GRPO group is retried, then the batch reports it dropped.
``openenv_train.training.make_harness_rollout_func`` wraps a runner for TRL.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..core.errors import InfrastructureError
from ..policy.interface import Policy
from ..rollout.episode import RolloutConfig
from ..rollout.episode_runner import EpisodeRunner
from ..rollout.groups import Attempt
from ..rollout.records import EpisodeRecord, MissingRewardError
from .adapters import HarnessAdapter, HarnessRolloutResult, ModelStep
from .session import ResourceSession

SessionFactory = Callable[[Any], Any]  # prompt -> ResourceSession (or an awaitable of one)

#: Limits for tool-calling episodes when no config is given (longer turns than text games).
TOOL_CALLING = RolloutConfig(
    max_turns=10, max_new_tokens=256, max_episode_tokens=4096, episode_timeout_s=300.0
)


async def _make_session(factory: Any, prompt: Any) -> ResourceSession:
    create = getattr(factory, "create", None)
    session = create(task=prompt) if callable(create) else factory(prompt)
    if inspect.isawaitable(session):
        session = await session
    if not isinstance(session, ResourceSession):
        raise TypeError(f"session_factory returned {type(session).__name__}, not a ResourceSession")
    return session


class HarnessRunner(EpisodeRunner):
    """Runs harness episodes concurrently on the current loop.

    ``session_factory(prompt)`` (or ``.create(task=prompt)``) returns a ``ResourceSession`` (may
    be async). White-box: give ``policy=`` (every model call batched) or ``model_step=`` (your own
    sampler). With neither the adapter runs black-box (``run_black_box``: no tokens, evaluation).
    """

    def __init__(
        self,
        *,
        session_factory: Any,
        harness_adapter: HarnessAdapter,
        policy: Policy | None = None,
        model_step: ModelStep | None = None,
        config: RolloutConfig | None = None,
    ) -> None:
        if policy is not None and model_step is not None:
            raise ValueError("pass policy= (batched) or model_step= (your own sampler), not both")
        super().__init__(config or replace(TOOL_CALLING), policy)  # a copy: configs are mutable
        self.session_factory = session_factory
        self.adapter = harness_adapter
        if self.batcher is not None and self.codec is not None:
            model_step = ModelStep(self.batcher.generate, self.codec)
        self.model_step = model_step

    async def _episode(self, attempt: Attempt) -> EpisodeRecord:
        session: ResourceSession | None = None
        try:
            # counted from the moment it opens: a session still opening joins the first turn's
            # batch (which waits up to max_wait_s for it) instead of splitting it in two
            with self._waits_on_model():
                session = await _make_session(self.session_factory, attempt.prompt)
                result = await self._bounded(self._drive(session), attempt.row)
            verify = await session.verify(
                result.messages, {"done": result.done, "metrics": dict(result.metrics)}
            )
        finally:
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
        if self.model_step is not None:
            return await self.adapter.run_white_box(self.model_step, session, self.config)
        return await self.adapter.run_black_box(session, self.config)
