"""One ASGI app per reasoning-gym dataset, built on first use: ``reasoning_gym_env.server.apps:<dataset>``.

``uvicorn reasoning_gym_env.server.apps:leg_counting`` (or ``openenv-train serve
reasoning_gym/leg_counting``) serves the ``leg_counting`` dataset. ``REASONING_GYM_MAX_SESSIONS``
(default 4096) and ``REASONING_GYM_SESSION_TIMEOUT`` (idle seconds, default 300) configure it.
"""

from __future__ import annotations

import functools
from typing import Any

from openenv_train import create_app
from openenv_train.server.member_apps import member_apps, session_limits

from ..models import AnswerAction, QuestionObservation, ReasoningGymState
from ..names import dataset_names
from .environment import ReasoningGymEnvironment


def _build(dataset: str) -> Any:
    return create_app(
        functools.partial(ReasoningGymEnvironment, dataset),
        AnswerAction,
        QuestionObservation,
        ReasoningGymState,
        limits=session_limits("REASONING_GYM", 4096),
    )


app_for, __getattr__ = member_apps(
    _build,
    lambda dataset: dataset in dataset_names(),
    lambda dataset: (
        f"reasoning-gym has no dataset {dataset!r} served here; `openenv-train envs` lists "
        "the reasoning_gym/<dataset> names"
    ),
)
