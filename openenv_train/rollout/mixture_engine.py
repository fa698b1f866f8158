"""Many envs in one rollout batch: :class:`MixtureEngine` deals every GRPO group an env, drawn by
weight from a seeded stream, plays each env's groups on that env's servers (one rollout engine per
env, one shared generation batcher, so episodes of every env join the same model calls) and puts
the records back in the trainer's row order. Every record keeps its env's name
(``record.metrics["env"]``) and the batch metrics carry per-env means under ``env/<name>/<metric>``:
rewards stay per env.

A member whose spec holds every seat of a game (``selfplay_seats`` > 1, e.g. OpenSpiel's
``SeatTextSpec`` with no seat) is played by self-play (``selfplay.SelfPlayRunner``, advantages per
seat and deal): it is dealt groups a game's seats at a time, and each game's seat ``s`` fills the
``s``-th group of its deal, so every group is still one seat's games of one start state.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..policy.interface import Policy
from .engine import RolloutEngine, base_urls_of
from .episode import RolloutConfig
from .episode_runner import summarize
from .records import EpisodeRecord, RolloutBatch
from .seated_game import seats_of
from .selfplay import SelfPlayRunner
from .spec import TextEnvSpec


@dataclass(frozen=True)
class MixtureMember:
    """One env of a mixture: its ``name`` (metric keys), text spec, servers and sampling weight."""

    name: str
    spec: TextEnvSpec
    servers: Sequence[Any]
    weight: float = 1.0

    @property
    def seats(self) -> int:
        """Seats the policy holds in each episode: 1, or a self-play spec's ``selfplay_seats``."""
        return seats_of(self.spec)


def selfplay_runner(
    member: MixtureMember, policy: Policy, config: RolloutConfig, seed: int
) -> SelfPlayRunner:
    """The self-play runner of a many-seat member: one unconnected client per game in flight
    (each opens its session at its first reset), round-robin over the member's servers."""
    urls = base_urls_of(member.servers)
    if not urls:
        raise ValueError(f"mixture: env {member.name!r} has no servers")
    client_cls = member.spec.client_cls
    clients = [client_cls(urls[i % len(urls)]) for i in range(config.max_concurrency)]
    return SelfPlayRunner(
        policy,
        member.spec,
        clients,
        config=config,
        num_seats=member.seats,
        advantages="group",
        seed=seed,
    )


def env_metric(env: str, metric: str) -> str:
    """The key of one env's metric in logs and ``metrics.jsonl``: ``env/<env>/<metric>``."""
    return f"env/{env}/{metric}"


def check_weights(names: Sequence[str], weights: Sequence[float]) -> None:
    """Names unique and non-empty, weights positive: the errors name the member and the fix."""
    if not names:
        raise ValueError("mixture: no envs; give at least one {name, weight} member")
    for name, count in Counter(names).items():
        if count > 1:
            raise ValueError(f"mixture: env name {name!r} appears {count} times; names must differ")
    for name, w in zip(names, weights, strict=True):
        if not w > 0:
            raise ValueError(f"mixture: env {name!r} has weight {w}; weights must be > 0")


def sample_envs(
    names: Sequence[str], weights: Sequence[float], n: int, rng: random.Random
) -> list[str]:
    """``n`` env names drawn independently with probability proportional to ``weights``."""
    check_weights(names, weights)
    return rng.choices(list(names), weights=list(weights), k=n)


def per_env_metrics(records: Sequence[EpisodeRecord]) -> dict[str, float]:
    """``env/<name>/reward_mean`` and the other batch means, per env (records tagged ``env``)."""
    by_env: dict[str, list[EpisodeRecord]] = {}
    for r in records:
        by_env.setdefault(str(r.metrics.get("env")), []).append(r)
    out: dict[str, float] = {}
    for env, recs in sorted(by_env.items()):
        out.update({env_metric(env, k): v for k, v in summarize(recs).items()})
        out[env_metric(env, "batch_episodes")] = len(recs)
    return out


