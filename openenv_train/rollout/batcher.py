"""Continuous batching across sessions: every episode waiting on the model joins one policy call.

Episodes ``register`` while they run. A batch is flushed as soon as every registered episode is
waiting on the model (nothing else can join), when it is full, or ``max_wait_s`` after its first
request, whichever comes first. Requests are grouped by ``SamplingSettings`` (a per-episode token
budget can lower ``max_new_tokens``). One policy call runs at a time: while it runs, episodes
coming back from env steps queue for the next one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..policy.interface import Generation, Policy, SamplingSettings


@dataclass
class BatcherStats:
    calls: int = 0
    sequences: int = 0
    max_batch: int = 0
    generate_s: float = 0.0

    @property
    def mean_batch(self) -> float:
        return self.sequences / self.calls if self.calls else 0.0


class GenerationBatcher:
    """Gathers ``generate`` requests from many episodes into batched ``policy.generate`` calls."""

    def __init__(
        self, policy: Policy, *, max_batch_size: int = 256, max_wait_s: float = 0.005
    ) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if max_wait_s < 0:
            raise ValueError(f"max_wait_s must be >= 0, got {max_wait_s}")
        self.policy = policy
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.stats = BatcherStats()
        self._seeded = 0  # seeded calls so far: each gets its own seed
        self._pending: dict[
            SamplingSettings, list[tuple[list[int], asyncio.Future[Generation], int | None]]
        ] = {}
        self._row_seeds = bool(getattr(policy, "supports_row_seeds", False))
        self._n_pending = 0
        self._first_at: float | None = None
        self._active = 0
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    # -- episode side -----------------------------------------------------------------------

    def register(self) -> None:
        self._active += 1

    def unregister(self) -> None:
        self._active -= 1
        self._poke()

    async def generate(
        self,
        prompt_ids: list[int],
        sampling: SamplingSettings,
        seed: int | None = None,
        allowed: frozenset[tuple[int, ...]] | None = None,
    ) -> Generation:
        """Queue one prompt and wait for its generation (cancellation removes it cleanly).

        ``seed``: this row's own sampling stream (used when the policy ``supports_row_seeds``).
        ``allowed``: the token sequences the answer may be (a legal-move mask; the policy must
        ``supports_allowed_tokens``)."""
        if allowed is not None and not getattr(self.policy, "supports_allowed_tokens", False):
            raise ValueError(
                f"allowed: {type(self.policy).__name__} cannot limit its answers; use a "
                "policy that supports_allowed_tokens (TransformersPolicy) or turn the mask off"
            )
        self._ensure_running()
        fut: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        entry = (prompt_ids, fut, seed, allowed)
        self._pending.setdefault(sampling, []).append(entry)
        self._n_pending += 1
        if self._first_at is None:
            self._first_at = time.monotonic()
        self._poke()
        try:
            return await fut
        except asyncio.CancelledError:
            queue = self._pending.get(sampling)
            if queue is not None and entry in queue:
                queue.remove(entry)
                self._n_pending -= 1
                if not queue:
                    del self._pending[sampling]
            raise

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    # -- worker ---------------------------------------------------------------------------

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            if self._task is not None and self._task.done() and not self._task.cancelled():
                exc = self._task.exception()
                if exc is not None:
                    raise RuntimeError("the generation batcher stopped") from exc
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="generation-batcher"
            )

    def _ready(self) -> bool:
        if self._n_pending == 0:
            return False
        if self._n_pending >= self.max_batch_size or self._n_pending >= self._active:
            return True
        return self._first_at is not None and time.monotonic() - self._first_at >= self.max_wait_s

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            while not self._ready():
                self._wake.clear()
                timeout = None
                if self._n_pending and self._first_at is not None:
                    timeout = max(0.0, self._first_at + self.max_wait_s - time.monotonic())
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
            await self._flush()

    async def _flush(self) -> None:
        sampling = max(self._pending, key=lambda s: len(self._pending[s]))
        queue = self._pending[sampling]
        batch, rest = queue[: self.max_batch_size], queue[self.max_batch_size :]
        if rest:
            self._pending[sampling] = rest
        else:
            del self._pending[sampling]
        self._n_pending -= len(batch)
        self._first_at = time.monotonic() if self._n_pending else None
        batch = [entry for entry in batch if not entry[1].done()]
        if not batch:
            return
        started = time.perf_counter()
        prompts = [entry[0] for entry in batch]
        seeds = [entry[2] for entry in batch]
        masks = [entry[3] for entry in batch]
        extra: dict[str, Any] = {}
        if any(m is not None for m in masks):
            extra["allowed"] = masks
        try:
            if self._row_seeds and all(s is not None for s in seeds):
                gens = await self.policy.generate(prompts, sampling, seeds, **extra)  # type: ignore[call-arg]
            else:
                gens = await self.policy.generate(  # type: ignore[call-arg]
                    prompts, _per_call(sampling, self._seeded), **extra
                )
            if len(gens) != len(batch):
                raise RuntimeError(
                    f"{type(self.policy).__name__}.generate returned {len(gens)} generations for "
                    f"{len(batch)} prompts; it must return exactly one per prompt, in order"
                )
        except Exception as exc:  # the policy failed: every waiting episode sees it
            for _, fut, *_ in batch:
                if not fut.done():
                    fut.set_exception(exc)
            return
        finally:
            self.stats.generate_s += time.perf_counter() - started
        self.stats.calls += 1
        self._seeded += sampling.seed is not None
        self.stats.sequences += len(batch)
        self.stats.max_batch = max(self.stats.max_batch, len(batch))
        for (_, fut, *_), gen in zip(batch, gens, strict=True):
            if not fut.done():
                fut.set_result(gen)


def _per_call(sampling: SamplingSettings, index: int) -> SamplingSettings:
    """A seeded run stays reproducible, but every policy call draws fresh random numbers.

    Reusing one seed for every call would replay the same draws each step (episodes that look
    alike and a policy that stops exploring)."""
    if sampling.seed is None:
        return sampling
    return dataclasses.replace(sampling, seed=sampling.seed + index)


def seeded_turns(
    generate: Callable[..., Awaitable[Generation]], *key: object
) -> Callable[..., Awaitable[Generation]]:
    """``generate`` (a batcher's) with each call's own sampling stream, seeded by ``key`` and
    the call's number (its turn): the tokens a row samples then do not depend on which rows
    share its batch, so a seeded run samples the same answers however the sessions' replies
    interleave (policies that ``supports_row_seeds``; others use ``sampling.seed``)."""
    turn = 0

    async def gen(prompt_ids: list[int], sampling: SamplingSettings, **kw: Any) -> Generation:
        nonlocal turn
        turn += 1
        raw = "/".join(map(str, (*key, turn))).encode()
        row_seed = int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little") >> 1
        return await generate(prompt_ids, sampling, row_seed, **kw)

    return gen
