"""The server's exceptions: ``NoEpisodeError`` (an env's ``step`` with no episode running), the
session refusals (capacity, per-client quota) and env-factory failures the routes turn into error
frames, and the gate's private control-flow signals (``_Refusal``, ``_Disconnected``,
``_InvalidJSON``), which never leave ``guard.py``."""

from __future__ import annotations

from typing import Any

from ..core.errors import ErrorCode


class NoEpisodeError(RuntimeError):
    """Raise from ``step`` when no episode is in progress (no ``reset`` yet, or the last one ended).

    Over ``/ws`` and ``/mcp`` it is an ``EXECUTION_ERROR`` like any other exception; over HTTP
    ``/step``, where every request gets a fresh env that no ``/reset`` started, it becomes a 409
    that points the client to the ``/ws`` or ``/mcp`` sessions.
    """


class SessionRefused(Exception):
    """A new session was refused; ``code`` and ``data`` go on the wire as they are."""

    code = ErrorCode.CAPACITY_REACHED

    def __init__(self, message: str, data: dict[str, Any]) -> None:
        super().__init__(message)
        self.data = data

    def rpc_data(self) -> dict[str, Any]:
        """JSON-RPC ``error.data``: OpenEnv's exact shape for capacity, our code added otherwise."""
        if self.code is ErrorCode.CAPACITY_REACHED:
            return dict(self.data)
        return {"code": self.code.value, **self.data}


class CapacityError(SessionRefused):
    """The server holds ``max_sessions`` sessions (OpenEnv's ``CAPACITY_REACHED``)."""

    def __init__(self, active: int, limit: int) -> None:
        super().__init__(
            f"Server at capacity: {active}/{limit} sessions active. Close an idle session, "
            "retry later, or start the server with a larger max_sessions.",
            {"active_sessions": active, "max_sessions": limit},
        )
        self.active_sessions = active
        self.max_sessions = limit


class QuotaError(SessionRefused):
    """This client address holds its share of the sessions; the server itself has room."""

    code = ErrorCode.QUOTA_EXCEEDED

    def __init__(self, client: str, held: int, limit: int) -> None:
        super().__init__(
            f"Client {client} holds {held} sessions, its limit (max_sessions_per_client, capped "
            f"at half of max_sessions: {limit}); close one first, or start the server with a "
            "larger Limits(max_sessions_per_client=...) and max_sessions",
            {"held_sessions": held, "max_sessions_per_client": limit},
        )


class FactoryError(Exception):
    def __init__(self, factory_name: str, cause: BaseException) -> None:
        super().__init__(
            f"Environment factory {factory_name!r} failed: {type(cause).__name__}: {cause}"
        )
        self.factory_name = factory_name


class _Refusal(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class _Disconnected(Exception):
    pass


class _InvalidJSON(Exception):
    def __init__(self, body: bytes) -> None:
        super().__init__("invalid JSON")
        self.body = body
