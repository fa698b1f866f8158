"""The default app of this family, for images and `uvicorn verifiers_env.server.app:app`: the
verifiers environment named by ``VERIFIERS_ENV_ID`` (default ``vf-arithmetic``). Every installed
environment has its own app in ``apps``.
"""

from __future__ import annotations

import os

from .apps import app_for

app = app_for(os.environ.get("VERIFIERS_ENV_ID") or "vf-arithmetic")
