"""One ASGI app per installed verifiers environment: ``verifiers_env.server.apps:<env id>``.

``uvicorn verifiers_env.server.apps:vf-arithmetic`` (or ``openenv-train serve
verifiers/vf-arithmetic``) loads that environment once and serves its dataset.
``VERIFIERS_MAX_SESSIONS`` (default 4096) and ``VERIFIERS_SESSION_TIMEOUT`` (idle seconds,
default 300) configure it.
"""

from __future__ import annotations

import functools
from typing import Any

from openenv_train import create_app
from openenv_train.server.member_apps import member_apps, session_limits

from ..installed import is_installed
from ..models import AnswerAction, VerifiersObservation, VerifiersState
from .environment import VerifiersEnvironment, load_verifiers_env


def _build(env_id: str) -> Any:
    return create_app(
        functools.partial(VerifiersEnvironment, load_verifiers_env(env_id)),
        AnswerAction,
        VerifiersObservation,
        VerifiersState,
        limits=session_limits("VERIFIERS", 4096),
    )


app_for, __getattr__ = member_apps(
    _build,
    lambda env_id: "." not in env_id and is_installed(env_id),
    lambda env_id: (
        f"no verifiers environment {env_id!r} is installed; `openenv-train envs` lists the "
        "verifiers/<env id> names"
    ),
)
