"""An env written with OpenEnv 0.10's own API (FastMCP tools), served by OpenEnv's create_app."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State


class OEToolsEnvironment(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("oe-tools")

        @mcp.tool()
        def add(a: int, b: int = 1) -> int:
            """Add two integers.

            Args:
                a: The first number.
                b: The second number.
            """
            return a + b

        @mcp.tool()
        def shout(text: str) -> str:
            """Upper-case a text."""
            return text.upper()

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kw: Any
    ) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready"})

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kw: Any) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": "only MCP actions"})

    @property
    def state(self) -> State:
        return self._state


app = create_app(
    OEToolsEnvironment,
    CallToolAction,
    CallToolObservation,
    env_name="oe_tools",
    max_concurrent_envs=8,
)
