"""``OffPolicyGRPOTrainer``: TRL's importance-sampling correction for rows sampled by older weights.

TRL 1.16's ``GRPOTrainer`` corrects for a generator that differs from the trained model
(``vllm_importance_sampling_correction``: ratio = exp(train logprob - sampling logprob) per token
or per sequence, truncated or masked at ``vllm_importance_sampling_clip_min/max``), but only when
``use_vllm`` is on. Rows from an overlapped rollout (``rollout.max_staleness`` > 0) were sampled
by weights up to that many optimizer steps old and carry their sampling logprobs: this subclass
applies the same correction to them, with the same settings and metrics
(``sampling/importance_sampling_ratio/*``), without a vLLM engine.

TRL computes the ratio from an extra no-grad forward pass before the loss (``old_per_token_logps``).
When each batch is trained once (``num_iterations`` 1, generation aligned with the optimizer
step) those logprobs are exactly the loss forward's own, detached: the ratio is taken from there
and the extra pass is skipped. Otherwise TRL's own path runs unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from trl import GRPOTrainer


class OffPolicyGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose loss corrects rollout rows against their sampling logprobs."""

    _is_inputs: dict[str, Any] | None = None

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

    def _trl_path(self) -> bool:
        """True when TRL computes ``old_per_token_logps`` anyway (they may differ from the loss's)."""
        every = self.args.steps_per_generation * self.num_iterations
        return self.args.gradient_accumulation_steps % every != 0

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        if not (self.vllm_importance_sampling_correction and self._trl_path()):
            return super()._generate_and_score_completions(inputs)
        with self._correcting():
            return super()._generate_and_score_completions(inputs)

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        if "importance_sampling_ratio" in inputs:  # TRL's own path computed it
            with self._correcting():
                return super()._compute_loss(model, inputs)
        if (
            not self.vllm_importance_sampling_correction
            or inputs.get("sampling_per_token_logps") is None
        ):
            return super()._compute_loss(model, inputs)
        self._is_inputs = inputs  # the ratio joins them right after the loss forward
        try:
            with self._correcting():
                return super()._compute_loss(model, inputs)
        finally:
            self._is_inputs = None

    def _get_per_token_logps_and_entropies(self, *args: Any, **kwargs: Any) -> Any:
        out = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        inputs = self._is_inputs
        if inputs is not None and "importance_sampling_ratio" not in inputs:
            inputs["importance_sampling_ratio"] = self._ratio(out[0].detach(), inputs)
        return out

    def _ratio(self, logps: Any, inputs: dict[str, Any]) -> Any:
        """TRL's importance-sampling ratio (same modes and clips), logged under TRL's names."""
        import math

        import torch

        mask = inputs["completion_mask"]
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]
        diff = torch.nan_to_num((logps - inputs["sampling_per_token_logps"]) * mask, nan=0.0)
        mode = self.vllm_importance_sampling_mode
        if mode.startswith("sequence"):
            diff = diff.sum(dim=-1, keepdim=True)
        ratio = torch.exp(diff)
        lo, hi = self.vllm_importance_sampling_clip_min, self.vllm_importance_sampling_clip_max
        if mode.endswith("truncate"):
            ratio = torch.clamp(ratio, min=lo, max=hi)
        else:
            low = lo if lo is not None else -math.inf
            high = hi if hi is not None else math.inf
            ratio = ratio.masked_fill((ratio < low) | (ratio > high), 0.0)
        flat = ratio.flatten() if mode.startswith("sequence") else ratio[mask.bool()]
        if flat.numel():
            m = self._metrics["train"]
            m["sampling/importance_sampling_ratio/min"].append(flat.min().item())
            m["sampling/importance_sampling_ratio/mean"].append(flat.mean().item())
            m["sampling/importance_sampling_ratio/max"].append(flat.max().item())
        return ratio


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
