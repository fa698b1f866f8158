"""Harness API: resource sessions, harness adapters (MCP white-box, CLI black-box), the runner.

The trainer side drives each episode here. Agents that run inside the env and own their loop
(RFC 005) are ``openenv_train.agents``. ``openenv_train.training.make_harness_rollout_func``
turns a runner into TRL's ``rollout_func``.
"""

from .adapters import (
    HarnessAdapter,
    HarnessRolloutResult,
    MCPHarnessAdapter,
    ModelStep,
    ToolCall,
    parse_tool_calls,
)
from .cli import CLIHarnessAdapter, HarnessProcessError
from .harness_runner import HarnessRunner
from .session import (
    MCPEnvSession,
    ResourceSession,
    StepEnvSessionAdapter,
    ToolResult,
    VerifyResult,
)

__all__ = [
    "CLIHarnessAdapter",
    "HarnessAdapter",
    "HarnessProcessError",
    "HarnessRolloutResult",
    "HarnessRunner",
    "MCPEnvSession",
    "MCPHarnessAdapter",
    "ModelStep",
    "ResourceSession",
    "StepEnvSessionAdapter",
    "ToolCall",
    "ToolResult",
    "VerifyResult",
    "parse_tool_calls",
]
