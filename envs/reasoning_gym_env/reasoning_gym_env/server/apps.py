"""One ASGI app per reasoning-gym dataset, built on first use: ``reasoning_gym_env.server.apps:<dataset>``.

``uvicorn reasoning_gym_env.server.apps:leg_counting`` (or ``openenv-train serve
reasoning_gym/leg_counting``) serves the ``leg_counting`` dataset. ``REASONING_GYM_MAX_SESSIONS``
(default 4096) and ``REASONING_GYM_SESSION_TIMEOUT`` (idle seconds, default 300) configure it.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from openenv_train import create_app

from ..models import AnswerAction, QuestionObservation, ReasoningGymState
from ..names import dataset_names
from .environment import ReasoningGymEnvironment


@functools.cache
def app_for(dataset: str) -> Any:
    """The server app of ``dataset`` (one per process, built once)."""
    if dataset not in dataset_names():
        raise AttributeError(
            f"reasoning-gym has no dataset {dataset!r} served here; `openenv-train envs` lists "
            "the reasoning_gym/<dataset> names"
        )
    return create_app(
        functools.partial(ReasoningGymEnvironment, dataset),
        AnswerAction,
        QuestionObservation,
        ReasoningGymState,
        metadata=ReasoningGymEnvironment.metadata_for(dataset),
        max_sessions=int(os.environ.get("REASONING_GYM_MAX_SESSIONS") or 4096),
        session_timeout=float(os.environ.get("REASONING_GYM_SESSION_TIMEOUT") or 300),
    )


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return app_for(name)
