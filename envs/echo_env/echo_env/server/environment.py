"""The echo env: an MCP tool env whose ``echo_message`` tool answers with its input.

It is the smoke test of every transport (WebSocket step actions, HTTP ``/mcp``), so it stays
trivial and fully async: ``reset``, ``step``, the tools and the ``on_tool_result`` hook are all
coroutines, so the server never hops to a worker thread for it.
"""

from __future__ import annotations

import uuid

from openenv_train import CallToolObservation, EnvironmentMetadata, MCPEnvironment, State, tool

from ..models import READY_MESSAGE, EchoObservation


class EchoEnvironment(MCPEnvironment):
    """Echoes messages back; a tool call's reward is the message length / 10 (as OpenEnv's echo)."""

    metadata = EnvironmentMetadata(
        name="echo_env",
        description="Echoes messages back through the MCP tool echo_message; reward = length / 10.",
        version="0.1.0",
    )

    def __init__(self) -> None:
        self._state = State(episode_id=uuid.uuid4().hex, step_count=0)

    async def reset(
        self, seed: int | None = None, episode_id: str | None = None
    ) -> EchoObservation:
        self._state = State(episode_id=episode_id or uuid.uuid4().hex, step_count=0)
        return EchoObservation(echoed_message=READY_MESSAGE, message_length=0, reward=0.0)

    async def step(self, action, **kwargs):  # type: ignore[override]
        self._state.step_count += 1
        return await super().step_async(action, **kwargs)

    async def state(self) -> State:
        return self._state

    @tool
    async def echo_message(self, message: str) -> str:
        """Echo a message back unchanged.

        Args:
            message: The text to echo.
        """
        return message

    @tool
    async def echo_with_length(self, message: str) -> dict:
        """Echo a message back together with its length in characters.

        Args:
            message: The text to echo.
        """
        return {"message": message, "length": len(message)}

    async def on_tool_result(self, observation: CallToolObservation) -> CallToolObservation:
        result = observation.result
        text = result if isinstance(result, str) else (result or {}).get("message", "")
        observation.reward = len(text) / 10
        return observation
