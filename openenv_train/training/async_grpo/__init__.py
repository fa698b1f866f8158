"""TRL's ``AsyncGRPOTrainer`` (``trl.experimental.async_grpo``) on our rollout engine.

- :class:`EngineRolloutWorker` / :func:`env_rollout_worker`: its rollout worker, played by our
  ``RolloutEngine`` (env servers) or ``HarnessRunner`` (harness sessions) against the vLLM server;
- :class:`ReloadWeightTransfer` / :func:`weight_transfer_for`: its weight sync without NCCL (CPU);
  TRL's NCCL client stays the choice on CUDA machines;
- :func:`enable_cpu_async_grpo`: the two CUDA-only spots of the trainer, made to run on a CPU;
- :func:`async_peft_config`: the ``lora`` section as the trainer's ``peft_config``.

Library pieces only: the run itself (config, servers, trainer, run folder) is the
``async_grpo_blackjack`` recipe (``openenv-train train configs/grpo_blackjack_async_vllm.yaml``).
Importing this package needs the ``train`` extra (trl); running it needs a vLLM server.
"""

from .cpu import enable_cpu_async_grpo, varlen_attention
from .lora_config import async_peft_config
from .weight_transfer import ReloadWeightTransfer, WeightSyncError, weight_transfer_for
from .worker import EngineRolloutWorker, env_rollout_worker, rollout_config_for, samples_from_group

__all__ = [
    "EngineRolloutWorker",
    "ReloadWeightTransfer",
    "WeightSyncError",
    "async_peft_config",
    "enable_cpu_async_grpo",
    "env_rollout_worker",
    "rollout_config_for",
    "samples_from_group",
    "varlen_attention",
    "weight_transfer_for",
]
