"""Harness API: resource sessions, harness adapters (MCP white-box, CLI black-box), TRL rollout_func."""

from .adapters import (
    HarnessAdapter,
    HarnessRolloutResult,
    HarnessRunLimits,
    MCPHarnessAdapter,
    ModelStep,
    ToolCall,
    ToolTraceEntry,
    parse_tool_calls,
)
from .cli import CLIHarnessAdapter, HarnessProcessError
from .rollout_func import HarnessRunner, build_harness_rollout_func
from .session import (
    MCPEnvSession,
    Message,
    ResourceSession,
    StepEnvSessionAdapter,
    ToolResult,
    VerifyResult,
    tool_to_json,
)

__all__ = [
    "CLIHarnessAdapter",
    "HarnessAdapter",
    "HarnessProcessError",
    "HarnessRolloutResult",
    "HarnessRunLimits",
    "HarnessRunner",
    "MCPEnvSession",
    "MCPHarnessAdapter",
    "Message",
    "ModelStep",
    "ResourceSession",
    "StepEnvSessionAdapter",
    "ToolCall",
    "ToolResult",
    "ToolTraceEntry",
    "VerifyResult",
    "build_harness_rollout_func",
    "parse_tool_calls",
    "tool_to_json",
]
