"""``HarborAgentEnv``: a Harbor task with an agent program inside the env (RFC 005).

Each session starts the reference ReAct agent (``openenv_train.agents.react_agent``) as its own
process; its tools are the task container's (``run``, ``read_file``, ``write_file``), served to
it through the env's tool bridge, and its model calls go to ``reset(llm_base_url=...)``: a
capture-proxy episode when ``AgentRunner`` plays it, so the records are the tokens the policy
really produced. ``reset(seed=...)`` (or ``task_id``) takes a fresh container of the task; the
agent's turn ends when it answers without a tool call, and then the task's tests grade the
container (the turn's reward) and the episode ends.
"""

from __future__ import annotations

import os
from typing import Any

from openenv_train import tool
from openenv_train.agents import react_agent
from openenv_train.agents.agentic import HarnessConfig, ProcessHarnessAdapter, python_command
from openenv_train.agents.harness_env import HarnessAction, HarnessEnvironment, HarnessObservation

from .runtime import TaskRuntime
from .server.environment import HarborEnv


def react_adapter() -> ProcessHarnessAdapter:
    """The reference ReAct agent (settings from ``HARBOR_AGENT_*`` variables)."""
    config = HarnessConfig(
        name="react",
        command=python_command("openenv_train.agents.react_agent"),
        preload=react_agent.PRELOAD,
        env_vars={
            "REACT_MAX_STEPS": os.environ.get("HARBOR_AGENT_MAX_STEPS", "8"),
            "REACT_MAX_TOKENS": os.environ.get("HARBOR_AGENT_MAX_TOKENS", "128"),
        },
        startup_timeout_s=float(os.environ.get("HARBOR_AGENT_STARTUP_TIMEOUT_S", "60")),
        turn_timeout_s=float(os.environ.get("HARBOR_AGENT_TURN_TIMEOUT_S", "300")),
    )
    return ProcessHarnessAdapter(config)


class HarborAgentEnv(HarnessEnvironment):
    """A terminal task solved by an agent program that lives in the env; graded by its tests."""

    runtime: TaskRuntime

    def __init__(self, runtime: TaskRuntime | None = None) -> None:
        super().__init__(react_adapter())
        self.task_env = HarborEnv(runtime or self.runtime)
        self.instruction = ""

    @classmethod
    def bind(cls, runtime: TaskRuntime) -> type[HarborAgentEnv]:
        """A subclass whose instances share ``runtime`` (what ``create_app`` takes)."""
        return type(cls.__name__, (cls,), {"runtime": runtime, "__doc__": cls.__doc__})

    async def reset(  # type: ignore[override]
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        llm_base_url: str | None = None,
        task_id: str | None = None,
        **kwargs: Any,
    ) -> HarnessObservation:
        obs = await self.task_env.reset(seed=seed, task_id=task_id)
        self.instruction = obs.instruction
        return await super().reset(seed, episode_id, llm_base_url, **kwargs)

    def on_reset(self, seed: int | None, **kwargs: Any) -> str:
        return self.instruction

    async def step(self, action: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        obs = await super().step(action, **kwargs)
        if isinstance(action, HarnessAction):
            obs.done = True  # graded in score_turn; the container is gone
            await self._teardown()
        return obs

    async def score_turn(self, action: HarnessAction, response: Any) -> float:
        await self.task_env._grade()
        verdict = self.task_env.verdict
        assert verdict is not None
        await self.task_env._release()
        return verdict.reward

    async def close(self) -> None:  # type: ignore[override]
        try:
            await super().close()
        finally:
            await self.task_env.close()

    @tool
    async def run(self, command: str, timeout_s: float = 30.0) -> str:
        """Run a bash command in the task's container; returns its output and exit code.

        Args:
            command: the command line, run with bash -c in the task's working directory
            timeout_s: seconds before it is killed (at most 120)
        """
        return await self.task_env.run(command, timeout_s)

    @tool
    async def read_file(self, path: str) -> str:
        """Read a text file in the task's container (the first 64 KiB).

        Args:
            path: the file's path (relative to the working directory or absolute)
        """
        return await self.task_env.read_file(path)

    @tool
    async def write_file(self, path: str, content: str) -> str:
        """Write a text file in the task's container (parent folders are made).

        Args:
            path: the file's path (relative to the working directory or absolute)
            content: the whole new content (at most 64 KiB)
        """
        return await self.task_env.write_file(path, content)
