"""``LengthBucketedGRPOTrainer``: TRL's forward passes without the padding of multi-turn rows.

TRL pads every completion of a batch to the longest one. In multi-turn games most episodes are
short and a few are long (BlackJack: mean ~2.3 completion tokens, longest ~16), so most of the
forward/backward work was on padding (``benchmarks/step_time.py`` prints the ratio). Completions
are right-padded and attention is causal, so cutting a row's trailing padding changes none of
its real logits: this subclass sorts the rows by completion length, runs each length bucket
trimmed to its own longest row, and puts the per-token results back in place (zeros on padding,
which every loss masks out). Same loss up to float rounding (tested); multimodal inputs and MoE
aux losses take TRL's own path.
"""

from __future__ import annotations

from typing import Any

from trl import GRPOTrainer


def length_buckets(lengths: list[int], min_rows: int = 32) -> list[list[int]]:
    """Row indices grouped by completion length, shortest first; a bucket closes when it holds
    ``min_rows`` rows and the next row is longer (so few, well-filled forward passes)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    buckets: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if len(current) >= min_rows and lengths[i] > lengths[current[-1]]:
            buckets.append(current)
            current = []
        current.append(i)
    if current:
        buckets.append(current)
    return buckets


class LengthBucketedGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose per-token logprobs are computed per completion-length bucket."""

    bucket_min_rows = 32

    def _get_per_token_logps_and_entropies(  # type: ignore[override]
        self,
        model: Any,
        input_ids: Any,
        attention_mask: Any,
        logits_to_keep: int,
        batch_size: int | None = None,
        compute_entropy: bool = False,
        compute_aux_loss: bool = False,
        **extra: Any,
    ) -> tuple[Any, Any, Any]:
        parent = super()._get_per_token_logps_and_entropies
        if compute_aux_loss or any(v is not None for v in extra.values()):
            return parent(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                compute_aux_loss,
                **extra,
            )
        import torch
        import torch.nn.functional as F

        width = logits_to_keep
        prompt_width = input_ids.size(1) - width
        lengths = attention_mask[:, prompt_width:].sum(dim=1).clamp(min=1).tolist()
        buckets = length_buckets(lengths, self.bucket_min_rows)
        if len(buckets) == 1 and max(lengths) == width:
            return parent(
                model, input_ids, attention_mask, width, batch_size, compute_entropy, False
            )
        logps, entropies, rows = [], [], []
        for bucket in buckets:
            idx = torch.tensor(bucket, device=input_ids.device)
            keep = int(max(lengths[i] for i in bucket))
            cut = prompt_width + keep
            lp, ent, _ = parent(
                model,
                input_ids[idx, :cut],
                attention_mask[idx, :cut],
                keep,
                batch_size,
                compute_entropy,
                False,
            )
            logps.append(F.pad(lp, (0, width - keep)))
            if compute_entropy:
                entropies.append(F.pad(ent, (0, width - keep)))
            rows.extend(bucket)
        back = torch.empty(len(rows), dtype=torch.long, device=input_ids.device)
        back[torch.tensor(rows, device=input_ids.device)] = torch.arange(
            len(rows), device=input_ids.device
        )
        out_logps = torch.cat(logps)[back]
        out_ent = torch.cat(entropies)[back] if compute_entropy else None
        return out_logps, out_ent, None
