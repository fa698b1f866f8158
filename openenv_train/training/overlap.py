"""Rollouts that overlap training: while TRL computes step k, the engine plays step k+1's episodes.

A producer plays batches back to back with its own copy of the policy weights: in a child
process (``overlap_process.ProcessProducer``, the default: its own GIL) or as a task on the
rollout function's event loop (:class:`ThreadProducer`); :class:`OverlapStrategy` drives either
one behind ``RolloutFunc``. At every ``rollout_func`` call (right after an optimizer step) the
trainer's trainable weights (all, or a LoRA model's adapter tensors only) are published as a CPU copy tagged with the step number (the
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
from dataclasses import dataclass
from typing import Any, Protocol

from ..client.sync import LoopThread
from ..policy.interface import Policy
from ..policy.lora import load_state, state_bytes, trainable_state
from ..rollout.episode_runner import EpisodeRunner
from ..rollout.records import RolloutBatch
from .rollout_func import RolloutStats
from .trainer_policy import tokenizer_of, unwrap_model


class WeightMailbox:
    """The newest published weights (a CPU copy of what trains: the whole ``state_dict``, or only
    the adapter tensors of a LoRA model) and their policy version."""

    def __init__(self) -> None:
        # replaced whole: one atomic swap; (version, state, partial)
        self._latest: tuple[int, dict[str, Any], bool] | None = None
        self.last_bytes = 0  # size of the last published state (the weight-sync bytes per step)

    @property
    def version(self) -> int:
        return self._latest[0] if self._latest is not None else -1

    def publish(self, model: Any, version: int) -> None:
        """Copy ``model``'s weights (called on the trainer's thread, between optimizer steps)."""
        state, partial = trainable_state(model)
        self.last_bytes = state_bytes(state)
        self._latest = (version, state, partial)

    def apply(self, model: Any, loaded: int) -> int:
        """Load the newest weights into ``model`` if they are newer than ``loaded``; returns the
        version ``model`` holds now."""
        latest = self._latest
        if latest is None or latest[0] <= loaded:
            return loaded
        load_state(model, latest[1], latest[2])
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


class Producer(Protocol):
    """Plays batches ahead of the trainer: :class:`ThreadProducer` or
    ``overlap_process.ProcessProducer``."""

    @property
    def runner(self) -> EpisodeRunner | None: ...

    def publish(self, model: Any, version: int, prompts: list[Any]) -> None: ...

    def start(self, trainer: Any, group_size: int) -> None: ...

    def take(self) -> tuple[int, list[Any], RolloutBatch]: ...

    def close(self) -> None: ...


def check_in_process(trainer: Any) -> None:
    """Overlap samples a copy of the trainer's model in-process: not with ``use_vllm``."""
    if getattr(getattr(trainer, "args", None), "use_vllm", False):
        raise ValueError(
            "rollout.max_staleness > 0 runs in-process generation; with use_vllm use TRL's "
            "AsyncGRPOTrainer path instead, or set max_staleness: 0"
        )


def copy_policy_for(trainer: Any) -> Policy:
    """A ``TransformersPolicy`` on a private copy of the trainer's model (the producer's weights)."""
    import torch

    from ..policy.transformers_policy import TransformersPolicy

    check_in_process(trainer)
    model = copy.deepcopy(unwrap_model(trainer)).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return TransformersPolicy(
        model, tokenizer_of(trainer), device=None, num_threads=torch.get_num_threads()
    )


