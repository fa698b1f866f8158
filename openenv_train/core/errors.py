"""Typed errors. Server error frames map one-to-one onto ``EnvServerError`` subclasses.

``InfrastructureError`` marks failures of the machinery (server died, timeout, protocol break):
the rollout layer retries or drops those and never scores them as a reward.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class ErrorCode(str, Enum):
    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"
    #: Ours (old clients see a plain error): this client address holds its share of sessions.
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    #: Ours, raised by our client only: a request larger than the server's frame limit.
    REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE"


class OpenEnvTrainError(Exception):
    """Root of every error this package raises on purpose."""


class InfrastructureError(OpenEnvTrainError):
    """The environment machinery failed; the agent did nothing wrong."""


class EnvServerError(OpenEnvTrainError):
    """An ``error`` frame from the server. ``code`` and ``data`` are kept verbatim."""

    code: ErrorCode | str = "UNKNOWN"

    def __init__(
        self, message: str, code: ErrorCode | str | None = None, data: dict[str, Any] | None = None
    ):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.data = dict(data or {})

    def __str__(self) -> str:
        code = self.code.value if isinstance(self.code, ErrorCode) else self.code
        return f"[{code}] {self.message}"


class InvalidJSONError(EnvServerError):
    code = ErrorCode.INVALID_JSON


class UnknownMessageTypeError(EnvServerError):
    code = ErrorCode.UNKNOWN_TYPE


class ActionValidationError(EnvServerError):
    """The action or reset payload did not validate; ``errors`` lists the pydantic errors."""

    code = ErrorCode.VALIDATION_ERROR

    @property
    def errors(self) -> list[dict[str, Any]]:
        return list(self.data.get("errors", []))


class EnvExecutionError(EnvServerError):
    """The env raised while handling a request; the session is still usable."""

    code = ErrorCode.EXECUTION_ERROR


class EnvInfrastructureError(EnvExecutionError, InfrastructureError):
    """The env raised an ``InfrastructureError`` (its own machinery failed: a sandbox, a
    container, a remote service). The wire says ``EXECUTION_ERROR`` with ``infrastructure:
    true`` (OpenEnv's clients see an execution error, as before); ours raise this, which the
    rollout layer retries or drops and never scores."""


class CapacityReachedError(EnvServerError, InfrastructureError):
    code = ErrorCode.CAPACITY_REACHED


class QuotaExceededError(EnvServerError):
    """This client holds its share of the server's sessions (``held_sessions`` of
    ``max_sessions_per_client``); the server itself is healthy, so this is not infrastructure."""

    code = ErrorCode.QUOTA_EXCEEDED


class RequestTooLargeError(EnvServerError):
    """The request was larger than the server accepts (its ``max_frame_bytes``): the caller's own
    mistake, not a failure of the server, which stays healthy."""

    code = ErrorCode.REQUEST_TOO_LARGE


class EnvFactoryError(EnvServerError, InfrastructureError):
    code = ErrorCode.FACTORY_ERROR


class SessionError(EnvServerError, InfrastructureError):
    code = ErrorCode.SESSION_ERROR


_BY_CODE: dict[str, type[EnvServerError]] = {
    cls.code.value: cls  # type: ignore[union-attr]
    for cls in (
        InvalidJSONError,
        UnknownMessageTypeError,
        ActionValidationError,
        EnvExecutionError,
        CapacityReachedError,
        QuotaExceededError,
        RequestTooLargeError,
        EnvFactoryError,
        SessionError,
    )
}


def error_from_frame(data: dict[str, Any]) -> EnvServerError:
    """Build the typed exception for an ``error`` frame's ``data``."""
    code = str(data.get("code", "UNKNOWN"))
    message = str(data.get("message", "unknown server error"))
    extra = {k: v for k, v in data.items() if k not in ("code", "message")}
    cls = _BY_CODE.get(code, EnvServerError)
    if cls is EnvExecutionError and extra.get(INFRASTRUCTURE) is True:
        cls = EnvInfrastructureError
    return cls(message, code=cls.code if cls is not EnvServerError else code, data=extra)


#: The member of an ``EXECUTION_ERROR`` frame (and of HTTP ``/step``'s error detail) that marks
#: an env's ``InfrastructureError``: its own machinery failed, so the episode is never scored.
INFRASTRUCTURE = "infrastructure"


def env_error_members(exc: BaseException) -> dict[str, bool]:
    """What an env's exception adds to its error frame: ``infrastructure: true`` for an
    ``InfrastructureError``, nothing for any other."""
    return {INFRASTRUCTURE: True} if isinstance(exc, InfrastructureError) else {}


class ConnectionLostError(InfrastructureError):
    """The socket to the env server closed or reset mid-session."""


class RequestTimeoutError(InfrastructureError):
    """No reply in time. The connection is dropped so later replies can never be mismatched."""


class SessionClosedError(InfrastructureError):
    """The session is gone (closed, timed out or lost); call ``reset()`` to start a new one."""


class ServerStartError(InfrastructureError):
    """An env server did not become healthy; the message carries its last log lines."""
