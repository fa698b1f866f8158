"""ASGI app: ``uvicorn guess_number_env.server.app:app --host 127.0.0.1 --port 8000``.

``GUESS_NUMBER_MAX_SESSIONS`` (default 4096), ``GUESS_NUMBER_SESSION_TIMEOUT`` (idle seconds,
default 300) and ``OPENENV_MODE`` (``simulation`` or ``production``) configure it.
"""

from __future__ import annotations

import os

from openenv_train import Limits, create_app

from ..models import GuessAction, GuessNumberObservation, GuessNumberState
from .environment import GuessNumberEnvironment

app = create_app(
    GuessNumberEnvironment,
    GuessAction,
    GuessNumberObservation,
    GuessNumberState,
    limits=Limits.from_env(
        max_sessions=int(os.environ.get("GUESS_NUMBER_MAX_SESSIONS") or 4096),
        session_timeout_s=float(os.environ.get("GUESS_NUMBER_SESSION_TIMEOUT") or 300),
    ),
)
