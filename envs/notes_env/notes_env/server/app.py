"""ASGI app: ``uvicorn notes_env.server.app:app --host 127.0.0.1 --port 8000``.

Each session's env runs its own agent process; ``Limits.max_sessions`` bounds them (``NOTES_MAX_SESSIONS``).
"""

from __future__ import annotations

import os

from openenv_train import Limits, State, create_app
from openenv_train.agents.harness_env import HarnessAction, HarnessObservation

from .environment import NotesEnv

app = create_app(
    NotesEnv,
    HarnessAction,
    HarnessObservation,
    State,
    limits=Limits.from_env(max_sessions=int(os.environ.get("NOTES_MAX_SESSIONS", "256"))),
)
