"""The training package's exceptions: config values (named key and fix), run folders, weight
sync to a vLLM server (infrastructure) and the forge generator's token check."""

from __future__ import annotations

from ..core.errors import InfrastructureError


class ConfigError(ValueError):
    """A recipe config value is wrong; the message names the key and the fix."""


class RunFolderError(ValueError):
    """``--resume`` of a run that is not there (names the folder and the fix)."""


class WeightSyncError(InfrastructureError):
    """The vLLM server did not take the weights (unreachable, wrong mode, failed load)."""


class TokenMismatchError(RuntimeError):
    """The generator tokenized a prompt differently from the ids the episode is built on."""