class MixtureEngine:
    """The rollout engine of a mixture: ``await engine.run(prompts, group_size)`` -> one
    ``RolloutBatch`` with every row in place (``None`` where its group was dropped).

    Group ``g`` of batch ``c`` plays the env drawn for it from ``Random(f"{seed}/{c}")``: two runs
    with one seed deal the same envs. ``episodes`` counts the finished episodes per env.
    """

    def __init__(
        self,
        members: Sequence[MixtureMember],
        policy: Policy,
        config: RolloutConfig | None = None,
        *,
        seed: int = 0,
    ) -> None:
        check_weights([m.name for m in members], [m.weight for m in members])
        if len({m.seats for m in members if m.seats > 1}) > 1:
            raise ValueError(
                "mixture: self-play envs with different numbers of seats; mix games of one size"
            )
        self.members = list(members)
        self.policy = policy
        self.seed = seed
        self.engines: dict[str, Any] = {}
        for m in members:
            if m.seats > 1:
                self.engines[m.name] = selfplay_runner(m, policy, config or RolloutConfig(), seed)
            else:
                self.engines[m.name] = RolloutEngine(m.spec, policy, m.servers, config)
        first = next(iter(self.engines.values()))
        self.config = first.config
        self.batcher = first.batcher  # one batcher: every env's episodes join the same calls
        for engine in self.engines.values():
            engine.batcher = self.batcher
        #: groups dealt at a time: a self-play member's deal is one group per seat
        self.deal_size = max(m.seats for m in members)
        self.episodes: Counter[str] = Counter()
        self._runs = 0

    async def __aenter__(self) -> MixtureEngine:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def deal(self, groups: int) -> list[str]:
        """The env of each of the next batch's ``groups`` groups (drawn ``deal_size`` at a time:
        a self-play member takes one group per seat)."""
        k = self.deal_size
        if groups % k:
            raise ValueError(
                f"mixture: a self-play env takes {k} groups at a time (one per seat), and this "
                f"batch has {groups}; make per_device_train_batch_size / num_generations a "
                f"multiple of {k}"
            )
        rng = random.Random(f"{self.seed}/{self._runs}")
        names = [m.name for m in self.members]
        drawn = sample_envs(names, [m.weight for m in self.members], groups // k, rng)
        return [name for name in drawn for _ in range(k)]

    async def run(self, prompts: Sequence[Any], group_size: int = 1) -> RolloutBatch:
        prompts = list(prompts)
        if group_size < 1 or len(prompts) % group_size:
            raise ValueError(
                f"prompts: {len(prompts)} rows are not whole groups of group_size={group_size}"
            )
        self._runs += 1
        envs = self.deal(len(prompts) // group_size)
        plan = {
            name: [g for g, env in enumerate(envs) if env == name]
            for name in self.engines
            if name in envs
        }
        stats = self.batcher.stats if self.batcher is not None else None
        calls, seqs = (stats.calls, stats.sequences) if stats is not None else (0, 0)

        async def play(name: str, groups: list[int]) -> RolloutBatch:
            rows = [prompts[g * group_size + i] for g in groups for i in range(group_size)]
            return await self.engines[name].run(rows, group_size)

        batches = await asyncio.gather(*(play(n, gs) for n, gs in plan.items()))
        merged = RolloutBatch(rows=[None] * len(prompts), group_size=group_size)
        for (name, groups), batch in zip(plan.items(), batches, strict=True):
            for local, record in enumerate(batch.rows):
                g, i = divmod(local, group_size)
                row = groups[g] * group_size + i
                if record is not None:
                    record.row, record.group = row, groups[g]
                    record.metrics["env"] = name
                    self.episodes[name] += 1
                merged.rows[row] = record
            merged.dropped_groups += [groups[g] for g in batch.dropped_groups]
            merged.errors.update(batch.errors)
            if isinstance(self.engines[name], SelfPlayRunner):  # per-seat wins, invalid share
                merged.metrics.update({env_metric(name, k): v for k, v in batch.metrics.items()})
            for key in ("connects", "connect_failures", "sessions_discarded", "open_sessions"):
                if isinstance(batch.metrics.get(key), (int, float)):
                    merged.metrics[key] = merged.metrics.get(key, 0) + batch.metrics[key]
        merged.dropped_groups.sort()
        merged.metrics.update(summarize(merged.records))
        merged.metrics.update(per_env_metrics(merged.records))
        merged.metrics.update(
            {env_metric(name, "episodes"): self.episodes[name] for name in self.engines}
        )
        if stats is not None:
            calls, seqs = stats.calls - calls, stats.sequences - seqs
            merged.metrics.update(
                policy_calls=calls, mean_batch_size=seqs / calls if calls else 0.0
            )
        return merged

    async def aclose(self) -> None:
        """Close every env's engine: its sessions and the shared batcher (closing it twice is a
        no-op)."""
        for engine in self.engines.values():
            await engine.aclose()
