"""GRPO BlackJack as a torchforge app: forge's actor graph and loop on Monarch, on a CPU.

config -> tiny Llama + format warm-up (saved to ``runs/<name>/init_model``) -> greedy eval before
-> N local BlackJack servers -> Monarch actors on local processes (generator, rollout(s),
trainer, replay buffer) -> forge's loop (``app.run_loop``) with periodic greedy evals -> final
eval beside the baselines -> ``metrics.jsonl``, ``curve.png``, ``summary.json``, ``model/``.
Every actor process and env server is stopped at the end, also on Ctrl-C.

Run: ``openenv-train train configs/forge_grpo_blackjack_cpu.yaml``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from openenv_train.client.sync import run_blocking

from .app import LoopState, run_loop, spawn_monarch
from .config import ForgeRecipeConfig, load_config
from .prep import Progress, console, prepare_model


async def _train(
    cfg: ForgeRecipeConfig, model_dir: Path, urls: list[str], hooks: dict[str, Any]
) -> tuple[LoopState, dict[str, Any]]:
    from openenv_train.training.forge.mesh import ActorGraph

    async with ActorGraph() as graph:
        if cfg.backend == "forge":
            from .forge_backend import spawn_forge

            actors = await spawn_forge(cfg, graph, str(model_dir), urls)
        else:
            actors = spawn_monarch(cfg, graph, str(model_dir), urls)
        t0 = time.perf_counter()
        await actors.replay_buffer.stats.call_one()  # every actor is up once these answer
        await actors.generator.get_version.call_one()
        console.print(
            f"actor graph up in {time.perf_counter() - t0:.1f}s ({len(graph.meshes)} Monarch processes)"
        )
        try:
            state = await run_loop(cfg, actors, on_step=hooks["on_step"], log=hooks["log"])
            final = (
                None  # forge's trainer pushes to torchstore and keeps its checkpoints itself
                if cfg.backend == "forge"
                else await actors.trainer.push_weights.call_one(state.step)
            )
            buffer_stats = await actors.replay_buffer.stats.call_one()
        finally:
            for r in actors.rollouts:  # close env sessions before the processes go
                try:
                    await asyncio.wait_for(r.close.call_one(), 10)
                except (Exception, asyncio.CancelledError):
                    pass
            if cfg.backend == "forge":
                from .forge_backend import shutdown_forge

                await shutdown_forge()
    return state, {"weights": final, "buffer": buffer_stats}


def run(cfg: ForgeRecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    if cfg.backend == "forge":
        return _run_forge(cfg)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # also in the actor processes
    import torch
    from transformers.utils import logging as hf_logging

    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.policy.transformers_policy import TransformersPolicy
    from openenv_train.runtime import start_local_servers
    from openenv_train.training import JsonlMetricsCallback, plot_learning_curve
    from recipes.grpo_blackjack.evaluate import baselines, evaluate_policy
    from recipes.grpo_blackjack.evaluate import results_table as _table

    hf_logging.disable_progress_bar()
    torch.set_num_threads(cfg.trainer.threads)
    torch.manual_seed(cfg.seed)
    out = cfg.run_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(cfg.model_dump_json(indent=2))
    metrics = JsonlMetricsCallback(out / "metrics.jsonl")
    t_start = time.perf_counter()
    model_dir = prepare_model(cfg, out, metrics.write)
    model, tokenizer = load_tiny_model(model_dir)
    policy = TransformersPolicy(model, tokenizer, num_threads=cfg.trainer.threads)
    ev, r = cfg.eval, cfg.rollout

    def greedy(n: int, seed: int = ev.seed) -> dict[str, float]:
        return evaluate_policy(
            policy, n, seed, max_turns=r.max_turns, max_new_tokens=r.max_new_tokens
        )

    base = baselines(ev.hands, ev.seed)
    val_seed = ev.seed + 10_000_000  # validation hands, apart from the final eval's
    val_base = baselines(ev.periodic_hands, val_seed)
    before = greedy(ev.hands)
    metrics.write("eval_before", 0, before)
    console.print(
        _table(f"before training ({ev.hands} fresh hands, greedy)", {"model": before, **base})
    )
    curve: list[tuple[int, dict[str, float]]] = [(0, greedy(ev.periodic_hands, val_seed))]
    best: dict[str, Any] = {}
    progress = Progress(cfg) if cfg.progress else None

    async def on_step(step: int, m: dict[str, Any], state: LoopState) -> None:
        if step % 10 == 0 or step == cfg.steps:
            metrics.write("train", step, {**m, "episodes": state.episodes})
        if progress is not None:
            progress.update(
                step, reward=state.last_rollout.get("reward_mean", 0.0), entropy=m["entropy"]
            )
        if step % ev.every and step != cfg.steps:
            return
        model.load_state_dict(await state.fetch_weights())
        e = greedy(ev.periodic_hands, val_seed)
        e.update(episodes=state.episodes, wall_s=round(time.perf_counter() - t_start, 1))
        curve.append((step, e))
        metrics.write("eval", step, e)
        if ev.keep_best and e["mean_return"] > best.get("score", float("-inf")):
            best.update(
                step=step,
                score=e["mean_return"],
                state={k: v.clone() for k, v in model.state_dict().items()},
            )
        if progress is not None:
            progress.update(step, win=e["win"], ret=e["mean_return"])
        else:
            console.print(
                f"step {step}: greedy win {e['win']:.1%}, mean return {e['mean_return']:+.3f}"
            )

    servers: Any = None
    urls = list(cfg.env.base_urls)
    try:
        if not urls:
            servers = start_local_servers(
                cfg.env.app, cfg.env.num_servers, startup_timeout=cfg.env.startup_timeout_s
            )
            urls = [s.base_url for s in servers]
        t0 = time.perf_counter()
        state, final = run_blocking(
            _train(cfg, model_dir, urls, {"on_step": on_step, "log": metrics.write})
        )
        train_s = time.perf_counter() - t0
    finally:
        if progress is not None:
            progress.stop()
        if servers is not None:
            servers.stop()
    model.load_state_dict(final["weights"])
    last = after = greedy(ev.hands)
    rows = {"model before": before, f"model after (last, step {state.step})": last}
    if best and best["step"] != state.step:
        model.load_state_dict(best["state"])
        after = greedy(ev.hands)
        rows[f"model after (best periodic eval, step {best['step']}, saved)"] = after
    metrics.write("eval_after", state.step, {**last, "which": "last"})
    if after is not last:
        metrics.write("eval_after", best["step"], {**after, "which": "best"})
    run_blocking(policy.aclose())  # the eval policy's worker thread
    console.print(
        _table(f"after {state.step} steps ({ev.hands} fresh hands, greedy)", {**rows, **base})
    )
    model.save_pretrained(out / "model")
    tokenizer.save_pretrained(out / "model")
    png = plot_learning_curve(
        curve,
        out / "curve.png",
        baselines={k: val_base[k] for k in ("always stand", "basic strategy")},
        title=f"forge-style GRPO BlackJack on Monarch ({cfg.name}): greedy, {ev.periodic_hands:,} validation hands",
    )
    summary = {
        "name": cfg.name,
        "backend": cfg.backend,
        "before": before,
        "after": after,
        "after_last": last,
        "saved_step": best["step"] if after is not last else state.step,
        "baselines": base,
        "curve": [{"step": s, **m} for s, m in curve],
        "validation_baselines": val_base,
        "steps": state.step,
        "episodes": state.episodes,
        "dropped_groups": state.dropped_groups,
        "buffer": final["buffer"],
        "train_seconds": round(train_s, 1),
        "seconds_per_step": round(train_s / max(1, state.step), 3),
        "wall_seconds": round(time.perf_counter() - t_start, 1),
        "model_dir": str(out / "model"),
        "curve_png": str(png),
        "metrics_jsonl": str(metrics.path),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    console.print(
        f"done in {summary['wall_seconds']}s ({state.step} steps, {summary['seconds_per_step']}s/step, "
        f"{state.episodes:,} episodes); curve -> {png}, metrics -> {metrics.path}"
    )
    return summary


def _run_forge(cfg: ForgeRecipeConfig) -> dict[str, Any]:
    """forge's own actors (GPUs; untested here): train, log rollout rewards, no local evals."""
    from openenv_train.runtime import start_local_servers
    from openenv_train.training import JsonlMetricsCallback

    out = cfg.run_dir
    out.mkdir(parents=True, exist_ok=True)
    metrics = JsonlMetricsCallback(out / "metrics.jsonl")

    async def on_step(step: int, m: dict[str, Any], state: LoopState) -> None:
        metrics.write("train", step, {**m, "reward_mean": state.last_rollout.get("reward_mean")})

    hooks = {"on_step": on_step, "log": metrics.write}
    with start_local_servers(cfg.env.app, cfg.env.num_servers) as servers:
        state, final = run_blocking(_train(cfg, Path(cfg.forge.model), servers.base_urls, hooks))
    summary = {
        "name": cfg.name,
        "backend": "forge",
        "steps": state.step,
        "episodes": state.episodes,
    }
    (out / "summary.json").write_text(json.dumps({**summary, "buffer": final["buffer"]}, indent=2))
    return summary


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        console.print("usage: python -m recipes.forge_grpo_blackjack.train CONFIG.yaml")
        return 2
    try:
        run(load_config(args[0]))
    except KeyboardInterrupt:
        console.print("interrupted; every actor and env server was stopped")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
