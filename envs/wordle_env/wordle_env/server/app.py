"""ASGI app: ``uvicorn wordle_env.server.app:app --host 127.0.0.1 --port 8000``.

``WORDLE_MAX_SESSIONS`` (default 4096), ``WORDLE_SESSION_TIMEOUT`` (idle seconds, default 300)
and ``OPENENV_MODE`` (``simulation`` or ``production``) configure it.
"""

from __future__ import annotations

import os

from openenv_train import Limits, create_app

from ..models import WordleAction, WordleObservation, WordleState
from .environment import WordleEnvironment

app = create_app(
    WordleEnvironment,
    WordleAction,
    WordleObservation,
    WordleState,
    limits=Limits.from_env(
        max_sessions=int(os.environ.get("WORDLE_MAX_SESSIONS") or 4096),
        session_timeout_s=float(os.environ.get("WORDLE_SESSION_TIMEOUT") or 300),
    ),
)
