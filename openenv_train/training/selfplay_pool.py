"""``CheckpointPool``: frozen copies of the policy's past weights, as self-play opponents.

Playing only against itself, a policy can chase its own latest habit in circles; mixing in games
against its past selves (a fictitious-play flavour) steadies it. The pool keeps at most ``size``
snapshots (the oldest leaves first), each a CPU copy of the model in eval mode behind its own
``TransformersPolicy``; ``SelfPlayRunner(opponents=pool.policies, pool_share=...)`` draws from it.
"""

from __future__ import annotations

import copy
from typing import Any

from ..policy.interface import Policy


class CheckpointPool:
    """Up to ``size`` frozen snapshots of a model (``snapshot(model)`` adds the current weights)."""

    def __init__(self, tokenizer: Any, size: int = 4) -> None:
        if size < 1:
            raise ValueError(f"pool size must be >= 1, got {size}")
        self.tokenizer = tokenizer
        self.size = size
        self._policies: list[Policy] = []
        self.steps: list[int] = []

    def snapshot(self, model: Any, step: int = 0) -> None:
        """Freeze a copy of ``model``'s weights now (the oldest snapshot leaves when full)."""
        from ..policy.transformers_policy import TransformersPolicy

        frozen = copy.deepcopy(model).eval()
        for p in frozen.parameters():
            p.requires_grad_(False)
        self._policies.append(TransformersPolicy(frozen, self.tokenizer, device="cpu"))
        self.steps.append(step)
        if len(self._policies) > self.size:
            self._retire(self._policies.pop(0))
            self.steps.pop(0)

    @staticmethod
    def _retire(policy: Policy) -> None:
        executor = getattr(policy, "_executor", None)  # a ThreadedPolicy's one worker thread
        if executor is not None:
            executor.shutdown(wait=False)

    def close(self) -> None:
        """End every snapshot's worker thread."""
        for policy in self._policies:
            self._retire(policy)
        self._policies.clear()
        self.steps.clear()

    def policies(self) -> list[Policy]:
        """The snapshots' policies, oldest first (empty before the first snapshot)."""
        return list(self._policies)

    def __len__(self) -> int:
        return len(self._policies)
