"""``ReasoningGymEnv``: the typed client of every ``reasoning_gym/<dataset>`` env."""

from __future__ import annotations

from openenv_train import EnvClient

from .models import AnswerAction, QuestionObservation, ReasoningGymState


class ReasoningGymEnv(EnvClient[AnswerAction, QuestionObservation, ReasoningGymState]):
    """``async with ReasoningGymEnv(base_url=...) as env``: ``reset(seed=3)`` then
    ``step(AnswerAction(answer="4"))``; ``.sync()`` blocks."""

    action_cls = AnswerAction
    observation_cls = QuestionObservation
    state_cls = ReasoningGymState
