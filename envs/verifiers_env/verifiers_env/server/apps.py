"""One ASGI app per installed verifiers environment: ``verifiers_env.server.apps:<env id>``.

``uvicorn verifiers_env.server.apps:vf-arithmetic`` (or ``openenv-train serve
verifiers/vf-arithmetic``) loads that environment once and serves its dataset.
``VERIFIERS_MAX_SESSIONS`` (default 4096) and ``VERIFIERS_SESSION_TIMEOUT`` (idle seconds,
default 300) configure it.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from openenv_train import create_app

from ..installed import is_installed
from ..models import AnswerAction, VerifiersObservation, VerifiersState
from .environment import VerifiersEnvironment, load_verifiers_env


@functools.cache
def app_for(env_id: str) -> Any:
    """The server app of the verifiers environment ``env_id`` (loaded once per process)."""
    if "." in env_id or not is_installed(env_id):
        raise AttributeError(
            f"no verifiers environment {env_id!r} is installed; `openenv-train envs` lists the "
            "verifiers/<env id> names"
        )
    loaded = load_verifiers_env(env_id)
    return create_app(
        functools.partial(VerifiersEnvironment, loaded),
        AnswerAction,
        VerifiersObservation,
        VerifiersState,
        metadata=VerifiersEnvironment.metadata_for(env_id),
        max_sessions=int(os.environ.get("VERIFIERS_MAX_SESSIONS") or 4096),
        session_timeout=float(os.environ.get("VERIFIERS_SESSION_TIMEOUT") or 300),
    )


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return app_for(name)
