"""Greedy evaluation of a BlackJack policy on fresh seeded hands, beside the baselines.

The policy plays in-process on ``blackjack_env.game`` (the same rules module the env server runs,
dealt with the same seeds), so a 20k-hand eval takes seconds instead of minutes of round trips.
Hands run through the same episode loop and ``TokenCodec`` as training: the model sees the same
contexts. ``evaluate_via_servers`` plays the same hands through the real servers and the rollout
engine instead (slower; it proves the two agree). ``TrainingEval`` is the bookkeeping of one
training run (evals before, during and after, the best weights, the summary);
``evaluate_saved_model`` is the recipe's evaluator for ``openenv-train eval``.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from blackjack_env.game import HIT, STAND, BlackjackGame, basic_strategy, rank_label
from blackjack_env.text_spec import decision_text, game_view, parse_answer
from rich.console import Console
from rich.table import Table

from openenv_train.client.sync import run_blocking
from openenv_train.policy.base import Generation
from openenv_train.rollout.batcher import GenerationBatcher
from openenv_train.rollout.episode import Reply, RolloutConfig, play_episode
from openenv_train.rollout.tokens import TokenCodec

EVAL_BATCH = 4096
#: Periodic (validation) evals deal from seed + this, apart from the final eval's hands.
VALIDATION_OFFSET = 10_000_000
console = Console()


def summarize(rewards: Sequence[float], invalid: int = 0) -> dict[str, float]:
    n = max(1, len(rewards))
    return {
        "win": sum(r > 0 for r in rewards) / n,
        "push": sum(r == 0 for r in rewards) / n,
        "loss": sum(r < 0 for r in rewards) / n,
        "mean_return": sum(rewards) / n,
        "invalid": invalid / n,
        "hands": len(rewards),
    }


def play_scripted(
    choose: Callable[[BlackjackGame, random.Random], int], hands: int, seed: int
) -> dict[str, float]:
    """Play ``hands`` seeded hands with a Python policy (the baselines)."""
    rng = random.Random(seed ^ 0x5EED)
    rewards = []
    for k in range(hands):
        game = BlackjackGame.deal(seed=seed + k)
        while not game.done:
            game.apply(choose(game, rng))
        rewards.append(game.reward)
    return summarize(rewards)


BASELINES: dict[str, Callable[[BlackjackGame, random.Random], int]] = {
    "random": lambda g, rng: rng.choice((HIT, STAND)),
    "always stand": lambda g, rng: STAND,
    "basic strategy": lambda g, rng: basic_strategy(
        g.player_total, g.player_soft, rank_label(g.dealer_upcard)
    ),
}


def baselines(hands: int, seed: int) -> dict[str, dict[str, float]]:
    """Random, always-stand and basic-strategy results on the same seeded hands."""
    return {name: play_scripted(fn, hands, seed) for name, fn in BASELINES.items()}


def evaluate_policy(
    policy: Any,
    hands: int,
    seed: int,
    *,
    max_turns: int = 8,
    max_new_tokens: int = 4,
    system_prompt: str | None = None,
) -> dict[str, float]:
    """Greedy play of ``policy`` on seeded hands, through the same episode loop as training.

    Hands are played ``EVAL_BATCH`` at a time; every turn of the hands still in play is one
    batched policy call. An unparsable answer ends the hand with -1 (as in training) and counts
    as ``invalid``; running out of turns is -1 too (the engine's truncation reward).
    """
    config = RolloutConfig(
        max_turns=max_turns,
        max_new_tokens=max_new_tokens,
        temperature=0.0,
        max_batch_size=EVAL_BATCH,
        system_prompt=system_prompt,
    )

    async def play(hand: int, batcher: GenerationBatcher, codec: TokenCodec) -> tuple[float, str]:
        game = BlackjackGame.deal(seed=seed + hand)

        async def respond(gen: Generation) -> Reply:
            action = parse_answer(gen.text)
            if action is None:
                return Reply(stop="invalid")
            game.apply(action)
            if game.done:
                return Reply(stop="done")
            return Reply([{"role": "user", "content": decision_text(game_view(game))}])

        system = [{"role": "system", "content": system_prompt}] if system_prompt else []
        batcher.register()
        try:
            episode = await play_episode(
                [*system, {"role": "user", "content": decision_text(game_view(game))}],
                generate=batcher.generate,
                codec=codec,
                config=config,
                respond=respond,
            )
        finally:
            batcher.unregister()
        return (float(game.reward) if episode.stop == "done" else -1.0), episode.stop

    async def play_all() -> list[tuple[float, str]]:
        codec = TokenCodec(policy.tokenizer)
        batcher = GenerationBatcher(policy, max_batch_size=EVAL_BATCH, max_wait_s=60.0)
        results: list[tuple[float, str]] = []
        try:
            for start in range(0, hands, EVAL_BATCH):
                chunk = range(start, min(hands, start + EVAL_BATCH))
                results += await asyncio.gather(*(play(k, batcher, codec) for k in chunk))
        finally:
            await batcher.aclose()
        return results

    results = run_blocking(play_all())  # also from a notebook's running loop
    return summarize([r for r, _ in results], sum(stop == "invalid" for _, stop in results))


def evaluate_via_servers(
    policy: Any, servers: Sequence[Any], hands: int, seed: int, **rollout_kw: Any
) -> dict[str, float]:
    """The same greedy eval through the real env servers and the rollout engine."""

    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.rollout.engine import RolloutConfig, RolloutEngine

    spec = BlackjackTextSpec(seed=seed)
    config = RolloutConfig(temperature=0.0, **rollout_kw)

    async def run() -> list[float]:
        async with RolloutEngine(spec, policy, servers, config) as engine:
            batch = await engine.run(["eval"] * hands, 1)
        return [r.reward for r in batch.records]

    rewards = run_blocking(run())
    return summarize(rewards)


def results_table(title: str, rows: dict[str, dict[str, float]]) -> Table:
    """Win / push / loss / mean return / invalid of each named result, as a rich table."""
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


def evaluate_saved_model(
    model_dir: str | Path, *, episodes: int | None = None, seed: int | None = None
) -> dict[str, dict[str, float]]:
    """The recipe's evaluator (``openenv-train eval``): greedy play of a saved model on fresh
    hands beside the baselines (defaults: the config's 20,000 hands and eval seed)."""
    import torch

    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.policy.transformers_policy import TransformersPolicy

    from .config import EvalSection

    hands = episodes or EvalSection().hands
    seed = EvalSection().seed if seed is None else seed
    torch.set_num_threads(1)  # tiny models: more threads only spin
    model, tokenizer = load_tiny_model(model_dir)
    rows = {"model": evaluate_policy(TransformersPolicy(model, tokenizer), hands, seed)}
    rows.update(baselines(hands, seed))
    console.print(results_table(f"{model_dir} ({hands} fresh hands, greedy)", rows))
    return rows


class TrainingEval:
    """The evaluation bookkeeping of one training run.

    Greedy evals on ``eval.hands`` fresh hands before and after training beside the baselines;
    periodic greedy evals on validation hands (the learning curve; seeded apart from the final
    hands, so watching them selects nothing); the best periodic weights (``eval.keep_best``);
    rollout metrics and the progress bar; ``summary.json`` and ``curve.png``.
    """

    def __init__(
        self, cfg: Any, model: Any, tokenizer: Any, metrics: Any, *, started: float | None = None
    ) -> None:
        from openenv_train.policy.transformers_policy import TransformersPolicy
        from openenv_train.trainers import PeriodicEvalCallback, RichProgressCallback

        self.cfg, self.model, self.tokenizer, self.metrics = cfg, model, tokenizer, metrics
        device = str(next(model.parameters()).device)
        self.policy = TransformersPolicy(model, tokenizer, device=device)
        ev = cfg.eval
        self.val_seed = ev.seed + VALIDATION_OFFSET
        self.baselines = baselines(ev.hands, ev.seed)
        self.val_baselines = baselines(ev.periodic_hands, self.val_seed)
        self.curve: list[tuple[int, dict[str, float]]] = []
        self.best: dict[str, Any] = {}
        self.rows: dict[str, dict[str, float]] = {}
        self.episodes = self.batches = 0
        self.started = time.perf_counter() if started is None else started  # for wall_s
        self.train_s = 0.0
        self.progress = (
            RichProgressCallback(f"GRPO {cfg.name}", fields=("reward", "entropy"))
            if cfg.progress
            else None
        )
        self.periodic = PeriodicEvalCallback(
            lambda _model: self.greedy(ev.periodic_hands, self.val_seed), ev.every, self._on_eval
        )

    def greedy(self, hands: int, seed: int | None = None) -> dict[str, float]:
        r = self.cfg.rollout
        return evaluate_policy(
            self.policy,
            hands,
            self.cfg.eval.seed if seed is None else seed,
            max_turns=r.max_turns,
            max_new_tokens=r.max_new_tokens,
            system_prompt=r.system_prompt,
        )

    def before(self) -> None:
        """The untrained model on the final hands (printed) and on the validation hands."""
        ev = self.cfg.eval
        t0 = time.perf_counter()
        self.rows["model before"] = before = self.greedy(ev.hands)
        console.print(f"eval before training: {ev.hands} hands in {time.perf_counter() - t0:.1f}s")
        self.metrics.write("eval_before", 0, before)
        title = f"before training ({ev.hands} fresh hands, greedy)"
        console.print(results_table(title, {"model": before, **self.baselines}))
        self.curve.append((0, self.greedy(ev.periodic_hands, self.val_seed)))

    def callbacks(self) -> list[Any]:
        return [self.metrics, self.periodic] + ([self.progress] if self.progress else [])

    def bind(self, trainer: Any) -> None:
        """Attach to the trainer just built (periodic evals sample its live model)."""
        self.periodic.bind(trainer)
        if self.progress is not None:  # the rich bar replaces the printed log dicts
            from transformers.trainer_callback import PrinterCallback

            trainer.remove_callback(PrinterCallback)
        self.train_s = time.perf_counter()

    def on_batch(self, batch: Any) -> None:
        """Every rollout batch: count episodes, log the rollout metrics every logging_steps."""
        self.episodes += len(batch.rows)
        self.batches += 1
        if self.batches % self.cfg.grpo.logging_steps == 0:
            numeric = {k: v for k, v in batch.metrics.items() if isinstance(v, (int, float))}
            self.metrics.write("rollout", self.batches, {**numeric, "episodes": self.episodes})
        if self.progress is not None:
            self.progress.set_status(episodes=self.episodes)

    def _on_eval(self, step: int, m: dict[str, float]) -> None:
        m["episodes"] = self.episodes
        m["wall_s"] = round(time.perf_counter() - self.started, 1)
        self.curve.append((step, m))
        better = m["mean_return"] > self.best.get("score", float("-inf"))
        if self.cfg.eval.keep_best and step > 0 and better:
            state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            self.best.update(step=step, score=m["mean_return"], state=state)
        self.metrics.write("eval", step, m)
        if self.progress is not None:
            self.progress.set_status(win=m["win"], ret=m["mean_return"])
        else:
            console.print(
                f"step {step}: greedy win {m['win']:.1%}, mean return {m['mean_return']:+.3f}"
            )

    def after(self, trainer: Any, servers: Sequence[str]) -> None:
        """Final evals of the last weights and (loaded into the model) the best periodic ones."""
        self.train_s = time.perf_counter() - self.train_s
        ev, step = self.cfg.eval, trainer.state.global_step
        self.model = trainer.model
        self.policy.set_model(self.model)
        t0 = time.perf_counter()
        self.rows[f"model after (last, step {step})"] = last = self.greedy(ev.hands)
        console.print(f"eval after training: {ev.hands} hands in {time.perf_counter() - t0:.1f}s")
        self.metrics.write("eval_after", step, {**last, "which": "last"})
        self.last, self.after_, self.saved_step = last, last, step
        if self.best and self.best["step"] != step:
            self.model.load_state_dict(self.best["state"])
            self.after_ = self.greedy(ev.hands)
            self.saved_step = self.best["step"]
            self.rows[f"model after (best periodic eval, step {self.saved_step}, saved)"] = (
                self.after_
            )
            self.metrics.write("eval_after", self.saved_step, {**self.after_, "which": "best"})
        if ev.final_via_servers:
            self.rows["model after (via servers)"] = evaluate_via_servers(
                self.policy, servers, ev.hands, ev.seed
            )
        title = f"after {step} GRPO steps ({ev.hands} fresh hands, greedy)"
        console.print(results_table(title, {**self.rows, **self.baselines}))

    def finish(self, out: Path, model_dir: Path) -> dict[str, Any]:
        """Write curve.png and summary.json; returns the summary."""
        from openenv_train.trainers import plot_learning_curve

        cfg = self.cfg
        png = plot_learning_curve(
            self.curve,
            out / "curve.png",
            baselines={k: self.val_baselines[k] for k in ("always stand", "basic strategy")},
            title=f"GRPO BlackJack ({cfg.name}): greedy play on "
            f"{cfg.eval.periodic_hands:,} validation hands",
        )
        summary = {
            "name": cfg.name,
            "before": self.rows["model before"],
            "after": self.after_,
            "after_last": self.last,
            "saved_step": self.saved_step,
            "baselines": self.baselines,
            "curve": [{"step": s, **m} for s, m in self.curve],  # on the validation hands
            "validation_baselines": self.val_baselines,
            "episodes": self.episodes,
            "train_seconds": round(self.train_s, 1),
            "wall_seconds": round(time.perf_counter() - self.started, 1),
            "model_dir": str(model_dir),
            "curve_png": str(png),
            "metrics_jsonl": str(self.metrics.path),
        }
        if "model after (via servers)" in self.rows:
            summary["after_via_servers"] = self.rows["model after (via servers)"]
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
        console.print(
            f"done in {summary['wall_seconds']}s (training {summary['train_seconds']}s, "
            f"{self.episodes:,} episodes); model -> {model_dir}, curve -> {png}, "
            f"metrics -> {self.metrics.path}"
        )
        return summary
