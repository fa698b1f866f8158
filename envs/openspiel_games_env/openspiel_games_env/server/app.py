"""The default app of this family, for images and ``uvicorn openspiel_games_env.server.app:app``:
the game named by ``OPENSPIEL_GAME`` (default ``kuhn_poker``). Every game has its own app in ``apps``.
"""

from __future__ import annotations

import os

from .apps import app_for

app = app_for(os.environ.get("OPENSPIEL_GAME") or "kuhn_poker")
