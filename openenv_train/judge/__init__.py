"""Language models as judges: ``LLMJudge`` (a rubric that asks a model for a score) and the
clients it asks through (``OpenAIClient``, ``AnthropicClient``, ``create_llm_client``; the SDKs
are the optional ``judge`` extra: ``pip install "openenv-train[judge]"``).

This package sits above the core: the core's rubrics are pure functions of an action and an
observation, and the network I/O of asking a model lives here. The names load lazily, so
``from openenv_train.judge import LLMJudge`` imports no SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

_EXPORTS: dict[str, tuple[str, ...]] = {
    "llm_judge": ("CompletionClient", "LLMJudge"),
    "llm_client": (
        "AnthropicClient",
        "LLMClient",
        "LLMResponse",
        "OpenAIClient",
        "ToolCall",
        "create_llm_client",
    ),
}
__getattr__, __dir__, _HOME = lazy_names(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .llm_client import (  # noqa: F401
        AnthropicClient,
        LLMClient,
        LLMResponse,
        OpenAIClient,
        ToolCall,
        create_llm_client,
    )
    from .llm_judge import CompletionClient, LLMJudge  # noqa: F401


__all__ = sorted(_HOME)
