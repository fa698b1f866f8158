"""CLIHarnessAdapter: a real external program (a Python script) drives real echo sessions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from echo_env import EchoEnv

from openenv_train.harness import CLIHarnessAdapter, HarnessRunner, MCPEnvSession
from openenv_train.rollout import RolloutConfig

DRIVER = str(Path(__file__).with_name("cli_driver.py"))


def factory(url):
    def make(prompt):
        return MCPEnvSession.open(
            EchoEnv(url),
            task=prompt,
            initial_messages_builder=lambda result, task: [{"role": "user", "content": task}],
        )

    return make


async def test_external_program_drives_sessions_concurrently(echo_url):
    runner = HarnessRunner(
        session_factory=factory(echo_url),
        harness_adapter=CLIHarnessAdapter([sys.executable, DRIVER, "--garbage"]),
        config=RolloutConfig(episode_timeout_s=60),
    )
    batch = await runner.run(
        ["say apple", "say banana pie", "say cherry", "say dates"], group_size=2
    )
    assert batch.complete
    # the echo env scores a call with len(message) / 10: the reward came from the env, per episode
    assert [r.reward for r in batch.records] == [pytest.approx(x) for x in (0.5, 0.3, 0.6, 0.5)]
    for rec in batch.records:
        assert rec.metrics["exit_code"] == 0 and rec.metrics["tool_calls"] == 1
        assert rec.completion_ids == []  # black-box: no tokens, evaluation only


async def test_failing_program_is_an_infrastructure_error_and_drops_its_group(echo_url):
    runner = HarnessRunner(
        session_factory=factory(echo_url),
        harness_adapter=CLIHarnessAdapter([sys.executable, DRIVER, "--fail"]),
        config=RolloutConfig(max_episode_retries=1, group_retries=0),
    )
    batch = await runner.run(["say x", "say y"], group_size=2)
    assert batch.dropped_groups == [0] and batch.records == []
    # 2 rows x 2 attempts at most; once one row is out of retries its sibling stops early
    assert (
        set(batch.errors) == {"HarnessProcessError"}
        and 3 <= batch.errors["HarnessProcessError"] <= 4
    )


async def test_hanging_program_is_killed_at_the_episode_timeout(echo_url):
    adapter = CLIHarnessAdapter([sys.executable, "-c", "import time; time.sleep(60)"])
    runner = HarnessRunner(
        session_factory=factory(echo_url),
        harness_adapter=adapter,
        config=RolloutConfig(episode_timeout_s=0.5, max_episode_retries=0, group_retries=0),
    )
    batch = await runner.run(["say x"], group_size=1)
    assert batch.dropped_groups == [0]
    assert set(batch.errors) <= {"HarnessProcessError", "EpisodeTimeoutError"} and batch.errors


def test_cli_adapter_argument_errors():
    with pytest.raises(ValueError, match="command must be a non-empty list"):
        CLIHarnessAdapter([])
