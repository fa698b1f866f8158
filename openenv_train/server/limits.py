"""``Limits``: the bound on every resource a client of an env server can spend.

Defaults are safe for a server reachable by anyone who can reach its port, and loose enough that
a rollout engine never meets them (see the README's "Limits and security"). Each can be set in
code (``create_app(..., limits=Limits(...))``) or, for a server started from a shell or a
container, by an ``OPENENV_TRAIN_<NAME>`` environment variable (``OPENENV_TRAIN_MAX_BODY_BYTES``).
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from typing import Any

_ENV_PREFIX = "OPENENV_TRAIN_"
MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Per-server bounds. Sizes in bytes, times in seconds."""

    #: Sessions the server holds at once (``/ws`` and ``/mcp`` together; each is one env
    #: instance); one more is refused with ``CAPACITY_REACHED``.
    max_sessions: int = 4096
    #: A used session with no request for this long is reaped; None: never (a session never
    #: used is still reaped after ``unused_session_timeout_s``).
    session_timeout_s: float | None = 300.0

    #: Largest HTTP request body; a larger ``Content-Length`` is refused with 413 before reading.
    max_body_bytes: int = MIB
    #: Largest WebSocket message a client may send; larger ones close the socket with 1009.
    max_frame_bytes: int = MIB
    #: Time a client has to send a whole HTTP request (head and body) or finish a started
    #: WebSocket frame; slower connections are closed (slowloris).
    request_timeout_s: float = 10.0
    #: Messages per second one WebSocket session may send; faster senders are slowed down (not
    #: refused), with up to one second's worth of burst.
    max_messages_per_s: float = 20_000.0
    #: Sessions one client address may hold at once (``/ws`` and ``/mcp`` together).
    max_sessions_per_client: int = 1024
    #: Loopback clients (this machine) are not counted against ``max_sessions_per_client``.
    quota_exempt_loopback: bool = True
    #: A session that was created but never sent a request is reaped after this long.
    unused_session_timeout_s: float = 30.0
    #: ``/health`` answers 503 "unhealthy" when the server is at capacity and every session has
    #: been inside one call for longer than this (no step can complete).
    stuck_call_s: float = 120.0
    #: Also exempt from ``max_sessions_per_client``: this machine's default gateway, which in a
    #: container on a bridge network is the host that started it (its clients all arrive from
    #: there through the published port). Container runtimes turn it on.
    quota_exempt_gateway: bool = False

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and _optional(f):
                continue
            if f.type == "bool" or isinstance(value, bool):
                if not isinstance(value, bool):
                    raise ValueError(f"Limits.{f.name} must be True or False, got {value!r}")
                continue
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
                raise ValueError(f"Limits.{f.name} must be a number > 0, got {value!r}")
            if f.type == "int" and not isinstance(value, int):
                raise ValueError(f"Limits.{f.name} must be an int, got {value!r}")

    def with_sessions(self, max_sessions: int, session_timeout_s: float | None) -> Limits:
        """These limits with other session bounds (validated like any field)."""
        return dataclasses.replace(
            self, max_sessions=max_sessions, session_timeout_s=session_timeout_s
        )

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> Limits:
        """Defaults, then ``OPENENV_TRAIN_<FIELD>`` variables, then ``overrides``.

        An optional field (``session_timeout_s``) is switched off with the value ``none``."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            name = _ENV_PREFIX + f.name.upper()
            raw = env.get(name)
            if raw is None or raw.strip() == "":
                continue
            kind = f.type.removesuffix(" | None")
            try:
                if _optional(f) and raw.strip().lower() == "none":
                    values[f.name] = None
                elif kind == "bool":
                    if raw.strip().lower() not in ("1", "0", "true", "false", "yes", "no"):
                        raise ValueError(raw)
                    values[f.name] = raw.strip().lower() in ("1", "true", "yes")
                else:
                    values[f.name] = (int if kind == "int" else float)(raw)
            except ValueError:
                raise ValueError(
                    f"{name}={raw!r} is not a valid {kind}; unset it or give e.g. "
                    f"{name}={getattr(cls, f.name)!r}"
                ) from None
        values.update(overrides)
        return cls(**values)


def _optional(f: dataclasses.Field[Any]) -> bool:
    return str(f.type).endswith("| None")


def find_limits(app: Any) -> Limits:
    """The ``Limits`` of an env app, looking through ASGI wrappers (``.app``); else from env."""
    for _ in range(8):
        if app is None:
            break
        limits = getattr(app, "limits", None)
        if isinstance(limits, Limits):
            return limits
        app = getattr(app, "app", None)
    return Limits.from_env()


class RateLimiter:
    """A token bucket: ``delay()`` says how long to wait before the next message may be handled."""

    __slots__ = ("rate", "tokens", "stamp")

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.tokens = rate  # one second's worth of burst
        self.stamp = time.monotonic()

    def delay(self) -> float:
        now = time.monotonic()
        tokens = min(self.rate, self.tokens + (now - self.stamp) * self.rate) - 1.0
        self.stamp = now
        self.tokens = tokens
        return 0.0 if tokens >= 0.0 else -tokens / self.rate
