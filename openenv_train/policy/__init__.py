"""Generation backends behind one async interface.

Heavy dependencies (torch, transformers, httpx, vllm) load only when a backend is used.
"""

from __future__ import annotations

from .._lazy import lazy_names
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

_EXPORTS: dict[str, tuple[str, ...]] = {
    "transformers_policy": ("TransformersPolicy",),
    "openai_policy": ("OpenAICompatiblePolicy",),
    "vllm_policy": (
        "VLLMEnginePolicy",
        "TRLVLLMPolicy",
    ),
}
__getattr__, __dir__, _HOME = lazy_names(__name__, _EXPORTS)
