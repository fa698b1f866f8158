"""The default app of this family, for images and `uvicorn textarena_env.server.app:app`: the member
named by ``TEXTARENA_GAME`` (default ``GuessTheNumber-v0``). Every member has its own app in ``apps``.
"""

from __future__ import annotations

import os

from .apps import app_for

app = app_for(os.environ.get("TEXTARENA_GAME") or "GuessTheNumber-v0")
