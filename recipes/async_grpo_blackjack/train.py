"""GRPO BlackJack with TRL's AsyncGRPOTrainer: a vLLM server generates while the trainer trains.

config -> env servers (+ on CPU a reloadable vLLM server started here) -> our rollout worker ->
the weight sync for this machine (CPU reload, or TRL's NCCL client on CUDA) -> AsyncGRPOTrainer
-> ``model/`` and ``summary.json`` in ``output_dir/name`` (with ``config.json``, ``metrics.jsonl``,
``trainer/checkpoint-N``). Ctrl-C / SIGTERM save a checkpoint and the model (exit 130);
``--resume`` continues from it (TRL's ``resume_from_checkpoint``).

Run: ``openenv-train train configs/grpo_blackjack_async_vllm.yaml`` (GPU: start the vLLM server
first, as the YAML's header says).
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from openenv_train.training.checks import import_target
from openenv_train.training.lifecycle import (
    GracefulStop,
    RunFolder,
    end_run,
    signals_ignored,
    write_summary,
)
from openenv_train.training.model import load_tokenizer

from .config import AsyncRunConfig, ConfigError


def run(cfg: AsyncRunConfig) -> dict[str, Any]:
    """Train as ``cfg`` says; returns the summary also written to ``summary.json``."""
    import torch
    from datasets import Dataset
    from trl.experimental.async_grpo import AsyncGRPOTrainer

    from openenv_train.training import JsonlMetricsCallback
    from openenv_train.training.async_grpo import (
        async_peft_config,
        enable_cpu_async_grpo,
        env_rollout_worker,
        weight_transfer_for,
    )

    check_machine(cfg)
    enable_cpu_async_grpo()
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    spec, tokenizer = make_spec(cfg), load_tokenizer(cfg.model)
    folder = RunFolder(Path(cfg.output_dir) / cfg.name, resume=cfg.resume)
    folder.check()
    stop, t0 = GracefulStop(), time.perf_counter()
    trainer = worker = transfer = None
    with stop.installed(), ExitStack() as stack:
        try:
            folder.create(cfg.model_dump_json(indent=2))
            metrics = JsonlMetricsCallback(folder.path / "metrics.jsonl", append=cfg.resume)
            env_urls, base_url = start_servers(cfg, stack, folder.path)
            args = trainer_args(cfg, folder.path, base_url)
            worker = env_rollout_worker(
                spec,
                env_urls,
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
                callbacks=[stop, metrics],
                peft_config=async_peft_config(cfg.lora, transfer),
            )
            if getattr(trainer, "_lora_sync", False):  # TRL 1.16: adapter-only sync chosen
                worker.adapter_name = trainer._lora_name
            folder.started = True
            try:  # the trainer stops the worker and destroys the transfer when it ends
                trainer.train(
                    resume_from_checkpoint=folder.last_checkpoint() if cfg.resume else None
                )
            except KeyboardInterrupt:  # a second Ctrl-C: keep the work all the same
                stop.requested = True
            finally:
                worker.stop()
        except BaseException:
            folder.discard()  # a start that failed leaves no run folder (kept once training began)
            raise
        finally:
            with signals_ignored():
                stack.close()  # env servers and our vLLM server
    with signals_ignored():
        trainer.save_model(str(folder.path / "model"))  # with the tokenizer
        summary = summarize(cfg, folder, trainer, worker, transfer)
        summary.update(interrupted=stop.requested, wall_seconds=round(time.perf_counter() - t0, 1))
        write_summary(folder.path, summary)
    end_run(
        folder.path,
        interrupted=stop.requested,
        next_step=f"model saved to {folder.path / 'model'}",
        config=cfg.source,
    )
    return summary


def check_machine(cfg: AsyncRunConfig) -> None:
    """On CUDA the vLLM server is the user's, on its own GPU with NCCL weight transfer."""
    import torch

    if torch.cuda.is_available() and cfg.vllm.base_url is None:
        raise ConfigError(
            "vllm.base_url: on a GPU machine start the vLLM server yourself on its own GPU, with "
            'VLLM_SERVER_DEV_MODE=1 and --weight-transfer-config \'{"backend":"nccl"}\' (README), '
            "and give its URL here"
        )


def make_spec(cfg: AsyncRunConfig) -> Any:
    """The ``TextEnvSpec`` of ``env.spec`` (``module:Class``) built with ``env.spec_kwargs``."""
    try:
        cls = import_target(cfg.env.spec, "env.spec", "blackjack_env.text_spec:BlackjackTextSpec")
    except ValueError as err:
        raise ConfigError(str(err)) from None
    return cls(**cfg.env.spec_kwargs)


def start_servers(cfg: AsyncRunConfig, stack: ExitStack, run_dir: Path) -> tuple[list[str], str]:
    """``(env server URLs, vLLM base URL)``; what is started here is stopped by ``stack``."""
    from openenv_train.policy.vllm_server import VLLMServer
    from openenv_train.runtime import start_local_servers

    if cfg.env.base_urls:
        urls = list(cfg.env.base_urls)
    else:
        group = start_local_servers(
            cfg.env.app, cfg.env.num_servers, startup_timeout=cfg.env.startup_timeout_s
        )
        stack.callback(group.stop)
        urls = group.base_urls
    if cfg.vllm.base_url is not None:
        return urls, cfg.vllm.base_url
    server = VLLMServer(
        cfg.model.path,
        served_model_name=cfg.vllm.served_model_name,
        reloadable=True,
        max_model_len=cfg.vllm.max_model_len,
        max_num_seqs=cfg.vllm.max_num_seqs,
        startup_timeout_s=cfg.vllm.startup_timeout_s,
        log_path=run_dir / "vllm.log",
    )
    return urls, stack.enter_context(server).base_url


def trainer_args(cfg: AsyncRunConfig, run_dir: Path, base_url: str) -> Any:
    """``AsyncGRPOConfig`` of ``trainer:``; checkpoints go to ``run_dir/trainer``. A resumed run
    skips no batches (rollouts are fresh samples, not a dataset position)."""
    from trl.experimental.async_grpo import AsyncGRPOConfig

    defaults = {
        "save_strategy": "no",
        "report_to": cfg.report_to or "none",
        "disable_tqdm": not cfg.progress,
        "ignore_data_skip": True,
    }
    return AsyncGRPOConfig(
        output_dir=str(run_dir / "trainer"),
        vllm_server_base_url=base_url,
        seed=cfg.seed,
        **{**defaults, **cfg.trainer},
    )


def summarize(
    cfg: AsyncRunConfig, folder: RunFolder, trainer: Any, worker: Any, transfer: Any
) -> dict[str, Any]:
    """What the run did: steps, the policy version the server holds, rows made and dropped."""
    stale = [h.get("sample/staleness_max") for h in trainer.state.log_history]
    return {
        "recipe": cfg.recipe,
        "name": cfg.name,
        "steps": trainer.state.global_step,
        "model_version": trainer.model_version,
        "weight_syncs": getattr(transfer, "syncs", None),  # TRL's NCCL client does not count
        "rows": worker.stats["rows"],
        "groups_dropped": worker.stats["groups_dropped"],
        "row_versions": sorted(worker.versions),
        "staleness_max": max((s for s in stale if s is not None), default=None),
        "resumed": cfg.resume,
        "checkpoint": folder.last_checkpoint(),
        "model_dir": str(folder.path / "model"),
        "metrics_jsonl": str(folder.path / "metrics.jsonl"),
    }
