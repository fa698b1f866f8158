"""The batched concurrent rollout engine: episodes, turns, batching, retries, TRL records.

``build_harness_rollout_func`` lives in ``openenv_train.harness`` (harness sits above rollout);
it is re-exported here lazily for convenience.
"""

from typing import Any

from .batcher import BatcherStats, GenerationBatcher
from .engine import RolloutConfig, RolloutEngine, summarize
from .groups import Attempt, run_groups
from .pool import NoLiveServerError, PooledSession, SessionPool
from .records import (
    EpisodeRecord,
    EpisodeTimeoutError,
    GroupsDroppedError,
    MissingRewardError,
    RolloutBatch,
    RolloutOutputError,
    validate_rollout_output,
)
from .scripted import ScriptedPolicy
from .spec import TextEnvSpec
from .sync import LoopThread, engine_rollout_func
from .tokens import EpisodeTokens, TokenCodec

__all__ = [
    "Attempt",
    "BatcherStats",
    "EpisodeRecord",
    "EpisodeTimeoutError",
    "EpisodeTokens",
    "GenerationBatcher",
    "GroupsDroppedError",
    "LoopThread",
    "MissingRewardError",
    "NoLiveServerError",
    "PooledSession",
    "RolloutBatch",
    "RolloutConfig",
    "RolloutEngine",
    "RolloutOutputError",
    "ScriptedPolicy",
    "SessionPool",
    "TextEnvSpec",
    "TokenCodec",
    "build_harness_rollout_func",
    "engine_rollout_func",
    "run_groups",
    "summarize",
    "validate_rollout_output",
]


def __getattr__(name: str) -> Any:
    if name == "build_harness_rollout_func":
        from ..harness import build_harness_rollout_func

        return build_harness_rollout_func
    raise AttributeError(name)
