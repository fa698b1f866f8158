"""openenv-train: typed RL environments and a batched rollout bridge into GRPO trainers."""

__version__ = "0.1.0"
