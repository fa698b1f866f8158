"""The TRL side every rollout_func recipe shares: env servers, the GRPOConfig, the dataset, and
the training run itself inside its run folder's lifecycle (``lifecycle.py``)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

console = Console()


def start_servers(cfg: Any) -> tuple[Any, list[str]]:
    """``(server group or None, base URLs)``: ``env.base_urls`` as given, or servers of ``env.runtime``."""
    from openenv_train.runtime import start_servers as start_env_servers

    if cfg.env.base_urls:
        return None, list(cfg.env.base_urls)
    t0 = time.perf_counter()
    servers = start_env_servers(cfg.env.app, cfg.env.num_servers, **cfg.env.server_options())
    console.print(
        f"started {len(servers.base_urls)} {cfg.env.runtime} env server(s) of {cfg.env.app} in {time.perf_counter() - t0:.1f}s"
    )
    return servers, servers.base_urls


def rollout_config(cfg: Any) -> Any:
    from openenv_train.rollout import RolloutConfig

    r = cfg.rollout
    return RolloutConfig(
        max_turns=r.max_turns,
        max_new_tokens=r.max_new_tokens,
        max_concurrency=r.max_concurrency,
        max_batch_size=r.max_batch_size,
        # every episode turn draws from its own stream seeded from (seed, batch, row, turn):
        # two runs with one seed sample alike however the batcher groups the model calls
        episode_seed=cfg.seed,
        system_prompt=r.system_prompt,
    )


def reward_funcs(cfg: Any) -> list[Any]:
    from openenv_train.training import env_reward, format_reward

    return [env_reward] + ([format_reward] if cfg.format_reward_weight else [])


def dataset_size(cfg: Any) -> int:
    """Prompts are placeholders (the env deals the games); enough rows for a few batches."""
    return max(cfg.grpo.per_device_train_batch_size * 4, 64)


def grpo_args(cfg: Any, out: Path) -> Any:
    """``trl.GRPOConfig`` from the ``grpo`` section (``grpo.extra`` passes any other field).

    A trainer checkpoint (weights, optimizer, scheduler, step) is saved at every periodic eval,
    keeping the latest only: what ``--resume`` continues from."""
    from trl import GRPOConfig

    g = cfg.grpo
    if g.use_vllm:
        from openenv_train.policy.vllm_cpu import patch_vllm_for_cpu_weight_sync

        patch_vllm_for_cpu_weight_sync()  # no-op on GPU
    kwargs: dict[str, Any] = dict(
        output_dir=str(out / "trainer"),
        max_steps=g.max_steps,
        num_generations=g.num_generations,
        per_device_train_batch_size=g.per_device_train_batch_size,
        gradient_accumulation_steps=g.gradient_accumulation_steps,
        learning_rate=g.learning_rate,
        lr_scheduler_type=g.lr_scheduler_type,
        beta=g.beta,
        temperature=g.temperature,
        loss_type=g.loss_type,
        scale_rewards=g.scale_rewards,
        max_grad_norm=g.max_grad_norm,
        use_adaptive_entropy=g.use_adaptive_entropy,
        entropy_target=g.entropy_target,
        entropy_coef_delta=g.entropy_coef_delta,
        max_completion_length=g.max_completion_length,
        use_cpu=g.use_cpu,
        bf16=g.bf16,
        gradient_checkpointing=g.gradient_checkpointing,
        use_vllm=g.use_vllm,
        logging_steps=g.logging_steps,
        report_to=cfg.report_to or "none",
        save_strategy="steps",
        save_steps=cfg.eval.every,
        save_total_limit=1,
        seed=cfg.seed,
        disable_tqdm=cfg.progress,
        dataloader_num_workers=0,
    )
    if cfg.rollout.max_staleness:  # TRL's correction, per token, truncated (grpo.extra overrides)
        kwargs.update(
            vllm_importance_sampling_correction=True,
            vllm_importance_sampling_mode="token_truncate",
        )
    if cfg.format_reward_weight:
        kwargs["reward_weights"] = [1.0, cfg.format_reward_weight]
    if g.use_vllm:
        kwargs.update(
            vllm_mode=g.vllm_mode, vllm_gpu_memory_utilization=g.vllm_gpu_memory_utilization
        )
    overlap = set(kwargs) & set(g.extra)
    if overlap:
        console.print(f"[yellow]grpo.extra overrides {sorted(overlap)}[/]")
    kwargs.update(g.extra)
    try:
        return GRPOConfig(**kwargs)
    except TypeError as err:
        raise ValueError(f"grpo.extra: {err}; use GRPOConfig field names (trl 1.16)") from None


def train(
    cfg: Any,
    *,
    make_spec: Callable[[], Any],
    load_model: Callable[[Callable[..., None], bool], tuple[Any, Any]],
    make_evals: Callable[[Any, Any, Any, float, list[str]], Any],
    prompt: str = "env",
) -> dict[str, Any]:
    """One GRPO run through ``rollout_func`` on env servers, in ``cfg.run_dir``.

    ``load_model(log, warmup) -> (model, tokenizer)``; ``make_evals(model, tokenizer, metrics,
    started, urls)`` -> a :class:`~openenv_train.training.evals.RunEvals`. With ``cfg.resume`` the run continues
    from its last trainer checkpoint (weights, optimizer, scheduler, step) and appends to its
    metrics. Ctrl-C / SIGTERM: see ``lifecycle``; re-raised as ``KeyboardInterrupt`` once saved.
    """
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from openenv_train.training import JsonlMetricsCallback, quiet_third_party

    from .lifecycle import GracefulStop, RunFolder, signals_ignored

    quiet_third_party()
    import torch
    from datasets import Dataset

    started = time.perf_counter()
    resume = bool(getattr(cfg, "resume", False))
    run = RunFolder(cfg.run_dir, resume=resume)
    run.check()
    if cfg.grpo.torch_threads:
        torch.set_num_threads(cfg.grpo.torch_threads)
    torch.manual_seed(cfg.seed)
    stop = GracefulStop()
    trainer = servers = rollout_func = None
    with stop.installed():
        try:
            run.create(cfg.model_dump_json(indent=2))
            restored = run.metrics_rows() if resume else []
            metrics = JsonlMetricsCallback(run.path / "metrics.jsonl", append=resume)
            servers, urls = start_servers(cfg)
            model, tokenizer = load_model(metrics.write, not resume)
            evals = make_evals(model, tokenizer, metrics, started, urls)
            if resume:
                evals.restore(restored)
                console.print(f"resuming {run.path} from {run.last_checkpoint()}")
            else:
                evals.before()
            rollout_func = _rollout_func(cfg, make_spec(), servers, urls, evals.on_batch)
            trainer = trainer_class(cfg)(
                model=model,
                reward_funcs=reward_funcs(cfg),
                args=grpo_args(cfg, run.path),
                train_dataset=Dataset.from_dict({"prompt": [prompt] * dataset_size(cfg)}),
                processing_class=tokenizer,
                rollout_func=rollout_func,
                callbacks=[stop, *evals.callbacks()],
            )
            evals.bind(trainer)
            run.started = True
            try:
                trainer.train(resume_from_checkpoint=run.last_checkpoint() if resume else None)
                if not stop.requested:
                    evals.after(trainer, urls)
            except KeyboardInterrupt:  # a second Ctrl-C, or one in the final evals: keep the work
                stop.requested = True
        except BaseException:
            run.discard()  # a start that failed leaves no run folder (kept once training began)
            raise
        finally:
            with signals_ignored():
                if rollout_func is not None:
                    rollout_func.close()
                if servers is not None:
                    servers.stop()
    with signals_ignored():
        model_dir = run.path / "model"
        if stop.requested:
            evals.interrupted(trainer)
        trainer.save_model(str(model_dir))
        tokenizer.save_pretrained(str(model_dir))
        summary = evals.finish(
            model_dir, interrupted=stop.requested, checkpoint=run.last_checkpoint()
        )
    if stop.requested:
        console.print(
            f"saved the work so far in {run.path}; continue with "
            f"`openenv-train train CONFIG --resume {run.path}`"
        )
        raise KeyboardInterrupt
    console.print(f"next: openenv-train eval {model_dir}")
    return summary


def trainer_class(cfg: Any) -> Any:
    """TRL's ``GRPOTrainer``, subclassed for ``grpo.length_buckets`` (no forward pass over
    padding) and ``rollout.max_staleness`` > 0 (the loss corrects rows of older weights)."""
    from openenv_train.training.offpolicy import grpo_trainer_class

    return grpo_trainer_class(
        off_policy=cfg.rollout.max_staleness > 0, length_buckets=cfg.grpo.length_buckets
    )


def _rollout_func(cfg: Any, spec: Any, servers: Any, urls: list[str], on_batch: Any) -> Any:
    from openenv_train.training import make_rollout_func

    if cfg.env.runtime == "ray" and servers is not None:  # heals the fleet before each batch
        from openenv_train.training.ray_rollout import make_ray_rollout_func

        return make_ray_rollout_func(
            spec,
            servers,
            config=rollout_config(cfg),
            num_workers=cfg.env.ray.rollout_workers,
            cpus_per_worker=cfg.env.ray.cpus_per_worker,
            on_batch=on_batch,
        )
    return make_rollout_func(
        spec,
        urls,
        config=rollout_config(cfg),
        on_batch=on_batch,
        max_staleness=cfg.rollout.max_staleness,
    )


def main(argv: list[str] | None, module: str, load_config: Any, run: Any) -> int:
    """``python -m recipes.<name>.train CONFIG``: 2 on a wrong call, 130 after Ctrl-C."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        console.print(f"usage: python -m {module} CONFIG.yaml")
        return 2
    try:
        run(load_config(args[0]))
    except KeyboardInterrupt:
        return 130
    return 0
