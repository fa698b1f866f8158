"""Run TRL's ``AsyncGRPOTrainer`` on a machine without CUDA.

Two places in TRL 1.16's async trainer assume a GPU:

- its packed ("tree") attention calls FlashAttention-3's ``flash_attn_varlen_func``, fetched from
  the Hugging Face kernel hub and CUDA-only;
- it asks ``torch.cuda`` for the device name to look up peak FLOPs (for MFU) in ``__init__``.

:func:`enable_cpu_async_grpo` swaps in :func:`varlen_attention`, the same variable-length causal
attention written in plain torch (exact, slower: one small attention per packed segment), and
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
    ``i + Lk - Lq``), which is what lets a packed tree segment see its whole root path.
    """
    import torch

    heads, kv_heads = q.shape[1], k.shape[1]
    if heads % kv_heads:
        raise ValueError(
            f"query heads ({heads}) must be a multiple of key/value heads ({kv_heads})"
        )
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    left, right = window_size
    cu_q, cu_k = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    outputs = []
    for s in range(len(cu_q) - 1):
        qs = q[cu_q[s] : cu_q[s + 1]].transpose(0, 1)  # (heads, Lq, dim)
        ks = k[cu_k[s] : cu_k[s + 1]].transpose(0, 1)
        vs = v[cu_k[s] : cu_k[s + 1]].transpose(0, 1)
        if kv_heads != heads:
            ks = ks.repeat_interleave(heads // kv_heads, dim=0)
            vs = vs.repeat_interleave(heads // kv_heads, dim=0)
        scores = torch.matmul(qs, ks.transpose(-1, -2)).float() * scale
        if softcap:
            scores = softcap * torch.tanh(scores / softcap)
        lq, lk = qs.shape[1], ks.shape[1]
        i = torch.arange(lq).unsqueeze(1) + (lk - lq)  # each query's own key position
        j = torch.arange(lk).unsqueeze(0)
        allowed = torch.ones(lq, lk, dtype=torch.bool)
        if causal:
            allowed &= j <= i
        if left >= 0:
            allowed &= j >= i - left
        if right >= 0 and not causal:
            allowed &= j <= i + right
        scores = scores.masked_fill(~allowed, float("-inf"))
        probs = torch.softmax(scores, dim=-1).to(vs.dtype)
        outputs.append(torch.matmul(probs, vs).transpose(0, 1))  # (Lq, heads, dim)
    return torch.cat(outputs, dim=0)


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
