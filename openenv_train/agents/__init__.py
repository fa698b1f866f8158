"""Agents that live inside envs (RFC 005): the agent program owns its loop, we own its model.

``HarnessEnvironment`` runs an agent program (``ProcessHarnessAdapter``; the reference one is
``python -m openenv_train.agents.react_agent``) inside an env, one turn per ``step``, with the
env's tools served to it by a ``ToolBridge``. ``CaptureProxy`` is the agent's OpenAI-compatible
model: it batches every agent's calls into our policy and records them token-exactly
(``CaptureTrace``). ``AgentRunner`` plays such episodes as a regular ``EpisodeRunner``
(``openenv_train.training.make_agent_rollout_func`` wraps it for TRL); ``evaluate_agent`` reports
a pass rate.

Names load on first use: the reference agent runs this package's ``react_agent`` in a process
of its own every episode (forked from a zygote that imported its SDKs, or a fresh interpreter),
which must not pay for the proxy and server imports.
"""

from __future__ import annotations

from .._lazy import lazy_names

__all__ = [
    "AGENT_LIMITS",
    "AgentEpisodeError",
    "AgentRunner",
    "AgenticHarnessAdapter",
    "CaptureProxy",
    "CaptureTrace",
    "CapturedCall",
    "HarnessAction",
    "HarnessConfig",
    "HarnessCrashedError",
    "HarnessEnvironment",
    "HarnessError",
    "HarnessEvent",
    "HarnessEventType",
    "HarnessNotRunningError",
    "HarnessObservation",
    "HarnessResponse",
    "HarnessStartupError",
    "HarnessTurnTimeoutError",
    "LoopServer",
    "ProcessHarnessAdapter",
    "ProxyEpisode",
    "ToolBridge",
    "TraceError",
    "evaluate_agent",
    "python_command",
    "resolve_tool_conflicts",
    "seed_of",
]

_EXPORTS: dict[str, tuple[str, ...]] = {
    "agentic": (
        "AgenticHarnessAdapter",
        "HarnessConfig",
        "HarnessCrashedError",
        "HarnessError",
        "HarnessEvent",
        "HarnessEventType",
        "HarnessNotRunningError",
        "HarnessResponse",
        "HarnessStartupError",
        "HarnessTurnTimeoutError",
        "ProcessHarnessAdapter",
        "python_command",
    ),
    "capture": (
        "CapturedCall",
        "CaptureTrace",
        "TraceError",
    ),
    "capture_proxy": (
        "CaptureProxy",
        "ProxyEpisode",
    ),
    "harness_env": (
        "HarnessAction",
        "HarnessEnvironment",
        "HarnessObservation",
        "resolve_tool_conflicts",
    ),
    "loop_server": ("LoopServer",),
    "agent_runner": (
        "AGENT_LIMITS",
        "AgentEpisodeError",
        "AgentRunner",
        "evaluate_agent",
        "seed_of",
    ),
    "tool_bridge": ("ToolBridge",),
}
__getattr__, __dir__, _HOME = lazy_names(__name__, _EXPORTS)
