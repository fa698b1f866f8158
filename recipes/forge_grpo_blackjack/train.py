"""GRPO BlackJack as a torchforge app: forge's actor graph and loop on Monarch, on a CPU.

config -> tiny Llama + format warm-up -> greedy eval before -> local BlackJack servers -> Monarch
actors (generator, rollouts, trainer, replay buffer) -> forge's loop (``app.run_loop``) with
periodic greedy evals -> final eval beside the baselines -> ``metrics.jsonl``, ``curve.png``,
``summary.json``, ``model/``. Every actor process and env server stops at the end, Ctrl-C too.

The GRPO recipes' run folder and lifecycle: Ctrl-C / SIGTERM finish the step, save
``trainer/checkpoint-N`` (also at every periodic eval), ``model/``, the curve and the summary,
exit 130. ``--resume`` restores the trainer actor (weights, AdamW, lr schedule, entropy control,
step) and the loop's counts; the replay buffer starts empty (it holds the last ``off_by_n``
versions only). Run: ``openenv-train train configs/forge_grpo_blackjack_cpu.yaml``.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from openenv_train.client.sync import run_blocking
from openenv_train.training.lifecycle import (
    GracefulStop,
    RunFolder,
    end_run,
    signals_ignored,
    write_summary,
)

from .app import LoopState, run_loop, spawn_monarch
from .config import ForgeRecipeConfig
from .prep import Progress, console, prepare_model, start_servers


async def _train(
    cfg: ForgeRecipeConfig, model_dir: Path, urls: list[str], hooks: dict[str, Any], run_dir: Path
) -> tuple[LoopState, dict[str, Any]]:
    from openenv_train.training.forge.checkpoint import load_checkpoint, save_checkpoint
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
        up = time.perf_counter() - t0
        console.print(f"actor graph up in {up:.1f}s ({len(graph.meshes)} Monarch processes)")
        state, checkpoints = LoopState(), run_dir / "trainer"
        if hooks.get("resume_from"):
            state = LoopState(**await load_checkpoint(actors.trainer, hooks["resume_from"]))
            await actors.push(state.step)  # the generator samples with the resumed weights
            console.print(f"resumed from {hooks['resume_from']} at step {state.step}")

        async def checkpoint(s: LoopState) -> None:
            counts = {k: getattr(s, k) for k in ("episodes", "rollouts", "dropped_groups")}
            await save_checkpoint(actors.trainer, checkpoints, s.step, counts)

        async def on_step(step: int, m: dict[str, Any], s: LoopState) -> None:
            await hooks["on_step"](step, m, s)
            if hooks["saves"] and step % cfg.eval.every == 0 and step != cfg.steps:
                await checkpoint(s)

        try:
            start = state.step
            state = await run_loop(
                cfg, actors, on_step=on_step, log=hooks["log"], state=state, stop_requested=hooks["stop"]
            )  # fmt: skip
            if hooks["saves"] and hooks["stop"]():
                await checkpoint(state)
            # forge's trainer pushes to torchstore and keeps its checkpoints itself
            final = None if cfg.backend == "forge" else await actors.trainer.push_weights.call_one(state.step)  # fmt: skip
            buffer_stats = await actors.replay_buffer.stats.call_one()
        finally:
            closing = (asyncio.wait_for(r.close.call_one(), 10) for r in actors.rollouts)
            await asyncio.gather(*closing, return_exceptions=True)  # sessions before processes
            if cfg.backend == "forge":
                from .forge_backend import shutdown_forge

                await shutdown_forge()
    return state, {"weights": final, "buffer": buffer_stats, "start_step": start}


def run(cfg: ForgeRecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    if cfg.backend == "forge":
        from .forge_backend import run_forge

        return run_forge(cfg, _train)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # also in the actor processes
    import torch
    from transformers.utils import logging as hf_logging

    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.training import JsonlMetricsCallback

    from .evals import ForgeEvals, loop_hooks

    hf_logging.disable_progress_bar()
    torch.set_num_threads(cfg.trainer.threads)
    torch.manual_seed(cfg.seed)
    folder = RunFolder(cfg.run_dir, resume=cfg.resume)
    folder.check()
    stop = GracefulStop()
    servers = progress = None
    with stop.installed():
        try:
            folder.create(cfg.model_dump_json(indent=2))
            metrics = JsonlMetricsCallback(folder.path / "metrics.jsonl", append=cfg.resume)
            init = folder.path / "init_model"  # every actor loads it; a checkpoint overrides
            model_dir = init if cfg.resume else prepare_model(cfg, folder.path, metrics.write)
            evals = ForgeEvals(cfg, *load_tiny_model(model_dir), metrics, folder.path)
            if cfg.resume:
                evals.restore(folder.metrics_rows())
            else:
                evals.run_before()
            servers, urls = start_servers(cfg)
            progress = Progress(cfg) if cfg.progress else None
            hooks = loop_hooks(cfg, evals, progress, stop)
            hooks["resume_from"] = folder.last_checkpoint() if cfg.resume else None
            folder.started = True
            stop.on_train_begin(None, None, None)  # from now on Ctrl-C finishes the step
            t0 = time.perf_counter()
            state, final = run_blocking(_train(cfg, model_dir, urls, hooks, folder.path))
            train_s = time.perf_counter() - t0
        except BaseException:
            folder.discard()  # a start that failed leaves no run folder (kept once training began)
            raise
        finally:
            stop.on_train_end(None, None, None)
            with signals_ignored():
                if progress is not None:
                    progress.stop()
                if servers is not None:
                    servers.stop()
    summary = _finish(cfg, folder, evals, state, final, interrupted=stop.requested, train_s=train_s)
    end_run(
        folder.path,
        interrupted=stop.requested,
        next_step=f"model: {folder.path / 'model'}",
        config=cfg.source,
    )
    return summary


def _finish(
    cfg: ForgeRecipeConfig,
    folder: RunFolder,
    evals: Any,
    state: LoopState,
    final: dict[str, Any],
    *,
    interrupted: bool,
    train_s: float,
) -> dict[str, Any]:
    """Final evals (none after Ctrl-C), ``model/`` (the best periodic weights, or the last),
    ``curve.png`` and ``summary.json``; Ctrl-C cannot cut these files in half."""
    with signals_ignored():
        model, tokenizer = evals.model, evals.tokenizer
        model.load_state_dict(final["weights"])
        if interrupted:  # keep the best weights (or the last), quickly
            after = {
                "saved_step": evals.best["step"] if evals.load_best(state.step) else state.step
            }
        else:
            after = evals.after(state.step)
        run_blocking(evals.policy.aclose())  # the eval policy's worker thread
        model.save_pretrained(folder.path / "model")
        tokenizer.save_pretrained(folder.path / "model")
        steps_here = max(1, state.step - final["start_step"])
        summary = {
            "name": cfg.name,
            "backend": cfg.backend,
            **evals.summary(evals.plot(folder.path / "curve.png")),
            **after,
            "steps": state.step,
            "episodes": state.episodes,
            "dropped_groups": state.dropped_groups,
            "buffer": final["buffer"],
            "train_seconds": round(train_s, 1),
            "seconds_per_step": round(train_s / steps_here, 3),
            "wall_seconds": round(time.perf_counter() - evals.started, 1),
            "interrupted": interrupted,
            "resumed": cfg.resume,
            "checkpoint": folder.last_checkpoint(),
            "model_dir": str(folder.path / "model"),
            "metrics_jsonl": str(evals.metrics.path),
        }
        write_summary(folder.path, summary)
    console.print(
        f"{state.step} steps ({summary['seconds_per_step']}s/step, {state.episodes:,} episodes) in "
        f"{summary['wall_seconds']}s; curve -> {summary['curve_png']}, metrics -> {evals.metrics.path}"
    )
    return summary
