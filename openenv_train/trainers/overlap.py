"""Rollouts that overlap training: while TRL computes step k, the engine plays step k+1's episodes.

A producer task on the rollout function's event loop plays batches back to back with its own
copy of the policy weights. At every ``rollout_func`` call (right after an optimizer step) the
trainer's weights are published as a CPU ``state_dict`` copy tagged with the step number (the
policy version); the producer loads the newest copy at its next batch boundary, so episodes in
flight are never paused. At most ``max_staleness`` finished-or-running batches are ahead of the
trainer; a batch older than ``max_staleness`` versions when TRL asks for it is dropped and
counted (``stale_rows_dropped``), never trained on. Rows carry ``policy_version`` and their
sampling logprobs; ``OffPolicyGRPOTrainer`` corrects the loss with TRL's truncated importance
ratio against those logprobs.

Prefetched batches are played on the prompts of the latest call: with a dataset whose prompts
change from call to call, a prefetched batch for other prompts is dropped too (counted as
``prompt_mismatch_drops``), so overlap pays off where the env deals the task (BlackJack).
"""

from __future__ import annotations

import asyncio
import copy
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..policy.base import Policy
from ..rollout.records import RolloutBatch
from ..rollout.runner import EpisodeRunner
from .rollout import (
    LoopThread,
    RolloutFunc,
    _group_size_of,
    _unwrap,
    freeze_heap,
    tokenizer_of,
)


class WeightMailbox:
    """The newest published weights (a CPU ``state_dict`` copy) and their policy version."""

    def __init__(self) -> None:
        self._latest: tuple[int, dict[str, Any]] | None = None  # replaced whole: one atomic swap

    @property
    def version(self) -> int:
        return self._latest[0] if self._latest is not None else -1

    def publish(self, model: Any, version: int) -> None:
        """Copy ``model``'s weights (called on the trainer's thread, between optimizer steps)."""
        state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        self._latest = (version, state)

    def apply(self, model: Any, loaded: int) -> int:
        """Load the newest weights into ``model`` if they are newer than ``loaded``; returns the
        version ``model`` holds now."""
        latest = self._latest
        if latest is None or latest[0] <= loaded:
            return loaded
        model.load_state_dict(latest[1])
        return latest[0]


#: The GIL switch interval while a producer runs (Python's default is 5 ms). The trainer thread
#: makes many short torch calls, each releasing and re-taking the GIL; with the rollout loop's
#: Python work running beside it, each re-take could wait a whole interval.
SWITCH_INTERVAL_S = 0.0005


@dataclass
class _Made:
    version: int
    prompts: list[Any]
    batch: RolloutBatch | None = None
    error: BaseException | None = None


@dataclass
class OverlapStats:
    """Counts over the rollout function's life (logged with every batch)."""

    batches: int = 0
    stale_batches_dropped: int = 0
    stale_rows_dropped: int = 0
    prompt_mismatch_drops: int = 0
    staleness: list[int] = field(default_factory=list)


def copy_policy_for(trainer: Any) -> Policy:
    """A ``TransformersPolicy`` on a private copy of the trainer's model (the producer's weights)."""
    import torch

    from ..policy.transformers_policy import TransformersPolicy

    if getattr(getattr(trainer, "args", None), "use_vllm", False):
        raise ValueError(
            "rollout.max_staleness > 0 runs in-process generation; with use_vllm use TRL's "
            "AsyncGRPOTrainer path instead, or set max_staleness: 0"
        )
    model = copy.deepcopy(_unwrap(trainer)).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return TransformersPolicy(
        model, tokenizer_of(trainer), device=None, num_threads=torch.get_num_threads()
    )


