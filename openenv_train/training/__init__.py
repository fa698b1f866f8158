"""TRL adapters: ``rollout_func`` on the rollout engine, the harness runner or the agent runner,
``environment_factory`` from MCP tools, reward functions, the tiny-model format warm-up and
training callbacks.

Importing this package needs the ``train`` extra (torch, transformers, trl).
"""

from .agent_rollout import make_agent_rollout_func
from .callbacks import (
    JsonlMetricsCallback,
    LogProgressCallback,
    PeriodicEvalCallback,
    RichProgressCallback,
    plot_learning_curve,
    quiet_third_party,
)
from .environment import list_server_tools, make_environment_class, release_callback
from .rewards import env_reward, format_reward, make_format_reward
from .rollout import make_harness_rollout_func, make_rollout_func, policy_for_trainer
from .warmup import format_warmup, quick_format_warmup, trace_warmup

__all__ = [
    "JsonlMetricsCallback",
    "LogProgressCallback",
    "PeriodicEvalCallback",
    "RichProgressCallback",
    "env_reward",
    "format_reward",
    "format_warmup",
    "list_server_tools",
    "make_agent_rollout_func",
    "make_environment_class",
    "release_callback",
    "make_format_reward",
    "make_harness_rollout_func",
    "make_rollout_func",
    "plot_learning_curve",
    "policy_for_trainer",
    "quick_format_warmup",
    "quiet_third_party",
    "trace_warmup",
]
