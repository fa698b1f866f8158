"""Exceptions only OpenEnv's API raises (its spellings and bases)."""

from __future__ import annotations

from ..core.errors import ServerStartError


class ContainerNotReadyError(ServerStartError, TimeoutError):
    """The container's server did not answer ``/health`` in time (a TimeoutError, as in OpenEnv)."""
