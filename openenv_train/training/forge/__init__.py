"""torchforge adapters: our rollouts and episodes in forge's shapes, and forge's GRPO actors on
Monarch (CPU). ``shapes``, ``loss``, ``buffer`` and ``generate`` need torch only; ``actors`` and
``mesh`` need Monarch (the ``forge`` extra: ``torchmonarch``). torchforge itself is optional:
when it is importable its ``Completion`` and ``ForgeActor`` are used.
"""

from .buffer import ReplayBuffer
from .generate import GeneratorPolicy, TokenMismatchError, completion_to_generation
from .loss import AdaptiveEntropy, forge_loss, grpo_loss
from .rollouts import Rollouts, load_tokenizer
from .shapes import (
    FORGE_AVAILABLE,
    Completion,
    Episode,
    Group,
    collate,
    episode_from_record,
    group_advantages,
    groups_from_records,
)

__all__ = [
    "FORGE_AVAILABLE",
    "AdaptiveEntropy",
    "Completion",
    "Episode",
    "GeneratorPolicy",
    "Group",
    "ReplayBuffer",
    "Rollouts",
    "TokenMismatchError",
    "collate",
    "completion_to_generation",
    "episode_from_record",
    "forge_loss",
    "grpo_loss",
    "group_advantages",
    "groups_from_records",
    "load_tokenizer",
]
