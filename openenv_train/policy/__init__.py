"""Generation backends behind one async interface.

Heavy dependencies (torch, transformers, httpx, vllm) load only when a backend is used.
"""

from __future__ import annotations

from typing import Any

from .interface import Generation, Policy, SamplingSettings

__all__ = [
    "Generation",
    "OpenAICompatiblePolicy",
    "Policy",
    "SamplingSettings",
    "TRLVLLMPolicy",
    "TransformersPolicy",
    "VLLMEnginePolicy",
]

_LAZY = {
    "TransformersPolicy": ".transformers_policy",
    "OpenAICompatiblePolicy": ".openai_policy",
    "VLLMEnginePolicy": ".vllm_policy",
    "TRLVLLMPolicy": ".vllm_policy",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
