"""GRPO guess-the-number: a tiny model learns a multi-turn search through TRL's environment_factory.

config -> tiny Llama + word-level tool tokenizer (or a saved folder) -> tool-format warm-up on
random guesses (no strategy) -> greedy eval before, beside the random / random-consistent /
binary-search baselines on the same fresh games -> guess_number_env servers -> the env's MCP tool
``guess`` becomes a TRL environment class (``make_environment_class``; one WebSocket session per
instance, the env owns the reward) -> ``GRPOTrainer(environment_factory=...)`` with periodic
greedy evals -> eval after -> ``runs/<name>/``: model/, metrics.jsonl, curve.png, summary.json.

Run: ``openenv-train train configs/grpo_guess_number_cpu.yaml``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from openenv_train.training.evals import results_table as common_results_table

from .config import RecipeConfig, load_config

#: The eval table's columns: (header, key, format).
COLUMNS = (
    ("solved", "solve_rate", ".1%"),
    ("mean guesses (solved)", "mean_guesses", ".2f"),
    ("mean reward", "mean_reward", ".3f"),
    ("malformed turns", "invalid", ".1%"),
)

console = Console()
RESET_KEYS = ("seed", "low", "high", "max_turns", "show_range")


def _table(title: str, rows: dict[str, dict[str, float]]) -> Table:
    """Solved / mean guesses / mean reward / malformed turns of each named result."""
    return common_results_table(title, rows, COLUMNS)


def _model(cfg: RecipeConfig) -> tuple[Any, Any]:
    from openenv_train.policy.tiny import load_tiny_model

    from .tool_model import (
        CHAT_TEMPLATE,
        RESPONSE_TEMPLATE,
        build_tool_model,
        random_conversation,
        tool_warmup,
    )

    g, m = cfg.game, cfg.model
    if m.path:
        model, tokenizer = load_tiny_model(m.path)
        tokenizer.chat_template, tokenizer.response_template = CHAT_TEMPLATE, RESPONSE_TEMPLATE
    else:
        t = m.tiny
        model, tokenizer = build_tool_model(
            g.low, g.high, g.max_turns, g.show_range,
            hidden_size=t.hidden_size, num_layers=t.num_layers, num_heads=t.num_heads,
            intermediate_size=t.intermediate_size, initializer_range=t.init_std, seed=t.seed,
        )  # fmt: skip
    console.print(
        f"model: {m.path or 'tiny Llama (built here)'}, {sum(p.numel() for p in model.parameters()):,} parameters"
    )
    if m.warmup_steps:
        t0 = time.perf_counter()
        first, last = tool_warmup(
            model, tokenizer,
            lambda rng: random_conversation(rng, g.low, g.high, g.max_turns, g.show_range, m.warmup_guesses),
            m.warmup_steps, m.warmup_batch_size, m.warmup_learning_rate, cfg.seed,
        )  # fmt: skip
        console.print(
            f"tool-format warm-up: {m.warmup_steps} steps, loss {first:.3f} -> {last:.3f} ({time.perf_counter() - t0:.1f}s)"
        )
    return model, tokenizer


def _grpo_args(cfg: RecipeConfig) -> Any:
    from trl import GRPOConfig

    g = cfg.grpo
    kwargs: dict[str, Any] = dict(
        output_dir=str(cfg.run_dir / "trainer"),
        max_steps=g.max_steps,
        num_generations=g.num_generations,
        per_device_train_batch_size=g.per_device_train_batch_size,
        learning_rate=g.learning_rate,
        lr_scheduler_type=g.lr_scheduler_type,
        beta=g.beta,
        temperature=g.temperature,
        loss_type=g.loss_type,
        max_completion_length=g.max_completion_length,
        max_tool_calling_iterations=cfg.game.max_turns,
        generation_kwargs={"max_new_tokens": g.max_new_tokens_per_turn},
        use_cpu=g.use_cpu,
        bf16=g.bf16,
        gradient_checkpointing=False,
        logging_steps=g.logging_steps,
        report_to=cfg.report_to or "none",
        save_strategy="no",
        seed=cfg.seed,
        disable_tqdm=cfg.progress,
        dataloader_num_workers=0,
    )
    kwargs.update(g.extra)
    try:
        return GRPOConfig(**kwargs)
    except TypeError as err:
        raise ValueError(f"grpo.extra: {err}; use GRPOConfig field names (trl 1.16)") from None


def environment_class(urls: list[str]) -> type:
    """The TRL environment class: the server's ``guess`` tool as a method, the env's reward; an
    episode in which the model never called the tool scores 0 (its own failure, not the env's)."""
    from guess_number_env import GuessNumberEnv

    from openenv_train.training import make_environment_class

    base = make_environment_class(
        urls,
        name="GuessNumberTools",
        client_cls=GuessNumberEnv,
        reset_keys=RESET_KEYS,
        render_reset=lambda result: result.observation.text,
    )

    class GuessNumberEnvironment(base):  # type: ignore[misc, valid-type]
        def get_reward(self) -> float:
            reward = super().get_reward()
            return 0.0 if reward is None else reward

    return GuessNumberEnvironment


def run(cfg: RecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from trl import GRPOTrainer

    from openenv_train.runtime import start_local_servers
    from openenv_train.training import (
        JsonlMetricsCallback,
        LogProgressCallback,
        PeriodicEvalCallback,
        RichProgressCallback,
        plot_learning_curve,
        quiet_third_party,
    )
    from openenv_train.training.lifecycle import GracefulStop

    from .evaluate import baselines, evaluate_model

    quiet_third_party()
    if cfg.grpo.torch_threads:
        torch.set_num_threads(cfg.grpo.torch_threads)
    torch.manual_seed(cfg.seed)
    out = cfg.run_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(cfg.model_dump_json(indent=2))
    metrics = JsonlMetricsCallback(out / "metrics.jsonl")
    t_start = time.perf_counter()
    g, ev = cfg.game, cfg.eval
    model, tokenizer = _model(cfg)

    def greedy(n: int, seed: int) -> dict[str, float]:
        return evaluate_model(model, tokenizer, n, seed, g.low, g.high, g.max_turns, g.show_range)

    base = baselines(ev.games, ev.seed, g.low, g.high, g.max_turns)
    val_seed = ev.seed + 10_000_000
    val_base = baselines(ev.periodic_games, val_seed, g.low, g.high, g.max_turns)
    before = greedy(ev.games, ev.seed)
    metrics.write("eval_before", 0, before)
    console.print(
        _table(f"before GRPO ({ev.games} fresh games, greedy)", {"model": before, **base})
    )

    servers: Any = None
    urls = list(cfg.env.base_urls)
    if not urls:
        servers = start_local_servers(
            cfg.env.app, cfg.env.num_servers, startup_timeout=cfg.env.startup_timeout_s
        )
        urls = list(servers.base_urls)
    gr = cfg.grpo
    rows = gr.max_steps * gr.per_device_train_batch_size // gr.num_generations + 64
    first = cfg.seed * 10_000_000  # training games: seeded apart from the eval games
    dataset = Dataset.from_dict(
        {
            "prompt": [[{"role": "user", "content": ""}]] * rows,  # reset() appends the env's text
            "seed": [first + i for i in range(rows)],
            "low": [g.low] * rows,
            "high": [g.high] * rows,
            "max_turns": [g.max_turns] * rows,
            "show_range": [g.show_range] * rows,
        }
    )
    curve: list[tuple[int, dict[str, float]]] = []
    step_times: list[float] = []
    progress = (
        LogProgressCallback.or_rich(
            RichProgressCallback(f"GRPO {cfg.name}", fields=("reward",)),
            every=cfg.grpo.logging_steps,
        )
        if cfg.progress
        else None
    )

    best: dict[str, Any] = {}

    def on_eval(step: int, m: dict[str, float]) -> None:
        m["wall_s"] = round(time.perf_counter() - t_start, 1)
        curve.append((step, m))
        if ev.keep_best and step > 0 and m["mean_reward"] > best.get("score", float("-inf")):
            state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            best.update(step=step, score=m["mean_reward"], state=state)
        metrics.write("eval", step, m)
        if progress is not None:
            progress.set_status(solved=m["solve_rate"], guesses=m["mean_guesses"])
        else:
            console.print(
                f"step {step}: solved {m['solve_rate']:.1%}, mean guesses {m['mean_guesses']:.2f}"
            )

    periodic = PeriodicEvalCallback(
        lambda _m: greedy(ev.periodic_games, val_seed), ev.every, on_eval
    )
    on_eval(0, greedy(ev.periodic_games, val_seed))
    stop = GracefulStop()  # Ctrl-C: finish the step, then the final evals and saves as usual
    try:
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            args=_grpo_args(cfg),
            train_dataset=dataset,
            environment_factory=environment_class(urls),
            callbacks=[stop, metrics, periodic] + ([progress] if progress else []),
        )
        periodic.bind(trainer)
        if progress is not None:
            from transformers.trainer_callback import PrinterCallback

            trainer.remove_callback(PrinterCallback)
        t0 = time.perf_counter()
        with stop.installed():
            trainer.train()
        train_s = time.perf_counter() - t0
        step_times = [train_s / max(1, trainer.state.global_step)]
        model = trainer.model
        last = after = greedy(ev.games, ev.seed)
    finally:
        if servers is not None:
            servers.stop()
    steps = trainer.state.global_step
    metrics.write("eval_after", steps, {**last, "which": "last"})
    rows = {"model before": before, f"model after (last, step {steps})": last}
    if best and best["step"] != steps:
        model.load_state_dict(best["state"])
        after = greedy(ev.games, ev.seed)
        rows[f"model after (best validation, step {best['step']}, saved)"] = after
        metrics.write("eval_after", best["step"], {**after, "which": "best"})
    console.print(
        _table(f"after {steps} GRPO steps ({ev.games} fresh games, greedy)", {**rows, **base})
    )
    model_dir = out / "model"
    trainer.save_model(str(model_dir))
    tokenizer.save_pretrained(str(model_dir))
    png = plot_learning_curve(
        curve,
        out / "curve.png",
        baselines=val_base,
        title=f"GRPO guess-the-number {g.low}..{g.high}, {g.max_turns} turns ({cfg.name}): greedy, {ev.periodic_games} validation games",
        panels=(("solve_rate", "solve rate"), ("mean_guesses", "mean guesses (solved games)")),
    )
    summary = {
        "name": cfg.name,
        "interrupted": stop.requested,
        "before": before,
        "after": after,
        "after_last": last,
        "saved_step": best["step"] if after is not last else steps,
        "baselines": base,
        "curve": [{"step": s, **m} for s, m in curve],
        "validation_baselines": val_base,
        "steps": steps,
        "episodes": steps * gr.per_device_train_batch_size,
        "train_seconds": round(train_s, 1),
        "seconds_per_step": round(step_times[0], 2),
        "wall_seconds": round(time.perf_counter() - t_start, 1),
        "model_dir": str(model_dir),
        "curve_png": str(png),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    console.print(
        f"done in {summary['wall_seconds']}s ({steps} steps, {summary['seconds_per_step']} s/step); curve -> {png}"
    )
    console.print(f"next: openenv-train eval {model_dir}")
    if stop.requested:
        raise KeyboardInterrupt
    return summary


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        console.print("usage: python -m recipes.grpo_guess_number.train CONFIG.yaml")
        return 2
    run(load_config(args[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
