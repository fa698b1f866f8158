"""``RolloutFunc``: the one object TRL calls as ``rollout_func(prompts, trainer)``.

TRL calls ``rollout_func(prompts, trainer)`` synchronously once per generation batch. What plays
the episodes is a strategy behind :class:`RolloutStrategy`: the synchronous
:class:`RunnerStrategy` (the rollout engine on env servers, the harness runner, any
``EpisodeRunner``), ``overlap.OverlapStrategy`` (batches played ahead on a copy of the weights)
or ``ray_rollout.FleetStrategy`` (a Ray env fleet, healed before each batch). ``RolloutFunc``
does what they share: it binds to the trainer of its first call, keeps ``last_batch`` and
``stats``, hands each batch to ``on_batch`` and turns it into TRL's columns. Runners are async
and keep pooled WebSocket sessions, so a runner strategy owns one background event loop
(``client.sync.LoopThread``, the one the sync clients share) for its whole life.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..client.sync import LoopThread
from ..rollout.episode_runner import EpisodeRunner, freeze_heap_once
from ..rollout.records import RolloutBatch
from .trainer_metrics import record_batch
from .trainer_policy import unwrap_model


def group_size_of(trainer: Any, group_size: int | None) -> int:
    """``group_size`` if given, else the trainer's ``num_generations``."""
    if group_size is not None:
        return group_size
    for obj in (trainer, getattr(trainer, "args", None)):
        n = getattr(obj, "num_generations", None)
        if isinstance(n, int) and n >= 1:
            return n
    raise ValueError(
        "group_size: not given and the trainer has no num_generations; pass group_size= "
        "(TRL's num_generations) to the rollout function factory"
    )


@contextlib.contextmanager
def sampling_mode(trainer: Any) -> Iterator[None]:
    """The trainer's model in eval mode with no grad while the rollout samples from it."""
    model = unwrap_model(trainer) if getattr(trainer, "model", None) is not None else None
    if model is None:
        yield
        return
    import torch

    was_training = bool(getattr(model, "training", False))
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        if was_training:
            model.train()


@dataclass
class RolloutStats:
    """Counts over a rollout function's life. The drop counts and ``staleness`` (one lag per
    batch) stay empty for strategies that never drop batches (all but the overlapped one)."""

    batches: int = 0
    episodes: int = 0
    stale_batches_dropped: int = 0
    stale_rows_dropped: int = 0
    prompt_mismatch_drops: int = 0
    staleness: list[int] = field(default_factory=list)


class RolloutStrategy(Protocol):
    """How a :class:`RolloutFunc` gets its batches. Called on the trainer's thread, in order:
    ``publish`` at every call, ``start`` once (first call), then ``produce``; ``close`` at the end."""

    @property
    def runner(self) -> EpisodeRunner | None:
        """The runner it plays on (None before ``start``, or where it lives in another process)."""
        ...

    def publish(self, trainer: Any, prompts: list[Any]) -> None:
        """The trainer's weights (and prompts) now: a no-op where the policy samples them live."""
        ...

    def start(self, trainer: Any, group_size: int, stats: RolloutStats) -> None:
        """Bind to ``trainer`` (build the runner or start the producer); count drops in ``stats``."""
        ...

    def produce(self, prompts: list[Any], trainer: Any, group_size: int) -> RolloutBatch:
        """One batch: ``group_size`` episodes per prompt group (``GroupsDroppedError`` if lost)."""
        ...

    def close(self) -> None:
        """Release sessions, producer, policy (where owned) and loop; safe to call twice."""
        ...


