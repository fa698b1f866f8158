"""Env servers written with OpenEnv 0.10's own API, served by OpenEnv's ``create_app``.

One process serves several apps under path prefixes (OpenEnv takes seconds to import, the
machine is small): ``/`` the echo-like env (64 sessions), ``/cap`` the same env limited to one
session, ``/tools`` an OpenEnv ``MCPEnvironment`` with FastMCP tools.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any
from uuid import uuid4

from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class OEAction(Action):
    message: str = Field(..., description="text to echo")
    sleep_s: float = 0.0
    fail: bool = False
    done_file: str = ""  # touched as the step returns: a test waits on it, not on the clock


class OEObservation(Observation):
    echoed_message: str = ""
    step_count: int = 0


class OEState(State):
    seed: int | None = None
    last_message: str = ""


class OEEchoEnvironment(Environment):
    """Echoes messages; ``sleep_s`` delays the step, ``fail`` raises inside it."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = OEState(episode_id=str(uuid4()), step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> OEObservation:
        self._state = OEState(episode_id=episode_id or str(uuid4()), step_count=0, seed=seed)
        return OEObservation(echoed_message=f"ready seed={seed} pid={os.getpid()}", reward=0.0)

    def step(
        self, action: OEAction, timeout_s: float | None = None, **kwargs: Any
    ) -> OEObservation:  # type: ignore[override]
        if action.sleep_s:
            time.sleep(action.sleep_s)
        if action.fail:
            raise ValueError(f"env refused message {action.message!r}")
        self._state.step_count += 1
        self._state.last_message = action.message
        if action.done_file:
            Path(action.done_file).touch()
        return OEObservation(
            echoed_message=action.message,
            step_count=self._state.step_count,
            reward=float(len(action.message)),
            done=action.message == "bye",
            metadata={"step": self._state.step_count},
        )

    @property
    def state(self) -> OEState:
        return self._state


class OEToolsEnvironment(MCPEnvironment):
    """FastMCP tools: ``echo``, ``add`` and ``boom`` (raises)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("oe-tools")

        @mcp.tool()
        def echo(message: str) -> str:
            """Echo a message back."""
            return message

        @mcp.tool()
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @mcp.tool()
        def boom(reason: str = "because") -> str:
            """Always fails."""
            raise RuntimeError(f"boom: {reason}")

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready"})

    def _step_impl(
        self, action: Action, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": "only MCP actions"})

    @property
    def state(self) -> State:
        return self._state


def _echo_app(max_envs: int) -> Any:
    return create_app(
        OEEchoEnvironment, OEAction, OEObservation, env_name="oe_echo",
        max_concurrent_envs=max_envs, state_cls=OEState,
    )  # fmt: skip


app = _echo_app(64)
app.mount("/cap", _echo_app(1))
app.mount(
    "/tools",
    create_app(
        OEToolsEnvironment,
        CallToolAction,
        CallToolObservation,
        env_name="oe_tools",
        max_concurrent_envs=16,
    ),
)
