"""Weight sync from ``AsyncGRPOTrainer`` to a vLLM server without NCCL (CPU machines).

TRL's own ``WeightTransferClient`` streams weights over NCCL, which needs CUDA on both sides.
:class:`ReloadWeightTransfer` implements TRL's ``WeightTransferProtocol`` with a file handoff
instead: ``send_weights`` writes the trainer's tensors to one safetensors file in shared memory
(``/dev/shm`` where writable), replaced atomically, and asks the server to load it through the
dev-mode endpoint ``/collective_rpc`` (method ``openenv_load_weights`` of ``WeightSyncCPUWorker``).
Pause and resume are the server's own ``/pause?mode=keep`` and ``/resume``, as in TRL.

The server must run with ``VLLM_SERVER_DEV_MODE=1`` and
``--worker-cls openenv_train.policy.vllm_cpu_worker.WeightSyncCPUWorker``
(``VLLMServer(path, reloadable=True)`` does both). :func:`weight_transfer_for` keeps TRL's NCCL
client on CUDA machines.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...runtime.health import wait_healthy
from ..errors import WeightSyncError as WeightSyncError

#: ``--worker-cls`` of a server that ``ReloadWeightTransfer`` can update.
RELOADABLE_WORKER = "openenv_train.policy.vllm_cpu_worker.WeightSyncCPUWorker"
_SHM = Path("/dev/shm")


class ReloadWeightTransfer:
    """TRL ``WeightTransferProtocol`` through a shared-memory file the vLLM server loads.

    ``syncs``, ``last_sync_s`` and ``last_sync_bytes`` say what the last sends cost. One copy of the
    weights lives in the handoff folder between syncs (``destroy`` removes it).
    """

    def __init__(
        self,
        base_url: str,
        *,
        handoff_dir: str | Path | None = None,
        timeout_s: float = 300.0,
        server_timeout_s: float = 240.0,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"base_url={base_url!r}: expected http(s)://host:port of the vLLM server"
            )
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.server_timeout_s = server_timeout_s
        self._handoff_parent = Path(handoff_dir) if handoff_dir else None
        self.handoff_dir: Path | None = None
        self.timeout_s = timeout_s
        self._http: Any = None
        self.syncs = 0
        self.last_sync_s = 0.0
        self.last_sync_bytes = 0
        self.server_dtype: str | None = None

    # -- TRL's WeightTransferProtocol ----------------------------------------------------------

    def init_weight_transfer(self) -> None:
        """Wait for the server, check it can take weights, make the handoff folder."""
        import httpx

        if self._http is None:  # (again after destroy: a trainer may train twice)
            self._http = httpx.Client(base_url=self.base_url, timeout=self.timeout_s)
        self._wait_healthy()
        info = self._request("GET", "/server_info", params={"config_format": "json"}, what="probe")
        config = info.get("vllm_config", {})
        worker = config.get("parallel_config", {}).get("worker_cls")
        if worker != RELOADABLE_WORKER:
            raise WeightSyncError(
                f"the vLLM server at {self.base_url} runs worker_cls={worker!r}, which cannot load "
                f"weights at run time; start it with --worker-cls {RELOADABLE_WORKER} "
                "(VLLMServer(model_dir, reloadable=True))"
            )
        self.server_dtype = str(config.get("model_config", {}).get("dtype", "")).removeprefix(
            "torch."
        )
        parent = self._handoff_parent
        if parent is None and _SHM.is_dir() and os.access(_SHM, os.W_OK):
            parent = _SHM
        self.handoff_dir = Path(tempfile.mkdtemp(prefix="openenv-train-weights-", dir=parent))

    def pause(self) -> None:
        """Freeze requests in flight (they resume on ``resume``, as with TRL's NCCL sync)."""
        self._request("POST", "/pause", params={"mode": "keep"}, what="pause")

    def send_weights(self, iterator: Iterator[tuple[str, Any]]) -> None:
        """Write every ``(name, tensor)`` to the handoff file, then have the server load it."""
        from safetensors.torch import save_file

        if self.handoff_dir is None:
            raise RuntimeError("send_weights before init_weight_transfer; call that first")
        t0 = time.perf_counter()
        tensors = {name: t.detach().to("cpu", copy=True).contiguous() for name, t in iterator}
        if not tensors:
            raise ValueError("send_weights: the iterator yielded no tensors")
        dtypes = {str(t.dtype).removeprefix("torch.") for t in tensors.values()}
        if self.server_dtype and dtypes != {self.server_dtype}:
            raise WeightSyncError(
                f"weights are {sorted(dtypes)} but the server serves {self.server_dtype}: set "
                f"AsyncGRPOConfig(dtype='{self.server_dtype}') or start the server with "
                f"--dtype {sorted(dtypes)[0]} (a precision gap biases the importance ratio)"
            )
        path = self.handoff_dir / "weights.safetensors"
        tmp = path.with_suffix(".tmp")
        save_file(tensors, str(tmp))
        os.replace(tmp, path)  # the server never sees a half-written file
        reply = self._request(
            "POST",
            "/collective_rpc",
            json={"method": "openenv_load_weights", "args": [str(path)]},
            what="load weights",
        )
        loaded = reply.get("results") or []
        if not loaded or any(int(n) != len(tensors) for n in loaded):
            raise WeightSyncError(
                f"the vLLM server loaded {loaded} tensors of {len(tensors)} sent from {path}"
            )
        # cached prefixes were computed with the old weights
        self._request("POST", "/reset_prefix_cache", what="reset the prefix cache")
        self.syncs += 1
        self.last_sync_bytes = sum(t.numel() * t.element_size() for t in tensors.values())
        self.last_sync_s = time.perf_counter() - t0

    def resume(self) -> None:
        self._request("POST", "/resume", what="resume")

    def destroy(self) -> None:
        """Remove the handoff folder and close the HTTP client (idempotent)."""
        if self.handoff_dir is not None:
            shutil.rmtree(self.handoff_dir, ignore_errors=True)
            self.handoff_dir = None
        if self._http is not None:
            self._http.close()
            self._http = None

    # -- helpers --------------------------------------------------------------------------------

    def _wait_healthy(self) -> None:
        def fail(why: str) -> None:
            raise WeightSyncError(
                f"no vLLM server answered {self.base_url}/health within {self.server_timeout_s:.0f} s "
                "(server_timeout_s); start it first (VLLMServer(model_dir, reloadable=True))"
            )

        wait_healthy(self.base_url, self.server_timeout_s, lambda: False, fail, probe_timeout=5)

    def _request(self, method: str, path: str, *, what: str, **kwargs: Any) -> dict[str, Any]:
        import httpx

        if self._http is None:
            raise RuntimeError(f"{what} before init_weight_transfer; call that first")
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise WeightSyncError(f"{what}: {self.base_url}{path} unreachable: {exc!r}") from exc
        if response.status_code == 404:
            raise WeightSyncError(
                f"{what}: {self.base_url}{path} is missing; start the vLLM server with "
                "VLLM_SERVER_DEV_MODE=1 (VLLMServer(..., dev_mode=True) does)"
            )
        if response.status_code != 200:
            raise WeightSyncError(
                f"{what}: {self.base_url}{path} answered {response.status_code}: {response.text[:500]}"
            )
        return response.json() if response.content else {}


def weight_transfer_for(base_url: str, **kwargs: Any) -> ReloadWeightTransfer | None:
    """The weight sync for this machine: :class:`ReloadWeightTransfer` without CUDA; ``None`` with
    CUDA, so that ``AsyncGRPOTrainer`` builds its own NCCL ``WeightTransferClient``."""
    import torch

    if torch.cuda.is_available():
        return None
    return ReloadWeightTransfer(base_url, **kwargs)
