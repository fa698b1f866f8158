"""The agents layer's exceptions: the agent harness program and its episodes failed
(infrastructure, never a reward), or a captured trace cannot become a training row."""

from __future__ import annotations

from ..core.errors import InfrastructureError


class HarnessError(InfrastructureError):
    """Base of every harness failure; an infrastructure error, never a reward."""


class HarnessStartupError(HarnessError):
    """The harness program failed to start or to report ready in time."""


class HarnessNotRunningError(HarnessError):
    """A turn needs a running harness and none is alive (call reset() first)."""


class HarnessTurnTimeoutError(HarnessError):
    """One conversational turn ran past its wall-clock budget."""


class HarnessCrashedError(HarnessError):
    """The harness program exited or broke the event protocol during a turn."""


class AgentEpisodeError(InfrastructureError):
    """An agent episode failed on infrastructure (env, harness process, proxy): never a reward."""


class TraceError(ValueError):
    """A trace cannot become the requested training row (names the call and the fix)."""
