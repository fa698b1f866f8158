"""One ASGI app per member of an env family, built on first use (``package.server.apps:<member>``).

Every family package (reasoning-gym datasets, textarena games, verifiers environments) serves its
members the same way: a module whose attributes are apps, each built once per process, with the
session bounds read from ``<PREFIX>_MAX_SESSIONS`` and ``<PREFIX>_SESSION_TIMEOUT``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from .limits import Limits


def session_limits(prefix: str, max_sessions: int) -> Limits:
    """``create_app``'s ``limits``: ``Limits.from_env()`` with ``max_sessions`` from
    ``<prefix>_MAX_SESSIONS`` (default ``max_sessions``) and ``session_timeout_s`` from
    ``<prefix>_SESSION_TIMEOUT`` (idle seconds, default 300)."""
    return Limits.from_env(
        max_sessions=int(os.environ.get(f"{prefix}_MAX_SESSIONS") or max_sessions),
        session_timeout_s=float(os.environ.get(f"{prefix}_SESSION_TIMEOUT") or 300),
    )


def member_apps(
    build: Callable[[str], Any], is_member: Callable[[str], bool], unknown: Callable[[str], str]
) -> tuple[Callable[[str], Any], Callable[[str], Any]]:
    """``(app_for, __getattr__)`` for an apps module: ``app_for(member)`` builds ``member``'s app
    once (``AttributeError`` with ``unknown(member)`` for a name the family does not serve)."""

    @functools.cache
    def app_for(member: str) -> Any:
        if not is_member(member):
            raise AttributeError(unknown(member))
        return build(member)

    def module_getattr(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return app_for(name)

    return app_for, module_getattr
