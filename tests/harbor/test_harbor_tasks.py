"""The shipped Harbor tasks over the wire: each one's oracle scores 1 and doing nothing scores 0,
episodes of many tasks at once on one server."""

from __future__ import annotations

import asyncio

from harbor_env import SHIPPED_TASKS, HarborClient, load_tasks
from harbor_env.agents import null_agent, oracle

TASKS = load_tasks(SHIPPED_TASKS)


def test_at_least_twelve_tasks_ship_each_with_an_oracle() -> None:
    assert len(TASKS) >= 12
    assert all(t.solution_dir is not None for t in TASKS.values())


async def test_every_shipped_task_oracle_scores_1_and_doing_nothing_scores_0(harbor_url) -> None:
    gate = asyncio.Semaphore(8)

    async def both(task):
        async with gate, HarborClient(base_url=harbor_url) as env:
            return await oracle(env, task), await null_agent(env, task)

    results = await asyncio.gather(*(both(t) for t in TASKS.values()))
    scores = dict(zip(TASKS, results, strict=True))
    assert scores == {name: (1.0, 0.0) for name in TASKS}


async def test_a_reward_json_with_several_metrics_comes_back_whole(harbor_url) -> None:
    async with HarborClient(base_url=harbor_url) as env:
        await env.reset(task_id="reverse_lines")
        await env.call_tool("run", command="echo four > /app/reversed.txt")
        from openenv_train.core.mcp_types import CallToolAction

        step = await env.step(CallToolAction(tool_name="submit", arguments={}))
    assert step.reward == 0.0 and step.done
    assert step.observation.metadata["rewards"] == {
        "reward": 0.0,
        "file_exists": 1.0,
        "first_line": 1.0,
    }


async def test_an_engine_that_is_down_is_named_at_reset_and_the_session_lives(tmp_path) -> None:
    """The engine's socket is there but nothing answers on it (a stopped daemon): the reset
    fails within seconds, naming the engine, as an infrastructure error (never a reward); the
    session and the server stay up for the next try."""
    import socket
    import time

    import httpx
    from harbor_env.errors import TaskInfraError

    from openenv_train.runtime import LocalProcessProvider

    stale = tmp_path / "docker.sock"
    with socket.socket(socket.AF_UNIX) as sock:  # bound, then closed: the file stays
        sock.bind(str(stale))
    engine = f"unix://{stale}"
    server = LocalProcessProvider("harbor_env.server.app:app", env={"HARBOR_ENGINE": engine})
    with server:
        async with HarborClient(base_url=server.base_url) as env:
            for _ in range(2):
                start = time.monotonic()
                try:
                    await env.reset(task_id="reverse_lines")
                except TaskInfraError as err:  # the harbor client's InfrastructureError
                    message = str(err)
                else:
                    raise AssertionError("a reset with the engine down must fail")
                assert time.monotonic() - start < 10
                assert engine in message and "not reachable" in message, message
        assert httpx.get(server.base_url + "/health").status_code == 200
