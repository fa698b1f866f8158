"""``VerifiersEnv``: the typed client of every ``verifiers/<env id>`` env."""

from __future__ import annotations

from openenv_train import EnvClient

from .models import AnswerAction, VerifiersObservation, VerifiersState


class VerifiersEnv(EnvClient[AnswerAction, VerifiersObservation, VerifiersState]):
    """``async with VerifiersEnv(base_url=...) as env``: ``reset(seed=0)`` then
    ``step(AnswerAction(answer="12"))``; ``.sync()`` blocks."""

    action_cls = AnswerAction
    observation_cls = VerifiersObservation
    state_cls = VerifiersState
