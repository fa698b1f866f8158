"""``HarborClient``: the harbor env's client (an MCP tool client whose tool calls are steps on
the session's WebSocket, so ``submit``'s reward and ``done`` come back with it).

The server's infrastructure errors (``TaskInfraError`` and its kinds) arrive as error frames;
this client raises them as those types again, which are ``InfrastructureError``s: the rollout
layer retries or drops the episode instead of scoring it.
"""

from __future__ import annotations

from typing import Any

from openenv_train import EnvServerError, MCPToolClient

from .errors import INFRA_ERRORS
from .models import HarborObservation, HarborState


def as_infra(err: EnvServerError) -> Exception:
    """The ``TaskInfraError`` an error frame carries, or ``err`` itself when it is not one."""
    kind = INFRA_ERRORS.get(str(err.data.get("exception_type", "")))
    if kind is None:
        return err
    return kind(err.message)


class HarborClient(MCPToolClient):
    """``with HarborClient(base_url=...).sync() as env``: ``env.reset(task_id=...)``, then
    ``env.call_tool("run", command="ls")`` ... ``env.step(CallToolAction(tool_name="submit"))``."""

    observation_cls = HarborObservation
    state_cls = HarborState

    def __init__(self, base_url: str | None = None, *, mode: str = "simulation", **kwargs: Any):
        super().__init__(base_url, mode=mode, **kwargs)

    async def reset(self, **kwargs: Any) -> Any:
        try:
            return await super().reset(**kwargs)
        except EnvServerError as err:
            raise as_infra(err) from err

    async def step(self, action: Any) -> Any:
        try:
            return await super().step(action)
        except EnvServerError as err:
            raise as_infra(err) from err
