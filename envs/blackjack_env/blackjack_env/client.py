"""``BlackjackEnv``: the typed client of the BlackJack env."""

from __future__ import annotations

from openenv_train import EnvClient

from .models import BlackjackAction, BlackjackObservation, BlackjackState


class BlackjackEnv(EnvClient[BlackjackAction, BlackjackObservation, BlackjackState]):
    """``async with BlackjackEnv(base_url=...) as env: await env.reset(seed=7)``; ``.sync()`` blocks."""

    action_cls = BlackjackAction
    observation_cls = BlackjackObservation
    state_cls = BlackjackState
