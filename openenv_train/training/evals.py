"""The evaluation bookkeeping every GRPO recipe shares: greedy evals before, during (the curve)
and after training, the best weights (kept in memory and checkpointed to ``best/`` when they
improve), rollout metrics, progress, ``summary.json`` and ``curve.png``.

A recipe subclasses :class:`RunEvals` with its own greedy eval, score and table.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()


def results_table(
    title: str,
    rows: Mapping[str, Mapping[str, float]],
    columns: Sequence[tuple[str, str, str]],
) -> Table:
    """A rich table of named eval results: one row per policy, one column per ``(header, key,
    format spec)``; a key a row lacks shows as ``-``."""
    table = Table(title=title)
    table.add_column("policy", justify="left")
    for header, _, _ in columns:
        table.add_column(header, justify="right")
    for name, r in rows.items():
        table.add_row(
            name, *(format(r[key], spec) if key in r else "-" for _, key, spec in columns)
        )
    return table


class RunEvals:
    """Subclasses set ``score_key``, ``panels``, ``title`` and implement :meth:`greedy`,
    :meth:`table` and :meth:`line` (the one-line eval report)."""

    score_key = "mean_return"
    panels: tuple[tuple[str, str], ...] = (("mean_return", "mean return"),)
    curve_baselines: dict[str, dict[str, float]] = {}

    def __init__(
        self, cfg: Any, model: Any, tokenizer: Any, metrics: Any, *, started: float | None = None
    ) -> None:
        from openenv_train.training import (
            LogProgressCallback,
            PeriodicEvalCallback,
            RichProgressCallback,
        )

        self.cfg, self.model, self.tokenizer, self.metrics = cfg, model, tokenizer, metrics
        self.curve: list[tuple[int, dict[str, float]]] = []
        self.best: dict[str, Any] = {}
        self.rows: dict[str, dict[str, float]] = {}
        self.baselines: dict[str, dict[str, float]] = {}
        self.episodes = self.batches = 0
        self.started = time.perf_counter() if started is None else started
        self.train_s = 0.0
        self._train_t0 = time.perf_counter()
        self.run_dir = Path(cfg.run_dir)
        self.progress: Any = None
        if cfg.progress:
            self.progress = LogProgressCallback.or_rich(
                RichProgressCallback(f"GRPO {cfg.name}", fields=("reward", "entropy")),
                every=cfg.grpo.logging_steps,
            )
        self.periodic = PeriodicEvalCallback(
            lambda _model: self.validate(), cfg.eval.every, self._on_eval
        )

    # -- what a recipe provides ----------------------------------------------------------------

    def greedy(self, n: int | None = None, seed: int | None = None) -> dict[str, float]:
        """Greedy play of the live model: the final eval (defaults) or ``n`` games from ``seed``."""
        raise NotImplementedError

    def validate(self) -> dict[str, float]:
        """The periodic eval (validation games, seeded apart from the final ones)."""
        raise NotImplementedError

    def table(self, title: str, rows: dict[str, dict[str, float]]) -> Any:
        raise NotImplementedError

    def line(self, step: int, m: dict[str, float]) -> str:
        return f"step {step}: greedy {self.score_key} {m[self.score_key]:+.3f}"

    def status(self, m: dict[str, float]) -> dict[str, float]:
        return {self.score_key: m[self.score_key]}

    # -- the run -------------------------------------------------------------------------------

    def before(self) -> None:
        """The untrained model on the final games (printed) and on the validation games."""
        t0 = time.perf_counter()
        self.rows["model before"] = before = self.greedy()
        console.print(f"eval before training: {time.perf_counter() - t0:.1f}s")
        self.metrics.write("eval_before", 0, before)
        console.print(self.table("before training (greedy)", {"model": before, **self.baselines}))
        self._on_eval(0, self.validate())  # the curve's first point (also in metrics.jsonl)

    def restore(self, rows: list[dict[str, Any]]) -> None:
        """Pick up a resumed run: its eval before, curve, episode count and best checkpoint."""
        drop = ("kind", "step", "time_s")
        for row in rows:
            data = {k: v for k, v in row.items() if k not in drop}
            if row.get("kind") == "eval_before":
                self.rows["model before"] = data
                self.curve = [c for c in self.curve if c[0] != 0]
            elif row.get("kind") == "rollout":
                self.batches = max(self.batches, int(row["step"]))
                self.episodes = max(self.episodes, int(data.get("episodes", 0)))
            elif row.get("kind") == "eval":
                self.curve = [c for c in self.curve if c[0] != row["step"]] + [(row["step"], data)]
                self.episodes = max(self.episodes, int(data.get("episodes", 0)))
        best = self.run_dir / "best" / "best.json"
        if best.is_file():
            self.best.update(json.loads(best.read_text()))

    def callbacks(self) -> list[Any]:
        return [self.metrics, self.periodic] + ([self.progress] if self.progress else [])

    def bind(self, trainer: Any) -> None:
        """Attach to the trainer just built (periodic evals sample its live model)."""
        self.periodic.bind(trainer)
        if self.progress is not None:  # our progress replaces the printed log dicts
            from transformers.trainer_callback import PrinterCallback

            trainer.remove_callback(PrinterCallback)
        self._train_t0 = time.perf_counter()

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
        self.curve = [c for c in self.curve if c[0] != step] + [(step, m)]
        better = m[self.score_key] > self.best.get("score", float("-inf"))
        if self.cfg.eval.keep_best and step > 0 and better:
            self._checkpoint_best(step, m[self.score_key])
        self.metrics.write("eval", step, m)
        if self.progress is not None:
            self.progress.set_status(**self.status(m))
        else:
            console.print(self.line(step, m))

    def _checkpoint_best(self, step: int, score: float) -> None:
        """Keep the best weights in memory and on disk (``best/``), so Ctrl-C or a crash keeps them."""
        state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.best.update(step=step, score=score, state=state)
        best = self.run_dir / "best"
        self.model.save_pretrained(str(best))
        self.tokenizer.save_pretrained(str(best))
        (best / "best.json").write_text(json.dumps({"step": step, "score": score}))

    def load_best(self) -> bool:
        """Load the best weights into the model (memory, else ``best/``); False when none."""
        if "state" in self.best:
            self.model.load_state_dict(self.best["state"])
            return True
        if self.best and (self.run_dir / "best").is_dir():
            from transformers import AutoModelForCausalLM

            saved = AutoModelForCausalLM.from_pretrained(str(self.run_dir / "best"))
            self.model.load_state_dict(saved.state_dict())
            return True
        return False

    def after(self, trainer: Any, urls: Any = ()) -> None:
        """Final evals of the last weights and (loaded into the model) the best periodic ones."""
        self.train_s = time.perf_counter() - self._train_t0
        step = trainer.state.global_step
        self.model = trainer.model
        self.set_model(self.model)
        t0 = time.perf_counter()
        self.rows[f"model after (last, step {step})"] = last = self.greedy()
        console.print(f"eval after training: {time.perf_counter() - t0:.1f}s")
        self.metrics.write("eval_after", step, {**last, "which": "last"})
        self.last, self.after_, self.saved_step = last, last, step
        if self.best and self.best["step"] != step and self.load_best():
            self.after_ = self.greedy()
            self.saved_step = self.best["step"]
            self.rows[f"model after (best periodic eval, step {self.saved_step}, saved)"] = (
                self.after_
            )
            self.metrics.write("eval_after", self.saved_step, {**self.after_, "which": "best"})
        title = f"after {step} GRPO steps (greedy)"
        console.print(self.table(title, {**self.rows, **self.baselines}))

    def set_model(self, model: Any) -> None:
        """The model the evals sample (the trainer may wrap or replace it)."""
        self.model = model

    def interrupted(self, trainer: Any) -> None:
        """Ctrl-C: no final evals; the best weights so far go to ``model/`` (else the last)."""
        self.train_s = time.perf_counter() - self._train_t0
        step = trainer.state.global_step if trainer is not None else 0
        if trainer is not None:
            self.set_model(trainer.model)
        self.last = self.after_ = None  # type: ignore[assignment]
        self.saved_step = step
        if self.best and self.best["step"] != step and self.load_best():
            self.saved_step = self.best["step"]

    def summary_extra(self) -> dict[str, Any]:
        return {}

    def finish(
        self, model_dir: Path, *, interrupted: bool = False, checkpoint: str | None = None
    ) -> dict[str, Any]:
        """Write curve.png and summary.json; returns the summary."""
        from openenv_train.training import plot_learning_curve

        out, cfg = self.run_dir, self.cfg
        png = plot_learning_curve(
            self.curve,
            out / "curve.png",
            baselines=self.curve_baselines,
            title=self.title(),
            panels=self.panels,
        )
        summary: dict[str, Any] = {
            "name": cfg.name,
            "interrupted": interrupted,
            "before": self.rows.get("model before"),
            "after": self.after_,
            "after_last": self.last,
            "saved_step": self.saved_step,
            "baselines": self.baselines,
            "curve": [{"step": s, **m} for s, m in self.curve],  # on the validation games
            "episodes": self.episodes,
            "train_seconds": round(self.train_s, 1),
            "wall_seconds": round(time.perf_counter() - self.started, 1),
            "model_dir": str(model_dir),
            "curve_png": str(png),
            "metrics_jsonl": str(self.metrics.path),
            "checkpoint": checkpoint,  # the trainer state --resume continues from
            **self.summary_extra(),
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
        how = "interrupted" if interrupted else "done"
        console.print(
            f"{how} after {summary['wall_seconds']}s (training {summary['train_seconds']}s, "
            f"{self.episodes:,} episodes); model -> {model_dir}, curve -> {png}, "
            f"metrics -> {self.metrics.path}"
        )
        return summary

    def title(self) -> str:
        return f"GRPO ({self.cfg.name}): greedy play on validation games"
