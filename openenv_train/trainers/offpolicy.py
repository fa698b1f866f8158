"""``OffPolicyGRPOTrainer``: TRL's importance-sampling correction for rows sampled by older weights.

TRL 1.16's ``GRPOTrainer`` already corrects for a generator that differs from the trained model
(``vllm_importance_sampling_correction``: ratio = exp(train logprob - sampling logprob) per token
or per sequence, truncated or masked at ``vllm_importance_sampling_clip_max``), but only when
``use_vllm`` is on. Rows from an overlapped rollout (``rollout.max_staleness`` > 0) were sampled
by weights up to that many optimizer steps old, and carry their sampling logprobs: this subclass
switches the same correction on for them, with the same settings and metrics
(``sampling/importance_sampling_ratio/*``), without a vLLM engine. Nothing else changes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from trl import GRPOTrainer


class OffPolicyGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose loss corrects rollout rows against their sampling logprobs."""

    @contextlib.contextmanager
    def _correcting(self) -> Iterator[None]:
        # TRL gates the correction (and nothing else on the rollout_func path) on use_vllm; the
        # weight sync it would also trigger is skipped by marking this step's weights as loaded.
        was = self.use_vllm
        self.use_vllm = True
        self._last_loaded_step = self.state.global_step
        try:
            yield
        finally:
            self.use_vllm = was

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        if not self.args.vllm_importance_sampling_correction:
            return super()._generate_and_score_completions(inputs)
        with self._correcting():
            return super()._generate_and_score_completions(inputs)

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        if "importance_sampling_ratio" not in inputs:
            return super()._compute_loss(model, inputs)
        with self._correcting():
            return super()._compute_loss(model, inputs)


def grpo_trainer_class(*, off_policy: bool = False, length_buckets: bool = False) -> type:
    """TRL's ``GRPOTrainer``, or a subclass with the importance-sampling correction for older
    weights (``off_policy``) and/or per-length-bucket forward passes (``length_buckets``)."""
    from .buckets import LengthBucketedGRPOTrainer

    bases: list[type] = []
    if off_policy:
        bases.append(OffPolicyGRPOTrainer)
    if length_buckets:
        bases.append(LengthBucketedGRPOTrainer)
    if not bases:
        return GRPOTrainer
    if len(bases) == 1:
        return bases[0]
    return type("OffPolicyBucketedGRPOTrainer", tuple(bases), {})
