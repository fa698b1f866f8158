"""The evaluation bookkeeping of one training run: greedy evals before, during (the curve) and
after training, the best weights (kept in memory and checkpointed to ``best/`` when they
improve), rollout counts, progress, ``summary.json`` and ``curve.png``.

A recipe describes its evals as data (:class:`EvalSpec`: its greedy-eval function, score key,
table columns, report line); :class:`Evals` is the same bookkeeping for every recipe.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from openenv_train.rollout.episode import recording

console = Console()
Metrics = dict[str, float]


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


@dataclass
class EvalSpec:
    """What a recipe's evals are. ``greedy(model, validation)`` plays the live model greedily:
    the final games (``validation=False``, before and after training) or the validation games of
    the periodic evals (the curve; seeded apart, so watching them selects nothing)."""

    greedy: Callable[[Any, bool], Metrics]
    #: the metric keep-best maximises
    score_key: str
    #: the tables' columns: (header, metric key, format spec)
    columns: Sequence[tuple[str, str, str]]
    #: the tables' title; ``{}`` is "before training" or "after N GRPO steps"
    table_title: str
    #: the printed report of a periodic eval, formatted with its metrics
    line: str
    #: progress-bar field -> metric key, after each periodic eval
    status: Mapping[str, str]
    #: the curve's panels: (metric key, axis label)
    panels: Sequence[tuple[str, str]]
    curve_title: str
    #: scripted policies on the final games, shown beside the model in the tables
    baselines: dict[str, Metrics] = field(default_factory=dict)
    #: the same on the validation games (summary.json; the curve's dashed lines by default)
    validation_baselines: dict[str, Metrics] = field(default_factory=dict)
    curve_baselines: dict[str, Metrics] | None = None
    #: the trainer log keys the progress bar shows
    progress_fields: tuple[str, ...] = ("reward", "entropy")
    #: episodes per optimizer step, where no rollout batches are counted (environment_factory)
    episodes_per_step: int = 0


def write_trajectories(run_dir: Path, step: int, episodes: list[dict[str, Any]], env: Any) -> Path:
    """``trajectories/step_NNNNNN.jsonl``: one periodic eval's sample, one episode a line, each
    with its ``task`` (its place among the eval's seeded games: the same task at every eval)."""
    folder = run_dir / "trajectories"
    folder.mkdir(exist_ok=True)
    path = folder / f"step_{step:06d}.jsonl"
    name = getattr(env, "app", None)
    with path.open("w") as f:
        for task, episode in enumerate(episodes):
            f.write(json.dumps({"step": step, "task": task, "env": name, **episode}) + "\n")
    return path


class Evals:
    """The eval state of one run (``run``: :class:`~openenv_train.training.lifecycle.Run`)."""

    def __init__(self, run: Any, model: Any, tokenizer: Any, spec: EvalSpec) -> None:
        from openenv_train.training import (
            LogProgressCallback,
            PeriodicEvalCallback,
            RichProgressCallback,
        )

        self.run, self.model, self.tokenizer, self.spec = run, model, tokenizer, spec
        self.cfg, self.metrics = run.cfg, run.metrics
        self.curve: list[tuple[int, Metrics]] = []
        self.best: dict[str, Any] = {}
        self.rows: dict[str, Metrics] = {}
        self.extra: dict[str, Any] = {}  # more summary.json keys (e.g. after_via_servers)
        self.episodes = self.batches = 0
        self.train_s, self._train_t0 = 0.0, time.perf_counter()
        self.last: Metrics | None = None
        self.after_: Metrics | None = None
        self.saved_step = 0
        self.progress: Any = None
        if self.cfg.progress:
            self.progress = LogProgressCallback.or_rich(
                RichProgressCallback(f"GRPO {self.cfg.name}", fields=spec.progress_fields),
                every=self.cfg.grpo.logging_steps,
            )
        self._sample: list[dict[str, Any]] | None = None
        self.periodic = PeriodicEvalCallback(
            lambda _model: self.validation(), self.cfg.eval.every, self.record
        )

    def greedy(self, validation: bool = False) -> Metrics:
        return self.spec.greedy(self.model, validation)

    def validation(self) -> Metrics:
        """A periodic eval (greedy, validation games), keeping a sample of its episodes that
        ``record`` writes for the run viewer; nothing is recorded between evals."""
        limit = self.cfg.eval.trajectories
        if not limit:
            return self.greedy(validation=True)
        with recording(limit) as recorder:
            metrics = self.greedy(validation=True)
        self._sample = recorder.episodes
        return metrics

    def table(self, when: str, rows: dict[str, Metrics]) -> Table:
        return results_table(self.spec.table_title.format(when), rows, self.spec.columns)

    def begin(self) -> None:
        """A fresh run: the untrained model on the final games (printed) and on the validation
        games (the curve's first point). A resumed one: its eval before, curve and best."""
        curve_baselines = self.spec.curve_baselines
        if curve_baselines is None:
            curve_baselines = self.spec.validation_baselines
        if curve_baselines:  # the viewer's dashed lines while the run trains
            (self.run.path / "baselines.json").write_text(json.dumps(curve_baselines))
        if self.run.resume:
            self.restore(self.run.restored)
            console.print(f"resuming {self.run.path} from {self.run.folder.last_checkpoint()}")
            return
        t0 = time.perf_counter()
        self.rows["model before"] = before = self.greedy()
        console.print(f"eval before training: {time.perf_counter() - t0:.1f}s")
        self.metrics.write("eval_before", 0, before)
        console.print(self.table("before training", {"model": before, **self.spec.baselines}))
        self.record(0, self.validation())

    def restore(self, rows: list[dict[str, Any]]) -> None:
        """Pick up a resumed run from its metrics: eval before, curve, episode count, best."""
        for row in rows:
            # metrics.jsonl writes NaN (e.g. mean guesses with none solved) as null
            data = {
                k: float("nan") if v is None else v
                for k, v in row.items()
                if k not in ("kind", "step", "time_s")
            }
            if row.get("kind") == "eval_before":
                self.rows["model before"] = data
            elif row.get("kind") == "rollout":
                self.batches = max(self.batches, int(row["step"]))
                self.episodes = max(self.episodes, int(data.get("episodes", 0)))
            elif row.get("kind") == "eval":
                self.curve = [c for c in self.curve if c[0] != row["step"]] + [(row["step"], data)]
                self.episodes = max(self.episodes, int(data.get("episodes", 0)))
        best = self.run.path / "best" / "best.json"
        if best.is_file():
            self.best.update(json.loads(best.read_text()))

    def callbacks(self) -> list[Any]:
        return [self.metrics, self.periodic] + ([self.progress] if self.progress else [])

    def bind(self, trainer: Any) -> None:
        """Attach to the trainer just built (periodic evals also reach its ``report_to``)."""
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

    def record(self, step: int, m: Metrics) -> None:
        """A periodic eval: the curve, keep-best, metrics.jsonl and the progress line."""
        if self.spec.episodes_per_step:
            self.episodes = step * self.spec.episodes_per_step
        m["episodes"] = self.episodes
        m["wall_s"] = round(time.perf_counter() - self.run.started, 1)
        self.curve = [c for c in self.curve if c[0] != step] + [(step, m)]
        better = m[self.spec.score_key] > self.best.get("score", float("-inf"))
        if self.cfg.eval.keep_best and step > 0 and better:
            self._checkpoint_best(step, m[self.spec.score_key])
        self.metrics.write("eval", step, m)
        if self._sample is not None:
            write_trajectories(self.run.path, step, self._sample, getattr(self.cfg, "env", None))
            self._sample = None
        if self.progress is not None:
            self.progress.set_status(**{k: m[key] for k, key in self.spec.status.items()})
        else:
            console.print(f"step {step}: " + self.spec.line.format(**m))

    def _checkpoint_best(self, step: int, score: float) -> None:
        """Keep the best weights in memory and on disk (``best/``), so Ctrl-C or a crash keeps them."""
        state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.best.update(step=step, score=score, state=state)
        best = self.run.path / "best"
        self.model.save_pretrained(str(best))
        self.tokenizer.save_pretrained(str(best))
        (best / "best.json").write_text(json.dumps({"step": step, "score": score}))

    def load_best(self) -> bool:
        """Load the best weights into the model (memory, else ``best/``); False when none."""
        if "state" in self.best:
            self.model.load_state_dict(self.best["state"])
            return True
        if self.best and (self.run.path / "best").is_dir():
            from transformers import AutoModelForCausalLM

            from openenv_train.policy.lora import is_adapter_dir

            if is_adapter_dir(self.run.path / "best"):  # a LoRA run saves the adapter only
                from peft import load_peft_weights, set_peft_model_state_dict

                weights = load_peft_weights(str(self.run.path / "best"))
                set_peft_model_state_dict(self.model, weights)
                return True

            saved = AutoModelForCausalLM.from_pretrained(str(self.run.path / "best"))
            self.model.load_state_dict(saved.state_dict())
            return True
        return False

    def after(self, trainer: Any) -> None:
        """Final evals of the last weights and (loaded into the model) the best periodic ones."""
        self.train_s = time.perf_counter() - self._train_t0
        step = trainer.state.global_step
        self.model = trainer.model
        t0 = time.perf_counter()
        self.rows[f"model after (last, step {step})"] = last = self.greedy()
        console.print(f"eval after training: {time.perf_counter() - t0:.1f}s")
        self.metrics.write("eval_after", step, {**last, "which": "last"})
        self.last, self.after_, self.saved_step = last, last, step
        if self.best and self.best["step"] != step and self.load_best():
            self.after_ = self.greedy()
            self.saved_step = self.best["step"]
            name = f"model after (best periodic eval, step {self.saved_step}, saved)"
            self.rows[name] = self.after_
            self.metrics.write("eval_after", self.saved_step, {**self.after_, "which": "best"})
        console.print(self.table(f"after {step} GRPO steps", {**self.rows, **self.spec.baselines}))

    def interrupted(self, trainer: Any) -> None:
        """Ctrl-C: no final evals; the best weights so far go to ``model/`` (else the last)."""
        self.train_s = time.perf_counter() - self._train_t0
        step = trainer.state.global_step if trainer is not None else 0
        if trainer is not None:
            self.model = trainer.model
        self.last = self.after_ = None
        self.saved_step = step
        if self.best and self.best["step"] != step and self.load_best():
            self.saved_step = self.best["step"]

    def summary(
        self, model_dir: Path, steps: int, *, interrupted: bool, checkpoint: str | None
    ) -> dict[str, Any]:
        """Write curve.png and summary.json; returns the summary."""
        from openenv_train.training import plot_learning_curve

        from .lifecycle import write_summary

        spec, started = self.spec, self.run.started
        curve_baselines = spec.curve_baselines
        png = plot_learning_curve(
            self.curve,
            self.run.path / "curve.png",
            baselines=spec.validation_baselines if curve_baselines is None else curve_baselines,
            title=spec.curve_title,
            panels=spec.panels,
        )
        summary: dict[str, Any] = {
            "name": self.cfg.name,
            "interrupted": interrupted,
            "before": self.rows.get("model before"),
            "after": self.after_,
            "after_last": self.last,
            "saved_step": self.saved_step,
            "baselines": spec.baselines,
            "curve": [{"step": s, **m} for s, m in self.curve],  # on the validation games
            "panels": [list(p) for p in spec.panels],  # the curve's scores (openenv-train curve)
            "steps": steps,
            "episodes": steps * spec.episodes_per_step or self.episodes,
            "train_seconds": round(self.train_s, 1),
            "seconds_per_step": round(self.train_s / max(1, steps), 2),
            "wall_seconds": round(time.perf_counter() - started, 1),
            "model_dir": str(model_dir),
            "curve_png": str(png),
            "metrics_jsonl": str(self.metrics.path),
            "checkpoint": checkpoint,  # the trainer state --resume continues from
            **(
                {"validation_baselines": spec.validation_baselines}
                if spec.validation_baselines
                else {}
            ),
            **self.extra,
        }
        write_summary(self.run.path, summary)
        how = "interrupted" if interrupted else "done"
        console.print(
            f"{how} after {summary['wall_seconds']}s (training {summary['train_seconds']}s, "
            f"{summary['episodes']:,} episodes); model -> {model_dir}, curve -> {png}, "
            f"metrics -> {self.metrics.path}"
        )
        return summary
