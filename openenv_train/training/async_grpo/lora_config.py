"""LoRA for TRL's ``AsyncGRPOTrainer``: the ``lora`` config section as the trainer's
``peft_config``, and what the weight sync can do with it on this machine."""

from __future__ import annotations

from typing import Any

from rich.console import Console

console = Console(stderr=True)


def async_peft_config(lora: Any, transfer: Any) -> Any:
    """``peft.LoraConfig`` of a ``lora`` section (None when off). On a GPU, TRL syncs only the
    adapter when the vLLM server runs with ``--enable-lora`` (else merged weights, with TRL's
    warning); our CPU weight transfer (``transfer`` not None: vLLM's CPU backend) always sends
    the adapter merged into full weights, and says so."""
    if not lora.enabled:
        return None
    from openenv_train.policy.lora import lora_config

    if transfer is not None:
        console.print(
            "LoRA: the CPU weight transfer cannot hand vLLM's CPU backend an adapter; every sync "
            "sends the adapter merged into full weights (adapter-only sync needs a GPU server "
            "started with --enable-lora)"
        )
    return lora_config(lora.r, lora.alpha, lora.dropout, lora.target_modules)
