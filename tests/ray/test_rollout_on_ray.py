"""Rollouts against Ray fleets: rows identical to the single-process engine, nearest servers,
a node killed mid-rollout (episodes retried, never scored), workers replaced, policy endpoint."""

from __future__ import annotations

import asyncio
import functools
import threading

import pytest
import ray
from blackjack_env.text_spec import VOCABULARY, BlackjackTextSpec, basic_strategy_answer
from ray_helpers import APP, add_node, node_id_with, wait_gone

from openenv_train.policy import OpenAICompatiblePolicy, TransformersPolicy
from openenv_train.policy.tiny import build_tiny_llama, build_word_tokenizer
from openenv_train.rollout import RolloutConfig, RolloutEngine, ScriptedPolicy
from openenv_train.rollout.policy_endpoint import PolicyEndpoint
from openenv_train.rollout.ray_workers import RayRolloutWorkers, shares
from openenv_train.runtime.ray_fleet import RayServerGroup

pytestmark = pytest.mark.ray
REWARDS = {-1.0, 0.0, 1.0, 1.5}


@pytest.fixture(scope="module")
def tokenizer():
    return build_word_tokenizer(VOCABULARY)


def scripted(tokenizer, delay_s: float = 0.0):
    """A picklable factory (Ray ships it to the workers): library functions and the tokenizer."""
    return functools.partial(
        ScriptedPolicy, tokenizer, basic_strategy_answer, tail_tokens=12, delay_s=delay_s
    )


def kill_node_later(cluster, node, seconds: float) -> threading.Thread:
    t = threading.Timer(seconds, cluster.remove_node, args=(node,))
    t.start()
    return t


class KillsANodeMidBatch(ScriptedPolicy):
    """Removes a node once ``after`` prompts are answered and holds every model call until it and
    the env servers on it (``pids``) are gone: the kill lands mid-batch however fast the machine
    is (a timer could miss the batch, and a loaded node's servers outlive its raylet a while)."""

    def __init__(self, tokenizer, cluster, node, after: int, pids: list[int]) -> None:
        super().__init__(tokenizer, basic_strategy_answer, tail_tokens=12)
        self.cluster, self.node, self.after, self.pids = cluster, node, after, pids
        self.killed: asyncio.Future | None = None

    def _kill(self) -> None:
        self.cluster.remove_node(self.node)
        assert not wait_gone(self.pids), "the servers outlived their node"

    async def generate(self, prompts, sampling):
        if self.prompts_seen >= self.after:
            if self.killed is None:
                self.killed = asyncio.ensure_future(asyncio.to_thread(self._kill))
            await asyncio.shield(self.killed)
        return await super().generate(prompts, sampling)


def test_shares_cut_at_group_boundaries():
    assert shares(5, 2) == [(0, 3), (3, 5)]
    assert shares(2, 4) == [(0, 1), (1, 2)]  # never an empty share
    assert shares(4, 1) == [(0, 4)]


