"""The forge app's greedy evals of the controller's copy of the model, beside the baselines.

Before training on ``eval.hands`` fresh hands; every ``eval.every`` steps on validation hands
(seeded apart, the learning curve; the best of them saved to ``best/`` with ``eval.keep_best``);
after training on the fresh hands again, last and best weights. A resumed run takes the eval
before, the curve and the best step back from ``metrics.jsonl`` and ``best/``. ``loop_hooks``
are forge's loop callbacks that run them (with the metrics, the progress bar and the stop request).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from blackjack_env.evaluation import COLUMNS, VALIDATION_OFFSET, baselines, evaluate_policy

from openenv_train.training.periodic_evals import results_table

from .config import ForgeRecipeConfig
from .prep import console


class ForgeEvals:
    """Greedy evals of ``model`` (the trainer's weights are loaded into it before each)."""

    def __init__(
        self, cfg: ForgeRecipeConfig, model: Any, tokenizer: Any, metrics: Any, run_dir: Path
    ) -> None:
        from openenv_train.policy.transformers_policy import TransformersPolicy

        self.cfg, self.model, self.tokenizer, self.metrics = cfg, model, tokenizer, metrics
        self.best_dir = run_dir / "best"
        self.policy = TransformersPolicy(model, tokenizer, num_threads=cfg.trainer.threads)
        ev = cfg.eval
        self.val_seed = ev.seed + VALIDATION_OFFSET
        self.baselines = baselines(ev.hands, ev.seed)
        self.val_baselines = baselines(ev.periodic_hands, self.val_seed)
        self.curve: list[tuple[int, dict[str, float]]] = []
        self.before: dict[str, float] = {}
        self.best: dict[str, Any] = {}  # step, score
        self.started = time.perf_counter()

    def greedy(self, validation: bool = False) -> dict[str, float]:
        ev, r = self.cfg.eval, self.cfg.rollout
        hands, seed = (ev.periodic_hands, self.val_seed) if validation else (ev.hands, ev.seed)
        return evaluate_policy(
            self.policy, hands, seed, max_turns=r.max_turns, max_new_tokens=r.max_new_tokens
        )

    def table(self, title: str, rows: dict[str, dict[str, float]]) -> None:
        title = f"{title} ({self.cfg.eval.hands} fresh hands, greedy)"
        console.print(results_table(title, {**rows, **self.baselines}, COLUMNS))

    def run_before(self) -> None:
        self.before = self.greedy()
        self.metrics.write("eval_before", 0, self.before)
        self.table("before training", {"model": self.before})
        self.curve = [(0, self.greedy(validation=True))]
        self.metrics.write("eval", 0, self.curve[0][1])

    def restore(self, rows: list[dict[str, Any]]) -> None:
        """A resumed run: the eval before, the curve so far and the best step, as saved."""
        keys = ("kind", "step", "time_s")
        clean = [({k: v for k, v in r.items() if k not in keys}, r) for r in rows]
        self.before = next((m for m, r in clean if r["kind"] == "eval_before"), {})
        self.curve = [(r["step"], m) for m, r in clean if r["kind"] == "eval"]
        if (self.best_dir / "best.json").is_file():
            self.best = json.loads((self.best_dir / "best.json").read_text())

    def periodic(self, step: int, weights: dict[str, Any], episodes: int) -> dict[str, float]:
        self.model.load_state_dict(weights)
        e = self.greedy(validation=True)
        e.update(episodes=episodes, wall_s=round(time.perf_counter() - self.started, 1))
        self.curve.append((step, e))
        self.metrics.write("eval", step, e)
        if self.cfg.eval.keep_best and e["mean_return"] > self.best.get("score", float("-inf")):
            self.best = {"step": step, "score": e["mean_return"]}
            self.model.save_pretrained(self.best_dir)
            self.tokenizer.save_pretrained(self.best_dir)
            (self.best_dir / "best.json").write_text(json.dumps(self.best))
        return e

    def load_best(self, last_step: int) -> bool:
        """Load the best periodic weights if they are not the last step's (``True`` then)."""
        if not self.best or self.best["step"] == last_step:
            return False
        from openenv_train.policy.tiny import load_tiny_model

        self.model.load_state_dict(load_tiny_model(self.best_dir)[0].state_dict())
        return True

    def after(self, step: int) -> dict[str, Any]:
        """Final evals of the loaded (last) weights and of the best; leaves the saved ones loaded."""
        last = after = self.greedy()
        rows = {"model before": self.before, f"model after (last, step {step})": last}
        self.metrics.write("eval_after", step, {**last, "which": "last"})
        if self.load_best(step):
            after = self.greedy()
            rows[f"model after (best periodic eval, step {self.best['step']}, saved)"] = after
            self.metrics.write("eval_after", self.best["step"], {**after, "which": "best"})
        self.table(f"after {step} steps", rows)
        return {"after": after, "after_last": last, "saved_step": self.best.get("step", step)
                if after is not last else step}  # fmt: skip

    def summary(self, png: Path) -> dict[str, Any]:
        return {
            "before": self.before,
            "baselines": self.baselines,
            "curve": [{"step": s, **m} for s, m in self.curve],
            "validation_baselines": self.val_baselines,
            "curve_png": str(png),
        }

    def plot(self, path: Path) -> Path:
        from openenv_train.training import plot_learning_curve

        return plot_learning_curve(
            self.curve,
            path,
            baselines={k: self.val_baselines[k] for k in ("always stand", "basic strategy")},
            title=f"forge-style GRPO BlackJack on Monarch ({self.cfg.name}): greedy, "
            f"{self.cfg.eval.periodic_hands:,} validation hands",
        )


def loop_hooks(
    cfg: ForgeRecipeConfig, evals: ForgeEvals, progress: Any, stop: Any
) -> dict[str, Any]:
    """The loop's callbacks: metrics at the first step (a run shows it trains at once) and every
    10 steps, progress, periodic evals, the stop request."""

    async def on_step(step: int, m: dict[str, Any], state: Any) -> None:
        if step == 1 or step % 10 == 0 or step == cfg.steps or stop.requested:
            evals.metrics.write("train", step, {**m, "episodes": state.episodes})
        if progress is not None:
            progress.update(
                step, reward=state.last_rollout.get("reward_mean", 0.0), entropy=m["entropy"]
            )
        if step % cfg.eval.every and step != cfg.steps:
            return
        e = evals.periodic(step, await state.fetch_weights(), state.episodes)
        if progress is not None:
            progress.update(step, win=e["win"], ret=e["mean_return"])
        else:
            console.print(
                f"step {step}: greedy win {e['win']:.1%}, mean return {e['mean_return']:+.3f}"
            )

    return {
        "on_step": on_step,
        "log": evals.metrics.write,
        "stop": lambda: stop.requested,
        "saves": True,
    }
