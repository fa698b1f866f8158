"""16 task containers at once, each episode graded, and nothing left after the run."""

from __future__ import annotations

import asyncio

from harbor_env import SHIPPED_TASKS, TaskRuntime
from harbor_env.server.environment import HarborEnv
from harbor_support import BASE_IMAGE, containers_of

from openenv_train.core.mcp_types import CallToolAction

N = 16


async def test_sixteen_task_containers_at_once_and_none_left_after(built) -> None:
    rt = TaskRuntime(SHIPPED_TASKS, base_image=BASE_IMAGE, warm=2, max_containers=N)
    envs = [HarborEnv(rt) for _ in range(N)]
    try:
        # all on one task: one pool serves 16 leases at once (warm spares plus growth)
        await asyncio.gather(*(e.reset(task_id="count_lines") for e in envs))
        names = {e.lease.provider.name for e in envs}
        assert len(names) == N
        assert names <= set(containers_of(rt.run_id))

        async def solve(i: int, env: HarborEnv) -> float | None:
            if i % 2 == 0:
                cmd = "wc -l < /app/data.txt > /app/count.txt"
                await env.step_async(CallToolAction(tool_name="run", arguments={"command": cmd}))
            obs = await env.step_async(CallToolAction(tool_name="submit", arguments={}))
            return obs.reward

        rewards = await asyncio.gather(*(solve(i, e) for i, e in enumerate(envs)))
        assert rewards == [1.0 if i % 2 == 0 else 0.0 for i in range(N)]
    finally:
        await asyncio.gather(*(e.close() for e in envs))
        await asyncio.to_thread(rt.close)
    assert containers_of(rt.run_id) == []
