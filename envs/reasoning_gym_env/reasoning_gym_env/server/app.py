"""The default app of this family, for images and `uvicorn reasoning_gym_env.server.app:app`: the member
named by ``REASONING_GYM_DATASET`` (default ``leg_counting``). Every member has its own app in ``apps``.
"""

from __future__ import annotations

import os

from .apps import app_for

app = app_for(os.environ.get("REASONING_GYM_DATASET") or "leg_counting")
