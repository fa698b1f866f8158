"""ASGI app: ``uvicorn echo_env.server.app:app --host 127.0.0.1 --port 8000``.

``OPENENV_MODE`` (``simulation``, the default, or ``production``) picks the route set.
"""

from __future__ import annotations

from openenv_train import CallToolAction, State, create_app

from ..models import EchoObservation
from .environment import EchoEnvironment

app = create_app(EchoEnvironment, CallToolAction, EchoObservation, State)
