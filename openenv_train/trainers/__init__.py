"""TRL adapters: ``rollout_func`` on the rollout engine, ``environment_factory`` from MCP tools,
reward functions, the tiny-model format warm-up and shared training callbacks.

Importing this package needs the ``train`` extra (torch, transformers, trl).
"""

from .callbacks import (
    JsonlMetricsCallback,
    PeriodicEvalCallback,
    RichProgressCallback,
    plot_learning_curve,
)
from .environment import (
    EnvSessionBase,
    list_server_tools,
    make_environment_class,
    release_callback,
    tool_method,
)
from .rewards import env_reward, format_reward, make_format_reward
from .rollout import make_rollout_func, policy_for_trainer
from .warmup import WarmupResult, episode_ids, format_warmup, quick_format_warmup

__all__ = [
    "EnvSessionBase",
    "JsonlMetricsCallback",
    "PeriodicEvalCallback",
    "RichProgressCallback",
    "WarmupResult",
    "env_reward",
    "episode_ids",
    "format_reward",
    "format_warmup",
    "quick_format_warmup",
    "list_server_tools",
    "make_environment_class",
    "release_callback",
    "make_format_reward",
    "make_rollout_func",
    "plot_learning_curve",
    "policy_for_trainer",
    "tool_method",
]
