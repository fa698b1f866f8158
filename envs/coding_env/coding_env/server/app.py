"""ASGI app: ``uvicorn coding_env.server.app:app --host 127.0.0.1 --port 8000``.

Sandbox limits per run: ``CODING_CPU_SECONDS`` (2), ``CODING_MEMORY_MB`` (256),
``CODING_OUTPUT_BYTES`` (65536), ``CODING_WALL_SECONDS`` (5), ``CODING_FROZEN_SECONDS`` (30: frozen time not counted against the
wall clock), ``CODING_SCRATCH_MB`` (8),
``CODING_SCRATCH_FILES`` (64), ``CODING_SCRATCH_DIR`` (/dev/shm); ``CODING_MAX_PARALLEL`` runs at
once (one per CPU, within half the memory limit); ``CODING_MAX_SESSIONS`` (256), ``CODING_SESSION_TIMEOUT`` (300 s).
"""

from __future__ import annotations

import os

from openenv_train import Limits as ServerLimits
from openenv_train import create_app

from ..models import CodeAction, CodingObservation, CodingState
from ..sandbox import Limits
from .environment import CodingEnvironment

Limits.from_env()  # a bad CODING_* setting fails at start, naming the variable

app = create_app(
    CodingEnvironment,
    CodeAction,
    CodingObservation,
    CodingState,
    limits=ServerLimits.from_env(
        max_sessions=int(os.environ.get("CODING_MAX_SESSIONS") or 256),
        session_timeout_s=float(os.environ.get("CODING_SESSION_TIMEOUT") or 300),
    ),
)
