"""One async generation interface for every backend (transformers, vLLM engine, OpenAI-compatible server).

The rollout engine only ever calls :meth:`Policy.generate` with a batch of token-id prompts, so a
backend is free to batch, pad or stream however it likes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SamplingSettings:
    """Per-call sampling knobs. ``temperature == 0`` means greedy."""

    max_new_tokens: int = 32
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None


@dataclass
class Generation:
    """One completion: the sampled ids, the logprob of each sampled id, and the decoded text."""

    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str = "stop"  # "stop" (EOS/stop id) or "length"
    extra: dict[str, Any] = field(default_factory=dict)


class Policy(ABC):
    """A generator of completions for batches of token-id prompts."""

    #: The tokenizer whose ids this policy consumes and produces (a transformers tokenizer).
    tokenizer: Any

    @abstractmethod
    async def generate(
        self, prompts: list[list[int]], sampling: SamplingSettings
    ) -> list[Generation]:
        """Return one :class:`Generation` per prompt, in order."""

    async def aclose(self) -> None:  # noqa: B027 - a no-op default, not abstract
        """Release engine resources (processes, GPU memory)."""
