"""Rollout workers on Ray: the B*G episodes of a batch split over M ``RolloutEngine`` actors.

Each worker is an async Ray actor holding one ``RolloutEngine`` (its session pool and batcher live
on the actor's event loop, so connections survive between batches). The driver cuts the batch at
GRPO group boundaries into M contiguous shares, sends each share to a worker together with the env
servers on that worker's node (its nearest servers; all servers when its node has none), and puts
the records back in row order. Row and group numbers are offset per share, so a seeded spec deals
exactly the hands the single-process engine would, and ``to_trl()`` rows have the same shape.

Model calls: every worker batches its own episodes into calls on the policy it builds with
``policy_factory()`` (e.g. an ``OpenAICompatiblePolicy`` for one vLLM endpoint, or the trainer's
policy served from the driver with ``openenv_train.policy.endpoint``). A worker that dies (its node
went away) has its share run again on a fresh worker, counted in ``workers_replaced``; episodes
that fail on a dead env server are retried by the engine's own rules, never scored.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from ..runtime.ray_cluster import import_ray
from ..runtime.ray_fleet import check_placement, remote_class, strategy
from .engine import RolloutConfig, RolloutEngine
from .episode_runner import summarize
from .groups import check_groups
from .records import RolloutBatch
from .spec import TextEnvSpec

_SUMMED = (
    "episodes_retried",
    "groups_retried",
    "groups_dropped",
    "infra_errors",
    "policy_calls",
    "connects",
    "connect_failures",
    "sessions_discarded",
    "open_sessions",
)


class OffsetSpec(TextEnvSpec):
    """``spec`` seen from a share that starts at ``row0``/``group0`` of the whole batch."""

    def __init__(self, spec: TextEnvSpec, row0: int = 0, group0: int = 0) -> None:
        self.spec, self.row0, self.group0 = spec, row0, group0
        self.run_index = 0  # which batch of the whole run this is (set by the driver)
        self._begun = 0
        self.client_cls = spec.client_cls
        self.invalid_action_reward = spec.invalid_action_reward
        self.truncation_reward = spec.truncation_reward
        self.env_role = spec.env_role

    def make_client(self, base_url: str, **kwargs: Any) -> Any:
        return self.spec.make_client(base_url, **kwargs)

    def begin_run(self) -> None:
        # A worker that joined late (a replacement) catches up, so a spec that counts its runs
        # (e.g. to seed deals) is where the single-process engine's spec would be.
        while self._begun <= self.run_index:
            self.spec.begin_run()
            self._begun += 1

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        return self.spec.reset_kwargs(prompt, group + self.group0, row + self.row0)

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return self.spec.initial_prompt(result, prompt)

    def render(self, result: Any) -> str:
        return self.spec.render(result)

    def parse_action(self, text: str) -> Any:
        return self.spec.parse_action(text)

    def final_reward(self, result: Any) -> float | None:
        return self.spec.final_reward(result)


class RolloutWorkerActor:
    """Runs on a Ray node (as an async actor): one engine over the env servers it is given."""

    def __init__(
        self, spec: TextEnvSpec, policy_factory: Callable[[], Any], config: RolloutConfig
    ) -> None:
        self.offset = OffsetSpec(spec)
        self.policy = policy_factory()
        self.config = config
        self.engine: RolloutEngine | None = None
        self.urls: list[str] = []

    def node_id(self) -> str:
        return import_ray().get_runtime_context().get_node_id()

    async def run(
        self, prompts: list[Any], group_size: int, urls: list[str], row0: int, run_index: int
    ) -> RolloutBatch:
        if self.engine is None or urls != self.urls:
            if self.engine is not None:
                await self.engine.aclose()
            self.engine = RolloutEngine(self.offset, self.policy, urls, self.config)
            self.urls = list(urls)
        self.offset.row0, self.offset.group0 = row0, row0 // group_size
        self.offset.run_index = run_index
        return await self.engine.run(prompts, group_size)

    async def close(self) -> None:
        if self.engine is not None:
            await self.engine.aclose()
            self.engine = None
        await self.policy.aclose()


def shares(n_groups: int, workers: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, end)`` group ranges, as equal as possible, none empty."""
    k = max(1, min(workers, n_groups))
    base, extra = divmod(n_groups, k)
    out, start = [], 0
    for i in range(k):
        end = start + base + (i < extra)
        out.append((start, end))
        start = end
    return out


