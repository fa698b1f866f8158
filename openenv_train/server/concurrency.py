"""How many sessions a server holds and how long an idle one lives (OpenEnv's ``ConcurrencyConfig``).

OpenEnv code passes a ``ConcurrencyConfig`` to ``create_app`` or ``HTTPEnvServer``; ours means the
same, with our defaults: many concurrent sessions (GRPO opens a group of them at once) and an
idle timeout, where OpenEnv's default is one session that never times out.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

#: Sessions a server holds unless told otherwise (each is one env instance).
DEFAULT_MAX_SESSIONS = 4096
#: Seconds without a request before a used session is reaped, unless told otherwise.
DEFAULT_SESSION_TIMEOUT_S = 300.0


class ConcurrencyConfig(BaseModel):
    """``max_concurrent_envs``: sessions at once (each its own env); ``session_timeout``: seconds
    a used session may sit idle before it is reaped (None: never; sessions never used are still
    reaped after ``Limits.unused_session_timeout_s``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_concurrent_envs: StrictInt = Field(default=DEFAULT_MAX_SESSIONS, ge=1)
    session_timeout: float | None = Field(default=DEFAULT_SESSION_TIMEOUT_S, gt=0)


class ServerCapacityStatus(BaseModel):
    """Sessions open now against the limit (``HTTPEnvServer.get_capacity_status()``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    active_sessions: int = Field(ge=0)
    max_sessions: int = Field(ge=1)

    @model_validator(mode="after")
    def _within_limit(self) -> ServerCapacityStatus:
        if self.active_sessions > self.max_sessions:
            raise ValueError(
                f"active_sessions ({self.active_sessions}) exceeds max_sessions ({self.max_sessions})"
            )
        return self

    @property
    def available_slots(self) -> int:
        return self.max_sessions - self.active_sessions

    @property
    def is_at_capacity(self) -> bool:
        return self.available_slots == 0

    @classmethod
    def from_counts(cls, active: int, max_sessions: int) -> ServerCapacityStatus:
        return cls(active_sessions=active, max_sessions=max_sessions)


def concurrency_from(
    max_concurrent_envs: int | None, concurrency_config: ConcurrencyConfig | None
) -> ConcurrencyConfig:
    """The one config OpenEnv's two spellings give: ``max_concurrent_envs=N`` is N sessions with
    our idle timeout; giving both is a ValueError."""
    if concurrency_config is None:
        if max_concurrent_envs is None:
            return ConcurrencyConfig()
        return ConcurrencyConfig(max_concurrent_envs=max_concurrent_envs)
    if max_concurrent_envs is not None:
        raise ValueError(
            "give max_concurrent_envs or concurrency_config, not both "
            "(concurrency_config=ConcurrencyConfig(max_concurrent_envs=..., session_timeout=...))"
        )
    if not isinstance(concurrency_config, ConcurrencyConfig):
        raise TypeError(
            "concurrency_config must be an openenv_train.server.ConcurrencyConfig, "
            f"got {concurrency_config!r}"
        )
    return concurrency_config
