"""The one training package: ``config`` (the one config schema), ``RolloutFunc`` (TRL's
``rollout_func``, built by ``build_rollout_func`` from what it plays: an env's engine (optionally
overlapped), a mixture, a Ray fleet, the harness, agents; ``rollout_func_from_config`` for a
recipe's config),
``environment_factory`` classes from MCP tools, reward functions, the warm-ups and training
callbacks; and what every GRPO recipe calls in order: ``lifecycle`` (one run: folder, Ctrl-C,
resume, save), ``evals`` (greedy evals, keep-best, summary), ``grpo`` (GRPOConfig, trainer class,
servers) and ``model``.

Importing this package needs the ``train`` extra (torch, transformers, trl).

The names below are imported on first use (PEP 562): a config check or a config error exits
without importing torch, transformers and TRL.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent_rollout import AgentPlays, make_agent_rollout_func
    from .callbacks import (
        JsonlMetricsCallback,
        LogProgressCallback,
        PeriodicEvalCallback,
        RichProgressCallback,
        plot_learning_curve,
        quiet_third_party,
    )
    from .environment_factory import list_server_tools, make_environment_class, release_callback
    from .passk_eval import PassAtKEval, PassAtKParameters
    from .rewards import (
        RubricRow,
        env_reward,
        format_reward,
        make_format_reward,
        make_rubric_reward,
    )
    from .rollout_builders import (
        EnvPlays,
        HarnessPlays,
        MixturePlays,
        build_rollout_func,
        make_harness_rollout_func,
        make_mixture_rollout_func,
        make_rollout_func,
        rollout_func_from_config,
    )
    from .rollout_func import RolloutFunc, RolloutStats, RolloutStrategy, RunnerStrategy
    from .trainer_policy import policy_for_trainer
    from .warmup import chat_warmup, format_warmup, quick_format_warmup, trace_warmup

#: each public name and the module that defines it
_EXPORTS = {
    "AgentPlays": ".agent_rollout",
    "EnvPlays": ".rollout_builders",
    "HarnessPlays": ".rollout_builders",
    "MixturePlays": ".rollout_builders",
    "build_rollout_func": ".rollout_builders",
    "rollout_func_from_config": ".rollout_builders",
    "JsonlMetricsCallback": ".callbacks",
    "LogProgressCallback": ".callbacks",
    "PassAtKEval": ".passk_eval",
    "PassAtKParameters": ".passk_eval",
    "PeriodicEvalCallback": ".callbacks",
    "RichProgressCallback": ".callbacks",
    "RolloutFunc": ".rollout_func",
    "RolloutStats": ".rollout_func",
    "RolloutStrategy": ".rollout_func",
    "RunnerStrategy": ".rollout_func",
    "chat_warmup": ".warmup",
    "RubricRow": ".rewards",
    "env_reward": ".rewards",
    "format_reward": ".rewards",
    "format_warmup": ".warmup",
    "list_server_tools": ".environment_factory",
    "make_agent_rollout_func": ".agent_rollout",
    "make_environment_class": ".environment_factory",
    "release_callback": ".environment_factory",
    "make_format_reward": ".rewards",
    "make_rubric_reward": ".rewards",
    "make_harness_rollout_func": ".rollout_builders",
    "make_mixture_rollout_func": ".rollout_builders",
    "make_rollout_func": ".rollout_builders",
    "plot_learning_curve": ".callbacks",
    "policy_for_trainer": ".trainer_policy",
    "quick_format_warmup": ".warmup",
    "quiet_third_party": ".callbacks",
    "trace_warmup": ".warmup",
}

__all__ = [
    "AgentPlays",
    "EnvPlays",
    "HarnessPlays",
    "MixturePlays",
    "build_rollout_func",
    "rollout_func_from_config",
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