def merge(parts: list[tuple[int, RolloutBatch]], total_rows: int, group_size: int) -> RolloutBatch:
    """One batch in row order from ``(first_row, batch)`` shares; counts summed, means recomputed."""
    rows: list[Any] = [None] * total_rows
    errors: Counter[str] = Counter()
    dropped: list[int] = []
    metrics: dict[str, Any] = dict.fromkeys(_SUMMED, 0)
    for row0, part in parts:
        group0 = row0 // group_size
        for i, rec in enumerate(part.rows):
            if rec is not None:
                rec.row, rec.group = rec.row + row0, rec.group + group0
            rows[row0 + i] = rec
        dropped += [g + group0 for g in part.dropped_groups]
        errors.update(part.errors)
        for k in _SUMMED:
            metrics[k] += part.metrics.get(k, 0)
    batch = RolloutBatch(rows=rows, group_size=group_size, dropped_groups=dropped, errors=errors)
    calls = metrics["policy_calls"]
    seqs = sum(
        p.metrics.get("mean_batch_size", 0.0) * p.metrics.get("policy_calls", 0) for _, p in parts
    )
    metrics["mean_batch_size"] = seqs / calls if calls else 0.0
    batch.metrics.update(metrics)
    batch.metrics.update(summarize(batch.records))
    return batch