def overlapped_rollout_func(
    make_runner: Callable[[Any], EpisodeRunner],
    *,
    max_staleness: int,
    group_size: int | None = None,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
) -> RolloutFunc:
    """A TRL ``rollout_func`` whose batches are played ahead of the trainer (see module doc).

    ``make_runner(trainer)`` must build a runner whose policy samples a model of its own
    (``runner.policy.model``), e.g. from :func:`copy_policy_for`. Same extras as
    ``runner_rollout_func``: ``.close()``, ``.get_runner()``, ``.last_batch``, plus ``.stats``.
    """
    if max_staleness < 1:
        raise ValueError(
            f"max_staleness={max_staleness}: overlap needs >= 1 (0 is the synchronous path)"
        )
    loop = LoopThread(name="openenv-train-rollout")
    mailbox = WeightMailbox()
    stats = OverlapStats()
    state: dict[str, Any] = {"runner": None, "trainer": None, "task": None, "prompts": None}
    queue: dict[str, Any] = {}

    async def produce(g: int) -> None:
        runner: EpisodeRunner = state["runner"]
        loaded = -1
        while True:
            await queue["slots"].acquire()
            loaded = mailbox.apply(runner.policy.model, loaded)  # type: ignore[union-attr]
            made = _Made(loaded, list(state["prompts"]))
            try:
                made.batch = await runner.run(made.prompts, g)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # handed to the trainer's thread, raised there
                made.error = exc
            queue["ready"].put_nowait(made)
            if made.error is not None:
                return

    async def start(trainer: Any, g: int) -> None:
        state["switch"] = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        state["runner"] = make_runner(trainer)
        queue["slots"] = asyncio.Semaphore(max_staleness)
        queue["ready"] = asyncio.Queue()
        state["task"] = asyncio.get_running_loop().create_task(produce(g), name="rollout-producer")

    async def take() -> _Made:
        made = await queue["ready"].get()
        queue["slots"].release()
        return made

    def rollout_func(prompts: list[Any], trainer: Any = None) -> dict[str, Any]:
        version = int(getattr(getattr(trainer, "state", None), "global_step", 0) or 0)
        mailbox.publish(_unwrap(trainer), version)
        state["prompts"] = list(prompts)
        if state["runner"] is None:
            loop.run(start(trainer, _group_size_of(trainer, group_size)))
            state["trainer"] = trainer
            freeze_heap()
        elif trainer is not state["trainer"]:
            raise RuntimeError(
                "this rollout_func is bound to the trainer of its first call; make one rollout_func per trainer"
            )
        while True:
            made = loop.run(take())
            if made.error is not None:
                raise made.error
            assert made.batch is not None
            if made.prompts != state["prompts"]:
                stats.prompt_mismatch_drops += 1
                continue
            lag = version - made.version
            if lag > max_staleness:
                stats.stale_batches_dropped += 1
                stats.stale_rows_dropped += len(made.batch.rows)
                continue
            break
        batch = made.batch
        stats.batches += 1
        stats.staleness.append(lag)
        for r in batch.records:
            r.metrics["policy_version"] = made.version
        batch.metrics.update(
            policy_version=made.version,
            staleness=lag,
            stale_batches_dropped=stats.stale_batches_dropped,
            stale_rows_dropped=stats.stale_rows_dropped,
            prompt_mismatch_drops=stats.prompt_mismatch_drops,
        )
        rollout_func.last_batch = batch  # type: ignore[attr-defined]
        if on_batch is not None:
            on_batch(batch)
        out = batch.to_trl(reward_key)
        out["policy_version"] = [made.version] * len(batch.rows)
        return out

    async def shutdown() -> None:
        task, state["task"] = state["task"], None
        if task is not None:
            task.cancel()
            try:
                await task
            except BaseException:  # noqa: BLE001 - cancelled or already failed: both end here
                pass
        runner, state["runner"] = state["runner"], None
        if runner is not None:
            await runner.aclose()
            if runner.policy is not None:
                await runner.policy.aclose()

    def close() -> None:
        if not loop.loop.is_closed():
            loop.run(shutdown())
        loop.close()
        if "switch" in state:
            sys.setswitchinterval(state.pop("switch"))

    rollout_func.close = close  # type: ignore[attr-defined]
    rollout_func.last_batch = None  # type: ignore[attr-defined]
    rollout_func.get_runner = lambda: state["runner"]  # type: ignore[attr-defined]
    rollout_func.stats = stats  # type: ignore[attr-defined]
    return rollout_func
