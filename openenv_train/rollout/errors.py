"""The rollout layer's exceptions. The infrastructure ones (timeouts, missing rewards, dropped
groups, no live server) are retried or dropped, never scored as a reward of 0."""

from __future__ import annotations

from ..core.errors import InfrastructureError


class EpisodeTimeoutError(InfrastructureError):
    """An episode ran past ``episode_timeout_s``; it is retried or its group dropped, never scored."""


class MissingRewardError(InfrastructureError):
    """The env ended an episode (``done``) without a reward: a protocol error, not a reward of 0."""


class GroupsDroppedError(InfrastructureError):
    """Some GRPO groups still failed after their retries, so a full batch cannot be returned.

    ``dropped`` lists the group indices; ``errors`` counts the infrastructure errors by type.
    """

    def __init__(self, message: str, *, dropped: list[int], errors: dict[str, int]) -> None:
        super().__init__(message)
        self.dropped = dropped
        self.errors = errors


class RolloutOutputError(ValueError):
    """A rollout function's output does not have the shape TRL's ``rollout_func`` contract needs."""


class NoLiveServerError(InfrastructureError):
    """Every env server of the pool is refusing connections."""
