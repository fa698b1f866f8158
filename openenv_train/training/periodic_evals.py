"""The evaluation bookkeeping of one training run: greedy evals before, during (the curve) and
after training, the best weights (kept in memory and checkpointed to ``best/`` when they
improve), rollout counts, progress, ``summary.json`` and ``curve.png``.

A recipe describes its evals as data (:class:`EvalSpec`: its greedy-eval function, score key,
table columns, report line); :class:`Evals` is the same bookkeeping for every recipe. Every eval's
outcome is a value (:class:`EvalResult`) that :class:`Evals` returns; a recipe's own extra evals
reach ``summary.json`` the same way (``lifecycle.finish(..., extra=[EvalResult(...)])``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from openenv_train.rollout.episode import EpisodeRecorder

if TYPE_CHECKING:
    from .config import GRPORun
    from .lifecycle import Run

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
    """What a recipe's evals are. ``greedy(model, validation, recorder)`` plays the live model
    greedily: the final games (``validation=False``, before and after training) or the validation
    games of the periodic evals (the curve; seeded apart, so watching them selects nothing).
    ``recorder`` (an ``EpisodeRecorder`` or None) is handed to the episode loop where the run
    viewer wants samples (periodic evals with ``eval.trajectories`` > 0); evals that play no
    ``play_episode`` loop may ignore it."""

    greedy: Callable[[Any, bool, EpisodeRecorder | None], Metrics]
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


@dataclass(frozen=True)
class EvalResult:
    """One eval's outcome, a value: ``label`` (its row in the tables), ``step`` (optimizer steps
    when it ran), ``metrics`` (read-only) and ``key``: what it is in ``summary.json``
    (``before``, ``eval`` for a curve point, ``after_last``, ``after_best``, or a recipe's own
    key such as ``after_via_servers``)."""

    label: str
    step: int
    metrics: Mapping[str, float]
    key: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", MappingProxyType(dict(self.metrics)))

    def as_dict(self) -> Metrics:
        return dict(self.metrics)


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
    """The eval state of one run (``run``: :class:`~openenv_train.training.lifecycle.Run`).

    Its outcomes are :class:`EvalResult` values it returns (``begin``, ``record``, ``after``);
    what it keeps is the run's own bookkeeping: the results so far, the best weights, the
    rollout counts and the progress display."""

    def __init__(self, run: Run, model: Any, tokenizer: Any, spec: EvalSpec) -> None:
        from openenv_train.training import (
            LogProgressCallback,
            PeriodicEvalCallback,
            RichProgressCallback,
        )

        self.run, self.model, self.tokenizer, self.spec = run, model, tokenizer, spec
        self.results: list[EvalResult] = []  # in the order they ran (curve points included)
        self.best: dict[str, Any] = {}  # step, score (and the weights while in memory)
        self.episodes = self.batches = 0
        self._train_t0 = time.perf_counter()
        self._train_s = 0.0
        self.saved_step = 0  # the step of the weights model/ holds
        self.progress: Any = None
        if run.cfg.progress:
            self.progress = LogProgressCallback.or_rich(
                RichProgressCallback(f"GRPO {run.cfg.name}", fields=spec.progress_fields),
                every=run.cfg.grpo.logging_steps,
            )
        self._sample: list[dict[str, Any]] | None = None
        self.periodic = PeriodicEvalCallback(
            lambda _model: self.validation(), run.cfg.eval.every, self.record
        )

    @property
    def cfg(self) -> GRPORun:
        return self.run.cfg

    @property
    def metrics(self) -> Any:
        """The run's ``metrics.jsonl`` writer."""
        return self.run.metrics

    @property
    def curve(self) -> list[tuple[int, Metrics]]:
        """The periodic evals (one per step, the latest wins): the learning curve."""
        points = {r.step: r.as_dict() for r in self.results if r.key == "eval"}
        return sorted(points.items())

    def result(self, key: str) -> EvalResult | None:
        """The latest result with summary key ``key`` (``before``, ``after_last`` ...)."""
        return next((r for r in reversed(self.results) if r.key == key), None)

    def greedy(self, validation: bool = False, recorder: EpisodeRecorder | None = None) -> Metrics:
        return self.spec.greedy(self.model, validation, recorder)

    def validation(self) -> Metrics:
        """A periodic eval (greedy, validation games), keeping a sample of its episodes that
        ``record`` writes for the run viewer; nothing is recorded between evals."""
        limit = self.cfg.eval.trajectories
        if not limit:
            return self.greedy(validation=True)
        recorder = EpisodeRecorder(limit)
        metrics = self.greedy(validation=True, recorder=recorder)
        self._sample = recorder.episodes
        return metrics

    def table(self, when: str, rows: Mapping[str, Mapping[str, float]]) -> Table:
        return results_table(self.spec.table_title.format(when), rows, self.spec.columns)

    def _add(self, result: EvalResult) -> EvalResult:
        self.results.append(result)
        return result

    def begin(self) -> EvalResult | None:
        """A fresh run: the untrained model on the final games (printed, returned) and on the
        validation games (the curve's first point). A resumed one: its eval before (returned),
        curve and best, from its metrics."""
        curve_baselines = self.spec.curve_baselines
        if curve_baselines is None:
            curve_baselines = self.spec.validation_baselines
        if curve_baselines:  # the viewer's dashed lines while the run trains
            (self.run.path / "baselines.json").write_text(json.dumps(curve_baselines))
        if self.run.resume:
            self.restore(self.run.restored)
            console.print(f"resuming {self.run.path} from {self.run.folder.last_checkpoint()}")
            return self.result("before")
        t0 = time.perf_counter()
        before = self._add(EvalResult("model before", 0, self.greedy(), "before"))
        console.print(f"eval before training: {time.perf_counter() - t0:.1f}s")
        self.metrics.write("eval_before", 0, before.as_dict())
        console.print(
            self.table("before training", {"model": before.metrics, **self.spec.baselines})
        )
        self.record(0, self.validation())
        return before

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
                self._add(EvalResult("model before", 0, data, "before"))
            elif row.get("kind") == "rollout":
                self.batches = max(self.batches, int(row["step"]))
                self.episodes = max(self.episodes, int(data.get("episodes", 0)))
            elif row.get("kind") == "eval":
                self._add(EvalResult(f"step {row['step']}", int(row["step"]), data, "eval"))
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

    def record(self, step: int, m: Metrics) -> EvalResult:
        """A periodic eval: the curve, keep-best, metrics.jsonl and the progress line. ``m``
        gains ``episodes`` and ``wall_s`` (the trainer's log shows them too)."""
        if self.spec.episodes_per_step:
            self.episodes = step * self.spec.episodes_per_step
        m["episodes"] = self.episodes
        m["wall_s"] = round(time.perf_counter() - self.run.started, 1)
        point = self._add(EvalResult(f"step {step}", step, m, "eval"))
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
        return point

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

    def after(self, trainer: Any) -> tuple[EvalResult, ...]:
        """Final evals of the last weights and (loaded into the model) the best periodic ones;
        printed beside the eval before and the baselines, and returned."""
        self._train_s = time.perf_counter() - self._train_t0
        step = trainer.state.global_step
        self.model = trainer.model
        t0 = time.perf_counter()
        label = f"model after (last, step {step})"
        out = [self._add(EvalResult(label, step, self.greedy(), "after_last"))]
        self.saved_step = step
        console.print(f"eval after training: {time.perf_counter() - t0:.1f}s")
        self.metrics.write("eval_after", step, {**out[0].metrics, "which": "last"})
        if self.best and self.best["step"] != step and self.load_best():
            saved = self.best["step"]
            label = f"model after (best periodic eval, step {saved}, saved)"
            out.append(self._add(EvalResult(label, saved, self.greedy(), "after_best")))
            self.saved_step = saved
            self.metrics.write("eval_after", saved, {**out[-1].metrics, "which": "best"})
        rows = {r.label: r.metrics for r in self.results if r.key != "eval"}
        console.print(self.table(f"after {step} GRPO steps", {**rows, **self.spec.baselines}))
        return tuple(out)

    def interrupted(self, trainer: Any) -> None:
        """Ctrl-C: no final evals; the best weights so far go to ``model/`` (else the last)."""
        self._train_s = time.perf_counter() - self._train_t0
        step = trainer.state.global_step if trainer is not None else 0
        if trainer is not None:
            self.model = trainer.model
        self.saved_step = step
        if self.best and self.best["step"] != step and self.load_best():
            self.saved_step = self.best["step"]

    def summary(
        self,
        model_dir: Path,
        steps: int,
        *,
        interrupted: bool,
        checkpoint: str | None,
        extra: Sequence[EvalResult] = (),
    ) -> dict[str, Any]:
        """Write curve.png and summary.json; returns the summary. ``extra``: a recipe's own
        eval results, each under its ``key``."""
        from openenv_train.training import plot_learning_curve

        from .lifecycle import write_summary

        spec, started = self.spec, self.run.started
        curve = self.curve
        curve_baselines = spec.curve_baselines
        png = plot_learning_curve(
            curve,
            self.run.path / "curve.png",
            baselines=spec.validation_baselines if curve_baselines is None else curve_baselines,
            title=spec.curve_title,
            panels=spec.panels,
        )
        before = self.result("before")
        last = None if interrupted else self.result("after_last")
        best = None if interrupted else self.result("after_best")
        after = best or last
        summary: dict[str, Any] = {
            "name": self.cfg.name,
            "interrupted": interrupted,
            "before": before.as_dict() if before else None,
            "after": after.as_dict() if after else None,
            "after_last": last.as_dict() if last else None,
            "saved_step": self.saved_step,
            "baselines": spec.baselines,
            "curve": [{"step": s, **m} for s, m in curve],  # on the validation games
            "panels": [list(p) for p in spec.panels],  # the curve's scores (openenv-train curve)
            "steps": steps,
            "episodes": steps * spec.episodes_per_step or self.episodes,
            "train_seconds": round(self._train_s, 1),
            "seconds_per_step": round(self._train_s / max(1, steps), 2),
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
            **{r.key: r.as_dict() for r in extra},
        }
        write_summary(self.run.path, summary)
        how = "interrupted" if interrupted else "done"
        console.print(
            f"{how} after {summary['wall_seconds']}s (training {summary['train_seconds']}s, "
            f"{summary['episodes']:,} episodes); model -> {model_dir}, curve -> {png}, "
            f"metrics -> {self.metrics.path}"
        )
        return summary
