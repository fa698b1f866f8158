"""GRPO BlackJack: a model learns hit/stand through TRL's GRPOTrainer on real local env servers.

config -> model (tiny Llama built here + format warm-up, or a folder / hub model) -> N BlackJack
servers (``start_local_servers``) -> greedy eval before -> GRPOTrainer(rollout_func=engine over
the servers) with periodic greedy evals -> eval after beside the baselines -> model, metrics.jsonl,
curve.png and summary.json under ``runs/<name>/``.

Run: ``openenv-train train configs/grpo_blackjack_cpu.yaml`` (or ``python -m recipes.grpo_blackjack.train CONFIG``).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from .config import RecipeConfig, load_config

console = Console()


def _load_model(cfg: RecipeConfig, log: Any) -> tuple[Any, Any]:
    from blackjack_env.text_spec import random_episode

    from openenv_train.policy.tiny import build_blackjack_model, load_tiny_model
    from openenv_train.trainers.warmup import format_warmup

    m = cfg.model
    if m.path is None:
        t = m.tiny
        model, tokenizer = build_blackjack_model(
            hidden_size=t.hidden_size,
            num_layers=t.num_layers,
            num_heads=t.num_heads,
            intermediate_size=t.intermediate_size,
            initializer_range=t.init_std,
            seed=t.seed,
        )
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
    if m.warmup_steps:
        t0 = time.perf_counter()
        res = format_warmup(
            model,
            tokenizer,
            random_episode,
            steps=m.warmup_steps,
            batch_size=m.warmup_batch_size,
            learning_rate=m.warmup_learning_rate,
            seed=cfg.seed,
            loss_on=m.warmup_loss_on,
        )
        secs = time.perf_counter() - t0
        console.print(
            f"format warm-up: {res.steps} steps, loss {res.first_loss:.3f} -> {res.final_loss:.3f} ({secs:.1f}s)"
        )
        log(
            "warmup",
            0,
            {
                "steps": res.steps,
                "first_loss": res.first_loss,
                "final_loss": res.final_loss,
                "seconds": secs,
            },
        )
    return model, tokenizer


def _table(title: str, rows: dict[str, dict[str, float]]) -> Table:
    table = Table(title=title)
    for col in ("policy", "win", "push", "loss", "mean return", "invalid"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for name, r in rows.items():
        table.add_row(
            name,
            f"{r['win']:.1%}",
            f"{r['push']:.1%}",
            f"{r['loss']:.1%}",
            f"{r['mean_return']:+.3f}",
            f"{r.get('invalid', 0.0):.1%}",
        )
    return table


def _grpo_args(cfg: RecipeConfig, out: Path) -> Any:
    from trl import GRPOConfig

    g = cfg.grpo
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


def run(cfg: RecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from blackjack_env.text_spec import BlackjackTextSpec
    from datasets import Dataset
    from trl import GRPOTrainer

    from openenv_train.policy.transformers_policy import TransformersPolicy
    from openenv_train.rollout.engine import RolloutConfig
    from openenv_train.runtime import start_local_servers
    from openenv_train.trainers import (
        JsonlMetricsCallback,
        PeriodicEvalCallback,
        RichProgressCallback,
        env_reward,
        format_reward,
        make_rollout_func,
        plot_learning_curve,
    )

    from .evaluate import baselines, evaluate_policy, evaluate_via_servers

    if cfg.grpo.torch_threads:
        torch.set_num_threads(cfg.grpo.torch_threads)
    torch.manual_seed(cfg.seed)
    out = cfg.run_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(cfg.model_dump_json(indent=2))
    metrics = JsonlMetricsCallback(out / "metrics.jsonl")
    t_start = time.perf_counter()

    model, tokenizer = _load_model(cfg, metrics.write)
    ev = cfg.eval
    eval_policy = TransformersPolicy(model, tokenizer, device=str(next(model.parameters()).device))

    def greedy(n: int, seed: int = ev.seed) -> dict[str, float]:
        r = cfg.rollout
        return evaluate_policy(
            eval_policy,
            n,
            seed,
            max_turns=r.max_turns,
            max_new_tokens=r.max_new_tokens,
            system_prompt=r.system_prompt,
        )

    base = baselines(ev.hands, ev.seed)
    # periodic evals use other hands than the final eval, so watching them selects nothing; the
    # curve stays on these validation hands throughout, beside baselines played on the same hands
    val_seed = ev.seed + 10_000_000
    val_base = baselines(ev.periodic_hands, val_seed)
    t0 = time.perf_counter()
    before = greedy(ev.hands)
    console.print(f"eval before training: {ev.hands} hands in {time.perf_counter() - t0:.1f}s")
    metrics.write("eval_before", 0, before)
    console.print(
        _table(f"before training ({ev.hands} fresh hands, greedy)", {"model": before, **base})
    )

    servers: Any = []
    urls = list(cfg.env.base_urls)
    if not urls:
        t0 = time.perf_counter()
        if cfg.env.runtime == "ray":
            from openenv_train.runtime.ray_fleet import start_ray_servers

            servers = start_ray_servers(
                cfg.env.app,
                cfg.env.num_servers,
                startup_timeout=cfg.env.startup_timeout_s,
                **cfg.env.ray.fleet_options(),
            )
        else:
            servers = start_local_servers(
                cfg.env.app, cfg.env.num_servers, startup_timeout=cfg.env.startup_timeout_s
            )
        urls = [s.base_url for s in servers]
        console.print(
            f"started {len(urls)} env server(s) of {cfg.env.app} in {time.perf_counter() - t0:.1f}s"
        )
    r = cfg.rollout
    rollout_cfg = RolloutConfig(
        max_turns=r.max_turns,
        max_new_tokens=r.max_new_tokens,
        max_concurrency=r.max_concurrency,
        max_batch_size=r.max_batch_size,
        # no sampling seed: RolloutConfig.seed reseeds EVERY policy call alike, which correlates
        # the samples of successive calls; torch.manual_seed(cfg.seed) above seeds the run once
        system_prompt=r.system_prompt,
    )
    spec = BlackjackTextSpec(
        seed=cfg.seed,
        same_deal_per_group=r.same_deal_per_group,
        invalid_action_reward=r.invalid_action_reward,
    )
    progress = (
        RichProgressCallback(f"GRPO {cfg.name}", fields=("reward", "entropy"))
        if cfg.progress
        else None
    )
    episodes = {"n": 0}

    def on_batch(batch: Any) -> None:
        episodes["n"] += len(batch.rows)
        episodes["batches"] = episodes.get("batches", 0) + 1
        if episodes["batches"] % cfg.grpo.logging_steps == 0:
            numeric = {k: v for k, v in batch.metrics.items() if isinstance(v, (int, float))}
            metrics.write("rollout", episodes["batches"], {**numeric, "episodes": episodes["n"]})
        if progress is not None:
            progress.set_status(episodes=episodes["n"])

    if cfg.env.runtime == "ray" and servers:
        from openenv_train.trainers.ray_rollout import make_ray_rollout_func

        rollout_func = make_ray_rollout_func(
            spec,
            servers,
            config=rollout_cfg,
            num_workers=cfg.env.ray.rollout_workers,
            cpus_per_worker=cfg.env.ray.cpus_per_worker,
            on_batch=on_batch,
        )
    else:
        rollout_func = make_rollout_func(spec, urls, config=rollout_cfg, on_batch=on_batch)
    curve: list[tuple[int, dict[str, float]]] = [(0, greedy(ev.periodic_hands, seed=val_seed))]
    best: dict[str, Any] = {}

    def on_eval(step: int, m: dict[str, float]) -> None:
        m["episodes"] = episodes["n"]
        m["wall_s"] = round(time.perf_counter() - t_start, 1)
        curve.append((step, m))
        if ev.keep_best and step > 0 and m["mean_return"] > best.get("score", float("-inf")):
            state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            best.update(step=step, score=m["mean_return"], state=state)
        metrics.write("eval", step, m)
        if progress is not None:
            progress.set_status(win=m["win"], ret=m["mean_return"])
        else:
            console.print(
                f"step {step}: greedy win {m['win']:.1%}, mean return {m['mean_return']:+.3f}"
            )

    periodic = PeriodicEvalCallback(
        lambda _m: greedy(ev.periodic_hands, seed=val_seed), ev.every, on_eval
    )
    callbacks = [metrics, periodic] + ([progress] if progress is not None else [])
    g = cfg.grpo
    dataset = Dataset.from_dict(
        {"prompt": ["blackjack"] * max(g.per_device_train_batch_size * 4, 64)}
    )
    reward_funcs = [env_reward] + ([format_reward] if cfg.format_reward_weight else [])
    if g.use_vllm:
        from openenv_train.policy.vllm_cpu import patch_vllm_for_cpu_weight_sync

        patch_vllm_for_cpu_weight_sync()  # no-op on GPU
    try:
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=reward_funcs,
            args=_grpo_args(cfg, out),
            train_dataset=dataset,
            processing_class=tokenizer,
            rollout_func=rollout_func,
            callbacks=callbacks,
        )
        periodic.bind(trainer)
        if cfg.progress:  # the rich bar replaces the printed log dicts (metrics.jsonl keeps them)
            from transformers.trainer_callback import PrinterCallback

            trainer.remove_callback(PrinterCallback)
        t0 = time.perf_counter()
        trainer.train()
        train_s = time.perf_counter() - t0
        model = trainer.model
        eval_policy.set_model(model)
        t0 = time.perf_counter()
        last = after = greedy(ev.hands)
        console.print(f"eval after training: {ev.hands} hands in {time.perf_counter() - t0:.1f}s")
        final_step = trainer.state.global_step
        rows = {"model before": before, f"model after (last, step {final_step})": last}
        if best and best["step"] != final_step:
            model.load_state_dict(best["state"])
            after = greedy(ev.hands)
            rows[f"model after (best periodic eval, step {best['step']}, saved)"] = after
        if ev.final_via_servers:
            rows["model after (via servers)"] = evaluate_via_servers(
                eval_policy, urls, ev.hands, ev.seed
            )
    finally:
        rollout_func.close()
        if servers:
            servers.stop()
    metrics.write("eval_after", final_step, {**last, "which": "last"})
    if after is not last:
        metrics.write("eval_after", best["step"], {**after, "which": "best"})
    console.print(
        _table(f"after {final_step} GRPO steps ({ev.hands} fresh hands, greedy)", {**rows, **base})
    )
    model_dir = out / "model"
    trainer.save_model(str(model_dir))
    tokenizer.save_pretrained(str(model_dir))
    png = plot_learning_curve(
        curve,
        out / "curve.png",
        baselines={k: val_base[k] for k in ("always stand", "basic strategy")},
        title=f"GRPO BlackJack ({cfg.name}): greedy play on {ev.periodic_hands:,} validation hands",
    )
    summary = {
        "name": cfg.name,
        "before": before,
        "after": after,
        "after_last": last,
        "saved_step": best["step"] if after is not last else final_step,
        "baselines": base,
        "curve": [{"step": s, **m} for s, m in curve],  # on the validation hands
        "validation_baselines": val_base,
        "episodes": episodes["n"],
        "train_seconds": round(train_s, 1),
        "wall_seconds": round(time.perf_counter() - t_start, 1),
        "model_dir": str(model_dir),
        "curve_png": str(png),
        "metrics_jsonl": str(metrics.path),
    }
    if "model after (via servers)" in rows:
        summary["after_via_servers"] = rows["model after (via servers)"]
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    console.print(
        f"done in {summary['wall_seconds']}s (training {summary['train_seconds']}s, {episodes['n']:,} episodes); "
        f"model -> {model_dir}, curve -> {png}, metrics -> {metrics.path}"
    )
    return summary


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        console.print("usage: python -m recipes.grpo_blackjack.train CONFIG.yaml")
        return 2
    run(load_config(args[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
