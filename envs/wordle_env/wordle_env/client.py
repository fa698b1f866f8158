"""``WordleEnv``: the typed client (typed steps and the MCP tools on one session)."""

from __future__ import annotations

from openenv_train import MCPToolClient

from .models import WordleAction, WordleObservation, WordleState


class WordleEnv(MCPToolClient):
    """``async with WordleEnv(base_url=...) as env``: ``reset(seed=1)``,
    ``step(WordleAction(guess="crane"))`` or ``call_tool("guess", word="crane")``."""

    action_cls = WordleAction
    observation_cls = WordleObservation
    state_cls = WordleState