class RunnerStrategy:
    """Synchronous: ``make_runner(trainer)`` builds the runner at the first call, on this
    strategy's own loop; every batch is played then and there with the trainer's current weights
    (its model in eval mode, no grad). Any object with ``run(prompts, group_size) ->
    RolloutBatch``, ``aclose()`` and ``policy`` works (the engine, ``HarnessRunner``, ...).
    ``close_policy``: close the runner's policy with it (False where the caller owns it)."""

    def __init__(
        self,
        make_runner: Callable[[Any], EpisodeRunner],
        *,
        close_policy: bool = True,
        thread_name: str = "openenv-train-rollout",
    ) -> None:
        self.make_runner = make_runner
        self.close_policy = close_policy
        self.loop = LoopThread(name=thread_name)
        self._runner: EpisodeRunner | None = None

    @property
    def runner(self) -> EpisodeRunner | None:
        return self._runner

    def publish(self, trainer: Any, prompts: list[Any]) -> None:
        pass  # the policy samples the trainer's live weights (or TRL syncs its vLLM)

    def start(self, trainer: Any, group_size: int, stats: RolloutStats) -> None:
        self._runner = self.loop.run(self._build(trainer))

    async def _build(self, trainer: Any) -> EpisodeRunner:
        return self.make_runner(trainer)

    def restart(self, trainer: Any) -> None:
        """Close the runner (and its policy, where owned) and build a fresh one on the same loop."""
        self._close_runner()
        self._runner = self.loop.run(self._build(trainer))

    def produce(self, prompts: list[Any], trainer: Any, group_size: int) -> RolloutBatch:
        runner = self._runner
        assert runner is not None, "produce before start"
        with sampling_mode(trainer):
            return self.loop.run(runner.run(prompts, group_size))

    def _close_runner(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            self.loop.run(runner.aclose())
            if self.close_policy and runner.policy is not None:
                self.loop.run(runner.policy.aclose())

    def close(self) -> None:
        if not self.loop.loop.is_closed():
            self._close_runner()
        self.loop.close()


class RolloutFunc:
    """TRL's ``rollout_func``: ``out = rollout_func(prompts, trainer)``, a dict of per-row lists.

    Bound to the trainer of its first call (a second trainer is an error: make one per trainer).
    ``group_size`` defaults to the trainer's ``num_generations``. Dropped groups were already
    retried by the runner's rules; if any still fail, ``GroupsDroppedError`` reaches the trainer:
    rows are never invented. Output is validated before TRL sees it; a batch tagged with a
    ``policy_version`` metric (overlap) also gets that column. ``on_batch`` sees every
    ``RolloutBatch`` (metrics logging); ``last_batch`` is the latest one, ``stats`` the counts.
    ``close()`` (or ``with``) releases everything the strategy owns.
    """

    def __init__(
        self,
        strategy: RolloutStrategy,
        *,
        group_size: int | None = None,
        reward_key: str = "env_reward",
        on_batch: Callable[[RolloutBatch], None] | None = None,
    ) -> None:
        self.strategy = strategy
        self.group_size = group_size
        self.reward_key = reward_key
        self.on_batch = on_batch
        self.last_batch: RolloutBatch | None = None
        self.stats = RolloutStats()
        self._started = False
        self._trainer: Any = None

    @property
    def runner(self) -> EpisodeRunner | None:
        """The strategy's runner (the engine, a harness runner ...; None before the first call)."""
        return self.strategy.runner

    def __call__(self, prompts: list[Any], trainer: Any = None) -> dict[str, Any]:
        prompts = list(prompts)
        g = group_size_of(trainer, self.group_size)
        t0 = time.perf_counter()
        self.strategy.publish(trainer, prompts)  # the weights to the producer (overlap, Ray...)
        sync_s = time.perf_counter() - t0
        if not self._started:
            self.strategy.start(trainer, g, self.stats)
            self._started, self._trainer = True, trainer
            freeze_heap_once()  # the trainer, model and runner exist now
        elif trainer is not self._trainer:
            raise RuntimeError(
                "this rollout_func is bound to the trainer of its first call; "
                "make one rollout_func per trainer"
            )
        t0 = time.perf_counter()
        batch = self.strategy.produce(prompts, trainer, g)
        record_batch(batch, time.perf_counter() - t0, sync_s)  # the trainer's /metrics, if served
        self.last_batch = batch
        self.stats.batches += 1
        self.stats.episodes += len(batch.rows) - batch.group_size * len(batch.dropped_groups)
        if self.on_batch is not None:
            self.on_batch(batch)
        out = batch.to_trl(self.reward_key)  # validated; raises GroupsDroppedError
        version = batch.metrics.get("policy_version")
        if version is not None:
            out["policy_version"] = [version] * len(batch.rows)
        return out

    def close(self) -> None:
        self.strategy.close()

    def __enter__(self) -> RolloutFunc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
