"""The runtime's exceptions: container engines, sandboxes, pools, the hub and network namespaces.
Every failure to start or reach a server is infrastructure, never a reward of 0."""

from __future__ import annotations

from ..core.errors import InfrastructureError, ServerStartError


class EngineError(InfrastructureError):
    """The container engine is unreachable or refused a request (never a reward of 0)."""


class CleanupError(EngineError):
    """A container is still listed after it was removed."""


class SandboxError(ServerStartError, RuntimeError):
    """The sandbox or its server failed (create refused, server died); carries the server log."""


class SandboxTimeoutError(SandboxError, TimeoutError):
    """The sandbox's server did not answer ``/health`` within ``startup_timeout``."""


class PoolClosedError(InfrastructureError):
    """The pool was closed; no server can be acquired from it."""


class HubUnreachableError(ServerStartError):
    """The env is not local and the hub could not be reached (no network, unknown Space...)."""


class NetnsPortError(OSError):
    """The namespace cannot be entered (not root, or the container is gone)."""
