"""Our rollout engine as the rollout worker of TRL's ``AsyncGRPOTrainer``.

TRL's default worker runs its own single-env turn loop in a child process. :class:`EngineRolloutWorker`
follows its ``RolloutWorkerProtocol`` (``start``, ``stop``, ``update_model_version``,
``check_health``, ``rollout_buffer``, ``metrics_queue``) and produces the rows with any of our
``EpisodeRunner``s instead: the ``RolloutEngine`` over env servers (a ``TextEnvSpec``), or the
``HarnessRunner`` over harness sessions. Its groups play continuously on one background event loop,
``max_inflight_groups`` at a time, so every episode waiting on the model joins one batched call to
the vLLM server (``OpenAICompatiblePolicy``); rows go to the trainer's queue as soon as their group
is scored.

Each row is one episode: ``input_ids`` = prompt + completion (model turns and env text),
``completion_mask`` = 1 on model tokens only, ``old_log_probs`` = the server's sampling logprobs
there (0 elsewhere), the group-normalised advantage, and ``model_version`` = the policy version
live when the group started (the trainer drops rows older than its ``max_staleness``). A group that
failed on infrastructure errors yields no rows and is counted (``rollout/groups_dropped_total``),
never scored 0.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from ...client.sync import LoopThread
from ...policy.interface import Policy
from ...policy.openai_policy import OpenAICompatiblePolicy
from ...rollout.engine import RolloutEngine
from ...rollout.episode import RolloutConfig
from ...rollout.episode_runner import EpisodeRunner
from ...rollout.groups import gather_or_cancel
from ...rollout.records import EpisodeRecord
from ...rollout.spec import TextEnvSpec


def samples_from_group(
    records: Sequence[EpisodeRecord],
    *,
    model_version: int,
    group_id: int,
    tokenizer: Any = None,
) -> list[Any]:
    """TRL ``RolloutSample`` rows of one scored GRPO group (advantage = reward z-score in the group,
    as TRL's own worker computes it)."""
    import numpy as np
    from trl.experimental.async_grpo.async_rollout_worker import RolloutSample

    rewards = np.array([r.reward for r in records], dtype=float)
    mean, std = float(rewards.mean()), float(rewards.std())
    samples = []
    for rec, reward in zip(records, rewards, strict=True):
        n_prompt = len(rec.prompt_ids)
        logps = [lp if m else 0.0 for lp, m in zip(rec.logprobs, rec.env_mask, strict=True)]
        decode = tokenizer.decode if tokenizer is not None else str
        samples.append(
            RolloutSample(
                prompt=[{"role": "user", "content": decode(rec.prompt_ids)}],
                completion=[{"role": "assistant", "content": decode(rec.completion_ids)}],
                input_ids=np.asarray(rec.prompt_ids + rec.completion_ids, dtype=np.int64),
                completion_mask=np.asarray([0] * n_prompt + rec.env_mask, dtype=np.int64),
                old_log_probs=np.asarray([0.0] * n_prompt + logps, dtype=np.float32),
                advantage=float((reward - mean) / (std + 1e-8)),
                model_version=model_version,
                group_id=group_id,
                metrics={
                    "reward": float(reward),
                    "reward_std": std,
                    "rewards/env": float(reward),
                    "episode/turns": float(rec.num_turns),
                    "episode/invalid_actions": float(rec.metrics.get("invalid_actions", 0)),
                },
            )
        )
    return samples


def rollout_config_for(args: Any, config: RolloutConfig | None = None) -> RolloutConfig:
    """``config`` with the trainer's sampling (``temperature``, ``top_p``, ``top_k``): the trainer
    scores tokens at ``args.temperature``, so the sampler must draw at the same one."""
    return replace(
        config or RolloutConfig(), temperature=args.temperature, top_p=args.top_p, top_k=args.top_k
    )


class EngineRolloutWorker:
    """``RolloutWorkerProtocol`` on our ``EpisodeRunner`` (in this process, on a background loop).

    ``make_policy()`` and ``make_runner(policy)`` are called on the worker's own loop at
    :meth:`start`; the worker closes both at :meth:`stop`. ``prompts`` are cycled, each played
    ``num_generations`` times as one group. No new group starts while ``max_queued_rows`` rows
    wait in the queue (rows further ahead would be too stale by the time the trainer reads them;
    ``env_rollout_worker`` sets it to ``max_staleness + 1`` steps' worth). ``stats`` counts groups,
    rows, drops and the versions rows were tagged with.
    """

    def __init__(
        self,
        make_policy: Callable[[], Policy],
        make_runner: Callable[[Policy], EpisodeRunner],
        *,
        num_generations: int,
        prompts: Sequence[Any] = ("",),
        max_inflight_groups: int = 2,
        queue_maxsize: int = 1024,
        max_queued_rows: int | None = None,
    ) -> None:
        if num_generations < 2:
            raise ValueError(
                f"num_generations={num_generations}: GRPO needs >= 2 episodes per group"
            )
        if max_inflight_groups < 1:
            raise ValueError(f"max_inflight_groups={max_inflight_groups}: must be >= 1")
        if not prompts:
            raise ValueError('prompts: empty; pass at least one prompt ("" for env-driven tasks)')
        self.make_policy = make_policy
        self.make_runner = make_runner
        self.num_generations = num_generations
        self.prompts = list(prompts)
        self.max_inflight_groups = max_inflight_groups
        self.max_queued_rows = max_queued_rows
        self.rollout_buffer: queue.Queue[Any] = queue.Queue(maxsize=queue_maxsize)
        self.metrics_queue: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=4096)
        self.stats: Counter[str] = Counter()
        self.versions: Counter[int] = Counter()
        self._model_version = 0
        #: set when the trainer syncs a LoRA adapter to vLLM (``--enable-lora``): requests then
        #: name the adapter of the version they play, ``{adapter_name}-v{N}`` (TRL's naming)
        self.adapter_name: str | None = None
        self._policy: Any = None
        self._heartbeat = time.time()
        self._lock = threading.Lock()
        self._loop: LoopThread | None = None
        self._future: Future[None] | None = None
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    # -- RolloutWorkerProtocol ------------------------------------------------------------------

    def start(self) -> None:
        if self._future is not None:
            raise RuntimeError("EngineRolloutWorker.start called twice")
        self._heartbeat = time.time()
        self._loop = LoopThread("openenv-train-async-grpo")
        self._future = asyncio.run_coroutine_threadsafe(self._main(), self._loop.loop)

    def stop(self) -> None:
        """Cancel the groups in flight, close sessions, policy and loop (idempotent)."""
        self._stopping = True
        future, loop = self._future, self._loop
        if future is not None and loop is not None and not future.done():
            # cancel the task, not the future: the future then resolves once cleanup has run
            loop.loop.call_soon_threadsafe(lambda: self._task and self._task.cancel())
            try:
                future.result(timeout=60)
            except BaseException:  # noqa: BLE001 - cancelled or failed: either way it is over
                pass
        if loop is not None:
            loop.close()
        self._loop = None

    def update_model_version(self, model_version: int) -> None:
        with self._lock:
            self._model_version = int(model_version)
            self._serve_version(self._policy)

    def _serve_version(self, policy: Any) -> None:
        """Point ``policy``'s requests at the adapter of the current version (adapter-only sync)."""
        if self.adapter_name and policy is not None and hasattr(policy, "model"):
            policy.model = f"{self.adapter_name}-v{self._model_version}"

    def check_health(self, stale_after_s: float) -> None:
        """Raise if the rollout loop died (with its error) or made no progress for ``stale_after_s``."""
        future = self._future
        if future is None:
            raise RuntimeError("the rollout worker was never started")
        if future.done() and not self._stopping:
            exc = future.exception() if not future.cancelled() else None
            raise RuntimeError(f"the rollout worker stopped: {exc!r}") from exc
        age = time.time() - self._heartbeat
        if age > stale_after_s:
            raise RuntimeError(
                f"rollout worker heartbeat stale: no group finished for {age:.0f} s > "
                f"{stale_after_s:.0f} s (heartbeat_stale_after_s)"
            )

    @property
    def model_version(self) -> int:
        with self._lock:
            return self._model_version

    # -- the loop -------------------------------------------------------------------------------

    async def _main(self) -> None:
        self._task = asyncio.current_task()
        policy = self.make_policy()
        with self._lock:
            self._policy = policy
            self._serve_version(policy)
        try:
            async with self.make_runner(policy) as runner:
                prompts = itertools.cycle(self.prompts)
                group_ids = itertools.count()
                await gather_or_cancel(
                    [
                        self._play_groups(runner, prompts, group_ids)
                        for _ in range(self.max_inflight_groups)
                    ]
                )
        finally:
            await policy.aclose()

    async def _play_groups(self, runner: EpisodeRunner, prompts: Any, group_ids: Any) -> None:
        tokenizer = runner.codec.tokenizer if runner.codec is not None else None
        while not self._stopping:
            t0 = time.perf_counter()
            while self._ahead() and not self._stopping:
                self._heartbeat = time.time()  # waiting on the trainer is not a hang
                await asyncio.sleep(0.02)
            waited = time.perf_counter() - t0
            prompt, group_id, version = next(prompts), next(group_ids), self.model_version
            t0 = time.perf_counter()
            batch = await runner.run([prompt] * self.num_generations, self.num_generations)
            self._heartbeat = time.time()
            metrics: dict[str, Any] = {
                "rollout/group_s": time.perf_counter() - t0,
                "rollout/ahead_wait_s": waited,
                "rollout/groups_dropped_total": float(len(batch.dropped_groups)),
                "rollout/infra_errors_total": float(sum(batch.errors.values())),
            }
            self.stats["groups_dropped"] += len(batch.dropped_groups)
            if batch.complete:
                samples = samples_from_group(
                    batch.records, model_version=version, group_id=group_id, tokenizer=tokenizer
                )
                blocked = 0.0
                for sample in samples:
                    blocked += await self._put(sample)
                self.stats["groups"] += 1
                self.stats["rows"] += len(samples)
                self.versions[version] += len(samples)
                metrics["rollout/backpressure_s"] = blocked
            try:
                self.metrics_queue.put_nowait(metrics)
            except queue.Full:  # the trainer stopped draining: never block generation on metrics
                self.stats["metrics_dropped"] += 1

    def _ahead(self) -> bool:
        limit = self.max_queued_rows
        return limit is not None and self.rollout_buffer.qsize() >= limit

    async def _put(self, sample: Any) -> float:
        """Queue one row, waiting while the trainer's queue is full; returns the seconds waited."""
        t0 = time.perf_counter()
        while True:
            sample.enqueued_at = time.time()
            try:
                self.rollout_buffer.put_nowait(sample)
                return time.perf_counter() - t0
            except queue.Full:
                if self._stopping:
                    return time.perf_counter() - t0
                await asyncio.sleep(0.05)


def env_rollout_worker(
    spec: TextEnvSpec,
    servers: Sequence[Any],
    *,
    args: Any,
    model: str,
    tokenizer: Any,
    config: RolloutConfig | None = None,
    prompts: Sequence[Any] = ("",),
    max_inflight_groups: int = 2,
) -> EngineRolloutWorker:
    """A worker playing ``spec``'s env on ``servers`` against the vLLM server of ``args``
    (``AsyncGRPOConfig``: ``vllm_server_base_url``, ``num_generations``, ``queue_maxsize``,
    ``max_staleness``, the batch size and the sampling settings), which serves the policy as
    ``model``."""
    config = rollout_config_for(args, config)
    base_url = args.vllm_server_base_url
    rows_per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps

    def make_policy() -> Policy:
        return OpenAICompatiblePolicy(base_url, model, tokenizer=tokenizer)

    return EngineRolloutWorker(
        make_policy,
        lambda policy: RolloutEngine(spec, policy, servers, config),
        num_generations=args.num_generations,
        prompts=prompts,
        max_inflight_groups=max_inflight_groups,
        queue_maxsize=args.queue_maxsize,
        max_queued_rows=(args.max_staleness + 1) * rows_per_step,
    )
