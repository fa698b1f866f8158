"""Checks and post-processing shared by every backend, so all of them fail and cut alike."""

from __future__ import annotations

import asyncio
import functools
import math
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .interface import Generation, Policy, SamplingSettings


def validate_request(
    prompts: Sequence[Sequence[int]], sampling: SamplingSettings, vocab_size: int | None = None
) -> None:
    """Raise ``ValueError`` naming the bad field before any backend work starts."""
    if not isinstance(sampling, SamplingSettings):
        raise TypeError(
            f"sampling: expected SamplingSettings, got {type(sampling).__name__}; "
            "pass openenv_train.policy.SamplingSettings(...)"
        )
    if sampling.max_new_tokens < 1:
        raise ValueError(f"sampling.max_new_tokens={sampling.max_new_tokens}: must be >= 1")
    if not (sampling.temperature >= 0 and math.isfinite(sampling.temperature)):
        raise ValueError(
            f"sampling.temperature={sampling.temperature}: must be a finite number >= 0 (0 = greedy)"
        )
    if not 0 < sampling.top_p <= 1:
        raise ValueError(f"sampling.top_p={sampling.top_p}: must be in (0, 1] (1 = off)")
    if sampling.top_k < 0:
        raise ValueError(f"sampling.top_k={sampling.top_k}: must be >= 0 (0 = off)")
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise TypeError("prompts: expected a list of token-id lists; tokenize text first")
    for i, prompt in enumerate(prompts):
        if isinstance(prompt, (str, bytes)) or not isinstance(prompt, Sequence):
            raise TypeError(
                f"prompts[{i}]: expected a list of token ids, got {type(prompt).__name__}"
            )
        if len(prompt) == 0:
            raise ValueError(f"prompts[{i}] is empty; every prompt needs at least one token id")
        if vocab_size is not None:
            bad = [t for t in prompt if not (isinstance(t, int) and 0 <= t < vocab_size)]
            if bad:
                raise ValueError(
                    f"prompts[{i}] holds token ids outside [0, {vocab_size}): {bad[:5]}; "
                    "tokenize with this policy's tokenizer"
                )


def stop_ids(tokenizer: Any, sampling: SamplingSettings) -> frozenset[int]:
    """The tokenizer's EOS id plus ``sampling.stop_token_ids``."""
    ids = set(sampling.stop_token_ids)
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    elif isinstance(eos, Iterable):
        ids.update(int(e) for e in eos)
    return frozenset(ids)


def make_generation(
    token_ids: Sequence[int],
    logprobs: Sequence[float],
    tokenizer: Any,
    stops: frozenset[int],
    *,
    finish_reason: str | None = None,
    text: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Generation:
    """Cut at the first stop id (kept), decode, and fill ``finish_reason`` when not given."""
    ids = [int(t) for t in token_ids]
    lps = [float(x) for x in logprobs]
    if len(lps) != len(ids):
        raise ValueError(f"backend returned {len(ids)} token ids but {len(lps)} logprobs")
    for n, tok in enumerate(ids):
        if tok in stops:
            if n + 1 < len(ids):
                ids, lps, text = ids[: n + 1], lps[: n + 1], None
            finish_reason = "stop"
            break
    if finish_reason is None:
        finish_reason = "length"
    if text is None:
        text = tokenizer.decode(ids, skip_special_tokens=True) if tokenizer is not None else ""
    return Generation(ids, lps, text, finish_reason, dict(extra or {}))


class ThreadedPolicy(Policy):
    """A backend whose generation blocks (torch, vLLM). It runs on one worker thread of its own,
    so the event loop that drives the env sessions and the batcher never waits on the model."""

    def _start_worker(self, name: str, initializer: Callable[[], None] | None = None) -> None:
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=name, initializer=initializer
        )

    @abstractmethod
    def generate_sync(
        self, prompts: list[list[int]], sampling: SamplingSettings
    ) -> list[Generation]:
        """Blocking version of :meth:`generate`, for scripts and benchmarks."""

    async def generate(
        self,
        prompts: list[list[int]],
        sampling: SamplingSettings,
        seeds: list[int] | None = None,
        allowed: list[frozenset[tuple[int, ...]] | None] | None = None,
    ) -> list[Generation]:
        """One blocking batch on the worker thread; its errors surface here unchanged.

        ``seeds`` (one per prompt) only for a backend that ``supports_row_seeds``; ``allowed``
        (per prompt, the token sequences its answer may be; None: any) only for one that
        ``supports_allowed_tokens``."""
        if not prompts:
            return []
        loop = asyncio.get_running_loop()
        kwargs: dict[str, Any] = {}
        if seeds is not None:
            kwargs["seeds"] = seeds
        if allowed is not None:
            kwargs["allowed"] = allowed
        call = functools.partial(self.generate_sync, prompts, sampling, **kwargs)
        return await loop.run_in_executor(self._executor, call)

    async def aclose(self) -> None:
        """Stop the worker thread (the model or engine itself belongs to the caller)."""
        self._executor.shutdown(wait=True)
