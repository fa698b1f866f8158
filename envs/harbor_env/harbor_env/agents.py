"""Two scripted agents over the env's own tools, for checking tasks and measuring: Harbor's
oracle (the task's ``solution/`` copied in with ``write_file``, ``solve.sh`` run) and one that
does nothing (a task whose tests pass untouched is broken)."""

from __future__ import annotations

from openenv_train import CallToolAction

from .client import HarborClient
from .task import HarborTask


async def oracle(env: HarborClient, task: HarborTask) -> float:
    """Run the task's solution through the env's tools, then submit; returns the reward."""
    await env.reset(task_id=task.name)
    if task.solution_dir is None:
        raise ValueError(f"task {task.name}: no solution/solve.sh, so no oracle")
    for p in sorted(task.solution_dir.rglob("*")):
        if p.is_file():
            rel = p.relative_to(task.solution_dir).as_posix()
            await env.call_tool("write_file", path=f"/tmp/solution/{rel}", content=p.read_text())
    out = await env.call_tool("run", command="bash /tmp/solution/solve.sh", timeout_s=60)
    if "[exit code 0]" not in str(out):
        raise RuntimeError(f"task {task.name}: solve.sh failed: {out}")
    return await submit(env)


async def null_agent(env: HarborClient, task: HarborTask) -> float:
    """Submit without doing anything."""
    await env.reset(task_id=task.name)
    return await submit(env)


async def submit(env: HarborClient) -> float:
    """Grade the episode; returns the reward."""
    step = await env.step(CallToolAction(tool_name="submit", arguments={}))
    if not step.done or step.reward is None:
        raise RuntimeError(f"submit answered done={step.done}, reward={step.reward}")
    return float(step.reward)
