"""``EpisodeRunner``: what the rollout engine and the harness runner share.

Both run B prompts x G generations as concurrent episodes through ``run_groups`` (retries, whole
groups dropped), with one ``GenerationBatcher`` so every episode waiting on the model joins one
policy call, and both report the same per-run metrics (``policy_calls`` counts the calls of this
run only).
"""

from __future__ import annotations

import asyncio
import gc
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

from ..policy.interface import Policy
from .batcher import GenerationBatcher
from .episode import RolloutConfig, within
from .episode_spans import traced_attempts
from .groups import Attempt, run_groups
from .records import EpisodeRecord, EpisodeTimeoutError, RolloutBatch
from .tokens import TokenCodec

T = TypeVar("T")


_heap_frozen = False


def freeze_heap_once() -> None:
    """The process's garbage-collector policy, in this one place: take every object alive now
    out of the collector's full passes (``gc.freeze``), once a process, after one last
    collection.

    Why: a training process holds millions of long-lived objects (torch, transformers, TRL, the
    model, the tokenizer, the dataset); every full collection that the rollouts' allocations
    trigger walks them all while holding the GIL, stalling the rollout loop and the trainer
    alike: with BlackJack a fifth of the engine's client CPU was the collector, and freezing at
    the first rollout halved the rollout loop's CPU per 512-episode batch (0.37 s -> 0.19 s).
    Garbage is collected first, so nothing dead is kept; objects made later are collected as
    before. Called where the long-lived objects exist: a runner's first run, a TRL rollout
    function's first call, the overlap producer process once its engine is built.
    """
    global _heap_frozen
    if not _heap_frozen:
        _heap_frozen = True
        gc.collect()
        gc.freeze()


class EpisodeRunner(ABC):
    """Runs one episode per prompt on the current event loop: ``await runner.run(prompts, G)``.

    With a ``policy`` it owns a batcher and a ``TokenCodec`` for the policy's tokenizer.
    The first run freezes the process's heap (``freeze_heap_once``) unless ``freeze_heap`` is
    False.
    """

    #: freeze the objects alive at the first run out of the collector's full passes
    freeze_heap: ClassVar[bool] = True

    def __init__(self, config: RolloutConfig, policy: Policy | None) -> None:
        self.config = config
        self.policy = policy
        self.batcher: GenerationBatcher | None = None
        self.codec: TokenCodec | None = None
        if policy is not None:
            tokenizer = getattr(policy, "tokenizer", None)
            if tokenizer is None:
                raise ValueError(
                    f"policy: {type(policy).__name__} has no .tokenizer; set it to the model's tokenizer"
                )
            self.codec = TokenCodec(tokenizer, chat_template=config.chat_template)
            self.batcher = GenerationBatcher(
                policy, max_batch_size=config.max_batch_size, max_wait_s=config.max_wait_s
            )

    async def __aenter__(self: T) -> T:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the batcher (the policy belongs to whoever made it)."""
        if self.batcher is not None:
            await self.batcher.aclose()

    async def run(self, prompts: Sequence[Any], group_size: int = 1) -> RolloutBatch:
        """Play one episode per prompt (prompts repeat ``group_size`` times in a row, as in TRL)."""
        if self.freeze_heap:
            freeze_heap_once()
        stats = self.batcher.stats if self.batcher is not None else None
        calls, sequences = (stats.calls, stats.sequences) if stats is not None else (0, 0)
        cfg = self.config
        batch = await run_groups(
            list(prompts),
            group_size,
            traced_attempts(self._episode),  # an `episode` span each, when tracing is on
            max_concurrency=cfg.max_concurrency,
            max_episode_retries=cfg.max_episode_retries,
            group_retries=cfg.group_retries,
        )
        batch.metrics.update(summarize(batch.records))
        if stats is not None:
            calls = stats.calls - calls
            sequences = stats.sequences - sequences
            batch.metrics.update(
                policy_calls=calls, mean_batch_size=sequences / calls if calls else 0.0
            )
        return batch

    @abstractmethod
    async def _episode(self, attempt: Attempt) -> EpisodeRecord:
        """One attempt of one row; infrastructure errors propagate (``run_groups`` retries)."""

    @contextmanager
    def _waits_on_model(self) -> Iterator[None]:
        """Counts an episode the batcher's flush waits for (until ``max_wait_s``) while it runs."""
        if self.batcher is not None:
            self.batcher.register()
        try:
            yield
        finally:
            if self.batcher is not None:
                self.batcher.unregister()

    async def _bounded(self, play: Awaitable[T], row: int) -> T:
        """``play`` within ``episode_timeout_s``."""
        try:
            return await within(play, self.config.episode_timeout_s)
        except asyncio.TimeoutError as exc:
            raise EpisodeTimeoutError(
                f"episode (row {row}) ran past episode_timeout_s={self.config.episode_timeout_s}"
            ) from exc


def summarize(records: Sequence[EpisodeRecord]) -> dict[str, float]:
    """Batch means of the per-episode metrics (what a progress bar or logger shows)."""
    n = len(records)
    if not n:
        return {}
    mean = lambda xs: sum(xs) / n  # noqa: E731
    return {
        "reward_mean": mean([r.reward for r in records]),
        "turns_mean": mean([r.num_turns for r in records]),
        "invalid_rate": mean([r.metrics.get("invalid_actions", 0) for r in records]),
        "truncated_rate": mean([r.metrics.get("truncated", 0) for r in records]),
        "model_tokens_mean": mean([r.metrics.get("model_tokens", 0) for r in records]),
        "env_tokens_mean": mean([r.metrics.get("env_tokens", 0) for r in records]),
        "env_latency_mean_s": mean([r.metrics.get("env_latency_s", 0.0) for r in records]),
    }
