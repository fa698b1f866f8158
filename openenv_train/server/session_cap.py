"""A cap on ``max_sessions`` set by whoever starts the server, over what the app chose.

Why: the runtime that starts a server in a container knows limits the server cannot see from
inside (the engine's port proxy spends descriptors per connection under the daemon's limit;
the container's memory limit). Past them a client got a dropped handshake instead of
``CAPACITY_REACHED`` (issue 35). Apps set ``max_sessions`` in code (often from their own
variable), so a plain ``OPENENV_TRAIN_MAX_SESSIONS`` would be overridden; the cap is applied
after, and only ever lowers the bound.
"""

from __future__ import annotations

import dataclasses
import os

from .limits import Limits

CAP_ENV = "OPENENV_TRAIN_SESSION_CAP"


def apply_session_cap(limits: Limits, environ: dict[str, str] | None = None) -> Limits:
    """``limits`` with ``max_sessions`` lowered to ``OPENENV_TRAIN_SESSION_CAP`` when set."""
    raw = (os.environ if environ is None else environ).get(CAP_ENV, "").strip()
    if not raw:
        return limits
    try:
        cap = int(raw)
    except ValueError:
        raise ValueError(f"{CAP_ENV}={raw!r} must be an integer >= 1, or unset") from None
    if cap < 1:
        raise ValueError(f"{CAP_ENV}={raw!r} must be an integer >= 1, or unset")
    if limits.max_sessions <= cap:
        return limits
    return dataclasses.replace(limits, max_sessions=cap)
