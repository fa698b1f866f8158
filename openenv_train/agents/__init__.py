"""Agents that live inside envs (RFC 005): the agent program owns its loop, we own its model.

``HarnessEnvironment`` runs an agent program (``ProcessHarnessAdapter``; the reference one is
``python -m openenv_train.agents.react_agent``) inside an env, one turn per ``step``, with the
env's tools served to it by a ``ToolBridge``. ``CaptureProxy`` is the agent's OpenAI-compatible
model: it batches every agent's calls into our policy and records them token-exactly
(``CaptureTrace``). ``AgentRunner`` plays such episodes as a regular ``EpisodeRunner``
(``openenv_train.training.make_agent_rollout_func`` wraps it for TRL); ``evaluate_agent`` reports
a pass rate.

Names load on first use: the reference agent runs this package's ``react_agent`` as a
fresh process every episode, which must not pay for the proxy and server imports.
"""

from __future__ import annotations

from typing import Any

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

_LAZY = {
    "AgenticHarnessAdapter": ".agentic",
    "HarnessConfig": ".agentic",
    "HarnessCrashedError": ".agentic",
    "HarnessError": ".agentic",
    "HarnessEvent": ".agentic",
    "HarnessEventType": ".agentic",
    "HarnessNotRunningError": ".agentic",
    "HarnessResponse": ".agentic",
    "HarnessStartupError": ".agentic",
    "HarnessTurnTimeoutError": ".agentic",
    "ProcessHarnessAdapter": ".agentic",
    "python_command": ".agentic",
    "CapturedCall": ".capture",
    "CaptureTrace": ".capture",
    "TraceError": ".capture",
    "CaptureProxy": ".capture_proxy",
    "ProxyEpisode": ".capture_proxy",
    "HarnessAction": ".harness_env",
    "HarnessEnvironment": ".harness_env",
    "HarnessObservation": ".harness_env",
    "resolve_tool_conflicts": ".harness_env",
    "LoopServer": ".loop_server",
    "AGENT_LIMITS": ".agent_runner",
    "AgentEpisodeError": ".agent_runner",
    "AgentRunner": ".agent_runner",
    "evaluate_agent": ".agent_runner",
    "seed_of": ".agent_runner",
    "ToolBridge": ".tool_bridge",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
