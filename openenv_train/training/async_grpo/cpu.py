"""Run TRL's ``AsyncGRPOTrainer`` on a machine without CUDA.

Two places in TRL 1.16's async trainer assume a GPU:

- its packed ("tree") attention calls FlashAttention-3's ``flash_attn_varlen_func``, fetched from
  the Hugging Face kernel hub and CUDA-only;
- it asks ``torch.cuda`` for the device name to look up peak FLOPs (for MFU) in ``__init__``.

:func:`enable_cpu_async_grpo` swaps in :func:`varlen_attention`, the same variable-length causal
attention written in plain torch (exact; one masked attention over the packed row), and
reports "peak FLOPs unknown" (TRL then skips its MFU metrics and keeps every other metric). It
does nothing where CUDA is available, so GPU runs keep TRL's own kernels.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def varlen_attention(
    q: Any,
    k: Any,
    v: Any,
    cu_seqlens_q: Any,
    cu_seqlens_k: Any,
    max_seqlen_q: int,
    max_seqlen_k: int,
    softmax_scale: float | None = None,
    causal: bool = False,
    window_size: tuple[int, int] = (-1, -1),
    softcap: float = 0.0,
    **_: Any,
) -> Any:
    """FlashAttention's ``flash_attn_varlen_func`` in plain torch.

    ``q`` is ``(total_q, heads, dim)``, ``k``/``v`` are ``(total_k, kv_heads, dim)``; segment ``s``
    is ``q[cu_q[s]:cu_q[s+1]]`` attending to ``k[cu_k[s]:cu_k[s+1]]``. As in FlashAttention, the
    causal mask is aligned to the bottom right (query ``i`` of ``Lq`` sees keys up to
    ``i + Lk - Lq``), which is what lets a packed tree segment see its whole root path. All
    segments go through one masked attention (a ``total_q x total_k`` mask: fine for the short
    rows a CPU trains on).
    """
    import torch

    heads, kv_heads = q.shape[1], k.shape[1]
    if heads % kv_heads:
        raise ValueError(
            f"query heads ({heads}) must be a multiple of key/value heads ({kv_heads})"
        )
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    cu_q, cu_k = cu_seqlens_q.long(), cu_seqlens_k.long()
    len_q, len_k = cu_q.diff(), cu_k.diff()
    segments = torch.arange(len(len_q))
    seg_q = segments.repeat_interleave(len_q)  # segment of each query row
    seg_k = segments.repeat_interleave(len_k)
    # each query's own key position in its segment, and each key's position in its segment
    pos_q = torch.arange(len(seg_q)) - cu_q[seg_q] + (len_k - len_q)[seg_q]
    pos_k = torch.arange(len(seg_k)) - cu_k[seg_k]
    allowed = seg_q[:, None] == seg_k[None, :]
    left, right = window_size
    if causal:
        allowed &= pos_k[None, :] <= pos_q[:, None]
    elif right >= 0:
        allowed &= pos_k[None, :] <= pos_q[:, None] + right
    if left >= 0:
        allowed &= pos_k[None, :] >= pos_q[:, None] - left
    qh, kh, vh = (x.transpose(0, 1) for x in (q, k, v))  # (heads, total, dim)
    if kv_heads != heads:
        kh = kh.repeat_interleave(heads // kv_heads, dim=0)
        vh = vh.repeat_interleave(heads // kv_heads, dim=0)
    scores = torch.matmul(qh, kh.transpose(-1, -2)).float() * scale
    if softcap:
        scores = softcap * torch.tanh(scores / softcap)
    probs = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).to(vh.dtype)
    return torch.matmul(probs, vh).transpose(0, 1)  # (total_q, heads, dim)


#: What TRL's packing module expects ``_flash_attn()`` to return.
TORCH_VARLEN_KERNEL = SimpleNamespace(flash_attn_varlen_func=varlen_attention)


def enable_cpu_async_grpo() -> bool:
    """Make ``AsyncGRPOTrainer`` runnable without CUDA; True when applied (False on a GPU machine).

    Call it before building the trainer. It is idempotent and changes nothing on CUDA machines.
    """
    import torch

    if torch.cuda.is_available():
        return False
    from trl.experimental.async_grpo import async_grpo_trainer, packing

    packing._flash_attn = lambda: TORCH_VARLEN_KERNEL  # tree_attention looks it up per call
    async_grpo_trainer.get_peak_flops_per_device = _unknown_peak_flops
    return True


def _unknown_peak_flops(accelerator: Any, dtype: str) -> None:
    """No peak-FLOPs table for CPUs: TRL skips MFU and logs every other metric."""
    return None
