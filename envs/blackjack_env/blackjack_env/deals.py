"""Deals chosen by their first decision state, for GRPO groups that share a state.

``reset(seed)`` fixes a whole deal, so a seed's first state (player total, soft, dealer up card)
can be read here with the same game code the server runs. :class:`StateDeals` scans a range of
seeds once, buckets them by first state and hands each GRPO group ``n`` seeds of ONE state but
different decks: the group's mean reward is then a per-state baseline with real outcome variety
(16 copies of one seed end the same way too often to teach anything). States are drawn with
probability ``frequency ** power``: 1 keeps the natural mix, 0.5 (square-root frequency) shows the
rare states (dealer ace, soft 18) several times as often, 0 draws every state alike.
"""

from __future__ import annotations

import random
from collections import Counter

from .game import BlackjackGame, hand_total, rank_label

#: (player total, soft, dealer up-card label) of a deal's first decision
State = tuple[int, bool, str]
#: seeds a pool is drawn from start here (below the eval seeds at 2e9, above the per-row seeds)
POOL_BASE = 1_000_000_000
#: seeds per group kept per draw: a group's rows take distinct ones when the bucket has that many
_GROUP_SEEDS = 64


def first_state(seed: int) -> State:
    """The first decision state of the deal ``reset(seed=seed)`` gives."""
    game = BlackjackGame.deal(seed)
    total, soft = hand_total(game.player)
    return total, soft, rank_label(game.dealer_upcard)


class StateDeals:
    """Seeds for same-state GRPO groups, repeatable from ``(seed, call, group, row)``.

    The pool (``size`` seeds from ``POOL_BASE + seed * size``) is scanned on first use, in the
    process that plays the rollouts; ~1 s for the default 40k. Rare states have few seeds in it
    and are replayed with other actions and other groups, which is what showing them often means.
    """

    def __init__(self, seed: int, size: int = 40_000, power: float = 1.0) -> None:
        if size < 1:
            raise ValueError(f"deal pool size must be >= 1, got {size}")
        if not 0.0 <= power <= 1.0:
            raise ValueError(f"state weight power must be in [0, 1], got {power}")
        self.seed, self.size, self.power = seed, size, power
        self._states: list[State] = []
        self._buckets: list[list[int]] = []
        self._cum: list[float] = []
        self._groups: dict[tuple[int, int], list[int]] = {}

    def _scan(self) -> None:
        start = POOL_BASE + self.seed * self.size
        buckets: dict[State, list[int]] = {}
        for s in range(start, start + self.size):
            buckets.setdefault(first_state(s), []).append(s)
        self._states = sorted(buckets)
        self._buckets = [buckets[st] for st in self._states]
        total = 0.0
        for seeds in self._buckets:
            total += len(seeds) ** self.power
            self._cum.append(total)

    def frequencies(self) -> Counter[State]:
        """How often each state is drawn, per 1.0 (the pool's own mix at ``power`` 1)."""
        if not self._states:
            self._scan()
        weights = [len(b) ** self.power for b in self._buckets]
        norm = sum(weights)
        return Counter({st: w / norm for st, w in zip(self._states, weights, strict=True)})

    def seed_for(self, call: int, group: int, row: int) -> int:
        """The deal of ``row`` (in ``group`` of batch ``call``): its group's state, its own deck."""
        key = (call, group)
        seeds = self._groups.get(key)
        if seeds is None:
            if not self._states:
                self._scan()
            rng = random.Random(f"{self.seed}:{call}:{group}")
            bucket = self._buckets[rng.choices(range(len(self._states)), cum_weights=self._cum)[0]]
            seeds = rng.sample(bucket, min(len(bucket), _GROUP_SEEDS))
            self._groups[key] = seeds
        return seeds[row % len(seeds)]

    def next_call(self) -> None:
        """Forget the last batch's groups (their seeds are never asked for again)."""
        self._groups.clear()
