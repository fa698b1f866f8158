"""Run ``AsyncGRPOTrainer`` on our engine from a config: ``python -m openenv_train.training.async_grpo CONFIG``.

Starts the env servers (and, on CPU without ``vllm.base_url``, a reloadable vLLM server), builds
the rollout worker and the weight sync for this machine (``ReloadWeightTransfer`` on CPU, TRL's
NCCL client on CUDA), trains ``trainer.max_steps`` steps, saves the model and stops everything.
"""

from __future__ import annotations

import importlib
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import AsyncRunConfig, ConfigError, load_config
from .cpu import enable_cpu_async_grpo
from .weight_transfer import weight_transfer_for
from .worker import EngineRolloutWorker, env_rollout_worker


@dataclass
class AsyncRunResult:
    """What a run left: the trainer (its state and model), the worker's counts, the run folder."""

    trainer: Any
    worker: EngineRolloutWorker
    weight_transfer: Any
    run_dir: Path


def _spec(cfg: AsyncRunConfig) -> Any:
    module, _, name = cfg.env.spec.partition(":")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"env.spec: cannot import {cfg.env.spec!r} ({exc}); use 'module:Class'"
        ) from None
    return cls(**cfg.env.spec_kwargs)


def _tokenizer(cfg: AsyncRunConfig) -> Any:
    path = Path(cfg.model.path)
    if not cfg.model.hub and not path.is_dir():
        raise ConfigError(f"model.path: {path} is not a folder (set model.hub: true for a hub id)")
    if not cfg.model.hub and (path / "tokenizer.json").is_file():
        from ...policy.tiny import load_tiny_tokenizer

        return load_tiny_tokenizer(path)  # never a model-type specific class (see its docstring)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(cfg.model.path)


def run(cfg: AsyncRunConfig) -> AsyncRunResult:
    """Train as ``cfg`` says; everything started here is stopped before returning."""
    import torch
    from datasets import Dataset
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    from ...policy.vllm_server import VLLMServer
    from ...runtime import start_local_servers

    cuda = torch.cuda.is_available()
    if cuda and cfg.vllm.base_url is None:
        raise ConfigError(
            "vllm.base_url: on a GPU machine start the vLLM server yourself on its own GPU, with "
            'VLLM_SERVER_DEV_MODE=1 and --weight-transfer-config \'{"backend":"nccl"}\' (README), '
            "and give its URL here"
        )
    enable_cpu_async_grpo()
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    spec, tokenizer = _spec(cfg), _tokenizer(cfg)
    run_dir = Path(cfg.output_dir) / cfg.name
    with ExitStack() as stack:
        group = start_local_servers(cfg.env.app, cfg.env.num_servers, startup_timeout=120)
        stack.callback(group.stop)
        base_url = cfg.vllm.base_url
        if base_url is None:
            server = VLLMServer(
                cfg.model.path,
                served_model_name=cfg.vllm.served_model_name,
                reloadable=True,
                max_model_len=cfg.vllm.max_model_len,
                max_num_seqs=cfg.vllm.max_num_seqs,
                startup_timeout_s=cfg.vllm.startup_timeout_s,
                log_path=_mkdir(run_dir) / "vllm.log",
            )
            base_url = stack.enter_context(server).base_url
        args = AsyncGRPOConfig(
            output_dir=str(run_dir),
            vllm_server_base_url=base_url,
            seed=cfg.seed,
            **{"save_strategy": "no", "report_to": "none", **cfg.trainer},
        )
        worker = env_rollout_worker(
            spec,
            group.base_urls,
            args=args,
            model=cfg.vllm.served_model_name,
            tokenizer=tokenizer,
            config=cfg.rollout_config(),
            prompts=cfg.worker.prompts,
            max_inflight_groups=cfg.worker.max_inflight_groups,
        )
        transfer = weight_transfer_for(base_url)
        trainer = AsyncGRPOTrainer(
            model=cfg.model.path,
            args=args,
            train_dataset=Dataset.from_dict({"prompt": list(cfg.worker.prompts)}),
            processing_class=tokenizer,
            rollout_worker=worker,
            weight_transfer=transfer,
        )
        try:
            trainer.train()  # stops the worker and destroys the transfer when it ends
        finally:
            worker.stop()
        trainer.save_model(str(run_dir / "model"))
    return AsyncRunResult(trainer, worker, transfer, run_dir)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m openenv_train.training.async_grpo CONFIG.yaml", file=sys.stderr)
        return 2
    result = run(load_config(argv[0]))
    state = result.trainer.state
    print(
        f"{state.global_step} steps, policy version {result.trainer.model_version}, "
        f"{result.worker.stats['rows']} rows ({result.worker.stats['groups_dropped']} groups "
        f"dropped); model saved to {result.run_dir / 'model'}"
    )
    return 0
