"""The harness layer's exception: the external harness program failed (infrastructure)."""

from __future__ import annotations

from ..core.errors import InfrastructureError


class HarnessProcessError(InfrastructureError):
    """The external harness program failed (non-zero exit, timeout, or it could not start)."""