async def test_workers_give_the_rows_of_the_single_process_engine(cluster, no_leaks, tokenizer):
    cfg = RolloutConfig(max_concurrency=64)
    with RayServerGroup(APP, cpus_per_server=0.1).start(3) as fleet:
        workers = RayRolloutWorkers(
            BlackjackTextSpec(seed=11), scripted(tokenizer), fleet, num_workers=3, config=cfg
        )
        try:
            first = await workers.run(["play"] * 96, 8)
            ray.kill(workers.workers[0], no_restart=True)  # its replacement must catch up
            ray_batch = await workers.run(["play"] * 96, 8)
        finally:
            await workers.aclose()
        assert ray_batch.metrics["workers_replaced"] == 1
        async with RolloutEngine(
            BlackjackTextSpec(seed=11), scripted(tokenizer)(), fleet.base_urls, cfg
        ) as engine:
            local_first = await engine.run(["play"] * 96, 8)
            local = await engine.run(["play"] * 96, 8)
        for ours, theirs in (
            (first.to_trl(), local_first.to_trl()),
            (ray_batch.to_trl(), local.to_trl()),
        ):
            assert ours.keys() == theirs.keys()
            for key in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward"):
                assert ours[key] == theirs[key], key
        assert first.to_trl()["completion_ids"] != ray_batch.to_trl()["completion_ids"]  # new deals
        assert [r.row for r in ray_batch.rows] == list(range(96))
        assert [r.group for r in ray_batch.rows] == [i // 8 for i in range(96)]
        assert ray_batch.metrics["rollout_workers"] == 3 and ray_batch.metrics["episodes"] == 96
        # each worker played on the servers of its own node (its nearest)
        node_of = dict(zip(fleet.base_urls, fleet.node_ids, strict=True))
        by_share = [ray_batch.rows[s * 8 : e * 8] for s, e in shares(12, 3)]
        for rows in by_share:
            assert len({node_of[r.metrics["server"]] for r in rows}) == 1


async def test_node_killed_mid_rollout_episodes_retried_and_fleet_healed(
    cluster, no_leaks, tokenizer
):
    doomed = add_node(cluster, num_cpus=1, resources={"doomed": 100})
    cluster.wait_for_nodes()
    nodes = [node_id_with("doomed"), node_id_with("head")]
    cfg = RolloutConfig(max_concurrency=32, max_episode_retries=1, group_retries=2)
    with RayServerGroup(APP, cpus_per_server=0.1, placement=nodes).start(4) as fleet:
        assert fleet.node_ids.count(nodes[0]) == 2
        on_node = [s.pid for s in fleet.servers if s.node_id == nodes[0]]
        policy = KillsANodeMidBatch(tokenizer, cluster, doomed, after=128, pids=on_node)
        async with RolloutEngine(BlackjackTextSpec(seed=3), policy, fleet.base_urls, cfg) as engine:
            batch = await engine.run(["play"] * 512, 8)
        assert policy.killed is not None and policy.killed.done()
        m = batch.metrics
        assert m["infra_errors"] > 0, m  # sessions on the dead node broke ...
        assert m["episodes_retried"] + m["groups_retried"] > 0, m  # ... and were retried
        assert batch.complete and len(batch.records) == 512  # the run finishes
        assert {r.reward for r in batch.records} <= REWARDS  # no failure was scored
        assert sorted(fleet.dead()) == [0, 2]
        assert fleet.heal() == 2 and fleet.stats["servers_replaced"] == 2
        assert nodes[0] not in fleet.node_ids and len(fleet) == 4


async def test_worker_on_a_killed_node_is_replaced(cluster, no_leaks, tokenizer):
    doomed = add_node(cluster, num_cpus=1, resources={"doomed2": 100})
    cluster.wait_for_nodes()
    cfg = RolloutConfig(max_concurrency=16)
    nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    with RayServerGroup(APP, cpus_per_server=0.1, placement=nodes).start(4) as fleet:
        workers = RayRolloutWorkers(
            BlackjackTextSpec(seed=4), scripted(tokenizer, delay_s=0.05), fleet,
            num_workers=4, config=cfg, placement=nodes,
        )  # fmt: skip
        try:
            await workers.run(["play"] * 32, 8)  # one worker per node
            assert node_id_with("doomed2") in workers.worker_nodes
            kill = kill_node_later(cluster, doomed, 1.0)
            # ~4 s of episodes, so the kill lands mid-batch (512 took ~1 s: the kill could miss)
            batch = await workers.run(["play"] * 2048, 8)
            await asyncio.to_thread(kill.join)
        finally:
            await workers.aclose()
        m = batch.metrics
        assert m["workers_replaced"] >= 1 and m["shares_retried"] >= 1, m
        assert m["servers_replaced"] >= 1, m  # the fleet was healed before the share re-ran
        assert batch.complete and [r.row for r in batch.rows] == list(range(2048))
        assert {r.reward for r in batch.records} <= REWARDS


async def test_workers_share_one_policy_endpoint_on_the_driver(cluster, no_leaks, tokenizer):
    import torch

    torch.manual_seed(0)
    model = build_tiny_llama(tokenizer, seed=3).eval()
    with (
        PolicyEndpoint(TransformersPolicy(model, tokenizer), "tiny") as endpoint,
        RayServerGroup(APP, cpus_per_server=0.1).start(2) as fleet,
    ):
        factory = functools.partial(
            OpenAICompatiblePolicy, endpoint.base_url, "tiny", tokenizer=tokenizer
        )
        cfg = RolloutConfig(max_turns=4, max_new_tokens=4)
        workers = RayRolloutWorkers(
            BlackjackTextSpec(seed=1), factory, fleet, num_workers=2, config=cfg
        )
        try:
            batch = await workers.run(["play"] * 32, 8)
        finally:
            await workers.aclose()
    out = batch.to_trl()
    assert len(out["completion_ids"]) == 32 and batch.complete
    for ids, lps, mask in zip(out["completion_ids"], out["logprobs"], out["env_mask"], strict=True):
        assert len(ids) == len(lps) == len(mask) and mask[0] == 1
        assert all(
            lp <= 0.0 for lp, m in zip(lps, mask, strict=True) if m
        )  # real sampling logprobs
    assert batch.metrics["policy_calls"] < 32  # batched per worker, not one call per episode


async def test_a_worker_that_keeps_dying_drops_its_groups_never_invents_rows(
    cluster, no_leaks, tokenizer
):
    from openenv_train.rollout import GroupsDroppedError

    cfg = RolloutConfig(max_concurrency=8)
    with RayServerGroup(APP, cpus_per_server=0.1).start(2) as fleet:
        workers = RayRolloutWorkers(
            BlackjackTextSpec(seed=6), scripted(tokenizer, delay_s=0.05), fleet,
            num_workers=2, config=cfg, worker_retries=0,
        )  # fmt: skip
        try:
            await workers.run(["play"] * 16, 8)  # place the workers
            victim = workers.workers[1]
            kill = threading.Timer(0.5, ray.kill, args=(victim,))
            kill.start()
            batch = await workers.run(["play"] * 256, 8)
            await asyncio.to_thread(kill.join)
        finally:
            await workers.aclose()
    assert batch.dropped_groups == list(range(16, 32))  # the second share, in batch numbering
    assert all(r is not None for r in batch.rows[:128])
    assert all(r is None for r in batch.rows[128:])
    assert batch.metrics["groups_dropped"] == 16 and batch.metrics["worker_failures"] == 1
    with pytest.raises(GroupsDroppedError, match="16 GRPO group"):
        batch.to_trl()
