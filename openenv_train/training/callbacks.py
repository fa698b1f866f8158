"""Trainer callbacks every recipe shares: a rich progress bar, a JSONL metrics log, periodic evals,
and a PNG learning curve. They are plain ``transformers.TrainerCallback``s, so the trainer's own
``report_to`` backends keep working beside them.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from .trainer_metrics import record_log


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


class JsonlMetricsCallback(TrainerCallback):
    """Appends one JSON object per trainer log (and per :meth:`write` call) to ``path``
    (emptied first unless ``append``, as a resumed run does)."""

    def __init__(self, path: str | Path, *, append: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not append or not self.path.exists():
            self.path.write_text("")
        self._t0 = time.monotonic()

    def write(self, kind: str, step: int, data: dict[str, Any]) -> None:
        row = {"kind": kind, "step": step, "time_s": round(time.monotonic() - self._t0, 3)}
        row.update({k: _clean(v) for k, v in data.items()})
        with self.path.open("a") as f:
            f.write(json.dumps(row, default=str) + "\n")
        record_log(kind, step, row)  # the trainer's /metrics, when served (metrics_port)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        if logs:
            self.write("train", state.global_step, logs)


class PeriodicEvalCallback(TrainerCallback):
    """Runs ``evaluate(model) -> dict`` every ``every`` optimizer steps (and at the end).

    Results go to ``on_result(step, metrics)`` (JSONL, curve, progress bar) and into the trainer's
    log (so ``report_to`` backends see them too), prefixed ``eval/``.
    """

    def __init__(
        self,
        evaluate: Callable[[Any], dict[str, float]],
        every: int,
        on_result: Callable[[int, dict[str, float]], None] | None = None,
    ) -> None:
        if every < 1:
            raise ValueError(f"eval_every={every}: must be >= 1")
        self.evaluate = evaluate
        self.every = every
        self.on_result = on_result
        self.history: list[tuple[int, dict[str, float]]] = []
        self._trainer: Any = None

    def bind(self, trainer: Any) -> None:
        """Give the callback the trainer, so results also reach ``trainer.log`` (report_to)."""
        self._trainer = trainer

    def _run(self, step: int, model: Any) -> None:
        if self.history and self.history[-1][0] == step:
            return
        metrics = self.evaluate(model)
        self.history.append((step, metrics))
        if self.on_result is not None:
            self.on_result(step, metrics)
        if self._trainer is not None:
            self._trainer.log(
                {f"eval/{k}": v for k, v in metrics.items() if isinstance(v, (int, float))}
            )

    def on_step_end(
        self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any
    ) -> None:
        if state.global_step % self.every == 0:
            self._run(state.global_step, model)

    def on_train_end(
        self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any
    ) -> None:
        self._run(state.global_step, model)


class RichProgressCallback(TrainerCallback):
    """A rich progress bar with the latest reward, entropy and eval win rate (replaces tqdm)."""

    def __init__(
        self, description: str = "GRPO", fields: Sequence[str] = ("reward", "entropy")
    ) -> None:
        self.description = description
        self.fields = tuple(fields)
        self.progress: Any = None
        self.task: Any = None
        self.status: dict[str, str] = {}

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[status]}"),
            transient=False,
        )
        self.progress.start()
        self.task = self.progress.add_task(self.description, total=state.max_steps, status="")

    def set_status(self, **values: Any) -> None:
        for k, v in values.items():
            self.status[k] = f"{v:.3f}" if isinstance(v, float) else str(v)
        if self.progress is not None:
            self.progress.update(
                self.task, status=" ".join(f"{k}={v}" for k, v in self.status.items())
            )

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        if logs:
            self.set_status(
                **{k: float(logs[k]) for k in self.fields if isinstance(logs.get(k), (int, float))}
            )

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step)
            self.progress.stop()
            self.progress = None


class LogProgressCallback(TrainerCallback):
    """Plain progress lines for logs (``> log``, nohup, CI), where a progress bar prints nothing:
    every ``every`` steps ``step 40/800 | episodes 20,480 | reward -0.210 | entropy 0.310 |
    last eval: win 0.384 ret -0.180 | 00:41 elapsed``. Same ``set_status`` interface as the rich bar."""

    def __init__(self, every: int = 10, fields: Sequence[str] = ("reward", "entropy")) -> None:
        self.every = max(1, int(every))
        self.fields = tuple(fields)
        self.status: dict[str, Any] = {}
        self.logged: dict[str, float] = {}
        self._t0 = time.monotonic()
        self._printed = -1

    @staticmethod
    def or_rich(rich_bar: TrainerCallback, every: int, stream: Any = None) -> TrainerCallback:
        """``rich_bar`` on a terminal, else a :class:`LogProgressCallback` every ``every`` steps."""
        stream = sys.stdout if stream is None else stream
        isatty = getattr(stream, "isatty", None)
        return rich_bar if isatty is not None and isatty() else LogProgressCallback(every)

    def set_status(self, **values: Any) -> None:
        self.status.update(values)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._t0 = time.monotonic()

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        fresh = {
            k: float(logs[k]) for k in self.fields if isinstance((logs or {}).get(k), (int, float))
        }
        self.logged.update(fresh)
        if fresh and state.global_step % self.every == 0:
            self._print(state)

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._print(state)

    def _print(self, state: Any) -> None:
        if state.global_step != self._printed:
            self._printed = state.global_step
            print(self.line(state.global_step, state.max_steps), flush=True)

    def line(self, step: int, max_steps: int) -> str:
        parts = [f"step {step}/{max_steps}"]
        if "episodes" in self.status:
            parts.append(f"episodes {int(self.status['episodes']):,}")
        parts += [f"{k} {v:.3f}" for k, v in self.logged.items()]
        evals = {k: v for k, v in self.status.items() if k != "episodes"}
        if evals:
            shown = " ".join(
                f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in evals.items()
            )
            parts.append(f"last eval: {shown}")
        secs = int(time.monotonic() - self._t0)
        parts.append(f"{secs // 60:02d}:{secs % 60:02d} elapsed")
        return " | ".join(parts)


#: Third-party warnings a recipe run would otherwise print on every start: known, harmless, and
#: not the user's to fix (TRL's experimental-API notice, deprecations inside dependencies).
QUIET_WARNINGS: tuple[tuple[str, type[Warning]], ...] = (
    (r".*is experimental.*", UserWarning),
    (r".*deprecated.*", DeprecationWarning),
    (r".*deprecated.*", FutureWarning),
    (r".*torch_dtype.*", UserWarning),
)


def quiet_third_party() -> None:
    """Silence the known deprecation / experimental notices of TRL, transformers and torch."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    for message, category in QUIET_WARNINGS:
        for module in ("trl", "transformers", "torch", "accelerate", "datasets"):
            warnings.filterwarnings("ignore", message=message, category=category, module=module)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()  # "Writing model shards" bars at every checkpoint
    except ImportError:  # pragma: no cover - transformers is a dependency of this module
        pass


def plot_learning_curve(
    points: Sequence[tuple[int, dict[str, float]]],
    path: str | Path,
    *,
    baselines: dict[str, dict[str, float]] | None = None,
    title: str = "GRPO learning curve",
    x_label: str = "optimizer step",
    panels: Sequence[tuple[str, str]] = (
        ("win", "greedy win rate"),
        ("mean_return", "mean return"),
    ),
) -> Path:
    """PNG of one panel per ``(metric key, label)`` vs step (default: win rate and mean return),
    with dashed baseline lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    steps = [s for s, _ in points]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    axes = axes[0]
    for ax, (key, label) in zip(axes, panels, strict=True):
        ax.plot(steps, [m.get(key, float("nan")) for _, m in points], marker="o", label="policy")
        for i, (name, base) in enumerate((baselines or {}).items()):
            if key in base:
                ax.axhline(base[key], linestyle="--", linewidth=1, color=f"C{i + 1}", label=name)
        ax.set_xlabel(x_label)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
