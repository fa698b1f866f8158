"""What a TRL trainer implies for its rollouts: the policy that samples its weights, its
tokenizer, the sampling settings its loss assumes and its model without the accelerator wrapper.

The policy is chosen from the trainer at the first rollout: ``trainer.args.use_vllm`` -> the
trainer's own vLLM (TRL syncs the weights before every call); otherwise the trainer's live model
through ``TransformersPolicy`` (no copy: each call samples the current weights, in eval mode with
no grad, and the train mode is restored afterwards).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..policy.interface import Policy
from ..rollout.episode import RolloutConfig

__all__ = ["config_for", "policy_for_trainer", "tokenizer_of", "unwrap_model"]


def unwrap_model(trainer: Any) -> Any:
    """The trainer's model without its accelerator wrapper (DDP and the like)."""
    model = trainer.model
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is not None:
        model = accelerator.unwrap_model(model)
    return model


def policy_for_trainer(trainer: Any) -> Policy:
    """The generation backend a trainer implies: its vLLM when ``args.use_vllm``, else its model."""
    if getattr(getattr(trainer, "args", None), "use_vllm", False):
        from ..policy.vllm_policy import TRLVLLMPolicy

        return TRLVLLMPolicy(trainer)
    from ..policy.transformers_policy import TransformersPolicy

    tokenizer = tokenizer_of(trainer)  # first: its error names what is missing
    return TransformersPolicy(unwrap_model(trainer), tokenizer, device=None)  # stays where it is


def tokenizer_of(trainer: Any) -> Any:
    """The trainer's tokenizer (``processing_class``; a processor's inner tokenizer)."""
    tokenizer = getattr(trainer, "processing_class", None)
    tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a processor wraps its tokenizer
    if tokenizer is None:
        raise ValueError(
            "trainer: has no processing_class; pass processing_class=<tokenizer> to GRPOTrainer"
        )
    return tokenizer


def config_for(trainer: Any, config: RolloutConfig) -> RolloutConfig:
    """Align the rollout's sampling with what the trainer's loss assumes."""
    args = getattr(trainer, "args", None)
    changes: dict[str, Any] = {}
    temperature = getattr(args, "temperature", None)
    if isinstance(temperature, (int, float)) and temperature > 0:
        changes["temperature"] = float(temperature)
    top_p, top_k = getattr(args, "top_p", None), getattr(args, "top_k", None)
    if isinstance(top_p, (int, float)) and not isinstance(top_p, bool):
        changes["top_p"] = float(top_p)
    if isinstance(top_k, (int, float)) and not isinstance(top_k, bool):
        changes["top_k"] = int(top_k or 0)
    limit = getattr(args, "max_completion_length", None)
    if isinstance(limit, int) and 0 < limit < config.max_episode_tokens:
        changes["max_episode_tokens"] = limit
    return replace(config, **changes)
