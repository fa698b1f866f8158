"""The one training package: ``config`` (the one config schema), ``RolloutFunc`` (TRL's
``rollout_func`` with interchangeable strategies: engine, overlap, Ray fleet, harness, agents),
``environment_factory`` classes from MCP tools, reward functions, the warm-ups and training
callbacks; and what every GRPO recipe calls in order: ``lifecycle`` (one run: folder, Ctrl-C,
resume, save), ``evals`` (greedy evals, keep-best, summary), ``grpo`` (GRPOConfig, trainer class,
servers) and ``model``.

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
from .passk_harness import PassAtKEval, PassAtKParameters
from .rewards import RubricRow, env_reward, format_reward, make_format_reward, make_rubric_reward
from .rollout import (
    make_harness_rollout_func,
    make_mixture_rollout_func,
    make_rollout_func,
    policy_for_trainer,
)
from .rollout_func import RolloutFunc, RolloutStats, RolloutStrategy, RunnerStrategy
from .warmup import chat_warmup, format_warmup, quick_format_warmup, trace_warmup

__all__ = [
    "JsonlMetricsCallback",
    "LogProgressCallback",
    "PassAtKEval",
    "PassAtKParameters",
    "PeriodicEvalCallback",
    "RichProgressCallback",
    "RolloutFunc",
    "RolloutStats",
    "RolloutStrategy",
    "RunnerStrategy",
    "chat_warmup",
    "RubricRow",
    "env_reward",
    "format_reward",
    "format_warmup",
    "list_server_tools",
    "make_agent_rollout_func",
    "make_environment_class",
    "release_callback",
    "make_format_reward",
    "make_rubric_reward",
    "make_harness_rollout_func",
    "make_mixture_rollout_func",
    "make_rollout_func",
    "plot_learning_curve",
    "policy_for_trainer",
    "quick_format_warmup",
    "quiet_third_party",
    "trace_warmup",
]
