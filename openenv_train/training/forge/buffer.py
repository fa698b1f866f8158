"""forge's replay buffer rules as a plain class: off-policy by at most ``max_policy_age`` versions.

Same semantics as forge's ``ReplayBuffer`` actor: before each sample, rows generated more than
``max_policy_age`` versions ago, or already sampled more than ``max_resample_count`` times, are
evicted; then ``dp_size * batch_size`` rows are drawn at random (``None`` while too few) and
passed through ``collate`` as ``dp_size`` batches. ``max_buffer_size`` bounds memory (oldest
rows drop first). ``ReplayBufferActor`` serves this over Monarch.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .shapes import Episode, collate


@dataclass
class _Entry:
    episode: Episode
    sample_count: int = 0


class ReplayBuffer:
    def __init__(
        self,
        batch_size: int,
        *,
        dp_size: int = 1,
        max_policy_age: int | None = None,
        max_buffer_size: int | None = None,
        max_resample_count: int = 0,
        seed: int | None = None,
        collate_fn: Callable[[list[list[Episode]]], Any] = collate,
    ) -> None:
        if batch_size < 1 or dp_size < 1:
            raise ValueError(
                f"replay_buffer: batch_size={batch_size} and dp_size={dp_size} must be >= 1"
            )
        if max_policy_age is not None and max_policy_age < 0:
            raise ValueError(f"replay_buffer.max_policy_age={max_policy_age}: must be >= 0 or null")
        if max_buffer_size is not None and max_buffer_size < batch_size * dp_size:
            raise ValueError(
                f"replay_buffer.max_buffer_size={max_buffer_size} is below one sample "
                f"(batch_size * dp_size = {batch_size * dp_size}); raise it or set null"
            )
        self.batch_size = batch_size
        self.dp_size = dp_size
        self.max_policy_age = max_policy_age
        self.max_resample_count = max_resample_count
        self.collate_fn = collate_fn
        self.rows: deque[_Entry] = deque(maxlen=max_buffer_size)
        self.rng = random.Random(seed)
        self.stats = {"added": 0, "evicted_stale": 0, "evicted_used": 0, "sampled": 0}
        self.last_sample_ages: list[int] = []

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, episodes: Episode | list[Episode]) -> None:
        items = episodes if isinstance(episodes, list) else [episodes]
        for ep in items:
            if ep.policy_version is None:
                raise ValueError(
                    f"episode {ep.episode_id} has no policy version; set it on its completion"
                )
            self.rows.append(_Entry(ep))
        self.stats["added"] += len(items)

    def evict(self, curr_policy_version: int) -> None:
        keep: deque[_Entry] = deque(maxlen=self.rows.maxlen)
        for entry in self.rows:
            age = curr_policy_version - (entry.episode.policy_version or 0)
            if self.max_policy_age is not None and age > self.max_policy_age:
                self.stats["evicted_stale"] += 1
            elif entry.sample_count > self.max_resample_count:
                self.stats["evicted_used"] += 1
            else:
                keep.append(entry)
        self.rows = keep

    def sample(self, curr_policy_version: int) -> Any | None:
        """``collate_fn`` of ``dp_size`` batches of ``batch_size`` rows, or ``None`` if too few."""
        self.evict(curr_policy_version)
        total = self.batch_size * self.dp_size
        if total > len(self.rows):
            return None
        picked = [self.rows[i] for i in self.rng.sample(range(len(self.rows)), k=total)]
        for entry in picked:
            entry.sample_count += 1
        episodes = [e.episode for e in picked]
        self.stats["sampled"] += total
        self.last_sample_ages = [curr_policy_version - (e.policy_version or 0) for e in episodes]
        self.evict(curr_policy_version)  # rows used up now leave at once (bounded memory)
        batches = [
            episodes[r * self.batch_size : (r + 1) * self.batch_size] for r in range(self.dp_size)
        ]
        return self.collate_fn(batches)
