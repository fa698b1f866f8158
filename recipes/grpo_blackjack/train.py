"""GRPO BlackJack: a model learns hit/stand through TRL's GRPOTrainer on real local env servers.

config -> model (tiny Llama built here + format warm-up, or a folder / hub model) -> N BlackJack
servers (local processes or docker/podman containers) -> GRPOTrainer(rollout_func=the batched rollout engine over the servers) -> train ->
save. Evaluation (greedy evals before, during and after beside the baselines, the best weights,
curve.png and summary.json) is ``evaluate.TrainingEval``. Everything lands in ``runs/<name>/``.

Run: ``openenv-train train configs/grpo_blackjack_cpu.yaml`` (or ``python -m recipes.grpo_blackjack.train CONFIG``).
"""

from __future__ import annotations

import functools
import os
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from .config import RecipeConfig, load_config

console = Console()


def run(cfg: RecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from blackjack_env.text_spec import BlackjackTextSpec
    from datasets import Dataset

    from openenv_train.trainers import JsonlMetricsCallback, make_rollout_func

    from .evaluate import TrainingEval

    started = time.perf_counter()
    if cfg.rollout.max_staleness and (cfg.env.runtime == "ray" or cfg.grpo.use_vllm):
        raise ValueError(
            "rollout.max_staleness: overlap runs the in-process engine only; set it to 0 with "
            "env.runtime: ray or grpo.use_vllm"
        )
    if cfg.grpo.torch_threads:
        torch.set_num_threads(cfg.grpo.torch_threads)
    torch.manual_seed(cfg.seed)
    out = cfg.run_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(cfg.model_dump_json(indent=2))
    metrics = JsonlMetricsCallback(out / "metrics.jsonl")

    model, tokenizer = load_model(cfg, metrics.write)
    evals = TrainingEval(cfg, model, tokenizer, metrics, started=started)
    evals.before()

    servers, urls = start_servers(cfg)
    spec = BlackjackTextSpec(
        seed=cfg.seed,
        same_deal_per_group=cfg.rollout.same_deal_per_group,
        invalid_action_reward=cfg.rollout.invalid_action_reward,
    )
    if cfg.env.runtime == "ray" and servers is not None:  # heals the fleet before each batch
        from openenv_train.trainers.ray_rollout import make_ray_rollout_func

        rollout_func = make_ray_rollout_func(
            spec,
            servers,
            config=rollout_config(cfg),
            num_workers=cfg.env.ray.rollout_workers,
            cpus_per_worker=cfg.env.ray.cpus_per_worker,
            on_batch=evals.on_batch,
        )
    else:
        rollout_func = make_rollout_func(
            spec,
            urls,
            config=rollout_config(cfg),
            on_batch=evals.on_batch,
            max_staleness=cfg.rollout.max_staleness,
        )
    try:
        trainer = trainer_class(cfg)(
            model=model,
            reward_funcs=reward_funcs(cfg),
            args=grpo_args(cfg, out),
            train_dataset=Dataset.from_dict({"prompt": ["blackjack"] * dataset_size(cfg)}),
            processing_class=tokenizer,
            rollout_func=rollout_func,
            callbacks=evals.callbacks(),
        )
        evals.bind(trainer)
        trainer.train()
        evals.after(trainer, urls)
    finally:
        rollout_func.close()
        if servers is not None:
            servers.stop()

    model_dir = out / "model"
    trainer.save_model(str(model_dir))
    tokenizer.save_pretrained(str(model_dir))
    return evals.finish(out, model_dir)


# -- the steps of run(), in order ---------------------------------------------------------------


def load_model(cfg: RecipeConfig, log: Any) -> tuple[Any, Any]:
    """The tiny Llama over the env's vocabulary, a saved folder or a hub model; then the format
    warm-up (``model.warmup_steps``) on random-action games."""
    from openenv_train.policy.tiny import load_tiny_model

    m = cfg.model
    if m.path is None:
        model, tokenizer = build_tiny(m.tiny)
    elif m.hub:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(m.path)
        model = AutoModelForCausalLM.from_pretrained(m.path)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
    else:
        model, tokenizer = load_tiny_model(m.path)
    if m.chat_template_kwargs:  # e.g. Qwen3's enable_thinking=False, for every templated prompt
        tokenizer.apply_chat_template = functools.partial(
            tokenizer.apply_chat_template, **m.chat_template_kwargs
        )
    if not cfg.grpo.use_cpu:
        import torch

        if torch.cuda.is_available():
            model.to("cuda")
    nparams = sum(p.numel() for p in model.parameters())
    console.print(f"model: {m.path or 'tiny Llama (built here)'}, {nparams:,} parameters")
    warm_up(model, tokenizer, m, cfg.seed, log)
    return model, tokenizer


def build_tiny(t: Any) -> tuple[Any, Any]:
    """``(model, tokenizer)``: the tiny Llama of a ``model.tiny`` section over BlackJack's words."""
    from blackjack_env.text_spec import VOCABULARY

    from openenv_train.policy.tiny import build_tiny_model

    return build_tiny_model(
        VOCABULARY,
        hidden_size=t.hidden_size,
        num_layers=t.num_layers,
        num_heads=t.num_heads,
        intermediate_size=t.intermediate_size,
        initializer_range=t.init_std,
        seed=t.seed,
    )


def warm_up(model: Any, tokenizer: Any, m: Any, seed: int, log: Any) -> None:
    """The format warm-up of the ``model`` section (``warmup_steps`` batches of random-action
    games; nothing when 0), printed and logged as a ``warmup`` record."""
    from blackjack_env.text_spec import random_episode

    from openenv_train.trainers import format_warmup

    if not m.warmup_steps:
        return
    t0 = time.perf_counter()
    res = format_warmup(
        model,
        tokenizer,
        random_episode,
        steps=m.warmup_steps,
        batch_size=m.warmup_batch_size,
        learning_rate=m.warmup_learning_rate,
        seed=seed,
        loss_on=m.warmup_loss_on,
    )
    secs = time.perf_counter() - t0
    console.print(
        f"format warm-up: {res.steps} steps, loss {res.first_loss:.3f} -> {res.final_loss:.3f} ({secs:.1f}s)"
    )
    stats = {"steps": res.steps, "first_loss": res.first_loss, "final_loss": res.final_loss}
    log("warmup", 0, {**stats, "seconds": secs})


def start_servers(cfg: RecipeConfig) -> tuple[Any, list[str]]:
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


def rollout_config(cfg: RecipeConfig) -> Any:
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


def trainer_class(cfg: RecipeConfig) -> Any:
    """TRL's ``GRPOTrainer``, subclassed for ``grpo.length_buckets`` (no forward pass over
    padding) and ``rollout.max_staleness`` > 0 (the loss corrects rows of older weights)."""
    from openenv_train.trainers.offpolicy import grpo_trainer_class

    return grpo_trainer_class(
        off_policy=cfg.rollout.max_staleness > 0, length_buckets=cfg.grpo.length_buckets
    )


def reward_funcs(cfg: RecipeConfig) -> list[Any]:
    from openenv_train.trainers import env_reward, format_reward

    return [env_reward] + ([format_reward] if cfg.format_reward_weight else [])


def dataset_size(cfg: RecipeConfig) -> int:
    """Prompts are placeholders (the env deals the hands); enough rows for a few batches."""
    return max(cfg.grpo.per_device_train_batch_size * 4, 64)


def grpo_args(cfg: RecipeConfig, out: Path) -> Any:
    """``trl.GRPOConfig`` from the ``grpo`` section (``grpo.extra`` passes any other field)."""
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
        save_strategy="no",
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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        console.print("usage: python -m recipes.grpo_blackjack.train CONFIG.yaml")
        return 2
    run(load_config(args[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