class RayRolloutWorkers:
    """M rollout workers on Ray over a fleet's env servers; ``await run(prompts, group_size)``.

    ``servers``: a ``RayServerGroup`` (healed before each batch, so replaced servers are used) or
    a list of URLs. Anything with ``run``/``aclose`` serves ``engine_rollout_func``, so this is a
    drop-in engine for TRL. ``cpus_per_worker`` is what Ray reserves per worker; ``placement`` is
    ``spread`` (Ray's best effort), ``pack`` or a list of node ids (worker i on node i mod n).
    """

    def __init__(
        self,
        spec: TextEnvSpec,
        policy_factory: Callable[[], Any],
        servers: Any,
        *,
        num_workers: int = 2,
        config: RolloutConfig | None = None,
        cpus_per_worker: float = 0.0,
        placement: str | Sequence[str] = "spread",
        worker_retries: int = 1,
    ) -> None:
        if not (isinstance(num_workers, int) and num_workers >= 1):
            raise ValueError(f"num_workers: {num_workers!r}; use an int >= 1")
        self.spec, self.policy_factory = spec, policy_factory
        self.servers = servers
        self.num_workers = num_workers
        self.config = config or RolloutConfig()
        self.cpus_per_worker = float(cpus_per_worker)
        self.placement = check_placement(placement)
        self._placed = 0
        self.worker_retries = worker_retries
        self.workers: list[Any] = []
        self.worker_nodes: list[str] = []
        self.counts = Counter()
        self.runs = 0  # batches run so far

    def _spawn(self, n: int, replacing: bool = False) -> list[tuple[Any, str]]:
        """``n`` new workers and the node each landed on (placed in parallel)."""
        ray = import_ray()
        workers = []
        for _ in range(n):
            workers.append(
                remote_class(RolloutWorkerActor)
                .options(
                    num_cpus=self.cpus_per_worker,
                    scheduling_strategy=strategy(self.placement, self._placed, replacing=replacing),
                    max_restarts=0,
                    max_concurrency=4,
                )
                .remote(self.spec, self.policy_factory, self.config)
            )
            self._placed += 1
        nodes = ray.get([w.node_id.remote() for w in workers], timeout=120)
        return list(zip(workers, nodes, strict=True))

    def _ensure_workers(self) -> None:
        for worker, node in self._spawn(self.num_workers - len(self.workers)):
            self.workers.append(worker)
            self.worker_nodes.append(node)

    def _urls_for(self, node: str) -> list[str]:
        """The env servers on ``node`` (nearest), or all of them when it has none."""
        fleet = self.servers
        if isinstance(fleet, Sequence) and not hasattr(fleet, "node_ids"):
            return [u if isinstance(u, str) else u.base_url for u in fleet]
        near = [u for u, n in zip(fleet.base_urls, fleet.node_ids, strict=True) if n == node]
        return near or list(fleet.base_urls)

    def _replace(self, index: int) -> None:
        import_ray().kill(self.workers[index], no_restart=True)
        [(self.workers[index], self.worker_nodes[index])] = self._spawn(1, replacing=True)
        self.counts["workers_replaced"] += 1

    async def run(self, prompts: Sequence[Any], group_size: int = 1) -> RolloutBatch:
        """Play one episode per prompt over the workers; records come back in row order."""
        ray = import_ray()
        prompts = list(prompts)
        n_groups = check_groups(prompts, group_size)
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        if hasattr(self.servers, "heal"):
            replaced = await loop.run_in_executor(None, self.servers.heal)
            self.counts["servers_replaced"] += replaced
        await loop.run_in_executor(None, self._ensure_workers)
        plan = shares(n_groups, len(self.workers))

        async def one(i: int, start: int, end: int) -> tuple[int, RolloutBatch]:
            row0, row1 = start * group_size, end * group_size
            for attempt in range(self.worker_retries + 1):
                if attempt:
                    await loop.run_in_executor(None, self._replace, i)
                    if hasattr(self.servers, "heal"):
                        n = await loop.run_in_executor(None, self.servers.heal)
                        self.counts["servers_replaced"] += n
                    self.counts["shares_retried"] += 1
                urls = self._urls_for(self.worker_nodes[i])
                ref = self.workers[i].run.remote(
                    prompts[row0:row1], group_size, urls, row0, self.runs
                )
                try:
                    return row0, await ref
                except ray.exceptions.RayActorError:
                    self.counts["worker_failures"] += 1
            # still failing: its groups are dropped and counted (to_trl raises), never invented
            lost = RolloutBatch(
                rows=[None] * (row1 - row0),
                group_size=group_size,
                dropped_groups=list(range(end - start)),
                errors=Counter({"RayActorError": self.worker_retries + 1}),
            )
            lost.metrics.update(groups_dropped=end - start, infra_errors=self.worker_retries + 1)
            return row0, lost

        parts = await asyncio.gather(*(one(i, s, e) for i, (s, e) in enumerate(plan)))
        self.runs += 1
        batch = merge(list(parts), len(prompts), group_size)
        wall = time.perf_counter() - started
        batch.metrics.update(
            wall_s=wall,
            episodes=len(batch.records),
            episodes_per_s=len(batch.records) / wall if wall > 0 else 0.0,
            rollout_workers=len(plan),
            workers_replaced=self.counts["workers_replaced"],
            worker_failures=self.counts["worker_failures"],
            shares_retried=self.counts["shares_retried"],
            servers_replaced=self.counts["servers_replaced"],
        )
        return batch

    def _close_workers(self) -> None:
        ray = import_ray()
        workers, self.workers, self.worker_nodes = self.workers, [], []
        if workers:
            ray.wait([w.close.remote() for w in workers], num_returns=len(workers), timeout=10)
        for w in workers:
            try:
                ray.kill(w, no_restart=True)
            except Exception:  # already gone with its node
                pass

    async def aclose(self) -> None:
        """Close every worker's sessions and policy, then kill the actors."""
        await asyncio.get_running_loop().run_in_executor(None, self._close_workers)

    def close(self) -> None:
        """The synchronous :meth:`aclose`."""
        self._close_workers()
