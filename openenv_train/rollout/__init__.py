"""The batched concurrent rollout engine: episodes and turns, batching, retries, TRL records.

``openenv_train.training.make_rollout_func`` wraps an engine as TRL's ``rollout_func``.
"""

from .engine import RolloutEngine
from .episode import RolloutConfig
from .mixture_engine import MixtureEngine, MixtureMember
from .records import (
    EpisodeRecord,
    EpisodeTimeoutError,
    GroupsDroppedError,
    MissingRewardError,
    RolloutBatch,
    RolloutOutputError,
)
from .scripted import ScriptedPolicy
from .session_pool import NoLiveServerError
from .spec import SeededTextSpec, TextEnvSpec
from .tokens import TokenCodec

__all__ = [
    "EpisodeRecord",
    "EpisodeTimeoutError",
    "GroupsDroppedError",
    "MissingRewardError",
    "MixtureEngine",
    "MixtureMember",
    "NoLiveServerError",
    "RolloutBatch",
    "RolloutConfig",
    "RolloutEngine",
    "RolloutOutputError",
    "ScriptedPolicy",
    "SeededTextSpec",
    "TextEnvSpec",
    "TokenCodec",
]
