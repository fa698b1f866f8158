"""``EchoEnv``: the typed client of the echo env (an MCP tool client over ``/ws``)."""

from __future__ import annotations

from openenv_train import MCPToolClient, State

from .models import EchoObservation


class EchoEnv(MCPToolClient):
    """``async with EchoEnv(base_url=...) as env`` or ``with EchoEnv(base_url=...).sync() as env``.

    ``reset()`` gives an :class:`EchoObservation`; ``step(CallToolAction(...))`` a
    ``CallToolObservation`` whose ``result`` is the echoed text; ``list_tools()`` and
    ``call_tool("echo_message", message=...)`` are the MCP shortcuts.
    """

    observation_cls = EchoObservation
    state_cls = State
