"""The harbor env on TRL's two paths (needs the ``train`` extra; imported lazily).

``environment_class(url)``: an ``environment_factory`` class (one session per instance, the
env's four tools as methods; ``reset(task_id=...)`` from the dataset row). The episode ends when
TRL stops calling tools: ``get_reward`` then submits if the model did not, so the tests always
grade the episode (Harbor's "episode end runs the tests").

``session_factory(url)``: ``prompt -> MCPEnvSession`` for ``make_harness_rollout_func``
(``rollout_func``): the prompt is the task id, the instruction the first user message, and the
verifier submits if the model did not.
"""

from __future__ import annotations

from typing import Any

from .client import HarborClient


def environment_class(url: str | list[str], *, name: str = "HarborTools") -> type:
    from openenv_train.training import make_environment_class

    base = make_environment_class(
        url,
        name=name,
        client_cls=HarborClient,
        reset_keys=("task_id", "seed"),
        render_reset=lambda result: result.observation.instruction,
    )

    class HarborEnvironment(base):  # type: ignore[misc, valid-type]
        def get_reward(self) -> float:
            if not self._done:
                self._call_tool("submit", {})
            reward = super().get_reward()
            assert reward is not None, "submit always answers with a reward"
            return reward

    HarborEnvironment.__name__ = HarborEnvironment.__qualname__ = name
    return HarborEnvironment


def session_factory(url: str, *, timeout: float = 120.0) -> Any:
    from openenv_train.harness import MCPEnvSession, VerifyResult

    async def verifier(transcript: list[dict[str, Any]], session: MCPEnvSession) -> VerifyResult:
        if not session.done:
            await session.call_tool("submit", {})
        return VerifyResult(
            env_reward=session.last_reward, done=True, metrics={"tool_calls": len(session.calls)}
        )

    def factory(prompt: str) -> Any:
        return MCPEnvSession.open(
            HarborClient(url, timeout=timeout),
            reset_kwargs={"task_id": prompt},
            task=prompt,
            initial_messages_builder=lambda result, task: [
                {"role": "user", "content": result.observation.instruction}
            ],
            verifier=verifier,
        )

    return factory
