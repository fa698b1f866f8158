"""Generation backends behind one async interface."""

from .base import Generation, Policy, SamplingSettings

__all__ = ["Generation", "Policy", "SamplingSettings"]
