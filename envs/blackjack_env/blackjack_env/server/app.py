"""ASGI app: ``uvicorn blackjack_env.server.app:app --host 127.0.0.1 --port 8000``.

Settings come from environment variables so one image serves every deployment:
``BLACKJACK_MAX_SESSIONS`` (default 4096), ``BLACKJACK_SESSION_TIMEOUT`` (idle seconds before a
session is reaped, default 300) and ``OPENENV_MODE`` (``simulation``, the default, or ``production``).
"""

from __future__ import annotations

import os
from pathlib import Path

from openenv_train import Limits, create_app
from openenv_train.server.web import web_enabled

from ..models import BlackjackAction, BlackjackObservation, BlackjackState
from .environment import BlackjackEnvironment


def _number(name: str, default: float, kind: type[int] | type[float]) -> int | float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return kind(default)
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(
            f"{name} must be a {kind.__name__} (e.g. {default}), got {raw!r}"
        ) from None


app = create_app(
    BlackjackEnvironment,
    BlackjackAction,
    BlackjackObservation,
    BlackjackState,
    limits=Limits.from_env(
        max_sessions=_number("BLACKJACK_MAX_SESSIONS", 4096, int),
        session_timeout_s=_number("BLACKJACK_SESSION_TIMEOUT", 300.0, float),
    ),
    # the /web playground when OPENENV_TRAIN_WEB asks for it, drawing the cards
    web=Path(__file__).parent / "cards.js" if web_enabled() else False,
)