class ThreadProducer:
    """Plays batches ahead on the rollout function's own event loop (this process, this GIL)."""

    def __init__(self, make_runner: Callable[[Any], EpisodeRunner], max_staleness: int) -> None:
        self.make_runner, self.max_staleness = make_runner, max_staleness
        self.loop = LoopThread(name="openenv-train-rollout")
        self.mailbox = WeightMailbox()
        self.prompts: list[Any] = []
        self._runner: EpisodeRunner | None = None
        self._task: asyncio.Task[None] | None = None
        self._switch: float | None = None

    @property
    def runner(self) -> EpisodeRunner | None:
        return self._runner

    def start(self, trainer: Any, group_size: int) -> None:
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        self.loop.run(self._start(trainer, group_size))

    async def _start(self, trainer: Any, g: int) -> None:
        self._runner = self.make_runner(trainer)
        self._slots = asyncio.Semaphore(self.max_staleness)
        self._ready: asyncio.Queue[_Made] = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._produce(g), name="producer")

    async def _produce(self, g: int) -> None:
        runner, loaded = self._runner, -1
        assert runner is not None
        while True:
            await self._slots.acquire()
            loaded = self.mailbox.apply(runner.policy.model, loaded)  # type: ignore[union-attr]
            made = _Made(loaded, list(self.prompts))
            try:
                made.batch = await runner.run(made.prompts, g)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # handed to the trainer's thread, raised there
                made.error = exc
            self._ready.put_nowait(made)
            if made.error is not None:
                return

    def publish(self, model: Any, version: int, prompts: list[Any]) -> None:
        self.mailbox.publish(model, version)
        self.prompts = list(prompts)

    def take(self) -> tuple[int, list[Any], RolloutBatch]:
        made = self.loop.run(self._take())
        if made.error is not None:
            raise made.error
        assert made.batch is not None
        return made.version, made.prompts, made.batch

    async def _take(self) -> _Made:
        made = await self._ready.get()
        self._slots.release()
        return made

    async def _shutdown(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except BaseException:  # noqa: BLE001 - cancelled or already failed: both end here
                pass
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.aclose()
            if runner.policy is not None:
                await runner.policy.aclose()

    def close(self) -> None:
        if not self.loop.loop.is_closed():
            self.loop.run(self._shutdown())
        self.loop.close()
        if self._switch is not None:
            sys.setswitchinterval(self._switch)
            self._switch = None


class OverlapStrategy:
    """``RolloutFunc``'s overlapped strategy: ``producer`` plays batches ahead of the trainer; a
    batch more than ``max_staleness`` versions old, or for other prompts, is dropped and counted
    (module doc). Rows and the batch carry ``policy_version``."""

    def __init__(self, producer: Producer, max_staleness: int) -> None:
        if max_staleness < 1:
            raise ValueError(
                f"max_staleness={max_staleness}: overlap needs >= 1 (0 is the synchronous path)"
            )
        self.producer, self.max_staleness = producer, max_staleness
        self.stats = RolloutStats()
        self._version = 0

    @property
    def runner(self) -> EpisodeRunner | None:
        return self.producer.runner

    def publish(self, trainer: Any, prompts: list[Any]) -> None:
        """The trainer's weights now, tagged with its step (the policy version)."""
        self._version = int(getattr(getattr(trainer, "state", None), "global_step", 0) or 0)
        self.producer.publish(unwrap_model(trainer), self._version, prompts)

    def start(self, trainer: Any, group_size: int, stats: RolloutStats) -> None:
        self.stats = stats
        self.producer.start(trainer, group_size)

    def produce(self, prompts: list[Any], trainer: Any, group_size: int) -> RolloutBatch:
        stats, version = self.stats, self._version
        while True:
            made_version, made_prompts, batch = self.producer.take()
            if made_prompts != prompts:
                stats.prompt_mismatch_drops += 1
                continue
            lag = version - made_version
            if lag > self.max_staleness:
                stats.stale_batches_dropped += 1
                stats.stale_rows_dropped += len(batch.rows)
                continue
            break
        stats.staleness.append(lag)
        for r in batch.records:
            r.metrics["policy_version"] = made_version
        batch.metrics.update(
            policy_version=made_version,
            staleness=lag,
            stale_batches_dropped=stats.stale_batches_dropped,
            stale_rows_dropped=stats.stale_rows_dropped,
            prompt_mismatch_drops=stats.prompt_mismatch_drops,
        )
        return batch

    def close(self) -> None:
        self.producer.close()
