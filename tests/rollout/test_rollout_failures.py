"""Infrastructure failures are retried or drop whole groups, and are counted; never a reward."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from bj_checks import APP, check_blackjack_record
from blackjack_env.text_spec import BlackjackTextSpec, basic_strategy_answer
from server_helpers import until

from openenv_train.core.errors import InfrastructureError
from openenv_train.rollout import (
    GroupsDroppedError,
    RolloutConfig,
    RolloutEngine,
    ScriptedPolicy,
)
from openenv_train.runtime import LocalProcessProvider, start_local_servers
from openenv_train.training.rollout_func import RolloutFunc, RunnerStrategy


@pytest.fixture
def two_servers():
    with start_local_servers(APP, 2) as group:
        yield group


async def _kill_after_calls(
    policy: ScriptedPolicy, provider: LocalProcessProvider, calls: int
) -> None:
    await until(lambda: policy.calls >= calls, 60, f"{calls} policy call(s)")
    os.kill(provider.pid, signal.SIGKILL)


async def test_server_killed_mid_run_is_retried_on_the_other_server(two_servers, tokenizer):
    # a slow-ish policy keeps every episode in flight long enough to kill a server under it
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer, delay_s=0.05)
    victim, survivor = two_servers
    async with RolloutEngine(
        BlackjackTextSpec(seed=8), policy, two_servers, RolloutConfig(max_wait_s=0.05)
    ) as engine:
        run = asyncio.ensure_future(engine.run(["p"] * 64, 8))
        await _kill_after_calls(policy, victim, 1)
        batch = await run
    assert batch.complete and len(batch.records) == 64  # nothing dropped: retries landed elsewhere
    assert batch.metrics["infra_errors"] > 0 and batch.metrics["episodes_retried"] > 0
    assert set(batch.errors) <= {
        "ConnectionLostError",
        "ServerUnreachableError",
        "NoLiveServerError",
    }
    retried = [r for r in batch.records if r.metrics["attempts"] > 1]
    assert retried and all(r.metrics["server"] == survivor.base_url for r in retried)
    for rec in batch.records:
        check_blackjack_record(rec, tokenizer)


async def test_lone_server_killed_drops_whole_groups_and_counts_them(tokenizer):
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer, delay_s=0.05)
    cfg = RolloutConfig(max_episode_retries=1, group_retries=1, max_wait_s=0.05)
    with LocalProcessProvider(APP) as server:
        async with RolloutEngine(
            BlackjackTextSpec(seed=8), policy, [server.base_url], cfg
        ) as engine:
            run = asyncio.ensure_future(engine.run(["p"] * 32, 4))
            await _kill_after_calls(policy, server, 1)
            batch = await run
    assert batch.dropped_groups and batch.metrics["groups_dropped"] == len(batch.dropped_groups)
    assert batch.metrics["groups_retried"] >= len(batch.dropped_groups)
    for g in batch.dropped_groups:  # a dropped group has no row at all, never a 0 reward
        assert all(batch.rows[r] is None for r in range(g * 4, g * 4 + 4))
    kept = {r.group for r in batch.records}
    assert kept.isdisjoint(batch.dropped_groups)
    assert all(sum(1 for r in batch.records if r.group == g) == 4 for g in kept)
    with pytest.raises(GroupsDroppedError, match="failed on infrastructure errors") as info:
        batch.to_trl()
    assert info.value.dropped == batch.dropped_groups and isinstance(
        info.value, InfrastructureError
    )


def test_rollout_func_raises_typed_error_when_no_server_answers(tokenizer):
    server = LocalProcessProvider(APP)
    url = server.start()
    server.stop()  # a URL where nothing listens any more
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer)
    cfg = RolloutConfig(max_episode_retries=1, group_retries=1)
    func = RolloutFunc(
        RunnerStrategy(lambda _trainer: RolloutEngine(BlackjackTextSpec(), policy, [url], cfg)),
        group_size=2,
    )
    try:
        with pytest.raises(GroupsDroppedError, match=r"2 GRPO group\(s\) \[0, 1\] failed") as info:
            func(["p"] * 4, None)
        assert info.value.errors == {"NoLiveServerError": 16}  # 4 rows x 2 attempts x 2 rounds
        assert func.last_batch.metrics["groups_retried"] == 2
        assert policy.calls == 0
    finally:
        func.close()


async def test_episode_timeout_is_an_infrastructure_error(servers, tokenizer):
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer, delay_s=0.5)
    cfg = RolloutConfig(episode_timeout_s=0.1, max_episode_retries=1, group_retries=0)
    async with RolloutEngine(BlackjackTextSpec(), policy, servers, cfg) as engine:
        batch = await engine.run(["p"] * 8, 4)
        assert batch.errors == {"EpisodeTimeoutError": 16}
        assert batch.dropped_groups == [0, 1] and batch.records == []
        assert engine.pool.discarded >= 16  # a timed-out session is never reused
        # the engine is still healthy afterwards
        engine.config.episode_timeout_s = 30.0
        policy.delay_s = 0.0
        assert (await engine.run(["p"] * 8, 4)).complete
