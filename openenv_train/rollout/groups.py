"""Run B x G episodes concurrently with bounded retries; failed GRPO groups are dropped whole.

An infrastructure error (server died, timeout, protocol break) fails one *attempt*: the episode
runs again on a fresh session (``max_episode_retries``). A row that still fails drops its whole
group: the group is then run again from scratch ``group_retries`` times. Whatever still fails is
reported in ``RolloutBatch.dropped_groups`` and counted, never scored.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import InfrastructureError
from .records import EpisodeRecord, RolloutBatch


@dataclass
class Attempt:
    """What an episode function needs to run one attempt of one row."""

    prompt: Any  # a string, or a list of chat messages (TRL conversational datasets)
    group: int
    row: int
    attempt: int
    #: Server URLs where earlier attempts of this row failed (the engine avoids them).
    avoid: set[str] = field(default_factory=set)


EpisodeFn = Callable[[Attempt], Awaitable[EpisodeRecord]]


async def gather_or_cancel(coros: list[Awaitable[None]]) -> None:
    """Like ``gather`` but a crash in one task cancels the others (no orphaned episodes)."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def check_groups(prompts: list[Any], group_size: int) -> int:
    """Number of groups; clear error when prompts do not split into groups of ``group_size``."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1 (TRL's num_generations), got {group_size}")
    if not prompts:
        raise ValueError("prompts: empty; pass at least one prompt")
    if len(prompts) % group_size:
        raise ValueError(
            f"len(prompts)={len(prompts)} is not a multiple of group_size={group_size}; TRL repeats "
            "each prompt num_generations times in a row, pass that number as group_size"
        )
    return len(prompts) // group_size


async def run_groups(
    prompts: list[Any],
    group_size: int,
    episode: EpisodeFn,
    *,
    max_concurrency: int,
    max_episode_retries: int,
    group_retries: int,
) -> RolloutBatch:
    """Run every row; rows of dropped groups are ``None`` in the result."""
    n_groups = check_groups(prompts, group_size)
    rows: list[EpisodeRecord | None] = [None] * len(prompts)
    errors: Counter[str] = Counter()
    counts = Counter()
    started = time.perf_counter()

    async def attempt_once(attempt: Attempt, failed: set[int], queue: deque[Attempt]) -> None:
        group = attempt.group
        if group in failed:
            return  # a sibling already failed for good: don't spend sessions on this group
        try:
            rows[attempt.row] = await episode(attempt)
            return
        except InfrastructureError as exc:
            errors[type(exc).__name__] += 1
        if attempt.attempt >= max_episode_retries:
            failed.add(group)
            return
        attempt.attempt += 1
        counts["episodes_retried"] += 1
        queue.append(attempt)  # behind the rows still waiting, as a fresh row would be

    async def worker(queue: deque[Attempt], failed: set[int]) -> None:
        while queue:
            await attempt_once(queue.popleft(), failed, queue)

    todo = list(range(n_groups))
    for round_no in range(group_retries + 1):
        failed: set[int] = set()
        if round_no:
            counts["groups_retried"] += len(todo)
            for g in todo:
                for r in range(g * group_size, (g + 1) * group_size):
                    rows[r] = None
        # max_concurrency workers take attempts in row order (no task or wait per episode)
        queue = deque(
            Attempt(prompts[r], g, r, 0)
            for g in todo
            for r in range(g * group_size, (g + 1) * group_size)
        )
        await gather_or_cancel(
            [worker(queue, failed) for _ in range(min(max_concurrency, len(queue)))]
        )
        todo = sorted(failed)
        if not todo:
            break
    for g in todo:
        for r in range(g * group_size, (g + 1) * group_size):
            rows[r] = None
    wall = time.perf_counter() - started
    batch = RolloutBatch(rows=rows, group_size=group_size, dropped_groups=todo, errors=errors)
    batch.metrics.update(
        wall_s=wall,
        episodes=len(batch.records),
        episodes_per_s=len(batch.records) / wall if wall > 0 else 0.0,
        episodes_retried=counts["episodes_retried"],
        groups_retried=counts["groups_retried"],
        groups_dropped=len(todo),
        infra_errors=sum(errors.values()),
    )
    return batch
