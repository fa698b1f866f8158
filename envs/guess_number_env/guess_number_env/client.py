"""``GuessNumberEnv``: the typed client (typed steps and the MCP ``guess`` tool on one session)."""

from __future__ import annotations

from openenv_train import MCPToolClient

from .models import GuessAction, GuessNumberObservation, GuessNumberState


class GuessNumberEnv(MCPToolClient):
    """``async with GuessNumberEnv(base_url=...) as env``: ``reset(seed=1, low=1, high=16)``,
    ``step(GuessAction(guess=8))`` or ``call_tool("guess", number=8)``; ``.sync()`` blocks."""

    action_cls = GuessAction
    observation_cls = GuessNumberObservation
    state_cls = GuessNumberState
